package httpx

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/clock"
)

func TestHostKey(t *testing.T) {
	for in, want := range map[string]string{
		"https://Example.org/feed":        "https://example.org:443",
		"http://example.org:80/a?b":       "http://example.org:80",
		"http://example.org/":             "http://example.org:80",
		"http://example.org:8080/x":       "http://example.org:8080",
		"https://example.org:8443/":       "https://example.org:8443",
		"http://127.0.0.5:9000/gen/1.xml": "http://127.0.0.5:9000",
	} {
		if got := HostKey(in); got != want {
			t.Errorf("HostKey(%q) = %q, want %q", in, got, want)
		}
	}
	if HostKey("http://example.org/") == HostKey("https://example.org/") {
		t.Error("http and https share a key")
	}
}

func TestLimiterRateAndConcurrencyPerHost(t *testing.T) {
	c := clock.NewFake(time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC))
	l := NewLimiter(1, 2, c) // one at a time, two a second
	relA, _, ok := l.TryAcquire("a")
	if !ok {
		t.Fatal("first request to a refused")
	}
	if _, wait, ok := l.TryAcquire("a"); ok || wait != 0 {
		t.Fatalf("second request to a while one is in flight: ok %v wait %v", ok, wait)
	}
	relB, _, ok := l.TryAcquire("b")
	if !ok {
		t.Fatal("another host was held back by a")
	}
	relA()
	relA() // releasing twice is harmless
	if _, wait, ok := l.TryAcquire("a"); ok || wait != 500*time.Millisecond {
		t.Fatalf("a again at once: ok %v wait %v, want a 500ms wait", ok, wait)
	}
	c.Advance(500 * time.Millisecond)
	if _, _, ok := l.TryAcquire("a"); !ok {
		t.Fatal("a refused once its interval passed")
	}
	relB()
}

func TestLimiterUnlimitedRate(t *testing.T) {
	l := NewLimiter(3, 0, clock.NewFake(time.Time{}))
	for i := range 3 {
		if _, _, ok := l.TryAcquire("a"); !ok {
			t.Fatalf("request %d refused", i)
		}
	}
	if _, _, ok := l.TryAcquire("a"); ok {
		t.Fatal("a fourth request in flight")
	}
}

func TestAcquireWaitsForTheClockAndForReleases(t *testing.T) {
	c := clock.NewFake(time.Time{})
	l := NewLimiter(1, 1, c)
	rel, err := l.Acquire(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error)
	go func() {
		r, err := l.Acquire(context.Background(), "a")
		if r != nil {
			r()
		}
		got <- err
	}()
	rel() // a slot frees, but the rate still says wait a second
	c.BlockUntil(1)
	select {
	case <-got:
		t.Fatal("acquired before the interval passed")
	default:
	}
	c.Advance(time.Second)
	if err := <-got; err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	r, _ := l.Acquire(context.Background(), "b")
	defer r()
	go func() { _, err := l.Acquire(ctx, "b"); got <- err }()
	cancel()
	if err := <-got; err != context.Canceled {
		t.Fatalf("cancelled Acquire returned %v", err)
	}
}

// TestRedirectsTakeTurnsWithoutDeadlock: two hosts whose feeds redirect to
// each other, both requests in flight at once, one request at a time per
// host. A fetch that kept its host's turn while waiting for the other's
// would wait for the other fetch, doing the same, until the total timeout.
// Every turn is given back; a redirect within a host keeps its turn.
func TestRedirectsTakeTurnsWithoutDeadlock(t *testing.T) {
	var both sync.WaitGroup
	both.Add(2)
	var a, b *httptest.Server
	handler := func(other **httptest.Server) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/feed":
				both.Done()
				both.Wait() // both fetches hold their own host's turn now
				http.Redirect(w, r, (*other).URL+"/final", http.StatusFound)
			case "/self":
				http.Redirect(w, r, "/final", http.StatusFound)
			default:
				w.Write([]byte(rss))
			}
		}
	}
	a, b = newTestServer(t, handler(&b)), newTestServer(t, handler(&a))
	l := NewLimiter(1, 0, nil)
	c := New(Options{AllowPrivate: true, TotalTimeout: 5 * time.Second})
	ctx := context.Background()
	results := make(chan *Response, 2)
	for _, srv := range []*httptest.Server{a, b} {
		release, err := l.Acquire(ctx, HostKey(srv.URL))
		if err != nil {
			t.Fatal(err)
		}
		go func() { results <- c.Get(ctx, Request{URL: srv.URL + "/feed", Limiter: l, Release: release}) }()
	}
	for range 2 {
		if r := <-results; r.Err != nil || len(r.Redirects) != 1 {
			t.Fatalf("%s: err %+v, redirects %+v", r.RequestedURL, r.Err, r.Redirects)
		}
	}
	for _, srv := range []*httptest.Server{a, b} {
		if _, _, ok := l.TryAcquire(HostKey(srv.URL)); !ok {
			t.Errorf("the turn at %s was not given back", srv.URL)
		}
	}
	// At one request a second and a clock that does not move, a redirect
	// that took a new turn at its own host would wait for ever.
	l = NewLimiter(1, 1, clock.NewFake(time.Time{}))
	release, _ := l.Acquire(ctx, HostKey(a.URL))
	if r := c.Get(ctx, Request{URL: a.URL + "/self", Limiter: l, Release: release}); r.Err != nil || len(r.Redirects) != 1 {
		t.Fatalf("a redirect within the host: err %+v, redirects %+v", r.Err, r.Redirects)
	}
}

// TestUnsentOnlyWhenNothingLeft: a turn whose address is refused before
// any connection gives back its start, so the host's next request need
// not wait for the rate; one whose first request left, then was
// redirected within the host to an address refused on the next dial
// (DNS that changed, say), keeps it; and a redirect to a refused host
// keeps the first host's start and gives back the refused one's.
func TestUnsentOnlyWhenNothingLeft(t *testing.T) {
	closed := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the refused host got a request: %s", r.URL)
	}))
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/moved":
			w.Header().Set("Connection", "close") // the next request dials again
			http.Redirect(w, r, "/final", http.StatusFound)
		case "/away":
			http.Redirect(w, r, closed.URL+"/feed", http.StatusFound)
		default:
			w.Write([]byte(rss))
		}
	}))
	host := HostKey(srv.URL)
	for _, tc := range []struct {
		name    string
		path    string
		allowed int  // dials allowed before the refusals
		keeps   bool // the host's rate counts the turn
	}{
		{"refused at once", "/feed", 0, false},
		{"refused after a request left", "/moved", 1, true},
		{"redirected to a refused host", "/away", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			dials := 0
			c := New(Options{TotalTimeout: 5 * time.Second, Public: func(netip.AddrPort) bool {
				mu.Lock()
				defer mu.Unlock()
				dials++
				return dials <= tc.allowed
			}})
			l := NewLimiter(1, 1, clock.NewFake(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)))
			slot, _, ok := l.TryTake(host)
			if !ok {
				t.Fatal("no first slot")
			}
			r := c.Get(context.Background(), Request{URL: srv.URL + tc.path, Limiter: l, Release: slot.Release, Unsent: slot.Unsent})
			if r.Err == nil || r.Err.Code != CodeAddressRefused {
				t.Fatalf("err %+v, want %s", r.Err, CodeAddressRefused)
			}
			_, wait, ok := l.TryTake(host)
			if ok == tc.keeps {
				t.Errorf("after the refusal: a slot at once %v (wait %s), want %v", ok, wait, !tc.keeps)
			}
			if _, wait, ok := l.TryTake(HostKey(closed.URL)); !ok {
				t.Errorf("the refused host: no slot at once (wait %s): nothing went to it", wait)
			}
		})
	}
}
