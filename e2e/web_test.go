package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/feedpipe/feedpipe/internal/browsertest"
	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/testserver"
)

// artifacts is the directory the test keeps its screenshots in:
// $FEEDPIPE_ARTIFACTS, or a temporary one.
func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("FEEDPIPE_ARTIFACTS")
	if dir == "" {
		return t.TempDir()
	}
	dir = filepath.Join(dir, t.Name())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestWebPage runs feed-serve on a store filled by a real pipeline run (two
// cycles over three feeds, one of them hostile: script in its titles and
// HTML) and drives its web page in a headless Chromium: every page of the
// site, every same-origin link and asset (each must answer 200), sign-in,
// marking an entry read (which the catalog must then say). It fails on a
// console error or an exception, and on any script of the feed's that
// runs (window.feedpipePwned). Screenshots are kept in $FEEDPIPE_ARTIFACTS
// (or a temporary directory), on a desktop and a phone.
func TestWebPage(t *testing.T) {
	sourcesRead(t)
	bin := browsertest.Binary(t)
	root := repoRoot(t)
	shots := artifacts(t)
	t.Logf("screenshots in %s", shots)

	// The publishers, and the pipeline over them.
	dir := t.TempDir()
	www, store := filepath.Join(dir, "www"), filepath.Join(dir, "store")
	os.MkdirAll(www, 0o755)
	for name, from := range map[string]string{"TechCrunch.xml": "testdata/feeds/TechCrunch.xml", "youtube_atom.xml": "testdata/feeds/youtube_atom.xml",
		"AmazonWebServicesBlog.xml": "testdata/feeds/AmazonWebServicesBlog.xml", "hostile.rss": "internal/serve/testdata/hostile.rss"} {
		b, err := os.ReadFile(filepath.Join(root, from))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(www, name), b, 0o644)
	}
	// The positive control of the script check: the hostile HTML with no
	// sanitiser and no policy, which runs.
	os.WriteFile(filepath.Join(www, "unsafe.html"), []byte(`<!doctype html><title>unsafe</title><img src="data:," onerror="window.feedpipePwned=1">`+
		`<script>window.feedpipePwned = 1</script>`), 0o644)
	feeds := httptest.NewServer(testserver.New(www, nil))
	defer feeds.Close()
	env := append(os.Environ(), "FEEDPIPE_STORE="+store, "FEEDPIPE_ALLOW_PRIVATE=1", "FEEDPIPE_HOST_RPS=0", "FEEDPIPE_LOG_LEVEL=warn")
	sh := func(line string) {
		t.Helper()
		cmd := exec.Command("bash", "-c", line) // a pipeline's status is feed-store's: feed-fetch fails the 404 feed
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
	}
	sh("feed-sub add --name TechCrunch --label news " + feeds.URL + "/TechCrunch.xml")
	sh("feed-sub add --label news --label cloud " + feeds.URL + "/AmazonWebServicesBlog.xml")
	sh("feed-sub add --label video " + feeds.URL + "/youtube_atom.xml")
	sh("feed-sub add --name Hostile --label news " + feeds.URL + "/hostile.rss")
	sh("feed-sub add --name Gone --label news " + feeds.URL + "/status/404")
	cycle := "feed-fetch | feed-parse | feed-scrape | feed-dedup | feed-store >/dev/null"
	sh("feed-due | " + cycle)
	sh("feed-due --all | " + cycle) // 304s, for the charts

	// feed-serve, on a port of its choosing.
	base, _ := startServe(t, env)
	token, err := os.ReadFile(filepath.Join(store, "serve.token"))
	if err != nil {
		t.Fatal(err)
	}

	// The browser: no network beyond loopback (an entry's images from
	// elsewhere fail at once, as they would offline).
	ctx := browsertest.Start(t, bin)
	var (
		mu       sync.Mutex
		problems []string
	)
	console := chromedp.Console(ctx)
	go func() {
		for m, err := range console {
			if err != nil {
				return
			}
			// An image of an entry's, from elsewhere, cannot load here:
			// the network, not the page.
			if m.Source == "network" && !strings.HasPrefix(m.URL, base) {
				continue
			}
			if m.IsException() || m.Type == chromedp.ConsoleError {
				mu.Lock()
				problems = append(problems, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line+1))
				mu.Unlock()
			}
		}
	}()
	run := func(actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(tctx, actions...); err != nil {
			t.Fatal(err)
		}
	}
	pwned := func(where string) {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.feedpipePwned !== undefined`))
		if err != nil {
			t.Fatal(err)
		}
		if v {
			t.Errorf("a script from the feed ran on %s", where)
		}
	}
	shot := func(name string) {
		t.Helper()
		b, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(shots, name+".png"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	status := func(u string) int {
		resp, err := client.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}

	// The control: the same script check sees a script that runs.
	run(chromedp.Navigate(feeds.URL + "/unsafe.html"))
	if v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.feedpipePwned === 1`)); err != nil || !v {
		t.Fatalf("the control's script did not run (%v): the check would see nothing", err)
	}

	// Every page of the site, from the feed list, following its links
	// (pages: the site's; every other same-origin link and asset: 200).
	const linksJS = `Array.from(document.querySelectorAll("a[href], link[href], img[src], form[action]")).map(e =>
		new URL(e.getAttribute("href") || e.getAttribute("src") || e.getAttribute("action"), location.href).href)` // an SVG a's href is no string
	queue, seen, pages := []string{base + "/"}, map[string]bool{base + "/": true}, 0
	kinds := map[string]bool{}
	for len(queue) > 0 && pages < 60 {
		u := queue[0]
		queue = queue[1:]
		resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(u))
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		if resp.Status != 200 {
			t.Errorf("%s: %d", u, resp.Status)
		}
		pages++
		pwned(u)
		links, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](linksJS))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links {
			l, _, _ = strings.Cut(l, "#")
			if !strings.HasPrefix(l, base+"/") || seen[l] {
				continue
			}
			seen[l] = true
			p, _ := url.Parse(l)
			switch {
			case p.Path == "/web/mark" || p.Path == "/web/signout" || p.Path == "/web/signin" && p.RawQuery == "":
				// forms, posted below
			case p.Path == "/" || strings.HasPrefix(p.Path, "/web/") && !strings.HasPrefix(p.Path, "/web/static/"):
				kind := strings.SplitN(strings.TrimPrefix(p.Path, "/web/"), "/", 2)[0]
				// Every kind of page, and a few of each (not every entry).
				if !kinds[kind+p.RawQuery] || len(queue) < 25 {
					kinds[kind+p.RawQuery] = true
					queue = append(queue, l)
				} else if s := status(l); s != 200 {
					t.Errorf("a link of the site, %s: %d", l, s)
				}
			default:
				if s := status(l); s != 200 {
					t.Errorf("a link or asset of the site, %s: %d", l, s)
				}
			}
		}
	}
	for _, want := range []string{"/", "/web/river", "/web/dashboard"} {
		if !seen[base+want] {
			t.Errorf("no link to %s", want)
		}
	}
	if pages < 15 {
		t.Errorf("only %d pages driven", pages)
	}
	t.Logf("%d pages driven, %d same-origin links and assets checked", pages, len(seen))

	// Screenshots of each page on a desktop; the hostile entry, its links
	// clicked.
	db := mustCatalog(t, store)
	defer db.Close()
	subs, err := db.Subscriptions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, s := range subs {
		ids[s.Name] = s.FeedID
	}
	hostile, err := db.FeedEntries(context.Background(), ids["Hostile"], catalog.EntryQuery{})
	if err != nil || len(hostile.Entries) != 2 {
		t.Fatalf("the hostile feed's entries: %v %v", hostile.Entries, err)
	}
	run(chromedp.Navigate(base + "/"))
	shot("feeds") // docs/img/feed-serve.png
	run(chromedp.Navigate(base + "/web/feeds/" + ids["TechCrunch"]))
	shot("feed")
	run(chromedp.Navigate(base + "/web/dashboard"))
	shot("dashboard")
	run(chromedp.Navigate(base + "/web/river?q=gophers"))
	shot("search")
	for _, e := range hostile.Entries {
		run(chromedp.Navigate(base+"/web/entries/"+ids["Hostile"]+"/"+e.UID), chromedp.Sleep(300*time.Millisecond))
		pwned("the hostile entry " + e.UID)
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(".content a").length`))
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			// A click on each link of the content, javascript: ones
			// included: none runs, none leaves the page for a script.
			if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const a = document.querySelectorAll(".content a")[%d]; if (!a.href.startsWith("http")) a.click(); })()`, i))); err != nil {
				t.Fatal(err)
			}
		}
		pwned("the hostile entry's links")
		shot("entry-" + e.UID)
	}

	// Sign in, with a wrong token first.
	run(chromedp.Navigate(base+"/web/signin?next=/web/river%3Flabel%3Dnews"), chromedp.SendKeys(chromedp.ID("token"), "not-the-token-0123456789"))
	if _, err := chromedp.Run(ctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS(".signin-form button")))); err != nil {
		t.Fatal(err)
	}
	if txt, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main"))); err != nil || !strings.Contains(txt, "not this server's token") {
		t.Fatalf("a wrong token: %q %v", txt, err)
	}
	shot("signin-wrong")
	// The 401 of the wrong token is the one console error expected.
	run(chromedp.Sleep(200 * time.Millisecond))
	mu.Lock()
	problems = slices.DeleteFunc(problems, func(p string) bool { return strings.Contains(p, "status of 401") && strings.Contains(p, "/web/signin") })
	mu.Unlock()
	run(chromedp.SendKeys(chromedp.ID("token"), strings.TrimSpace(string(token))))
	if _, err := chromedp.Run(ctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS(".signin-form button")))); err != nil {
		t.Fatal(err)
	}
	if loc, err := chromedp.Run(ctx, chromedp.Location()); err != nil || loc != base+"/web/river?label=news" {
		t.Fatalf("after signing in: %s %v", loc, err)
	}
	// Mark the first entry of the river read, by its button.
	key, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector(".entry form input[name=key]").value`))
	if err != nil {
		t.Fatal(err)
	}
	feedID, uid, _ := strings.Cut(key, "/")
	before := unreadOf(t, db, feedID)
	if _, err := chromedp.Run(ctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS(".entry button[value=read]")))); err != nil {
		t.Fatal(err)
	}
	if after := unreadOf(t, db, feedID); after != before-1 {
		t.Errorf("unread entries of the feed: %d before marking one read, %d after", before, after)
	}
	rows, _, err := db.EntriesByUID(context.Background(), uid)
	if err != nil {
		t.Fatal(err)
	}
	marks, err := db.MarksOf(context.Background(), catalog.DefaultReader, rows)
	if err != nil || len(rows) == 0 || !marks[rows[0].ID].Read {
		t.Fatalf("the catalog does not say %s read: %v %v", key, marks, err)
	}
	if txt, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(".entry"))); err != nil || !strings.Contains(txt, "Mark unread") {
		t.Errorf("the river does not show the entry read: %q %v", txt, err)
	}
	shot("river-signed-in")
	if b, err := chromedp.Run(ctx, chromedp.CaptureScreenshot()); err == nil {
		os.WriteFile(filepath.Join(shots, "river.png"), b, 0o644) // the screen a reader sees first
	}
	// Mark all shown read.
	if _, err := chromedp.Run(ctx, chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS(".markall button")))); err != nil {
		t.Fatal(err)
	}
	if n := unreadOf(t, db, ids["Hostile"]); n != 0 {
		t.Errorf("after marking all shown read, the hostile feed has %d unread", n)
	}

	// On a phone: no page is wider than its screen.
	run(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile))
	const widest = `(() => { let w = null; for (const e of document.querySelectorAll("body *")) { const r = e.getBoundingClientRect();
		const spills = e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX === "visible" && !(e instanceof SVGElement);
		if (r.width > 0 && (r.right > innerWidth + 1 || spills) && !e.closest(".scroll, .content table, pre")) { w = e.tagName + "." + e.className + " " + Math.round(r.right); break; } } return w || ""; })()`
	for name, p := range map[string]string{"feeds": "/", "feed": "/web/feeds/" + ids["TechCrunch"], "dashboard": "/web/dashboard", "river": "/web/river",
		"entry": "/web/entries/" + ids["Hostile"] + "/" + hostile.Entries[0].UID} {
		run(chromedp.Navigate(base + p))
		if wide, err := chromedp.Run(ctx, chromedp.Evaluate[string](widest)); err != nil || wide != "" {
			t.Errorf("%s is wider than a phone's screen: %s %v", p, wide, err)
		}
		b, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(shots, "phone-"+name+".png"), b, 0o644)
	}

	run(chromedp.Sleep(200 * time.Millisecond)) // the last messages arrive
	mu.Lock()
	defer mu.Unlock()
	for _, p := range slices.Compact(problems) {
		t.Errorf("console: %s", p)
	}
}

func unreadOf(t *testing.T, db *catalog.Catalog, feedID string) int {
	t.Helper()
	n, err := db.UnreadCounts(context.Background(), catalog.DefaultReader, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return n[feedID].Count
}

func mustStore(t *testing.T, dir string) *storedir.Store {
	t.Helper()
	st, err := storedir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// mustCatalog opens the catalog of the store at dir, for a test to look
// inside; the caller closes it.
func mustCatalog(t *testing.T, dir string) *catalog.Catalog {
	t.Helper()
	cat, err := catalog.Open(context.Background(), mustStore(t, dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}
