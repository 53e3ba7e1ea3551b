package media

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// ErrBusy is Drain's error when another feed-media run holds the store's
// media: one run per store.
var ErrBusy = errors.New("media: another feed-media run is at work on this store")

// DrainSummary counts what a run did.
type DrainSummary struct {
	Stored, Refused, Failed, Retrying int
	// Dropped: queued files whose feed no longer asks for them.
	Dropped int
	Bytes   int64 // bytes received
	// Halted says why the run stopped before the queue was empty: budget
	// (the day's is spent) or disk_floor; "" when it did not.
	Halted string
}

// runner is one Drain.
type runner struct {
	cfg Config
	cat *catalog.Catalog
	st  *storedir.Store

	mu   sync.Mutex // the records, their rows and stdout, one try's end at a time
	sum  DrainSummary
	subs map[string]ndjson.Subscription
	// subsAt is when subs was read: read again after Poll, or for a feed
	// it does not know.
	subsAt time.Time

	budget struct {
		sync.Mutex
		day   string
		bytes int64
	}
	halted string // why nothing starts now; logged once
}

// Drain downloads the queued files whose time has come, Concurrency at
// once (HostConcurrency of a host), each under the feed's settings, and
// writes a media record of each try to Out and to the store's media/; it
// returns once none is due (with Follow, once ctx ends). A file is never
// visible in the store before it is whole, synced and checked; a try cut
// short keeps its bytes for the next, which resumes them with a Range
// request when the server says the file is unchanged (If-Range). ctx
// ending (a signal) stops the downloads at once, keeping what they have.
// Nothing starts while the day's budget is spent or the disk is below its
// floor. One run per store: another returns ErrBusy.
func Drain(ctx context.Context, cfg Config) (DrainSummary, error) {
	cfg.defaults()
	unlock, err := cfg.Store.Lock(storedir.MediaRunLock, false, nil)
	if errors.Is(err, storedir.ErrLocked) {
		return DrainSummary{}, ErrBusy
	}
	if err != nil {
		return DrainSummary{}, err
	}
	defer unlock()
	// The catalog outlives a signal: the tries it cut short are recorded.
	cat, done, err := catalog.Use(context.WithoutCancel(ctx), cfg.Catalog, cfg.Store, cfg.Log)
	if err != nil {
		return DrainSummary{}, err
	}
	defer done()
	r := &runner{cfg: cfg, cat: cat, st: cfg.Store}
	if err := r.locked(func() error { return cat.CatchUpMedia(context.WithoutCancel(ctx)) }); err != nil {
		return r.sum, err
	}
	r.budget.day = storedir.Day(r.now())
	if r.budget.bytes, err = cat.MediaBudget(ctx, r.budget.day); err != nil {
		return r.sum, err
	}
	err = r.loop(ctx)
	sum := r.sum
	if ctx.Err() == nil {
		sum.Halted = r.halted
	}
	log := cfg.Log.Info
	if sum == (DrainSummary{}) {
		log = cfg.Log.Debug // an empty queue: the loop looks every cycle
	}
	log("media run done", "stored", sum.Stored, "refused", sum.Refused, "failed", sum.Failed, "retrying", sum.Retrying,
		"dropped", sum.Dropped, "bytes", sum.Bytes, "halted", sum.Halted)
	return sum, err
}

func (r *runner) now() time.Time { return r.cfg.Clock.Now() }

// locked runs fn holding the store's media lock: no prune deletes a file
// meanwhile.
func (r *runner) locked(fn func() error) error {
	unlock, err := r.st.Lock(storedir.MediaLock, true, nil)
	if err != nil {
		return err
	}
	defer unlock()
	return fn()
}

// loop starts the tries that may start, and waits for one to end, for a
// file to be queued (Poll), or for ctx.
func (r *runner) loop(ctx context.Context) error {
	work, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	ended := make(chan int64)
	inflight := map[int64]string{} // id -> host
	hosts := map[string]int{}
	var failed error
	for {
		if work.Err() == nil {
			if err := r.start(work, inflight, hosts, ended, stop); err != nil {
				failed = err
				stop(err)
			}
		}
		if len(inflight) == 0 {
			if work.Err() != nil || !r.cfg.Follow {
				return failed
			}
			if !r.wait(work) {
				return failed
			}
			continue
		}
		select {
		case id := <-ended:
			hosts[inflight[id]]--
			delete(inflight, id)
		case <-r.cfg.Clock.After(r.cfg.Poll):
		}
		if err := context.Cause(work); err != nil && !errors.Is(err, context.Canceled) && failed == nil {
			failed = err
		}
	}
}

// start starts the tries of the files due, as many as may run.
func (r *runner) start(ctx context.Context, inflight map[int64]string, hosts map[string]int, ended chan<- int64, stop context.CancelCauseFunc) error {
	if len(inflight) >= r.cfg.Concurrency {
		return nil
	}
	if why := r.blocked(); why != "" {
		if why != r.halted {
			r.cfg.Log.Warn("no download starts: "+haltText[why], "reason", why)
		}
		r.halted = why
		return nil
	}
	r.halted = ""
	jobs, err := r.cat.DueMedia(ctx, r.now(), 100+r.cfg.Concurrency, slices.Collect(maps.Keys(inflight)))
	if err != nil {
		return err
	}
	for _, job := range jobs {
		if len(inflight) >= r.cfg.Concurrency {
			break
		}
		host := httpx.HostKey(job.URL)
		if hosts[host] >= r.cfg.HostConcurrency {
			continue
		}
		inflight[job.ID], hosts[host] = host, hosts[host]+1
		go func() {
			if err := r.try(ctx, job); err != nil {
				stop(err)
			}
			ended <- job.ID
		}()
	}
	return nil
}

// haltText says what each halt means.
var haltText = map[string]string{
	reasonBudget: "the day's byte budget is spent (--daily-budget): the queue waits for the next UTC day",
	reasonDisk:   "the store's disk is below its floor (--disk-floor): the queue waits for free space",
}

// blocked says why no download may start now: budget, disk_floor, or "".
func (r *runner) blocked() string {
	if b := r.cfg.DailyBudget; b > 0 && r.spent(0) >= b {
		return reasonBudget
	}
	if r.belowFloor() {
		return reasonDisk
	}
	return ""
}

// belowFloor reports whether the store's disk has less free space than
// the floor.
func (r *runner) belowFloor() bool {
	if r.cfg.DiskFloor <= 0 {
		return false
	}
	free, err := r.st.FreeBytes()
	return err == nil && free >= 0 && free < r.cfg.DiskFloor
}

// spent adds n bytes to the day's and returns the day's total: a new UTC
// day starts again from 0.
func (r *runner) spent(n int64) int64 {
	r.budget.Lock()
	defer r.budget.Unlock()
	if day := storedir.Day(r.now()); day != r.budget.day {
		r.budget.day, r.budget.bytes = day, 0
	}
	r.budget.bytes += n
	return r.budget.bytes
}

// saveBudget keeps the day's bytes in the catalog, for the next run.
func (r *runner) saveBudget(ctx context.Context) error {
	r.budget.Lock()
	day, bytes := r.budget.day, r.budget.bytes
	r.budget.Unlock()
	return r.cat.SetMediaBudget(ctx, day, bytes)
}

// wait waits, in Follow mode, for the next look at the queue: Poll, or
// sooner when a retry is due sooner; false when ctx ended.
func (r *runner) wait(ctx context.Context) bool {
	d := r.cfg.Poll
	if next, ok, err := r.cat.NextMediaTry(ctx, r.now()); err == nil && ok && next.Sub(r.now()) < d {
		d = max(next.Sub(r.now()), time.Second)
	}
	select {
	case <-ctx.Done():
		return false
	case <-r.cfg.Clock.After(d):
		return true
	}
}

// subscription returns the subscription of feedID, reading the list again
// when it is old or does not know the feed; ok is false for a feed no
// longer subscribed.
func (r *runner) subscription(ctx context.Context, feedID string) (ndjson.Subscription, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.subs[feedID]
	if ok && r.now().Sub(r.subsAt) < r.cfg.Poll {
		return s, true, nil
	}
	list, err := r.cat.Subscriptions(ctx)
	if err != nil {
		return s, false, err
	}
	r.subs, r.subsAt = make(map[string]ndjson.Subscription, len(list)), r.now()
	for _, s := range list {
		r.subs[s.FeedID] = s
	}
	s, ok = r.subs[feedID]
	return s, ok, nil
}

// retryDelay is how long a file that failed for now waits after its
// attempt-th try: a minute, then four times longer each time, 12 hours at
// most.
func retryDelay(attempt int) time.Duration {
	d := time.Minute
	for range max(attempt-1, 0) {
		d *= 4
		if d >= 12*time.Hour {
			return 12 * time.Hour
		}
	}
	return d
}

// nextDay is the start of the UTC day after t's.
func nextDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
}
