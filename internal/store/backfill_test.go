package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/due"
	"github.com/feedpipe/feedpipe/internal/fetch"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/parse"
	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/sub"
	"github.com/feedpipe/feedpipe/internal/testenv"
	"github.com/feedpipe/feedpipe/internal/testserver"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// archiveDoc is an Atom document with two entries per page (dated in
// 2020, by page), and its links: rel names the link onward (prev-archive,
// next), onward its target ("" for none).
func archiveDoc(page int, rel, onward string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom" xmlns:fh="http://purl.org/syndication/history/1.0"><title>Archived</title><id>urn:archived</id><updated>2026-11-20T00:00:00Z</updated>`)
	if onward != "" {
		fmt.Fprintf(&b, `<link rel="%s" href="%s"/>`, rel, onward)
	}
	for i := range 2 {
		d := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(page*2+i) * 24 * time.Hour)
		fmt.Fprintf(&b, `<entry><id>urn:archived:%d-%d</id><title>page %d item %d</title><link href="https://archived.example/%d/%d"/><published>%s</published><updated>%s</updated></entry>`,
			page, i, page, i, page, i, d.Format(time.RFC3339), d.Format(time.RFC3339))
	}
	b.WriteString(`</feed>`)
	return b.String()
}

// events counts the event lines of type typ in out.
func events(out, typ string) int { return strings.Count(out, `{"type":"`+typ+`"`) }

// walkOf is the feed's walk.
func walkOf(t *testing.T, st *storedir.Store, feedID string, day time.Time) *catalog.Walk {
	t.Helper()
	cat, err := catalog.Open(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	ws, err := cat.Walks(context.Background(), day.UTC().Truncate(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return ws[feedID]
}

// backfillWorld is a world that logs its server's requests.
func backfillWorld(t *testing.T) (*world, *testenv.Buffer) {
	t.Helper()
	w := newWorld(t)
	log := &testenv.Buffer{}
	w.h.Log = log
	for _, d := range []string{"archive", "loop", "broken", "paged"} {
		if err := os.MkdirAll(filepath.Join(w.www, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return w, log
}

// TestBackfillChain walks an archive of 30 pages (RFC 5005 §4): one page a
// run, 20 a day at most, each fetched once; its 60 entries stored as
// history (backfilled_entry, first_seen their published time), the
// current document's as news.
func TestBackfillChain(t *testing.T) {
	w, log := backfillWorld(t)
	for n := 1; n <= 30; n++ {
		prev := ""
		if n > 1 {
			prev = fmt.Sprintf("/archive/%d.xml", n-1)
		}
		w.serve(fmt.Sprintf("archive/%d.xml", n), archiveDoc(n, "prev-archive", prev))
	}
	w.serve("feed.xml", strings.Replace(archiveDoc(99, "prev-archive", "/archive/30.xml"), "urn:archived:99", "urn:current:99", -1))
	id := w.subscribe("/feed.xml")
	on := true
	if err := sub.Set(sub.Config{Store: w.st, Out: io.Discard}, []string{id}, sub.Changes{Backfill: &on}); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 21, 0, 30, 0, 0, time.UTC)
	var out strings.Builder
	for h := range 40 {
		out.WriteString(w.cycle(start.Add(time.Duration(h) * time.Hour)))
		if h == 23 {
			if wk := walkOf(t, w.st, id, start.Add(23*time.Hour)); wk.Pages != 20 || wk.State != catalog.WalkWalking || wk.PagesToday != 20 {
				t.Fatalf("at the day's end: %+v", wk)
			}
		}
	}
	wk := walkOf(t, w.st, id, start.Add(40*time.Hour))
	if wk.State != catalog.WalkDone || wk.Pages != 30 || wk.Entries != 60 || !strings.HasPrefix(wk.Reason, "end") {
		t.Fatalf("walk %+v", wk)
	}
	all := out.String()
	if n := events(all, ndjson.TypeBackfilledEntry); n != 60 {
		t.Errorf("%d backfilled_entry events, want 60", n)
	}
	if n := events(all, ndjson.TypeNewEntry); n != 2 {
		t.Errorf("%d new_entry events, want the current document's 2", n)
	}
	for n := 1; n <= 30; n++ {
		if c := strings.Count(log.String(), fmt.Sprintf("GET /archive/%d.xml ", n)); c != 1 {
			t.Errorf("page %d fetched %d times", n, c)
		}
	}
	for _, e := range storedEntries(t, w.st) {
		if strings.HasPrefix(e.NativeID, "urn:archived:") && (e.Status != ndjson.StatusBackfilled || !e.FirstSeen.Equal(e.Published.Time)) {
			t.Errorf("history entry %s: status %s, first_seen %v, published %v", e.NativeID, e.Status, e.FirstSeen, e.Published)
		}
	}
}

// cycleWith is cycle with the HTTP client of feed-fetch (and the
// clients of feed-due's run: none).
func (w *world) cycleWith(now time.Time, client *httpx.Client) string {
	w.t.Helper()
	var dues, fetched bytes.Buffer
	if err := due.Run(due.Config{Out: ndjson.NewWriter(&dues), Store: w.st, Now: now, All: true}); err != nil {
		w.t.Fatal(err)
	}
	err := fetch.Run(context.Background(), fetch.Config{In: &dues, Out: ndjson.NewWriter(&fetched), Store: w.st,
		Client: client, Limiter: httpx.NewLimiter(8, 0, nil), Clock: atClock{now}})
	if err != nil && !errors.Is(err, pipe.ErrFailed) {
		w.t.Fatal(err)
	}
	return w.store(&fetched, parse.DefaultParser, now)
}

// TestBackfillEnds: a loop, a broken link mid-chain (asked again by hand,
// it resumes there), and a paged feed (RFC 5005 §3, next) walked to its
// end.
func TestBackfillEnds(t *testing.T) {
	w, log := backfillWorld(t)
	// A loop: 3 -> 2 -> 3.
	w.serve("loop/feed.xml", archiveDoc(10, "prev-archive", "/loop/3.xml"))
	w.serve("loop/3.xml", archiveDoc(13, "prev-archive", "/loop/2.xml"))
	w.serve("loop/2.xml", archiveDoc(12, "prev-archive", "/loop/3.xml"))
	// A broken link: 2 is missing.
	w.serve("broken/feed.xml", archiveDoc(20, "prev-archive", "/broken/3.xml"))
	w.serve("broken/3.xml", archiveDoc(23, "prev-archive", "/broken/2.xml"))
	w.serve("broken/1.xml", archiveDoc(21, "prev-archive", ""))
	// Paged: feed -> page2 -> page3.
	w.serve("paged/feed.xml", archiveDoc(30, "next", "/paged/page2.xml"))
	w.serve("paged/page2.xml", archiveDoc(32, "next", "/paged/page3.xml"))
	w.serve("paged/page3.xml", archiveDoc(33, "next", ""))
	ids := map[string]string{}
	cfg := sub.Config{Store: w.st, Out: io.Discard}
	for _, name := range []string{"loop", "broken", "paged"} {
		ids[name] = w.subscribe("/" + name + "/feed.xml")
	}
	if err := sub.Backfill(cfg, []string{ids["loop"], ids["broken"], ids["paged"]}); err != nil {
		t.Fatal(err)
	}
	for h := range 5 {
		w.cycle(t0.Add(time.Duration(h) * time.Hour))
	}
	if wk := walkOf(t, w.st, ids["loop"], t0); wk.State != catalog.WalkStopped || !strings.HasPrefix(wk.Reason, "loop: ") || wk.Pages != 2 {
		t.Errorf("loop: %+v", wk)
	}
	if wk := walkOf(t, w.st, ids["broken"], t0); wk.State != catalog.WalkStopped || !strings.Contains(wk.Reason, "http_404") || wk.Pages != 1 {
		t.Errorf("broken: %+v", wk)
	}
	if wk := walkOf(t, w.st, ids["paged"], t0); wk.State != catalog.WalkDone || wk.Kind != catalog.WalkPaged || wk.Pages != 2 {
		t.Errorf("paged: %+v", wk)
	}
	if c := strings.Count(log.String(), "GET /loop/3.xml "); c != 1 {
		t.Errorf("loop/3 fetched %d times", c)
	}
	// The missing page appears; asked again, the walk resumes there.
	w.serve("broken/2.xml", archiveDoc(22, "prev-archive", "/broken/1.xml"))
	if err := sub.Backfill(cfg, []string{ids["broken"]}); err != nil {
		t.Fatal(err)
	}
	for h := 5; h < 8; h++ {
		w.cycle(t0.Add(time.Duration(h) * time.Hour))
	}
	if wk := walkOf(t, w.st, ids["broken"], t0); wk.State != catalog.WalkDone || wk.Pages != 3 {
		t.Errorf("resumed: %+v", wk)
	}
}

// TestBackfillOtherHost: an archive on another host is fetched under the
// same rules as the feed: refused on a private address the feed may not
// reach (the walk stops, saying so), and at that host's own pace.
func TestBackfillOtherHost(t *testing.T) {
	w := newWorld(t)
	other := httptest.NewServer(testserver.New(w.www, io.Discard))
	defer other.Close()
	w.serve("feed.xml", archiveDoc(1, "prev-archive", other.URL+"/far.xml"))
	w.serve("far.xml", archiveDoc(2, "prev-archive", ""))
	id := w.subscribe("/feed.xml")
	on, private := true, true
	cfg := sub.Config{Store: w.st, Out: io.Discard}
	if err := sub.Set(cfg, []string{id}, sub.Changes{Backfill: &on, AllowPrivate: &private}); err != nil {
		t.Fatal(err)
	}
	// The feed reaches private addresses: its first poll, with a client
	// that allows them only to the feeds allowed them.
	client := httpx.New(httpx.Options{})
	w.cycleWith(t0, client)
	// Not allowed any more: the archive page, on a loopback address, is
	// refused like any fetch of the feed.
	private = false
	if err := sub.Set(cfg, []string{id}, sub.Changes{AllowPrivate: &private}); err != nil {
		t.Fatal(err)
	}
	w.cycleWith(t0.Add(time.Hour), client)
	if wk := walkOf(t, w.st, id, t0); wk.State != catalog.WalkStopped || !strings.Contains(wk.Reason, "address_refused") {
		t.Fatalf("refused: %+v", wk)
	}
	// Allowed again and asked for by hand, it reads the page on the other
	// host.
	private = true
	if err := sub.Set(cfg, []string{id}, sub.Changes{AllowPrivate: &private}); err != nil {
		t.Fatal(err)
	}
	if err := sub.Backfill(cfg, []string{id}); err != nil {
		t.Fatal(err)
	}
	w.cycleWith(t0.Add(2*time.Hour), client)
	if wk := walkOf(t, w.st, id, t0); wk.State != catalog.WalkDone || wk.Pages != 1 {
		t.Fatalf("other host: %+v", wk)
	}
}

// TestBackfillPoliteness: archive pages wait their turn at their host,
// as every fetch does.
func TestBackfillPoliteness(t *testing.T) {
	w := newWorld(t)
	var feeds []string
	for i := range 3 {
		w.serve(fmt.Sprintf("f%d.xml", i), archiveDoc(i, "prev-archive", fmt.Sprintf("/a%d.xml", i)))
		w.serve(fmt.Sprintf("a%d.xml", i), archiveDoc(10+i, "prev-archive", ""))
		feeds = append(feeds, w.subscribe(fmt.Sprintf("/f%d.xml", i)))
	}
	w.cycle(t0)
	if err := sub.Backfill(sub.Config{Store: w.st, Out: io.Discard}, feeds); err != nil {
		t.Fatal(err)
	}
	var dues, fetched bytes.Buffer
	if err := due.Run(due.Config{Out: ndjson.NewWriter(&dues), Store: w.st, Now: t0.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(dues.String(), `"reason":"archive"`); n != 3 {
		t.Fatalf("%d archive pages due: %s", n, dues.String())
	}
	began := time.Now()
	err := fetch.Run(context.Background(), fetch.Config{In: &dues, Out: ndjson.NewWriter(&fetched), Store: w.st,
		Client: httpx.New(httpx.Options{AllowPrivate: true}), Limiter: httpx.NewLimiter(1, 10, nil)})
	if err != nil && !errors.Is(err, pipe.ErrFailed) {
		t.Fatal(err)
	}
	if took := time.Since(began); took < 150*time.Millisecond {
		t.Errorf("3 pages of one host at 10 a second took %v", took)
	}
	w.store(&fetched, parse.DefaultParser, t0.Add(time.Minute))
}

// TestBackfillKilledMidWalk: a run stopped after feed-fetch fetched an
// archive page and before feed-store read it goes on where it was: the
// page's record is passed on, not fetched again.
func TestBackfillKilledMidWalk(t *testing.T) {
	w, log := backfillWorld(t)
	w.serve("feed.xml", archiveDoc(1, "prev-archive", "/a2.xml"))
	w.serve("a2.xml", archiveDoc(2, "prev-archive", "/a3.xml"))
	w.serve("a3.xml", archiveDoc(3, "prev-archive", ""))
	id := w.subscribe("/feed.xml")
	if err := sub.Backfill(sub.Config{Store: w.st, Out: io.Discard}, []string{id}); err != nil {
		t.Fatal(err)
	}
	w.cycle(t0)
	// The run that fetches a2 stops before feed-parse: its output is lost.
	var dues bytes.Buffer
	if err := due.Run(due.Config{Out: ndjson.NewWriter(&dues), Store: w.st, Now: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := fetch.Run(context.Background(), fetch.Config{In: &dues, Out: ndjson.NewWriter(io.Discard), Store: w.st,
		Client: httpx.New(httpx.Options{AllowPrivate: true}), Limiter: httpx.NewLimiter(8, 0, nil), Clock: atClock{t0.Add(time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	for h := 2; h < 5; h++ {
		w.cycle(t0.Add(time.Duration(h) * time.Hour))
	}
	if c := strings.Count(log.String(), "GET /a2.xml "); c != 1 {
		t.Errorf("a2 fetched %d times", c)
	}
	if wk := walkOf(t, w.st, id, t0); wk.State != catalog.WalkDone || wk.Pages != 2 || wk.Entries != 4 {
		t.Errorf("walk %+v", wk)
	}
}
