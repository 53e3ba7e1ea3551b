package serve

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// The gate lets its holders in in the order they came, and one whose
// context ends leaves the line without a slot. One slot is freed at a
// time, so the order they say they came in is the order they were let in.
func TestGateOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n, waiters, quitter = 2, 12, 5
		g := newGate(n)
		for range n {
			if err := g.enter(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		var mu sync.Mutex
		var order []int
		release := make([]chan struct{}, waiters)
		quit, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		var wg sync.WaitGroup
		for i := range waiters {
			ctx := context.Background()
			if i == quitter {
				ctx = quit
			}
			release[i] = make(chan struct{})
			wg.Go(func() {
				if err := g.enter(ctx); err != nil {
					errc <- err
					return
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				<-release[i] // a slow request
				g.leave()
			})
			synctest.Wait() // i is in line before i+1 comes
		}
		if w := g.waiting.Load(); w != waiters {
			t.Fatalf("%d waiting, want %d", w, waiters)
		}
		cancel()
		synctest.Wait()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("the cancelled waiter: %v", err)
		}
		if w := g.waiting.Load(); w != waiters-1 {
			t.Fatalf("%d waiting after one left, want %d", w, waiters-1)
		}
		for range n {
			g.leave()
			synctest.Wait() // the next is in, and said so, before another slot frees
		}
		for done := 0; done < waiters-1; done++ {
			mu.Lock()
			next := order[done]
			mu.Unlock()
			close(release[next])
			synctest.Wait()
		}
		wg.Wait()
		var want []int
		for i := range waiters {
			if i != quitter {
				want = append(want, i)
			}
		}
		if !slices.Equal(order, want) {
			t.Fatalf("admitted in the order %v, want %v", order, want)
		}
		if len(g.slots) != 0 || g.waiting.Load() != 0 {
			t.Fatalf("%d slots held, %d waiting at the end", len(g.slots), g.waiting.Load())
		}
	})
}

// At most the gate's size run at once, however many come.
func TestGateBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate(3)
		var mu sync.Mutex
		in, most := 0, 0
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				if g.enter(context.Background()) != nil {
					return
				}
				mu.Lock()
				in++
				most = max(most, in)
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				in--
				mu.Unlock()
				g.leave()
			})
		}
		wg.Wait()
		if most != 3 {
			t.Fatalf("%d at once, want 3", most)
		}
	})
}

// In the server: while every slot is taken, the catalog's reads wait (a
// kept route's make and a route that is not kept), a client that goes
// away leaves the line, and the event stream, /healthz and /metrics are
// served; once a slot frees, those in line are answered.
func TestGateServer(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.MaxReads = 1 })
	g := w.s.reads
	if err := g.enter(context.Background()); err != nil {
		t.Fatal(err)
	}
	held := true
	defer func() {
		if held {
			g.leave()
		}
	}()
	id := w.ids["TechCrunch.xml"]
	paths := []string{"/feeds/" + id + "/entries?limit=3", "/events?limit=2", "/feeds/" + id + "/entries?limit=4"}
	type answer struct {
		path   string
		status int
		err    error
	}
	answers := make(chan answer, len(paths))
	client := w.api.Client()
	getting := func(ctx context.Context, path string) {
		req, _ := http.NewRequestWithContext(ctx, "GET", w.api.URL+path, nil)
		resp, err := client.Do(req)
		if err != nil {
			answers <- answer{path, 0, err}
			return
		}
		resp.Body.Close()
		answers <- answer{path, resp.StatusCode, nil}
	}
	waitFor := func(n int64) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); g.waiting.Load() != n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d in line, want %d", g.waiting.Load(), n)
			}
		}
	}
	for i, p := range paths {
		go getting(context.Background(), p)
		waitFor(int64(i + 1))
	}
	// A client that gives up while in line.
	ctx, cancel := context.WithCancel(context.Background())
	go getting(ctx, "/feeds/"+id+"/entries?limit=5")
	waitFor(int64(len(paths) + 1))
	cancel()
	if a := <-answers; !errors.Is(a.err, context.Canceled) {
		t.Fatalf("the request given up: %+v", a)
	}
	waitFor(int64(len(paths)))
	// Not gated: these answer while the line waits.
	_, stop := w.stream(t, "")
	stop()
	for _, p := range []string{"/healthz", "/metrics", "/openapi.json"} {
		if r := w.get(p); r.status != 200 {
			t.Fatalf("%s: %d while the gate is full", p, r.status)
		}
	}
	select {
	case a := <-answers:
		t.Fatalf("%s answered while the gate was full: %+v", a.path, a)
	default:
	}
	g.leave()
	held = false
	got := map[string]int{}
	for range paths {
		select {
		case a := <-answers:
			got[a.path] = a.status
		case <-time.After(20 * time.Second):
			t.Fatalf("answered %v of %v", got, paths)
		}
	}
	for _, p := range paths {
		if got[p] != 200 {
			t.Errorf("%s: %d", p, got[p])
		}
	}
	if len(g.slots) != 0 || g.waiting.Load() != 0 {
		t.Fatalf("%d slots held, %d in line at the end", len(g.slots), g.waiting.Load())
	}
	if r := w.get("/metrics"); !containsLine(r.body, "feedpipe_http_reads_waiting 0") {
		t.Errorf("/metrics has no feedpipe_http_reads_waiting 0")
	}
}

func containsLine(body []byte, line string) bool {
	return slices.Contains(strings.Split(string(body), "\n"), line)
}

// A heavy read (a label's meta-feed) takes one of the gate's slots at
// most: a second waits while a feed's page goes past it.
func TestGateHeavy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &Server{reads: newGate(2), heavy: newGate(MaxHeavyReads)}
		release := make(chan struct{})
		var mu sync.Mutex
		var in []string
		handle := func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			in = append(in, r.URL.Path)
			mu.Unlock()
			<-release
		}
		var wg sync.WaitGroup
		for _, p := range []string{"/labels/a.atom", "/labels/b.atom", "/feeds/x/entries"} {
			kind := feedOfMany.gate
			if p == "/feeds/x/entries" {
				kind = catalogRead.gate
			}
			r := httptest.NewRequest("GET", p, nil)
			wg.Go(func() { s.gated(kind, handle)(httptest.NewRecorder(), r) })
			synctest.Wait()
		}
		mu.Lock()
		got := slices.Clone(in)
		mu.Unlock()
		if want := []string{"/labels/a.atom", "/feeds/x/entries"}; !slices.Equal(got, want) {
			t.Fatalf("in at once: %v, want %v", got, want)
		}
		close(release)
		wg.Wait()
		if len(in) != 3 || len(s.reads.slots) != 0 || len(s.heavy.slots) != 0 {
			t.Fatalf("ran %v; %d and %d slots held at the end", in, len(s.reads.slots), len(s.heavy.slots))
		}
	})
}

// feed-serve runs on all CPUs but one unless GOMAXPROCS says otherwise
// (the runtime set to 3 whatever the machine has, so that the two differ).
func TestDefaultCPUs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	t.Setenv("GOMAXPROCS", "")
	if got := DefaultCPUs(); got != 2 {
		t.Errorf("without GOMAXPROCS, on 3: %d, want 2", got)
	}
	t.Setenv("GOMAXPROCS", "3")
	if got := DefaultCPUs(); got != 3 {
		t.Errorf("with GOMAXPROCS=3: %d, want 3", got)
	}
	runtime.GOMAXPROCS(1)
	t.Setenv("GOMAXPROCS", "")
	if got := DefaultCPUs(); got != 1 {
		t.Errorf("without GOMAXPROCS, on 1: %d, want 1", got)
	}
}
