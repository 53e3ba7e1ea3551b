package scrape

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/clock"
	"github.com/feedpipe/feedpipe/internal/extract"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/ids"
	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

var now = time.Date(2026, 11, 21, 8, 30, 0, 0, time.UTC)

// site is a test web site: pages by path, a request log, and optional
// delays.
type site struct {
	srv   *httptest.Server
	mu    sync.Mutex
	pages map[string]string
	delay map[string]time.Duration
	hits  []string
}

func newSite(t *testing.T, pages map[string]string) *site {
	s := &site{pages: pages, delay: map[string]time.Duration{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits = append(s.hits, r.URL.Path)
		body, ok := s.pages[r.URL.Path]
		d := s.delay[r.URL.Path]
		s.mu.Unlock()
		time.Sleep(d)
		if !ok {
			http.NotFound(w, r)
			return
		}
		ctype := "text/html; charset=utf-8"
		if strings.HasSuffix(r.URL.Path, ".txt") {
			ctype = "text/plain"
		}
		w.Header().Set("Content-Type", ctype)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *site) url(path string) string { return s.srv.URL + path }

func (s *site) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.hits...)
}

func openStore(t *testing.T) *storedir.Store {
	t.Helper()
	st, err := storedir.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// storeSeen puts an entry of a feed in the store's catalog, as feed-store
// stores it.
func storeSeen(t *testing.T, st *storedir.Store, feedID, uid, hash string) {
	t.Helper()
	cat, err := catalog.Open(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	e := &ndjson.Entry{FeedID: feedID, EntryUID: uid, ContentHash: hash, FirstSeen: ndjson.At(now), LastSeen: ndjson.At(now), SeenCount: 1}
	if err := cat.Update(context.Background(), func(tx *catalog.Tx) error {
		return tx.StoreVersion(e, catalog.Location{Day: storedir.Day(now), Length: 1})
	}); err != nil {
		t.Fatal(err)
	}
}

// fetchRec is the fetch record of feed n, whose page at url had body.
func fetchRec(t *testing.T, st *storedir.Store, n int, url, body string, due ndjson.Due) ndjson.Fetch {
	t.Helper()
	key, sum, err := st.PutRaw(now, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	due.Header = ndjson.Head(ndjson.TypeDue)
	due.FeedID = fmt.Sprintf("00000000-0000-5000-8000-%012d", n)
	due.URL = url
	due.Labels = []string{}
	return ndjson.Fetch{
		Header:          ndjson.Head(ndjson.TypeFetch),
		FetchID:         fmt.Sprintf("00000000-0000-7000-8000-%012d", n),
		Due:             due,
		RequestedURL:    url,
		URL:             url,
		Redirects:       []ndjson.Redirect{},
		FetchedAt:       ndjson.At(now),
		HTTPStatus:      200,
		RequestHeaders:  map[string]string{},
		ResponseHeaders: map[string]string{},
		ContentType:     "text/html; charset=utf-8",
		BodyRef:         &ndjson.BlobRef{Storage: storedir.RawStorage, Key: key},
		BodySHA256:      sum,
	}
}

func line(t *testing.T, v any) string {
	t.Helper()
	b, err := ndjson.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func runScrape(t *testing.T, st *storedir.Store, input ...string) (out []string, log string, err error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err = Run(context.Background(), Config{
		In:      strings.NewReader(strings.Join(input, "")),
		Out:     ndjson.NewWriter(&stdout),
		Log:     slog.New(slog.NewTextHandler(&stderr, nil)),
		Store:   st,
		Client:  httpx.New(httpx.Options{AllowPrivate: true, Timeout: 5 * time.Second}),
		Limiter: httpx.NewLimiter(1, 0, nil),
		Clock:   clock.NewFake(now),
	})
	text := stdout.String()
	return strings.SplitAfter(text, "\n")[:strings.Count(text, "\n")], stderr.String(), err
}

// rec decodes an output line far enough to tell what it is.
type rec struct {
	Type        string              `json:"type"`
	FetchID     string              `json:"fetch_id"`
	Title       string              `json:"title"`
	Content     string              `json:"content"`
	Summary     string              `json:"summary"`
	ContentHash string              `json:"content_hash"`
	EntryUID    string              `json:"entry_uid"`
	NativeID    string              `json:"native_id"`
	RawRef      ndjson.RawRef       `json:"raw_ref"`
	Derivations []ndjson.Derivation `json:"derivations"`
	Scrape      *ndjson.Scrape      `json:"scrape"`
	Error       *ndjson.Error       `json:"error"`
}

func decode(t *testing.T, l string) rec {
	t.Helper()
	var r rec
	if err := json.Unmarshal([]byte(l), &r); err != nil {
		t.Fatalf("not a record: %v: %q", err, l)
	}
	return r
}

func article(title, body string) string {
	return `<!DOCTYPE html><html><head><title>` + title + `</title></head><body><h1 class="t">` + title + `</h1><div class="c"><p>` + body + `</p></div></body></html>`
}

const articleRules = `"article_config":{"title_selector":"h1.t","content_selector":"div.c"}`

// TestPassThrough: what feed-scrape does not consume goes on byte for
// byte, in order; the records of pages it fetched itself are dropped.
func TestPassThrough(t *testing.T) {
	st := openStore(t)
	feedEntry := ndjson.Entry{Header: ndjson.Head(ndjson.TypeEntry), EntryUID: "0123456789abcdef", FeedID: "00000000-0000-5000-8000-00000000000f", ContentHash: "h", Title: "x",
		RawRef: ndjson.RawRef{FetchID: "00000000-0000-7000-8000-000000000001"}}
	feedFetch := fetchRec(t, st, 1, "https://example.org/feed.xml", "<rss/>", ndjson.Due{SourceType: ndjson.SourceRSS})
	pageFetch := fetchRec(t, st, 2, "https://example.org/a.html", "<p>", ndjson.Due{SourceType: ndjson.SourceWebsite})
	pageFetch.Page = &ndjson.Page{Role: ndjson.PageArticle, SourceFetchID: "00000000-0000-7000-8000-000000000009"}
	notModified := fetchRec(t, st, 3, "https://example.org/", "", ndjson.Due{SourceType: ndjson.SourceWebsite})
	notModified.BodyRef, notModified.NotModified, notModified.HTTPStatus = nil, true, 304
	input := []string{
		`{"type":"event","v":1,"x":  "spaces kept"}` + "\n",
		line(t, &feedEntry),
		`{"type":"other","v":1}` + "\n",
		line(t, &feedFetch),
		line(t, &pageFetch),
		line(t, &notModified),
	}
	out, log, err := runScrape(t, st, input...)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	want := []string{input[0], input[1], input[2], input[3], input[5]}
	if strings.Join(out, "") != strings.Join(want, "") {
		t.Errorf("output:\n%s\nwant:\n%s", strings.Join(out, ""), strings.Join(want, ""))
	}
}

func TestDirect(t *testing.T) {
	st := openStore(t)
	body := `<html><head><title>T</title><link rel="canonical" href="/story?id=1"></head><body><h1 class="t">A story</h1><div class="c"><p>Told in full.</p></div></body></html>`
	f := fetchRec(t, st, 1, "https://example.org/latest", body, ndjson.Due{SourceType: ndjson.SourceWebsite,
		Scrape: json.RawMessage(`{"discovery_mode":"direct",` + articleRules + `}`)})
	out, log, err := runScrape(t, st, line(t, &f))
	if err != nil || len(out) != 2 {
		t.Fatalf("err %v, %d lines:\n%s\n%s", err, len(out), out, log)
	}
	e, fr := decode(t, out[0]), decode(t, out[1])
	switch {
	case e.Type != ndjson.TypeEntry || e.Title != "A story" || e.Content != `<div class="c"><p>Told in full.</p></div>`:
		t.Errorf("entry %+v", e)
	case e.NativeID != "https://example.org/story?id=1" || e.EntryUID != ids.EntryUID(ids.EntryKey{FeedID: f.Due.FeedID, NativeID: "https://example.org/story?id=1"}):
		t.Errorf("identity: native_id %q uid %q: want the canonical URL's", e.NativeID, e.EntryUID)
	case e.RawRef.FetchID != f.FetchID:
		t.Errorf("raw_ref %+v, want the page's own fetch", e.RawRef)
	case len(e.Derivations) != 1 || e.Derivations[0].Keywords[0].Term != "full":
		t.Errorf("derivations %+v", e.Derivations)
	case fr.Scrape == nil || fr.Scrape.Mode != "direct" || fr.Scrape.New != 1 || fr.Scrape.ArticlesFound != 1 || fr.Error != nil:
		t.Errorf("fetch record: scrape %+v error %+v", fr.Scrape, fr.Error)
	}
}

// TestList: links resolved, the known ones skipped without a fetch, the
// limit applied, pagination followed, every page fetched stored with a
// record marked page.
func TestList(t *testing.T) {
	s := newSite(t, map[string]string{
		"/robots.txt": "User-agent: *\nDisallow: /no/\n",
		"/p/1":        article("One", "first"),
		"/p/2":        article("Two", "second"),
		"/p/3":        article("", "no title"),
		"/p/4":        article("Four", "fourth"),
		"/p/5":        article("Five", "fifth"),
		"/list2":      `<ul class="l"><li><a href="/p/4">4</a></li><li><a href="/p/5">5</a></li></ul><a class="next" href="/list3">next</a>`,
		"/list3":      `<ul class="l"><li><a href="/p/6">6</a></li></ul>`,
	})
	st := openStore(t)
	list := `<ul class="l"><li><a href="/p/1">1</a><li><a href="p/2">2</a><li><a href="/no/secret">s</a><li><a href="/p/3">3</a></ul><a class="next" href="/list2">next</a>`
	conf := json.RawMessage(`{"discovery_mode":"list","list_config":{"article_selector":"ul.l a","pagination_selector":"a.next","max_pages":3},` + articleRules + `}`)
	f := fetchRec(t, st, 1, s.url("/list"), list, ndjson.Due{SourceType: ndjson.SourceWebsite, Scrape: conf, ItemLimit: 6})
	// /p/1 is stored already.
	known := ids.EntryUID(ids.EntryKey{FeedID: f.Due.FeedID, NativeID: s.url("/p/1")})
	storeSeen(t, st, f.Due.FeedID, known, "x")

	out, log, err := runScrape(t, st, line(t, &f))
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	var titles []string
	for _, l := range out[:len(out)-1] {
		r := decode(t, l)
		titles = append(titles, r.Title)
		if r.RawRef.FetchID == f.FetchID || r.RawRef.FetchID == "" {
			t.Errorf("%s: raw_ref %+v does not point at its page's fetch", r.Title, r.RawRef)
		}
	}
	if strings.Join(titles, ",") != "Two,Four,Five" {
		t.Errorf("entries %v, want Two,Four,Five", titles)
	}
	sc := decode(t, out[len(out)-1]).Scrape
	// Links: 1 (known), 2, secret (robots), 3 (no title), 4, 5: the limit
	// of 6 is reached before the third list page.
	if sc == nil || sc.ArticlesFound != 6 || sc.Known != 1 || sc.New != 3 || sc.Rejected != 2 || sc.PagesFetched != 5 {
		t.Fatalf("scrape %+v\n%s", sc, log)
	}
	if sc.Rejections[0].Reason != ReasonRobots || sc.Rejections[1].Reason != ReasonMissingTitle {
		t.Errorf("rejections %+v", sc.Rejections)
	}
	for _, p := range s.requests() {
		if p == "/p/1" || p == "/no/secret" || p == "/list3" || p == "/p/6" {
			t.Errorf("%s was fetched", p)
		}
	}
	// The pages are stored, with their records, before the entries go on.
	var pages []ndjson.Fetch
	if _, _, err := st.ReadLog(storedir.DayFile(storedir.DirFetches, now), 0, func(l ndjson.Line) error {
		var pf ndjson.Fetch
		if err := l.Decode(&pf); err != nil {
			return err
		}
		pages = append(pages, pf)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(pages) != 5 {
		t.Fatalf("%d page records stored, want 5", len(pages))
	}
	for _, pf := range pages {
		if pf.Page == nil || pf.Page.SourceFetchID != f.FetchID || pf.BodyRef == nil || pf.Due.SourceType != ndjson.SourceWebsite {
			t.Errorf("page record %+v", pf)
			continue
		}
		if _, err := st.GetRaw(pf.BodyRef.Key, 0); err != nil {
			t.Errorf("payload of %s: %v", pf.URL, err)
		}
	}
}

// TestFulltext: only the new entries of a fulltext feed have their page
// fetched; the summary and the content hash stay the feed's.
func TestFulltext(t *testing.T) {
	s := newSite(t, map[string]string{
		"/a": `<html><head><meta name="author" content="Ann"></head><body><article><h1>A</h1><p>` + strings.Repeat("The whole article, at length, with words. ", 20) + `</p></article></body></html>`,
		"/b": article("B", "never fetched"),
	})
	st := openStore(t)
	f := fetchRec(t, st, 1, s.url("/feed.xml"), "<rss/>", ndjson.Due{SourceType: ndjson.SourceRSS, Fulltext: true})
	mk := func(link, title string) ndjson.Entry {
		e := ndjson.Entry{Header: ndjson.Head(ndjson.TypeEntry), FeedID: f.Due.FeedID, CanonicalLink: link, Title: title, Summary: "teaser",
			Authors: []ndjson.Author{}, Categories: []string{}, Enclosures: []ndjson.Enclosure{}, RawRef: ndjson.RawRef{FetchID: f.FetchID}}
		e.EntryUID = ids.EntryUID(ids.EntryKey{FeedID: e.FeedID, NativeID: link})
		e.ContentHash = ids.ContentHash(e.Title, e.Summary, "", []string{link})
		return e
	}
	a, b := mk(s.url("/a"), "A"), mk(s.url("/b"), "B")
	storeSeen(t, st, f.Due.FeedID, b.EntryUID, b.ContentHash)
	input := []string{line(t, &a), line(t, &b), line(t, &f)}
	out, log, err := runScrape(t, st, input...)
	if err != nil || len(out) != 3 {
		t.Fatalf("err %v, %d lines\n%s", err, len(out), log)
	}
	ea := decode(t, out[0])
	if !strings.Contains(ea.Content, "The whole article") || ea.Summary != "teaser" || ea.ContentHash != a.ContentHash || len(ea.Derivations) != 1 {
		t.Errorf("completed entry: %+v", ea)
	}
	if out[1] != input[1] {
		t.Errorf("the stored entry was changed:\n%s", out[1])
	}
	if sc := decode(t, out[2]).Scrape; sc == nil || sc.Mode != ndjson.ScrapeFulltext || sc.New != 1 || sc.Known != 1 || sc.PagesFetched != 1 {
		t.Errorf("scrape %+v", sc)
	}
	for _, p := range s.requests() {
		if p == "/b" {
			t.Error("the stored entry's page was fetched")
		}
	}
}

// TestSourceFailures: a source that cannot be scraped at all has an error
// in its record and fails the run; a rejected article does not.
func TestSourceFailures(t *testing.T) {
	st := openStore(t)
	bad := fetchRec(t, st, 1, "https://example.org/", "<p>x", ndjson.Due{SourceType: ndjson.SourceWebsite, Scrape: json.RawMessage(`{"discovery_mode":"list"}`)})
	pdf := fetchRec(t, st, 2, "https://example.org/doc.pdf", "%PDF-1.4", ndjson.Due{SourceType: ndjson.SourceWebsite})
	pdf.ContentType = "application/pdf"
	untitled := fetchRec(t, st, 3, "https://example.org/x", "<body><p>no title</p></body>", ndjson.Due{SourceType: ndjson.SourceWebsite,
		Scrape: json.RawMessage(`{` + articleRules + `}`)})
	out, log, err := runScrape(t, st, line(t, &bad), line(t, &pdf), line(t, &untitled))
	if !errors.Is(err, pipe.ErrFailed) || !strings.Contains(err.Error(), "2 sources failed") {
		t.Fatalf("err %v, want 2 sources failed\n%s", err, log)
	}
	if len(out) != 3 {
		t.Fatalf("%d lines, want the 3 fetch records", len(out))
	}
	if r := decode(t, out[0]); r.Error == nil || r.Error.Class != ndjson.ClassParse || r.Error.Code != "scrape_config" || r.Scrape.Error == "" {
		t.Errorf("bad configuration: %+v %+v", r.Error, r.Scrape)
	}
	if r := decode(t, out[1]); r.Error == nil || r.Error.Code != "not_html" {
		t.Errorf("pdf: %+v", r.Error)
	}
	if r := decode(t, out[2]); r.Error != nil || r.Scrape.Rejected != 1 || r.Scrape.Rejections[0].Reason != ReasonMissingTitle {
		t.Errorf("untitled: %+v %+v", r.Error, r.Scrape)
	}
}

func TestValidation(t *testing.T) {
	j := &job{s: &stage{cfg: &Config{Clock: clock.NewFake(now)}}, f: &ndjson.Fetch{Due: ndjson.Due{FeedID: "f"}},
		sc: &ndjson.Scrape{}, log: slog.New(slog.DiscardHandler)}
	for _, tt := range []struct {
		title     string
		published time.Time
		reason    string
	}{
		{"ok", now, ""},
		{"tomorrow is fine", now.Add(23 * time.Hour), ""},
		{"", now, ReasonMissingTitle},
		{strings.Repeat("é", MaxTitleRunes+1), now, ReasonLongTitle},
		{"future", now.Add(25 * time.Hour), ReasonFutureDate},
		{"old", time.Date(1989, 12, 31, 0, 0, 0, 0, time.UTC), ReasonTooOld},
	} {
		j.sc.Rejections = nil
		e := j.entry(extractArticle(tt.title, tt.published), "https://example.org/a", "https://example.org/a", "id")
		got := ""
		if e == nil {
			got = j.sc.Rejections[len(j.sc.Rejections)-1].Reason
		}
		if got != tt.reason {
			t.Errorf("%.20q published %s: rejected for %q, want %q", tt.title, tt.published, got, tt.reason)
		}
	}
}

// TestOrder: sources are scraped at once, but their output keeps the
// input's order.
func TestOrder(t *testing.T) {
	pages := map[string]string{}
	for i := range 6 {
		pages[fmt.Sprintf("/a%d", i)] = article(fmt.Sprintf("Article %d", i), "text")
	}
	s := newSite(t, pages)
	s.delay["/a0"] = 200 * time.Millisecond
	st := openStore(t)
	var input []string
	for i := range 6 {
		list := fmt.Sprintf(`<a class="x" href="%s">x</a>`, s.url(fmt.Sprintf("/a%d", i)))
		f := fetchRec(t, st, i+1, s.url(fmt.Sprintf("/list%d", i)), list, ndjson.Due{SourceType: ndjson.SourceWebsite,
			Scrape: json.RawMessage(`{"discovery_mode":"list","list_config":{"article_selector":"a.x"},` + articleRules + `}`)})
		input = append(input, line(t, &f), fmt.Sprintf(`{"type":"marker","v":1,"n":%d}`+"\n", i))
	}
	out, log, err := runScrape(t, st, input...)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	var got []string
	for _, l := range out {
		r := decode(t, l)
		got = append(got, r.Type+":"+r.Title)
	}
	var want []string
	for i := range 6 {
		want = append(want, fmt.Sprintf("entry:Article %d", i), "fetch:", "marker:")
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("order:\n got %v\nwant %v", got, want)
	}
}

func TestSameSite(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{"https://www.example.org/a", "https://blog.example.org/", true},
		{"https://example.org/a", "http://example.org:8080/", true},
		{"https://example.co.uk/", "https://other.co.uk/", false},
		{"http://127.0.0.1:8080/a", "http://127.0.0.1:9090/", true},
		{"http://127.0.0.1/a", "http://127.0.0.2/", false},
		{"https://elsewhere.example/", "https://example.org/", false},
	} {
		if got := sameSite(tt.a, tt.b); got != tt.want {
			t.Errorf("sameSite(%s, %s) = %v", tt.a, tt.b, got)
		}
	}
}

func extractArticle(title string, published time.Time) extract.Article {
	return extract.Article{Title: title, Published: published, Text: "text", Content: "<p>text</p>"}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"HTTPS://Example.org:443/a?utm_source=list&id=3#c": "https://example.org/a?id=3",
		"https://example.org/a?utm_campaign=x":             "https://example.org/a",
		"https://example.org":                              "https://example.org/",
	} {
		if got, err := normalize(in); err != nil || got != want {
			t.Errorf("normalize(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := normalize("javascript:void(0)"); err == nil {
		t.Error("javascript: URL accepted")
	}
}

// TestListRemembersRejections: an article rejected for what its page held
// is not fetched again at the next runs (until the configuration changes,
// or RejectedFor passes), and neither it nor a link to another site keeps
// pagination going.
func TestListRemembersRejections(t *testing.T) {
	s := newSite(t, map[string]string{
		"/p/1":   article("", "no title"),
		"/p/9":   article("Nine", "ninth"),
		"/list2": `<ul class="l"><li><a href="/p/9">9</a></li></ul>`,
	})
	st := openStore(t)
	list := `<ul class="l"><li><a href="/p/1">1</a><li><a href="https://elsewhere.example/x">x</a></ul><a class="next" href="/list2">next</a>`
	conf := json.RawMessage(`{"discovery_mode":"list","list_config":{"article_selector":"ul.l a","pagination_selector":"a.next","max_pages":3},` + articleRules + `}`)
	run := func(n int, at time.Time, conf json.RawMessage) *ndjson.Scrape {
		t.Helper()
		f := fetchRec(t, st, 1, s.url("/list"), list, ndjson.Due{SourceType: ndjson.SourceWebsite, Scrape: conf})
		f.FetchID = fmt.Sprintf("00000000-0000-7000-8000-%012d", n)
		var stdout, stderr bytes.Buffer
		err := Run(context.Background(), Config{In: strings.NewReader(line(t, &f)), Out: ndjson.NewWriter(&stdout),
			Log: slog.New(slog.NewTextHandler(&stderr, nil)), Store: st, Client: httpx.New(httpx.Options{AllowPrivate: true, Timeout: 5 * time.Second}),
			Limiter: httpx.NewLimiter(1, 0, nil), Clock: clock.NewFake(at)})
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr.String())
		}
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		return decode(t, lines[len(lines)-1]).Scrape
	}
	hits := func(path string) int {
		n := 0
		for _, p := range s.requests() {
			if p == path {
				n++
			}
		}
		return n
	}

	// The first run fetches /p/1 (no title: rejected) and follows the
	// pagination to /p/9, which feed-store then stores.
	sc := run(1, now, conf)
	if sc.Rejected != 2 || sc.New != 1 || sc.RejectedBefore != 0 || hits("/p/1") != 1 || hits("/list2") != 1 {
		t.Fatalf("first run: %+v, requests %v", sc, s.requests())
	}
	feed := fmt.Sprintf("00000000-0000-5000-8000-%012d", 1) // fetchRec's
	storeSeen(t, st, feed, ids.EntryUID(ids.EntryKey{FeedID: feed, NativeID: s.url("/p/9")}), "h")

	// The next: /p/1 is not fetched again, and the page holds nothing new
	// to fetch: no pagination.
	sc = run(2, now.Add(time.Hour), conf)
	if sc.RejectedBefore != 1 || sc.PagesFetched != 0 || hits("/p/1") != 1 || hits("/list2") != 1 {
		t.Errorf("second run: %+v, requests %v", sc, s.requests())
	}
	// Another configuration may read it: fetched again.
	other := json.RawMessage(strings.Replace(string(conf), `"h1.t"`, `"h1"`, 1))
	if sc = run(3, now.Add(2*time.Hour), other); sc.RejectedBefore != 0 || hits("/p/1") != 2 {
		t.Errorf("another configuration: %+v, requests %v", sc, s.requests())
	}
	// So, after RejectedFor, may the site's mended page.
	if sc = run(4, now.Add(RejectedFor+time.Hour), conf); sc.RejectedBefore != 0 || hits("/p/1") != 3 {
		t.Errorf("after %s: %+v, requests %v", RejectedFor, sc, s.requests())
	}
}
