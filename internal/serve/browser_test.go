package serve

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/feedpipe/feedpipe/internal/browsertest"
	"github.com/feedpipe/feedpipe/internal/sub"
)

// browse runs a headless Chromium on url until ctx is done.
func browse(ctx context.Context, t *testing.T, bin, url string, extra ...string) *exec.Cmd {
	t.Helper()
	args := append([]string{"--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
		"--user-data-dir=" + t.TempDir()}, extra...)
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	return cmd
}

// page is the test page: it calls the API from another origin (fetch, a
// write with its preflight, an EventSource that reconnects), and reports
// each outcome to its own origin's /report.
const page = `<!doctype html><meta charset="utf-8"><title>feedpipe browser test</title><script>
const api = "API";
function report(k, v) { fetch("/report?" + new URLSearchParams({k: k, v: String(v)}), {method: "POST"}); }
// The write waits for the read, which counts the feeds before it.
fetch(api + "/feeds").then(r => r.json()).then(j => report("feeds", j.feeds.length)).catch(e => report("feeds", "blocked"))
  .then(() => fetch(api + "/feeds", {method: "POST", headers: {"Authorization": "Bearer TOKEN", "Content-Type": "application/json"},
    body: JSON.stringify({url: "FEED"})})).then(r => report("post", r.status)).catch(e => report("post", "blocked"));
let n = 0, ids = [];
const es = new EventSource(api + "/events/stream?since=2000-01-01T00:00:00Z");
es.addEventListener("new_entry", e => {
  n++; ids.push(e.lastEventId);
  if (n == 3) { report("events", n + " " + JSON.parse(e.data).entry_uid.length); es.close(); }
});
es.onerror = () => { if (n == 0) report("events", "blocked"); };
</script>`

// TestBrowser: a real browser calls the API from the origin --cors allows
// (reads, a write with its preflight, the event stream) and is refused from
// another; an HTML payload is served by /raw as a download.
func TestBrowser(t *testing.T) {
	bin := browsertest.Binary(t)
	var (
		mu                sync.Mutex
		pageAPI, pageFeed string                           // the addresses the page calls, set once the servers run
		reports           = map[string]map[string]string{} // by origin server
		got               = make(chan struct{}, 16)
	)
	pageServer := func(name string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/report" {
				mu.Lock()
				if reports[name] == nil {
					reports[name] = map[string]string{}
				}
				reports[name][r.URL.Query().Get("k")] = r.URL.Query().Get("v")
				mu.Unlock()
				got <- struct{}{}
				return
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			mu.Lock()
			html := strings.NewReplacer("API", pageAPI, "TOKEN", testToken, "FEED", pageFeed).Replace(page)
			mu.Unlock()
			io.WriteString(w, html)
		}))
	}
	allowed, other := pageServer("allowed"), pageServer("other")
	defer allowed.Close()
	defer other.Close()
	w := newWorld(t, func(c *Config) { c.CORS = allowed.URL })
	mu.Lock()
	pageAPI, pageFeed = w.api.URL, w.feeds.URL+"/json_feed.json"
	mu.Unlock()
	os.WriteFile(filepath.Join(w.www, "json_feed.json"), mustRead(t, "json_feed.json"), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, srv := range []*httptest.Server{allowed, other} {
		cmd := browse(ctx, t, bin, srv.URL+"/")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cmd.Process.Kill(); cmd.Wait() }()
	}
	want := map[string]map[string]string{
		"allowed": {"feeds": "3", "post": "201", "events": "3 16"},
		"other":   {"feeds": "blocked", "post": "blocked", "events": "blocked"},
	}
	for done := false; !done; {
		select {
		case <-got:
		case <-ctx.Done():
			t.Fatalf("the browser reported %v, want %v", reports, want)
		}
		mu.Lock()
		done = len(reports["allowed"]) == 3 && len(reports["other"]) == 3
		mu.Unlock()
	}
	for origin, kv := range want {
		for k, v := range kv {
			if reports[origin][k] != v {
				t.Errorf("from the %s origin, %s: %q, want %q", origin, k, reports[origin][k], v)
			}
		}
	}

	// A payload with a script: the browser shows it and runs nothing.
	os.WriteFile(filepath.Join(w.www, "page.html"), []byte(`<!doctype html><html><head><title>original</title></head>
<body><p id="p">kept</p><script>document.title = "ran"; document.getElementById("p").textContent = "changed";</script></body></html>`), 0o644)
	s, _, err := sub.Add(sub.Config{Store: w.st, Catalog: w.cat, Out: io.Discard}, sub.Spec{URL: w.feeds.URL + "/page.html"})
	if err != nil {
		t.Fatal(err)
	}
	w.cycle(t0.Add(time.Hour))
	ref, ok, err := w.cat.LatestPayload(context.Background(), s.FeedID)
	if err != nil || !ok {
		t.Fatalf("no payload of the page: %v", err)
	}
	// Served as nothing a browser opens: it is saved, not shown, and even
	// a browser that showed it would run no script in it.
	r := w.get("/raw/" + ref.FetchID)
	h := r.header
	if r.status != 200 || h.Get("Content-Type") != "application/octet-stream" || h.Get("Content-Disposition") != "attachment" ||
		h.Get("X-Content-Type-Options") != "nosniff" || !strings.HasPrefix(h.Get("Content-Security-Policy"), "sandbox") ||
		string(r.body) != string(mustReadFile(t, filepath.Join(w.www, "page.html"))) {
		t.Errorf("/raw of an HTML page: %d %v", r.status, h)
	}
}

func mustReadFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBidiIsolated: in a real browser, a feed name with a U+202E (right-
// to-left override) reorders nothing after it on the river's lines: the
// time stays to the right of the name. The same line without isolation
// (unicode-bidi: normal, set by the test) shows the check can fail.
func TestBidiIsolated(t *testing.T) {
	bin := browsertest.Binary(t)
	w := newWorld(t)
	os.WriteFile(filepath.Join(w.www, "bidi.rss"), []byte(`<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel>
<title>Evil&#x202e;eman and more</title><link>https://evil.example/</link>
<item><title>One</title><link>https://evil.example/1</link><pubDate>Sat, 21 Nov 2026 09:00:00 GMT</pubDate></item></channel></rss>`), 0o644)
	if _, _, err := sub.Add(sub.Config{Store: w.st, Catalog: w.cat, Out: io.Discard}, sub.Spec{URL: w.feeds.URL + "/bidi.rss"}); err != nil {
		t.Fatal(err)
	}
	w.cycle(t0.Add(time.Hour))
	ctx, cancelT := context.WithTimeout(browsertest.Start(t, bin), 60*time.Second)
	defer cancelT()
	if err := chromedp.Do(ctx, chromedp.Navigate(w.api.URL+"/web/river")); err != nil {
		t.Fatal(err)
	}
	// How far right of the name's last box the time begins, on the line of
	// the entry whose feed name holds the override; isolate false first
	// takes the isolation off.
	gap := func(isolate bool) float64 {
		t.Helper()
		js := `((isolate) => {
			for (const m of document.querySelectorAll(".entry .meta")) {
				const a = m.querySelector("a");
				if (!a.textContent.includes("\u202e")) continue;
				if (!isolate) a.style.unicodeBidi = "normal";
				const right = Math.max(...[...a.getClientRects()].map(r => r.right));
				return m.querySelector("time").getBoundingClientRect().left - right;
			}
			return -1e9;
		})(` + strconv.FormatBool(isolate) + `)`
		v, err := chromedp.Run(ctx, chromedp.Evaluate[float64](js))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if g := gap(true); g < 0 {
		t.Errorf("the time is %.0f px left of the feed's name: the override reordered the line", -g)
	}
	if g := gap(false); g >= 0 {
		t.Errorf("without isolation the time is still right of the name (%.0f px): the check cannot fail", g)
	}
}

// TestBrowserMedia: in a real browser, under the page's policy, an entry's
// page shows the image feedpipe stored from this site's /media.
func TestBrowserMedia(t *testing.T) {
	bin := browsertest.Binary(t)
	w := newWorld(t)
	w.podcast(t)
	w.mixedMedia(t)
	var path string
	for _, e := range w.storedEntries() {
		if e.Title == "A picture" {
			path = "/web/entries/" + e.FeedID + "/" + e.EntryUID
		}
	}
	ctx, cancel := context.WithTimeout(browsertest.Start(t, bin), 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(w.api.URL+path)); err != nil {
		t.Fatal(err)
	}
	// The image's size once it is decoded: 3x2, as stored; 0x0 if the
	// policy or the route kept it from the page.
	js := `(() => { const img = document.querySelector(".media img"); return img && img.complete ? img.naturalWidth + "x" + img.naturalHeight : ""; })()`
	for {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatal(err)
		}
		if got == "3x2" {
			return
		}
		if got != "" {
			t.Fatalf("the stored image is %q in the page, want 3x2", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
