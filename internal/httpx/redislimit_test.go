package httpx

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedpipe/feedpipe/internal/bus/redisconn"
	"github.com/feedpipe/feedpipe/internal/bus/redistest"
)

func redisLimiter(t *testing.T, srv *redistest.Server, perHost int, rps float64) (*Limiter, *RedisHosts) {
	t.Helper()
	conn, err := redisconn.Dial(srv.URL(), "t", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	l := NewRedisLimiter(conn, perHost, rps, nil)
	return l, l.shared.(*RedisHosts)
}

// TestRedisLimiterAcrossProcesses: three limiters on one Redis, as three
// workers' feed-fetch, keep one host's limits together: one request in
// flight, starts 1/rps apart, whoever makes them.
func TestRedisLimiterAcrossProcesses(t *testing.T) {
	srv := redistest.Start(t)
	const rps = 10
	var limiters []*Limiter
	for range 3 {
		l, _ := redisLimiter(t, srv, 1, rps)
		limiters = append(limiters, l)
	}
	var (
		mu       sync.Mutex
		starts   []time.Time
		inFlight int
		maxIn    int
		wg       sync.WaitGroup
	)
	ctx := context.Background()
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			release, err := limiters[i%3].Acquire(ctx, "http://a.example:80")
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			starts = append(starts, time.Now())
			inFlight++
			maxIn = max(maxIn, inFlight)
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
			mu.Lock()
			inFlight--
			mu.Unlock()
			release()
		}()
	}
	// Another host is not held back by the first.
	release, err := limiters[0].Acquire(ctx, "http://b.example:80")
	if err != nil {
		t.Fatal(err)
	}
	release()
	wg.Wait()
	if maxIn != 1 {
		t.Errorf("%d requests in flight at once to one host, want 1", maxIn)
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
	// Redis spaces the slots by its clock; a start seen here lags its
	// slot by a round trip and the scheduler, more under -race: the span
	// and the median gap, not each gap, say whether the rate held.
	var gaps []time.Duration
	for i := 1; i < len(starts); i++ {
		gaps = append(gaps, starts[i].Sub(starts[i-1]))
	}
	sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
	if med := gaps[len(gaps)/2]; med < 90*time.Second/rps/100 {
		t.Errorf("median gap between starts %v, want about %v", med, time.Second/rps)
	}
	if total := starts[len(starts)-1].Sub(starts[0]); total < 11*time.Second/rps-50*time.Millisecond {
		t.Errorf("12 requests in %v: faster than %d a second", total, rps)
	}
}

// TestRedisLimiterLeaseLapses: a slot taken by a process that died (never
// given back) frees after the lease's life; one given back frees at once.
func TestRedisLimiterLeaseLapses(t *testing.T) {
	srv := redistest.Start(t)
	_, r1 := redisLimiter(t, srv, 1, 0)
	l2, _ := redisLimiter(t, srv, 1, 0)
	// A process that took a slot and died: its lease is in Redis, and
	// nobody renews it.
	res, err := hostScript.Run(context.Background(), r1.conn.Client, []string{r1.conn.Key("host", "h", "next"), r1.conn.Key("host", "h", "leases")},
		1, 0, 300, "dead").Int64()
	if err != nil || res != 0 {
		t.Fatalf("first slot refused: %v, reply %d", err, res)
	}
	_, wait, ok := l2.TryAcquire("h")
	if ok || wait <= 0 {
		t.Fatalf("second process got a slot held elsewhere (ok %v, wait %v)", ok, wait)
	}
	time.Sleep(350 * time.Millisecond)
	release, _, ok := l2.TryAcquire("h")
	if !ok {
		t.Fatal("the dead process's lease did not lapse")
	}
	release()
	// Given back with nothing else in flight here, it is free at once.
	l3, _ := redisLimiter(t, srv, 1, 0)
	release, _, ok = l3.TryAcquire("h")
	if !ok {
		t.Fatal("a slot given back was not free")
	}
	release()
	// A request that runs longer than a lease's life keeps its slot: its
	// lease is renewed while it runs.
	l4, r4 := redisLimiter(t, srv, 1, 0)
	r4.life = 300 * time.Millisecond
	release, _, ok = l4.TryAcquire("h2")
	if !ok {
		t.Fatal("no slot at h2")
	}
	time.Sleep(700 * time.Millisecond)
	if _, _, ok := l2.TryAcquire("h2"); ok {
		t.Fatal("a running request's slot lapsed")
	}
	release()
	time.Sleep(giveBackAfter + 100*time.Millisecond)
	release, _, ok = l2.TryAcquire("h2")
	if !ok {
		t.Fatal("a slot given back was not free")
	}
	release()
}

// TestRedisLimiterWaitsForRedis: with Redis down no request goes out
// unaccounted for: the limiter says to wait, then works once it is back.
func TestRedisLimiterWaitsForRedis(t *testing.T) {
	srv := redistest.Start(t)
	l, _ := redisLimiter(t, srv, 1, 0)
	srv.Kill()
	_, wait, ok := l.TryAcquire("h")
	if ok || wait != SharedRetry {
		t.Fatalf("with Redis down: ok %v, wait %v; want a wait of %v", ok, wait, SharedRetry)
	}
	srv.Start()
	release, _, ok := l.TryAcquire("h")
	if !ok {
		t.Fatal("no slot once Redis was back")
	}
	release()
}

// TestRedisLimiterGivesBack: while other requests of the process are in
// flight, one that ended gives its slot back in the script run of the
// next request, to any host: no round trip of its own; once none is in
// flight, every slot goes back at once (the process may be ending).
func TestRedisLimiterGivesBack(t *testing.T) {
	srv := redistest.Start(t)
	const rps = 5
	l, r := redisLimiter(t, srv, 1, rps)
	var zrems atomic.Int64
	r.conn.Client.AddHook(countHook{&zrems})
	ctx := context.Background()
	long, err := l.Acquire(ctx, "x") // in flight throughout
	if err != nil {
		t.Fatal(err)
	}
	var starts []time.Time
	for range 6 {
		release, err := l.Acquire(ctx, "h")
		if err != nil {
			t.Fatal(err)
		}
		starts = append(starts, time.Now())
		release()
	}
	if d := starts[5].Sub(starts[0]); d < 5*time.Second/rps-20*time.Millisecond {
		t.Errorf("6 starts in %v: faster than %d a second", d, rps)
	}
	release, err := l.Acquire(ctx, "h2")
	if err != nil {
		t.Fatal(err)
	}
	if n := r.conn.Client.ZCard(ctx, r.conn.Key("host", "h", "leases")).Val(); n != 0 {
		t.Errorf("%d leases left at h once every request there ended and another host's started", n)
	}
	if n := zrems.Load(); n != 0 {
		t.Errorf("%d ZREMs of their own for leases a script run could take along", n)
	}
	release()
	long()
	for _, h := range []string{"h2", "x"} {
		if n := r.conn.Client.ZCard(ctx, r.conn.Key("host", h, "leases")).Val(); n != 0 {
			t.Errorf("%d leases left at %s as the last request in flight ended", n, h)
		}
	}
}

// countHook counts the leases removed by a ZREM of their own.
type countHook struct{ n *atomic.Int64 }

func (h countHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "zrem" {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestUnsentGivesTheStartBack: a slot whose request never went out gives
// its host the start back, in this process or in Redis alike: the next
// request need not wait for the rate; unless another slot was taken there
// since, whose start stays; and a start given back that is past frees the
// host.
func TestUnsentGivesTheStartBack(t *testing.T) {
	srv := redistest.Start(t)
	for _, tc := range []struct {
		name    string
		limiter func() *Limiter
	}{
		{"in this process", func() *Limiter { return NewLimiter(2, 1, nil) }},
		{"in redis", func() *Limiter { l, _ := redisLimiter(t, srv, 2, 1); return l }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.limiter()
			take := func(what string, want bool) Slot {
				t.Helper()
				s, wait, ok := l.TryTake("h")
				if ok != want {
					t.Fatalf("%s: a slot %v (wait %s), want %v", what, ok, wait, want)
				}
				return s
			}
			// Each slot ends as the client ends a refused turn's: Unsent,
			// then Release.
			x := take("first", true)
			take("at once after it", false)
			x.Unsent()
			x.Release()
			y := take("after its start was given back", true)
			time.Sleep(1100 * time.Millisecond) // past y's start's interval
			z := take("a second later", true)
			y.Unsent() // z was taken since: z's start stays
			y.Release()
			take("after an older slot's start was given back", false)
			z.Unsent() // back to y's start, a second ago
			z.Release()
			take("after the last start was given back", true).Release()
		})
	}
}
