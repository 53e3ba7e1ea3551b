package serve

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/ids"
	"github.com/feedpipe/feedpipe/internal/sub"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

type feedsPage struct {
	Feeds []FeedOut `json:"feeds"`
	Next  string    `json:"next"`
}

type entriesPage struct {
	Entries []EntryOut `json:"entries"`
	Next    string     `json:"next"`
}

// TestFeeds: the feeds list, filtered and paged, and one feed, as feed-sub
// ls --json shows them.
func TestFeeds(t *testing.T) {
	w := newWorld(t)
	var all feedsPage
	r := w.get("/feeds")
	r.json(t, &all)
	if r.status != 200 || len(all.Feeds) != 3 || all.Next != "" {
		t.Fatalf("%d: %s", r.status, r.body)
	}
	for _, f := range all.Feeds {
		if f.Status != "enabled" || f.LastFetchAt.IsZero() || f.Counts.Fetches != 1 || f.Title == "" || f.Links["entries"] != "/feeds/"+f.FeedID+"/entries" {
			t.Errorf("feed %+v", f)
		}
	}
	for _, tc := range []struct{ query, want string }{
		{"?label=news", "2"}, {"?label=video", "1"}, {"?label=nothing", "0"}, {"?state=enabled", "3"}, {"?state=disabled", "0"},
	} {
		var p feedsPage
		w.get("/feeds"+tc.query).json(t, &p)
		if fmt.Sprint(len(p.Feeds)) != tc.want {
			t.Errorf("%s: %d feeds, want %s", tc.query, len(p.Feeds), tc.want)
		}
	}
	// Pages of one, in the list's order, each with its next link.
	var ids []string
	next := "/feeds?limit=1"
	for next != "" {
		var p feedsPage
		r := w.get(next)
		r.json(t, &p)
		if len(p.Feeds) != 1 {
			t.Fatalf("%s: %s", next, r.body)
		}
		if p.Next != "" && !strings.Contains(r.header.Get("Link"), `rel="next"`) {
			t.Errorf("no Link header: %v", r.header)
		}
		ids, next = append(ids, p.Feeds[0].FeedID), p.Next
	}
	if len(ids) != 3 || ids[0] != all.Feeds[0].FeedID || ids[2] != all.Feeds[2].FeedID {
		t.Errorf("pages %v", ids)
	}
	var one FeedOut
	id := w.ids["TechCrunch.xml"]
	r = w.get("/feeds/" + id)
	r.json(t, &one)
	if r.status != 200 || one.FeedID != id || one.URL != w.feeds.URL+"/TechCrunch.xml" || !slices.Equal(one.Labels, []string{"news"}) || r.header.Get("Last-Modified") == "" {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

// TestEntries: a feed's entries page by page are every entry stored of
// it, newest first, each the record entries/ holds; by label, by time,
// by full-text search; an entry and its history.
func TestEntries(t *testing.T) {
	w := newWorld(t)
	stored := w.storedEntries()
	id := w.ids["TechCrunch.xml"]
	want := 0
	for k := range stored {
		if k[0] == id {
			want++
		}
	}
	seen := map[string]bool{}
	var last ndjson.Time
	for next := "/feeds/" + id + "/entries?limit=7"; next != ""; {
		var p entriesPage
		r := w.get(next)
		r.json(t, &p)
		if r.status != 200 {
			t.Fatalf("%s: %s", next, r.body)
		}
		for _, e := range p.Entries {
			if seen[e.EntryUID] {
				t.Fatalf("entry %s on two pages", e.EntryUID)
			}
			seen[e.EntryUID] = true
			if s := stored[[2]string{id, e.EntryUID}]; s.ContentHash != e.ContentHash || s.Title != e.Title || e.Versions != 1 {
				t.Errorf("entry %s is not the one stored: %+v", e.EntryUID, e)
			}
			pub := e.Published
			if pub.IsZero() {
				pub = e.FirstSeen
			}
			if !last.IsZero() && pub.After(last.Time) {
				t.Errorf("not newest first: %v after %v", pub, last)
			}
			last = pub
		}
		next = p.Next
	}
	if len(seen) != want || want < 10 {
		t.Fatalf("%d entries paged, %d stored", len(seen), want)
	}
	// By label: the two news feeds'.
	var p entriesPage
	w.get("/entries?label=news&limit=1000").json(t, &p)
	news := 0
	for k := range stored {
		if k[0] == id || k[0] == w.ids["AmazonWebServicesBlog.xml"] {
			news++
		}
	}
	if len(p.Entries) != news {
		t.Errorf("label news: %d entries, want %d", len(p.Entries), news)
	}
	// Full-text search: a word of one entry's title finds it.
	var target ndjson.Entry
	for _, e := range stored {
		if e.FeedID == w.ids["youtube_atom.xml"] {
			target = e
			break
		}
	}
	word := longestWord(target.Title)
	w.get("/entries?q="+url.QueryEscape(word)).json(t, &p)
	if !slices.ContainsFunc(p.Entries, func(e EntryOut) bool { return e.EntryUID == target.EntryUID }) {
		t.Errorf("q=%s does not find %q", word, target.Title)
	}
	w.get("/entries?q=zzzyyyxxxnotaword").json(t, &p)
	if len(p.Entries) != 0 {
		t.Errorf("a word in no entry finds %d", len(p.Entries))
	}
	// By time.
	since := last.Time.Format("2006-01-02T15:04:05Z")
	w.get("/feeds/"+id+"/entries?since="+since+"&order=published").json(t, &p)
	if len(p.Entries) == 0 {
		t.Errorf("since the oldest: nothing")
	}
	// One entry, with its history.
	var one struct {
		Entry   EntryOut     `json:"entry"`
		History []VersionOut `json:"history"`
		Feed    string       `json:"feed"`
	}
	r := w.get("/entries/" + target.EntryUID)
	r.json(t, &one)
	if r.status != 200 || one.Entry.ContentHash != target.ContentHash || len(one.History) != 1 || one.History[0].Entry == nil ||
		one.History[0].Entry.Title != target.Title || one.Feed != "/feeds/"+target.FeedID {
		t.Fatalf("%d %s", r.status, r.body)
	}
	w.get("/entries/0000000000000000").problem(t, 404)
	w.get("/entries/"+target.EntryUID+"?feed_id="+id).problem(t, 404)
}

func longestWord(s string) string {
	best := ""
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') }) {
		if len(f) > len(best) {
			best = f
		}
	}
	return best
}

// TestFetchAndRaw: a fetch record as fetches/ holds it, and its payload
// byte for byte with the Content-Type it was served with.
func TestFetchAndRaw(t *testing.T) {
	w := newWorld(t)
	var e ndjson.Entry
	for _, s := range w.storedEntries() {
		if s.FeedID == w.ids["AmazonWebServicesBlog.xml"] {
			e = s
		}
	}
	var f ndjson.Fetch
	r := w.get("/fetches/" + e.RawRef.FetchID)
	r.json(t, &f)
	if r.status != 200 || f.FetchID != e.RawRef.FetchID || f.Due.FeedID != e.FeedID || f.BodyRef == nil {
		t.Fatalf("%d %s", r.status, r.body)
	}
	want, _ := os.ReadFile(filepath.Join(w.www, "AmazonWebServicesBlog.xml"))
	r = w.get("/raw/"+e.RawRef.FetchID, "Accept-Encoding", "identity")
	if r.status != 200 || !bytes.Equal(r.body, want) || r.header.Get("Content-Type") != f.ContentType || r.header.Get("X-Content-Type-Options") != "nosniff" ||
		!strings.Contains(r.header.Get("Content-Security-Policy"), "sandbox") {
		t.Fatalf("raw: %d %v, %d bytes, want %d", r.status, r.header, len(r.body), len(want))
	}
	// The item's bytes are where raw_ref says.
	if item := string(r.body[e.RawRef.Offset : e.RawRef.Offset+e.RawRef.Length]); !strings.Contains(item, "<item") && !strings.Contains(item, "<entry") {
		t.Errorf("raw_ref: %q", item)
	}
	w.get("/fetches/00000000-0000-7000-8000-000000000000").problem(t, 404)
	w.get("/raw/00000000-0000-7000-8000-000000000000").problem(t, 404)
}

// TestConditionalAndGzip: every GET has an ETag; If-None-Match and
// If-Modified-Since give 304; gzip when asked.
func TestConditionalAndGzip(t *testing.T) {
	w := newWorld(t)
	id := w.ids["TechCrunch.xml"]
	for _, path := range []string{"/feeds", "/feeds/" + id, "/feeds/" + id + "/entries", "/entries?label=news", "/all.atom", "/labels/news.rss",
		"/feeds/" + id + "/feed.json", "/openapi.json", "/events"} {
		r := w.get(path)
		etag := r.header.Get("ETag")
		if r.status != 200 || !strings.HasPrefix(etag, `W/"`) {
			t.Errorf("%s: %d, ETag %q", path, r.status, etag)
			continue
		}
		if again := w.get(path, "If-None-Match", etag); again.status != 304 || len(again.body) != 0 {
			t.Errorf("%s with If-None-Match: %d", path, again.status)
		}
		if other := w.get(path, "If-None-Match", `W/"0"`); other.status != 200 {
			t.Errorf("%s with another ETag: %d", path, other.status)
		}
		if lm := r.header.Get("Last-Modified"); lm != "" {
			if again := w.get(path, "If-Modified-Since", lm); again.status != 304 {
				t.Errorf("%s with If-Modified-Since: %d", path, again.status)
			}
		}
	}
	// gzip, decoded by hand: the real client asks for it and decodes it
	// itself, so the header is set here.
	req, _ := http.NewRequest("GET", w.api.URL+"/feeds/"+id+"/entries", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("Content-Encoding %q", resp.Header.Get("Content-Encoding"))
	}
	if v := resp.Header.Values("Vary"); len(v) != 1 || v[0] != "Accept-Encoding" {
		t.Errorf("Vary %q, want Accept-Encoding once", v)
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil || !json.Valid(b) || !bytes.Equal(b, w.get("/feeds/"+id+"/entries", "Accept-Encoding", "identity").body) {
		t.Fatalf("gzip body: %v %.200s", err, b)
	}
}

// TestWrites: add, change, refetch and remove, as feed-sub does them.
func TestWrites(t *testing.T) {
	w := newWorld(t)
	os.WriteFile(filepath.Join(w.www, "json_feed.json"), mustRead(t, "json_feed.json"), 0o644)
	u := w.feeds.URL + "/json_feed.json"
	r := w.write("POST", "/feeds", `{"url": "`+u+`", "labels": ["blogs", "blogs", " x "], "interval_sec": 60, "name": "A blog"}`)
	var f FeedOut
	r.json(t, &f)
	if r.status != 201 || r.header.Get("Location") != "/feeds/"+f.FeedID || f.URL != u || !slices.Equal(f.Labels, []string{"blogs", "x"}) ||
		f.IntervalSec != 300 || f.Name != "A blog" || !slices.ContainsFunc(f.Notes, func(n string) bool { return strings.Contains(n, "raised to the minimum") }) {
		t.Fatalf("add: %d %s", r.status, r.body)
	}
	// The subscription log has it, as feed-sub add writes it.
	log, _ := w.st.ReadFile(catalog.SubscriptionsFile)
	if !strings.Contains(string(log), f.FeedID) {
		t.Fatalf("the subscription log lacks it:\n%s", log)
	}
	// Again: nothing changes.
	r = w.write("POST", "/feeds", `{"url": "`+u+`"}`)
	r.json(t, &f)
	if r.status != 200 || f.Name != "A blog" || !slices.ContainsFunc(f.Notes, func(n string) bool { return strings.Contains(n, "already subscribed") }) {
		t.Fatalf("add again: %d %s", r.status, r.body)
	}
	// Settings, then disable, then pause.
	r = w.write("PATCH", "/feeds/"+f.FeedID, `{"name": "Renamed", "add_labels": ["more"], "rm_labels": ["x"], "fulltext": true, "cron": "@hourly"}`)
	r.json(t, &f)
	if r.status != 200 || f.Name != "Renamed" || !slices.Equal(f.Labels, []string{"blogs", "more"}) || !f.Fulltext || f.Cron != "@hourly" {
		t.Fatalf("patch: %d %s", r.status, r.body)
	}
	r = w.write("PATCH", "/feeds/"+f.FeedID, `{"disabled": true}`)
	r.json(t, &f)
	if r.status != 200 || !f.Disabled || f.Status != "disabled" {
		t.Fatalf("disable: %d %s", r.status, r.body)
	}
	r = w.write("PATCH", "/feeds/"+f.FeedID, `{"disabled": false, "paused_until": "2027-01-01T00:00:00Z"}`)
	r.json(t, &f)
	if r.status != 200 || f.Disabled || f.PausedUntil.IsZero() || f.Status != "paused" {
		t.Fatalf("enable and pause: %d %s", r.status, r.body)
	}
	r = w.write("PATCH", "/feeds/"+f.FeedID, `{"paused_until": null}`)
	r.json(t, &f)
	if r.status != 200 || !f.PausedUntil.IsZero() {
		t.Fatalf("resume: %d %s", r.status, r.body)
	}
	// A refused change changes nothing.
	w.write("PATCH", "/feeds/"+f.FeedID, `{"type": "gopher"}`).problem(t, 422)
	w.write("PATCH", "/feeds/"+f.FeedID, `{}`).problem(t, 422)
	// Refetch: due now.
	tc := w.ids["TechCrunch.xml"]
	r = w.write("POST", "/feeds/"+tc+"/refetch", "")
	r.json(t, &f)
	if r.status != 200 || f.StateReason != "manual" || !slices.ContainsFunc(f.Notes, func(n string) bool { return strings.HasPrefix(n, "due now") }) {
		t.Fatalf("refetch: %d %s", r.status, r.body)
	}
	// Remove: gone from the list, its entries stay.
	r = w.write("DELETE", "/feeds/"+tc, "")
	if r.status != 204 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	w.get("/feeds/"+tc).problem(t, 404)
	w.write("DELETE", "/feeds/"+tc, "").problem(t, 404)
	var p entriesPage
	if r := w.get("/feeds/" + tc + "/entries"); r.status != 200 {
		t.Fatalf("the entries of a removed feed: %d", r.status)
	} else if r.json(t, &p); len(p.Entries) == 0 {
		t.Fatalf("the entries of a removed feed are gone")
	}
}

func mustRead(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "feeds", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRefusals: each refusal is a problem detail with a message a person
// can act on, and changes nothing.
func TestRefusals(t *testing.T) {
	w := newWorld(t)
	id := w.ids["TechCrunch.xml"]
	before, _ := w.st.ReadFile(catalog.SubscriptionsFile)
	big := `{"url": "https://x.example/` + strings.Repeat("a", MaxBodyBytes) + `"}`
	for _, tc := range []struct {
		name, method, path, body string
		header                   []string
		status                   int
		detail                   string
	}{
		{"no token", "POST", "/feeds", `{"url": "https://x.example/f"}`, nil, 401, "Authorization: Bearer"},
		{"wrong token", "POST", "/feeds", `{"url": "https://x.example/f"}`, []string{"Authorization", "Bearer nope"}, 401, "not this server's"},
		{"basic, not bearer", "DELETE", "/feeds/" + id, "", []string{"Authorization", "Basic " + testToken}, 401, "not this server's"},
		{"oversized body", "POST", "/feeds", big, auth(), 413, "over 65536 bytes"},
		{"bad JSON", "POST", "/feeds", `{"url": `, auth(), 400, "not JSON"},
		{"not an object", "POST", "/feeds", `["https://x.example/f"]`, auth(), 400, "JSON object"},
		{"two objects", "POST", "/feeds", `{"url": "https://x.example/f"} {}`, auth(), 400, "one object"},
		{"unknown member", "POST", "/feeds", `{"url": "https://x.example/f", "lable": "x"}`, auth(), 400, `unknown member "lable"`},
		{"wrong type", "POST", "/feeds", `{"url": "https://x.example/f", "labels": "x"}`, auth(), 400, `member "labels" must be an array of strings`},
		{"no url", "POST", "/feeds", `{"name": "x"}`, auth(), 400, `"url" is missing`},
		{"empty body", "POST", "/feeds", ``, auth(), 400, "empty"},
		{"not JSON type", "POST", "/feeds", `url=x`, []string{"Authorization", "Bearer " + testToken, "Content-Type", "application/x-www-form-urlencoded"}, 415, "send JSON"},
		{"ftp URL", "POST", "/feeds", `{"url": "ftp://x.example/f"}`, auth(), 422, "ftp"},
		{"discover ftp", "POST", "/feeds", `{"url": "ftp://x.example/f", "discover": true}`, auth(), 422, "not an http or https URL"},
		{"bad pause", "PATCH", "/feeds/" + id, `{"paused_until": "tomorrow"}`, auth(), 400, "RFC 3339"},
		{"pause in the past", "PATCH", "/feeds/" + id, `{"paused_until": "2020-01-01T00:00:00Z"}`, auth(), 422, "not in the future"},
		{"unknown feed", "GET", "/feeds/00000000-0000-5000-8000-000000000000", "", nil, 404, "GET /feeds lists"},
		{"unknown feed patch", "PATCH", "/feeds/00000000-0000-5000-8000-000000000000", `{"name": "x"}`, auth(), 404, "no feed"},
		{"unknown feed refetch", "POST", "/feeds/00000000-0000-5000-8000-000000000000/refetch", "", auth(), 404, "no such subscription"},
		{"unknown feed entries", "GET", "/feeds/00000000-0000-5000-8000-000000000000/entries", "", nil, 404, "knows no feed"},
		{"unknown feed feed", "GET", "/feeds/00000000-0000-5000-8000-000000000000/feed.atom", "", nil, 404, "no feed"},
		{"feed id upper case", "GET", "/feeds/" + strings.ToUpper(id), "", nil, 400, "lower case"},
		{"feed id too short a prefix", "GET", "/feeds/" + id[:3], "", nil, 400, "4 characters or more"},
		{"label with a slash", "GET", "/labels/a%2Fb.atom", "", nil, 400, "slash"},
		{"label dot dot", "GET", "/labels/...atom", "", nil, 400, "dot"},
		{"label query slash", "GET", "/entries?label=a/b", "", nil, 400, "slash"},
		{"label query dotdot", "GET", "/feeds?label=..", "", nil, 400, "dot"},
		{"unknown label", "GET", "/labels/nothing.atom", "", nil, 404, "no subscription has the label"},
		{"label feed format", "GET", "/labels/news.html", "", nil, 404, ".atom, .rss or .json"},
		{"bad state", "GET", "/feeds?state=asleep", "", nil, 400, "enabled, failing"},
		{"bad limit", "GET", "/entries?limit=0", "", nil, 400, "1 to 1000"},
		{"huge limit", "GET", "/entries?limit=100000", "", nil, 400, "1 to 1000"},
		{"bad cursor", "GET", "/entries?cursor=abc", "", nil, 400, "next link"},
		{"forged cursor", "GET", "/feeds/" + id + "/entries?cursor=1.2.3", "", nil, 400, "next link"},
		{"feeds cursor", "GET", "/feeds?cursor=00000000-0000-5000-8000-000000000000", "", nil, 400, "start from the first page"},
		{"bad since", "GET", "/entries?since=yesterday", "", nil, 400, "RFC 3339"},
		{"bad order", "GET", "/entries?order=title", "", nil, 400, "first_seen"},
		{"no words", "GET", "/entries?q=%2A%2A", "", nil, 400, "no word"},
		{"bad uid", "GET", "/entries/XYZ", "", nil, 400, "16 lower-case hex"},
		{"bad fetch id", "GET", "/fetches/nope", "", nil, 400, "UUID"},
		{"bad event cursor", "GET", "/events?cursor=2026-13-01:5", "", nil, 400, "event id"},
		{"bad Last-Event-ID", "GET", "/events/stream", "", []string{"Last-Event-ID", "../../etc:1"}, 400, "event id"},
		{"no such route", "GET", "/nothing/here", "", nil, 404, "openapi.json"},
		{"wrong method", "PUT", "/feeds", "", nil, 405, "GET, POST"},
		{"wrong method on a feed", "POST", "/feeds/" + id, "", nil, 405, "PATCH"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := w.do(tc.method, tc.path, tc.body, tc.header...)
			p := r.problem(t, tc.status)
			if !strings.Contains(p.Detail, tc.detail) {
				t.Errorf("detail %q lacks %q", p.Detail, tc.detail)
			}
			if tc.status == 401 && r.header.Get("WWW-Authenticate") == "" {
				t.Errorf("401 without WWW-Authenticate")
			}
			if tc.status == 405 && r.header.Get("Allow") == "" {
				t.Errorf("405 without Allow")
			}
		})
	}
	if after, _ := w.st.ReadFile(catalog.SubscriptionsFile); !bytes.Equal(before, after) {
		t.Errorf("a refused request changed the subscriptions:\n%s", after)
	}
}

func auth() []string {
	return []string{"Authorization", "Bearer " + testToken, "Content-Type", "application/json"}
}

// TestNoTokenNoWrites: a server without a token takes no write; with
// --auth reads, reads need the token too, /healthz aside.
func TestNoTokenNoWrites(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.Token = "" })
	w.write("POST", "/feeds", `{"url": "https://x.example/f"}`).problem(t, 403)
	if r := w.get("/feeds"); r.status != 200 {
		t.Errorf("reads: %d", r.status)
	}
	w = newWorld(t, func(c *Config) { c.AuthReads = true })
	w.get("/feeds").problem(t, 401)
	w.get("/metrics").problem(t, 401)
	w.get("/all.atom", "Authorization", "Bearer wrong-token-wrong-token").problem(t, 401)
	if r := w.get("/feeds", "Authorization", "Bearer "+testToken); r.status != 200 {
		t.Errorf("reads with the token: %d", r.status)
	}
	if r := w.get("/healthz"); r.status != 200 {
		t.Errorf("healthz: %d", r.status)
	}
}

// TestCORS: only the one origin, preflight included.
func TestCORS(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.CORS = "https://app.example" })
	r := w.do("OPTIONS", "/feeds", "", "Origin", "https://app.example", "Access-Control-Request-Method", "POST")
	if r.status != 204 || r.header.Get("Access-Control-Allow-Origin") != "https://app.example" || !strings.Contains(r.header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Fatalf("preflight: %d %v", r.status, r.header)
	}
	if r := w.get("/feeds", "Origin", "https://app.example"); r.header.Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Errorf("GET from the origin: %v", r.header)
	}
	if r := w.get("/feeds", "Origin", "https://evil.example"); r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("GET from another origin: %v", r.header)
	}
	if r := w.do("OPTIONS", "/feeds", "", "Origin", "https://evil.example", "Access-Control-Request-Method", "POST"); r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from another origin: %d %v", r.status, r.header)
	}
	w = newWorld(t)
	if r := w.get("/feeds", "Origin", "https://app.example"); r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("no --cors, yet: %v", r.header)
	}
}

// TestHealthz: up while the catalog answers.
func TestHealthz(t *testing.T) {
	w := newWorld(t)
	var h map[string]string
	r := w.get("/healthz")
	r.json(t, &h)
	if r.status != 200 || h["status"] != "ok" {
		t.Fatalf("%d %s", r.status, r.body)
	}
	w.cat.Close()
	w.get("/healthz").problem(t, 503)
}

// TestCacheFollowsTheCatalog: an answer kept while the catalog is
// unchanged is made anew as soon as another process commits to it.
func TestCacheFollowsTheCatalog(t *testing.T) {
	w := newWorld(t)
	id := w.ids["TechCrunch.xml"]
	var before, again, after entriesPage
	r1 := w.get("/feeds/" + id + "/entries?limit=1000")
	r1.json(t, &before)
	r2 := w.get("/feeds/"+id+"/entries?limit=1000", "If-None-Match", r1.header.Get("ETag"))
	if r2.status != 304 {
		t.Fatalf("a kept answer with its ETag: %d", r2.status)
	}
	w.get("/feeds/"+id+"/entries?limit=1000").json(t, &again)
	if len(again.Entries) != len(before.Entries) {
		t.Fatalf("the kept answer differs")
	}
	w.newEntries(2, "cached")
	w.cycle(t0.Add(time.Hour))
	w.get("/feeds/"+id+"/entries?limit=1000").json(t, &after)
	if len(after.Entries) != len(before.Entries)+2 {
		t.Fatalf("after a commit: %d entries, want %d", len(after.Entries), len(before.Entries)+2)
	}
}

// TestFeedIDPrefixes: a route of a feed takes a unique prefix of its id,
// as feed-sub does; an ambiguous one is a 409 that lists the candidates.
func TestFeedIDPrefixes(t *testing.T) {
	w := newWorld(t)
	id := w.ids["TechCrunch.xml"]
	var f FeedOut
	w.get("/feeds/"+id[:6]).json(t, &f)
	if f.FeedID != id {
		t.Errorf("by prefix: %q", f.FeedID)
	}
	if r := w.get("/feeds/" + id[:8] + "/entries?limit=1"); r.status != 200 || !strings.Contains(string(r.body), id) {
		t.Errorf("entries by prefix: %d", r.status)
	}
	// Two feeds whose ids begin alike.
	seen := map[string]string{}
	var a, b string
	for i := 0; a == ""; i++ {
		u := fmt.Sprintf("https://x.example/%d.xml", i)
		p := ids.FeedID(u)[:4]
		if other, ok := seen[p]; ok {
			a, b = other, u
		}
		seen[p] = u
	}
	for _, u := range []string{a, b} {
		if r := w.write("POST", "/feeds", `{"url": "`+u+`"}`); r.status != 201 {
			t.Fatalf("add %s: %d %s", u, r.status, r.body)
		}
	}
	prefix := ids.FeedID(a)[:4]
	p := w.get("/feeds/"+prefix).problem(t, 409)
	if !strings.Contains(p.Detail, ids.FeedID(a)) || !strings.Contains(p.Detail, ids.FeedID(b)) {
		t.Errorf("409 without the candidates: %s", p.Detail)
	}
	w.get("/feeds/abc").problem(t, 400)
	w.get("/feeds/ffffffff-ffff").problem(t, 404)
	w.get("/feeds/NOT-HEX").problem(t, 400)
}

// TestParseWarningsKept: a feed read with warnings (cut short, a bare
// '&') says so in its state, its status and on its page, and its fetch
// record has its parse; a reader app's htmlUrl is the site it links to.
func TestParseWarningsKept(t *testing.T) {
	t.Cleanup(catalog.SetTestIterations(1000))
	w := newWorld(t)
	os.WriteFile(filepath.Join(w.www, "cut.rss"), []byte(`<?xml version="1.0"?><rss version="2.0"><channel><title>Cut & dried</title>
<link>https://cut.example/home</link>
<item><title>One</title><link>https://cut.example/1</link></item>
<item><title>Two</title><link>https://cut.example/2</link></item>
<item><title>Thr`), 0o644)
	s, _, err := sub.Add(sub.Config{Store: w.st, Catalog: w.cat, Out: io.Discard}, sub.Spec{URL: w.feeds.URL + "/cut.rss"})
	if err != nil {
		t.Fatal(err)
	}
	w.cycle(t0.Add(time.Hour))
	var f FeedOut
	w.get("/feeds/"+s.FeedID).json(t, &f)
	if len(f.Warnings) == 0 || !strings.Contains(f.StatusText, "parse warning") || f.Link != "https://cut.example/home" {
		t.Fatalf("the feed: status %q, warnings %q, link %q", f.StatusText, f.Warnings, f.Link)
	}
	fetchID := w.firstFetchID(s.FeedID)
	var rec ndjson.Fetch
	w.get("/fetches/"+fetchID).json(t, &rec)
	if rec.Parse == nil || !slices.Equal(rec.Parse.Warnings, f.Warnings) || rec.Parse.Entries != 2 {
		t.Errorf("the fetch record's parse: %+v", rec.Parse)
	}
	if p := w.page("/web/feeds/"+s.FeedID, 200); !strings.Contains(p, "read with warnings") || !strings.Contains(p, "parse warning") {
		t.Errorf("the feed's page says nothing of its warnings")
	}
	if err := w.cat.AddUser(context.Background(), "alice", "alice's password", catalog.RoleReader, t0); err != nil {
		t.Fatal(err)
	}
	_, auth := w.login(t, "alice", "alice's password")
	var list struct {
		Subscriptions []grSubscription `json:"subscriptions"`
	}
	w.gr(auth, "GET", "/reader/api/0/subscription/list", "").json(t, &list)
	for _, sb := range list.Subscriptions {
		if sb.ID == "feed/"+s.FeedID && sb.HTMLURL != "https://cut.example/home" {
			t.Errorf("htmlUrl %q, want the site's link", sb.HTMLURL)
		}
	}
}
