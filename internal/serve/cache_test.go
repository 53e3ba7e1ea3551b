package serve

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/testenv"
	"github.com/feedpipe/feedpipe/internal/testids"
)

func cacheServer(t *testing.T) *Server {
	t.Helper()
	_, cat := testenv.Store(t)
	return &Server{cat: cat, changes: changeTracker{cat: cat}}
}

// commit commits a change of anything to the catalog, as feed-store
// prune's does.
func commit(t *testing.T, s *Server) {
	t.Helper()
	if _, _, err := s.cat.ForgetEntryDays(context.Background(), "2000-01-01", false); err != nil {
		t.Fatal(err)
	}
}

func get(s *Server, handle func(http.ResponseWriter, *http.Request)) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	s.serveCached(rec, httptest.NewRequest("GET", "/feeds", nil), catalogRead, handle)
	return rec
}

// Many requests for an answer being made wait for that make: the handler
// runs once, and each gets the answer with its ETag.
func TestCacheOneMakeForMany(t *testing.T) {
	s := cacheServer(t)
	var runs atomic.Int32
	release := make(chan struct{})
	handle := func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		<-release
		send(w, r, 200, "application/json", []byte(`{"n":1}`+"\n"), time.Time{})
	}
	var wg sync.WaitGroup
	codes := make([]int, 50)
	wg.Add(1)
	go func() { defer wg.Done(); codes[0] = get(s, handle).Code }()
	for runs.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	for i := 1; i < len(codes); i++ {
		wg.Add(1)
		go func() { defer wg.Done(); codes[i] = get(s, handle).Code }()
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	// The 49 came after the first make began: they wait for the next, which
	// finds the first one's answer kept for the same catalog.
	if n := runs.Load(); n != 1 {
		t.Errorf("the handler ran %d times, want 1", n)
	}
	for i, c := range codes {
		if c != 200 {
			t.Errorf("request %d: %d", i, c)
		}
	}
}

// A request that comes while an answer is being made, after the catalog
// changed, does not get that answer (of the catalog before): it gets one
// made after it came.
func TestCacheNoOlderAnswer(t *testing.T) {
	s := cacheServer(t)
	commit(t, s)
	var runs atomic.Int32
	started, release := make(chan struct{}), make(chan struct{})
	handle := func(w http.ResponseWriter, r *http.Request) {
		n := runs.Add(1)
		if n == 1 {
			close(started)
			<-release
		}
		send(w, r, 200, "text/plain", []byte{'0' + byte(n)}, time.Time{})
	}
	first := make(chan *httptest.ResponseRecorder)
	go func() { first <- get(s, handle) }()
	<-started
	commit(t, s) // a commit while the first answer is made
	second := make(chan *httptest.ResponseRecorder)
	go func() { second <- get(s, handle) }()
	time.Sleep(20 * time.Millisecond)
	close(release)
	a, b := <-first, <-second
	if a.Body.String() != "1" || b.Body.String() != "2" {
		t.Errorf("answers %q and %q, want 1 and 2", a.Body, b.Body)
	}
	if a.Header().Get("ETag") == b.Header().Get("ETag") {
		t.Errorf("two bodies, one ETag %s", a.Header().Get("ETag"))
	}
	// Kept: a third request for the same catalog gets the second answer,
	// and a 304 when it has it.
	r := httptest.NewRequest("GET", "/feeds", nil)
	r.Header.Set("If-None-Match", b.Header().Get("ETag"))
	rec := httptest.NewRecorder()
	s.serveCached(rec, r, catalogRead, handle)
	if rec.Code != http.StatusNotModified || runs.Load() != 2 {
		t.Errorf("a third request: %d after %d makes, want 304 after 2", rec.Code, runs.Load())
	}
}

// A meta-feed's answer serves for its linger whatever the catalog's
// commits since; then, and for any other route at once, a commit makes
// it anew.
func TestCacheMetaFeedLinger(t *testing.T) {
	s := cacheServer(t)
	commit(t, s)
	var runs atomic.Int32
	handle := func(w http.ResponseWriter, r *http.Request) {
		n := runs.Add(1)
		send(w, r, 200, "application/atom+xml", []byte{'0' + byte(n)}, time.Time{})
	}
	const linger = 300 * time.Millisecond
	ask := func(uri string, linger time.Duration) string {
		rec := httptest.NewRecorder()
		s.serveCached(rec, httptest.NewRequest("GET", uri, nil), policy{gate: gateRead, keep: true, linger: linger}, handle)
		return rec.Body.String()
	}
	start := time.Now()
	if a, b := ask("/labels/news.atom", linger), ask("/feeds", 0); a != "1" || b != "2" {
		t.Fatalf("first: %q and %q", a, b)
	}
	commit(t, s) // a commit
	if got := ask("/labels/news.atom", linger); got != "1" && time.Since(start) < linger {
		t.Errorf("within the linger, after a commit: %q, want the kept 1", got)
	}
	if got := ask("/feeds", 0); got != "3" {
		t.Errorf("another route after the commit: %q, want a new 3", got)
	}
	time.Sleep(linger)
	if got := ask("/labels/news.atom", linger); got != "4" {
		t.Errorf("past the linger: %q, want a new 4", got)
	}
	if got := ask("/labels/news.atom", linger); got != "4" || runs.Load() != 4 {
		t.Errorf("the catalog unchanged: %q after %d makes, want 4 after 4", got, runs.Load())
	}
}

// While a meta-feed is made anew, the kept one answers the requests that
// come meanwhile; an answer of another route waits for its make.
func TestCacheMetaFeedServedWhileMade(t *testing.T) {
	s := cacheServer(t)
	commit(t, s)
	var runs atomic.Int32
	started, release := make(chan struct{}, 2), make(chan struct{})
	handle := func(w http.ResponseWriter, r *http.Request) {
		n := runs.Add(1)
		if n > 2 {
			started <- struct{}{}
			<-release
		}
		send(w, r, 200, "application/atom+xml", []byte{'0' + byte(n)}, time.Time{})
	}
	ask := func(uri string, linger time.Duration) string {
		rec := httptest.NewRecorder()
		s.serveCached(rec, httptest.NewRequest("GET", uri, nil), policy{gate: gateRead, keep: true, linger: linger}, handle)
		return rec.Body.String()
	}
	const linger = time.Millisecond
	if a, b := ask("/all.atom", linger), ask("/feeds", 0); a != "1" || b != "2" {
		t.Fatalf("first: %q and %q", a, b)
	}
	commit(t, s) // a commit
	time.Sleep(2 * linger)
	made := make(chan string)
	go func() { made <- ask("/all.atom", linger) }()
	<-started
	if got := ask("/all.atom", linger); got != "1" {
		t.Errorf("while it is made anew: %q, want the kept 1", got)
	}
	waited := make(chan string)
	go func() { waited <- ask("/feeds", 0) }()
	select {
	case got := <-waited:
		t.Errorf("/feeds answered %q while its make was held", got)
	case <-started:
	}
	close(release)
	if got := <-made; got != "3" {
		t.Errorf("the make: %q, want 3", got)
	}
	if got := <-waited; got != "4" {
		t.Errorf("/feeds after its make: %q, want 4", got)
	}
}

// An answer of one feed (dependsOn) is kept through commits that change
// other feeds and made anew after one that changes its feed, or anything;
// an answer of no feed in particular is made anew after any of them.
func TestCacheKeepsOtherFeedsAnswers(t *testing.T) {
	s := cacheServer(t)
	a, b := testids.Feed("A"), testids.Feed("B")
	var runs atomic.Int32
	handle := func(w http.ResponseWriter, r *http.Request) {
		n := runs.Add(1)
		if r.URL.Path == "/feeds/a" {
			dependsOn(w, a)
		}
		send(w, r, 200, "application/json", []byte(strconv.Itoa(int(n))), time.Time{})
	}
	ask := func(uri string) string {
		rec := httptest.NewRecorder()
		s.serveCached(rec, httptest.NewRequest("GET", uri, nil), catalogRead, handle)
		return rec.Body.String()
	}
	state := func(id string) {
		t.Helper()
		err := s.cat.Update(context.Background(), func(t *catalog.Tx) error { return t.PutStates(catalog.FeedState{FeedID: id}) })
		if err != nil {
			t.Fatal(err)
		}
	}
	claim := func() {
		t.Helper()
		if _, err := s.cat.ClaimRuns(context.Background(), []catalog.Run{{FeedID: b, ScheduledAt: time.Now()}}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []struct {
		name         string
		change       func()
		feedA, feeds string // the answers after it
	}{
		{"first", func() {}, "1", "2"},
		{"nothing changed", func() {}, "1", "2"},
		{"feed B's state", func() { state(b) }, "1", "3"},
		{"a run claimed", claim, "1", "3"},
		{"feed A's state", func() { state(a) }, "4", "5"},
		{"anything", func() { commit(t, s) }, "6", "7"},
	} {
		step.change()
		if got, all := ask("/feeds/a"), ask("/feeds"); got != step.feedA || all != step.feeds {
			t.Errorf("%s: feed A's answer %q and the list %q, want %q and %q", step.name, got, all, step.feedA, step.feeds)
		}
	}
}
