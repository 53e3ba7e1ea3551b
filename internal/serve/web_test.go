package serve

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/sub"
)

// webWorld is the test world with a hostile feed too (testdata/hostile.rss:
// script in its titles and HTML), fetched by a second cycle.
func webWorld(t *testing.T, cfgs ...func(*Config)) *world {
	t.Helper()
	w := newWorld(t, cfgs...)
	b, err := os.ReadFile(filepath.Join("testdata", "hostile.rss"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(w.www, "hostile.rss"), b, 0o644)
	s, _, err := sub.Add(sub.Config{Store: w.st, Catalog: w.cat, Out: io.Discard, Now: func() time.Time { return t0 }},
		sub.Spec{URL: w.feeds.URL + "/hostile.rss", Labels: []string{"news"}})
	if err != nil {
		t.Fatal(err)
	}
	w.ids["hostile.rss"] = s.FeedID
	w.cycle(t0.Add(30 * time.Second))
	return w
}

// page gets a page of the site and checks what every page has: HTML, the
// policy that forbids inline script, no script of its own or of a feed.
func (w *world) page(path string, status int, header ...string) string {
	w.t.Helper()
	r := w.get(path, header...)
	if r.status != status {
		w.t.Fatalf("GET %s: %d, want %d: %s", path, r.status, status, r.body)
	}
	h := r.header
	if ct := h.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		w.t.Fatalf("GET %s: Content-Type %q", path, ct)
	}
	for k, v := range map[string]string{"Content-Security-Policy": pagePolicy, "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
		"Referrer-Policy": "same-origin"} {
		if h.Get(k) != v {
			w.t.Errorf("GET %s: %s %q, want %q", path, k, h.Get(k), v)
		}
	}
	if !strings.Contains(pagePolicy, "script-src 'none'") || strings.Contains(pagePolicy, "unsafe-inline") {
		w.t.Fatalf("the policy lets inline script run: %s", pagePolicy)
	}
	body := string(r.body)
	for _, bad := range unsafeHTML(body) {
		w.t.Errorf("GET %s: %s", path, bad)
	}
	if !strings.Contains(body, `<meta name="viewport" content="width=device-width, initial-scale=1">`) {
		w.t.Errorf("GET %s: no viewport", path)
	}
	return body
}

// unsafeHTML lists what in a page could run script or restyle it: a
// script, style, frame, object, embed, base or meta refresh element, an
// event handler or style attribute, a URL that is not http(s), mailto or
// of this site.
func unsafeHTML(page string) []string {
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		return []string{err.Error()}
	}
	var bad []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script", "style", "iframe", "frame", "object", "embed", "base", "applet":
				bad = append(bad, "a "+n.Data+" element")
			case "meta":
				for _, a := range n.Attr {
					if a.Key == "http-equiv" {
						bad = append(bad, "a meta http-equiv")
					}
				}
			}
			for _, a := range n.Attr {
				v := strings.ToLower(strings.TrimSpace(a.Val))
				switch {
				case strings.HasPrefix(a.Key, "on") || a.Key == "style":
					bad = append(bad, "an attribute "+a.Key+" of "+n.Data)
				case a.Key == "href" || a.Key == "src" || a.Key == "action" || a.Key == "formaction" || a.Key == "data":
					if !strings.HasPrefix(v, "/") && !strings.HasPrefix(v, "http://") && !strings.HasPrefix(v, "https://") && !strings.HasPrefix(v, "mailto:") {
						bad = append(bad, a.Key+"="+a.Val+" on "+n.Data)
					}
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return bad
}

var hrefs = regexp.MustCompile(`(?:href|src|action)="([^"]*)"`)

// TestWebPages: every page of the site answers from a store filled by the
// real stages, shows what the catalog holds, sends its policy, and shows
// no script of the hostile feed; every link of this site on them answers
// 200.
func TestWebPages(t *testing.T) {
	w := webWorld(t)
	tc, hostile := w.ids["TechCrunch.xml"], w.ids["hostile.rss"]
	home := w.page("/", 200)
	// TechCrunch's 20 entries were first seen today: the sparkline's last day.
	for _, want := range []string{"TechCrunch", `href="/web/feeds/` + tc + `"`, "news", "video", "<span>20 new in 14 days</span>", `<svg class="chart spark"`, "enabled",
		"new entries a day, the last 14 days: 0 0 0 0 0 0 0 0 0 0 0 0 0 20", `title="unread entries">20</a>`} {
		if !strings.Contains(home, want) {
			t.Errorf("the feed list has no %q", want)
		}
	}
	if video := w.page("/?label=video", 200); strings.Contains(video, "TechCrunch") || !strings.Contains(video, w.ids["youtube_atom.xml"]) {
		t.Errorf("the list of the label video is not its feeds only")
	}
	feed := w.page("/web/feeds/"+tc, 200)
	for _, want := range []string{"Scheduler", `<svg class="chart interval"`, `<svg class="chart strip"`, "interval chosen", "<td>defer</td>", "Mark all", "/feeds/" + tc + "/feed.atom"} {
		if !strings.Contains(feed, want) {
			t.Errorf("the feed's page has no %q", want)
		}
	}
	// Its unread entries are counted beside its name, in its heading.
	if !regexp.MustCompile(`<h1><bdi>TechCrunch</bdi> <small[^>]*>.*· <a href="/web/feeds/` + tc + `\?unread=1">20 unread</a></small></h1>`).MatchString(feed) {
		t.Errorf("the feed's page has no unread count in its heading")
	}
	river := w.page("/web/river", 200)
	for _, want := range []string{"Mark read", "Older", `name="key"`, "A quiet entry about gophers", "Script in the title &lt;script&gt;"} {
		if !strings.Contains(river, want) {
			t.Errorf("the river has no %q", want)
		}
	}
	search := w.page("/web/river?q=gophers+tunnels", 200)
	if !strings.Contains(search, "A quiet entry about gophers") || strings.Contains(search, "Script in the title") {
		t.Errorf("the search did not find the one entry")
	}
	if p := w.page("/web/river?q=%22%22", 200); !strings.Contains(p, "no word to look for") {
		t.Errorf("a search without a word is not explained")
	}
	w.page("/web/river?label=news&unread=1", 200)
	dash := w.page("/web/dashboard", 200)
	// Both cycles in the hour of t0: 3 feeds new, then the hostile one
	// new and the 3 others 304.
	if !strings.Contains(dash, "<title>11-21 10h: 4 success, 3 304 not modified</title>") {
		t.Errorf("the dashboard's chart has no bar of the two cycles' fetches")
	}
	for _, want := range []string{"Success vs 304 vs error", "Top feeds by new entries", "Top error codes", "Top error hosts", "saved by 304s", `<svg class="chart stack"`} {
		if !strings.Contains(dash, want) {
			t.Errorf("the dashboard has no %q", want)
		}
	}
	w.page("/web/signin", 200)

	// The hostile entry's page: its content, sanitised.
	page, err := w.cat.FeedEntries(context.Background(), hostile, catalog.EntryQuery{})
	if err != nil || len(page.Entries) != 2 {
		t.Fatalf("the hostile feed's entries: %v %v", page.Entries, err)
	}
	var entryPath string
	for _, e := range page.Entries {
		p := w.page("/web/entries/"+hostile+"/"+e.UID, 200)
		if strings.Contains(p, "Hello <b>reader</b>") {
			entryPath = "/web/entries/" + hostile + "/" + e.UID
			for _, want := range []string{`href="` + w.feeds.URL + `/relative/path"`, `rel="nofollow noreferrer noopener"`, "Goodbye."} {
				if !strings.Contains(p, want) {
					t.Errorf("the hostile entry has no %q:\n%s", want, p)
				}
			}
		}
		if strings.Contains(p, "gophers") && !strings.Contains(p, `src="`+w.feeds.URL+`/img/gopher.png"`) {
			t.Errorf("a relative image is not made absolute against the entry's link")
		}
	}
	if entryPath == "" {
		t.Fatal("no page shows the hostile entry's content")
	}

	// Every link of this site on the pages answers 200.
	seen := map[string]bool{}
	for _, body := range []string{home, feed, river, search, dash, w.page(entryPath, 200)} {
		for _, m := range hrefs.FindAllStringSubmatch(body, -1) {
			u := strings.ReplaceAll(m[1], "&amp;", "&")
			if !strings.HasPrefix(u, "/") || strings.HasPrefix(u, "//") || seen[u] {
				continue
			}
			seen[u] = true
			method := "GET"
			if u == "/web/mark" || u == "/web/signin" && strings.Contains(body, `action="/web/signin"`) || u == "/web/signout" {
				continue // forms: posted below
			}
			if r := w.do(method, u, ""); r.status != 200 {
				t.Errorf("GET %s: %d", u, r.status)
			}
		}
	}
	if len(seen) < 20 {
		t.Errorf("only %d links: %v", len(seen), seen)
	}

	// Bad input gets an HTML page saying what is wrong, never a 500.
	for path, status := range map[string]int{"/web/feeds/nope": 404, "/web/feeds/00000000-0000-5000-8000-000000000000": 404,
		"/web/entries/" + tc + "/0123456789abcdef": 404, "/web/river?cursor=x": 400, "/?reader=Bad%20Name": 400,
		"/web/nothing": 404, "/?label=.x": 400, "/web/static/nope.css": 404} {
		w.page(path, status)
	}
}

// form posts a form to the site as a browser on it would, with header
// pairs after the values.
func (w *world) form(path string, values url.Values, header ...string) reply {
	w.t.Helper()
	return w.post(path, values.Encode(), append([]string{"Origin", w.api.URL}, header...)...)
}

// post posts a form (do does not follow the answer's redirect).
func (w *world) post(path, body string, header ...string) reply {
	w.t.Helper()
	return w.do("POST", path, body, append([]string{"Content-Type", "application/x-www-form-urlencoded"}, header...)...)
}

// TestWebMark: marking needs the token, taken by the sign-in form as a
// cookie; a form from another site is refused; the catalog says read.
func TestWebMark(t *testing.T) {
	w := webWorld(t)
	ctx := context.Background()
	hostile := w.ids["hostile.rss"]
	page, err := w.cat.FeedEntries(ctx, hostile, catalog.EntryQuery{})
	if err != nil || len(page.Entries) != 2 {
		t.Fatal(err)
	}
	key := hostile + "/" + page.Entries[0].UID
	mark := url.Values{"key": {key}, "action": {"read"}, "back": {"/web/river?label=news"}}
	unread := func(reader string) int {
		t.Helper()
		n, err := w.cat.UnreadCounts(ctx, reader, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		return n[hostile].Count
	}

	// Not signed in: a page that says how.
	r := w.form("/web/mark", mark)
	if r.status != 401 || !strings.Contains(string(r.body), "serve.token") || !strings.Contains(string(r.body), `action="/web/signin"`) ||
		!strings.Contains(string(r.body), `name="next" value="/web/river?label=news"`) {
		t.Fatalf("mark without signing in: %d %s", r.status, r.body)
	}
	if unread(catalog.DefaultReader) != 2 {
		t.Fatal("marked without the token")
	}
	// A wrong token.
	r = w.form("/web/signin", url.Values{"token": {"not-the-token-at-all"}})
	if r.status != 401 || !strings.Contains(string(r.body), "not this server") || r.header.Get("Set-Cookie") != "" {
		t.Fatalf("a wrong token: %d %v %s", r.status, r.header, r.body)
	}
	// The sign-in form from another site.
	r = w.post("/web/signin", url.Values{"token": {testToken}}.Encode(), "Origin", "https://evil.example")
	if r.status != 403 || r.header.Get("Set-Cookie") != "" {
		t.Fatalf("sign-in from another origin: %d %s", r.status, r.body)
	}
	// The right one: a cookie for this site only, then back to next.
	r = w.form("/web/signin", url.Values{"token": {testToken}, "next": {"/web/river"}})
	cookie := r.header.Get("Set-Cookie")
	if r.status != 303 || r.header.Get("Location") != "/web/river" || !strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "SameSite=Strict") ||
		strings.Contains(cookie, testToken) {
		t.Fatalf("sign-in: %d %v", r.status, r.header)
	}
	c := strings.SplitN(cookie, ";", 2)[0]
	if !strings.Contains(w.page("/", 200, "Cookie", c), "Sign out") {
		t.Error("signed in, the page does not say so")
	}
	// A form from another site, or from no page at all, is refused.
	for _, h := range [][]string{{"Origin", "https://evil.example"}, {"Origin", "null"}, {"Sec-Fetch-Site", "cross-site"}, {"Sec-Fetch-Site", "same-site"}} {
		r = w.post("/web/mark", mark.Encode(), "Cookie", c, h[0], h[1])
		if r.status != 403 {
			t.Errorf("mark with %s: %s: %d", h[0], h[1], r.status)
		}
	}
	if r = w.post("/web/mark", mark.Encode(), "Cookie", c); r.status != 403 {
		t.Errorf("mark with neither Origin nor Sec-Fetch-Site: %d", r.status)
	}
	if unread(catalog.DefaultReader) != 2 {
		t.Fatal("a refused form marked")
	}
	// Marked: one entry read, and back to the page.
	r = w.form("/web/mark", mark, "Cookie", c, "Sec-Fetch-Site", "same-origin")
	if r.status != 303 || r.header.Get("Location") != "/web/river?label=news" {
		t.Fatalf("mark: %d %v %s", r.status, r.header, r.body)
	}
	if unread(catalog.DefaultReader) != 1 {
		t.Fatalf("unread after marking one: %d", unread(catalog.DefaultReader))
	}
	marks, err := w.cat.MarksOf(ctx, catalog.DefaultReader, page.Entries[:1])
	if err != nil || !marks[page.Entries[0].ID].Read {
		t.Fatalf("the catalog does not say read: %v %v", marks, err)
	}
	if p := w.page("/web/entries/"+key, 200, "Cookie", c); !strings.Contains(p, `value="unread">Mark unread`) {
		t.Error("the entry's page does not show it read")
	}
	// Another reader's marks are its own; all shown at once.
	all := url.Values{"key": {key, hostile + "/" + page.Entries[1].UID}, "action": {"read"}, "reader": {"alice"}, "back": {"//evil.example/"}}
	r = w.form("/web/mark", all, "Cookie", c)
	if r.status != 303 || r.header.Get("Location") != "/" {
		t.Fatalf("mark all: %d %v (a back to elsewhere goes home)", r.status, r.header)
	}
	if unread("alice") != 0 || unread(catalog.DefaultReader) != 1 {
		t.Errorf("alice %d, default %d unread", unread("alice"), unread(catalog.DefaultReader))
	}
	if p := w.page("/web/river?reader=alice&unread=1&label=news", 200, "Cookie", c); strings.Contains(p, "gophers") || !strings.Contains(p, `name="reader" value="alice"`) {
		t.Error("alice's unread river shows an entry she read, or forgets her")
	}
	// Bad forms.
	for _, v := range []url.Values{{"key": {key}, "action": {"burn"}}, {"key": {"x/y"}, "action": {"read"}}, {"key": {key}, "action": {"read"}, "reader": {"Bad Name"}}} {
		if r = w.form("/web/mark", v, "Cookie", c); r.status != 400 {
			t.Errorf("mark %v: %d", v, r.status)
		}
	}
	// The bearer token works as the cookie does; signing out drops the cookie.
	if r = w.form("/web/mark", url.Values{"key": {key}, "action": {"unread"}}, "Authorization", "Bearer "+testToken); r.status != 303 || unread(catalog.DefaultReader) != 2 {
		t.Errorf("mark unread with the bearer token: %d", r.status)
	}
	r = w.form("/web/signout", nil, "Cookie", c)
	if r.status != 303 || !strings.Contains(r.header.Get("Set-Cookie"), "Max-Age=0") {
		t.Errorf("sign out: %d %v", r.status, r.header)
	}
	if r = w.form("/web/mark", mark, "Cookie", sessionCookie+"=0000"); r.status != 401 {
		t.Errorf("a forged cookie: %d", r.status)
	}
	if r = w.form("/web/mark", mark, "Cookie", c); r.status != 401 {
		t.Errorf("the cookie of a session signed out still marks: %d", r.status)
	}
}

// TestWebNoToken: a server without a token says marking is off.
func TestWebNoToken(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.Token = "" })
	if p := w.page("/web/signin", 200); !strings.Contains(p, "has no token") {
		t.Error("the sign-in page does not say the server has no token")
	}
	r := w.form("/web/signin", url.Values{"token": {""}})
	if r.status != 403 {
		t.Errorf("sign in without a token: %d", r.status)
	}
	if r := w.form("/web/mark", url.Values{"key": {}, "action": {"read"}}, "Cookie", sessionCookie+"="); r.status != 401 {
		t.Errorf("mark: %d", r.status)
	}
}

// TestWebAuthReads: with --auth reads, the pages need signing in too, but
// for the sign-in page and the style sheet; a stored file the pages embed
// needs the token or the site's session.
func TestWebAuthReads(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.AuthReads = true })
	_, sum, _, e := w.podcast(t)
	if p := w.page("/web/river", 401); !strings.Contains(p, "--auth reads") || !strings.Contains(p, `name="next" value="/web/river"`) {
		t.Errorf("the river without signing in:\n%s", p)
	}
	w.page("/web/signin", 200)
	if r := w.get("/web/static/style.css"); r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/css") {
		t.Errorf("the style sheet: %d %v", r.status, r.header)
	}
	r := w.form("/web/signin", url.Values{"token": {testToken}})
	c := strings.SplitN(r.header.Get("Set-Cookie"), ";", 2)[0]
	w.page("/web/river", 200, "Cookie", c)
	w.page("/", 200, "Authorization", "Bearer "+testToken)
	if p := w.page("/web/entries/"+e.FeedID+"/"+e.EntryUID, 200, "Cookie", c); !strings.Contains(p, `src="/media/`+sum+`"`) {
		t.Errorf("the episode's page does not play its stored copy:\n%s", p)
	}
	for _, tc := range []struct {
		name   string
		header []string
		want   int
	}{
		{"the site's session", []string{"Cookie", c}, 200},
		{"the token", []string{"Authorization", "Bearer " + testToken}, 200},
		{"nothing", nil, 401},
		{"an ended session", []string{"Cookie", sessionCookie + "=nope"}, 401},
	} {
		if r := w.get("/media/"+sum, tc.header...); r.status != tc.want {
			t.Errorf("/media with %s: %d, want %d", tc.name, r.status, tc.want)
		}
	}
	// The session reads the stored files, not the rest of the API.
	if r := w.get("/feeds", "Cookie", c); r.status != 401 {
		t.Errorf("GET /feeds with the session's cookie: %d", r.status)
	}
	if r := w.do("POST", "/feeds", `{"url": "https://example.org/x.xml"}`, "Cookie", c, "Content-Type", "application/json"); r.status != 401 {
		t.Errorf("a write with the session's cookie: %d", r.status)
	}
}

// TestWebDashboardIsTheMetrics: the dashboard's totals are those of
// /metrics.
func TestWebDashboardIsTheMetrics(t *testing.T) {
	w := newWorld(t)
	m := string(w.get("/metrics").body)
	fetches := regexp.MustCompile(`(?m)^feedpipe_fetches_total\{result="ok"\} (\d+)$`).FindStringSubmatch(m)
	if fetches == nil {
		t.Fatalf("no ok fetches in /metrics:\n%s", m)
	}
	if d := w.page("/web/dashboard", 200); !strings.Contains(d, `<span class="big">`+fetches[1]+`</span> successful`) {
		t.Errorf("the dashboard's successful fetches are not /metrics' %s", fetches[1])
	}
}

// TestWebMedia: an entry's page shows the files feed-media stored for it
// from this site, by GET /media/{sha256} (played, shown, or a link for a
// type served as a file to save), each beside the publisher's URL, and
// says why a file is not stored.
func TestWebMedia(t *testing.T) {
	w := newWorld(t)
	ep, epSum, notesSum, _ := w.podcast(t)
	pic := w.mixedMedia(t)
	d := sha256.Sum256(pic)
	picSum := hex.EncodeToString(d[:])
	u := w.feeds.URL
	paths := map[string]string{}
	for _, e := range w.storedEntries() {
		paths[e.Title] = "/web/entries/" + e.FeedID + "/" + e.EntryUID
	}
	for _, tc := range []struct {
		title    string
		want     []string
		wantNone []string
	}{
		{"Episode 1", []string{`<audio controls preload="none" src="/media/` + epSum + `"></audio>`, `<a class="stored" href="/media/` + epSum + `">Stored copy</a> · audio/mpeg`,
			`<a class="orig" href="` + u + `/ep.mp3" rel="noopener noreferrer nofollow" target="_blank">original ↗</a>`}, []string{`class="enclosures"`}},
		// A page is a file to save: a link, never shown.
		{"Notes", []string{`<a class="stored" href="/media/` + notesSum + `">Stored copy</a> · text/html`, `href="` + u + `/notes.html"`},
			[]string{"<audio", "<video", `<img src="/media/`, "<script"}},
		{"A picture", []string{`<img src="/media/` + picSum + `" alt="" loading="lazy">`, `href="` + u + `/pic.png"`,
			`enclosure refused (wrong_type) · <a class="orig" href="` + u + `/wrong.png"`}, nil},
		{"Gone", []string{`enclosure failed (http_404) · <a class="orig" href="` + u + `/missing.mp3"`}, []string{"/media/"}},
		{"Too long", []string{"enclosure refused (too_large)"}, []string{"/media/"}},
		// The same episode: the one copy.
		{"Episode 1 again", []string{`<audio controls preload="none" src="/media/` + epSum + `"></audio>`}, nil},
	} {
		if paths[tc.title] == "" {
			t.Fatalf("no entry %q", tc.title)
		}
		p := w.page(paths[tc.title], 200)
		for _, want := range tc.want {
			if !strings.Contains(p, want) {
				t.Errorf("%s: the page has no %q:\n%s", tc.title, want, p)
			}
		}
		for _, bad := range tc.wantNone {
			if strings.Contains(p, bad) {
				t.Errorf("%s: the page has %q:\n%s", tc.title, bad, p)
			}
		}
	}
	// The links to the stored copies are the route's: it serves them.
	for sum, want := range map[string][]byte{epSum: ep, picSum: pic} {
		if r := w.get("/media/" + sum); r.status != 200 || !bytes.Equal(r.body, want) {
			t.Errorf("/media/%s: %d, %d bytes", sum, r.status, len(r.body))
		}
	}
}
