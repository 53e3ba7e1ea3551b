package fetch

import (
	"container/heap"
	"context"
	"time"

	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// dispatcher starts fetches as the limits allow. Each host with feeds
// waiting is in one of three places: ready (may start now, as far as we
// know), sleeping (its rate says not before a time) or blocked (waiting for
// one of its requests in flight to end). Hosts take turns, so a host with
// hundreds of feeds does not hold up the others.
type dispatcher struct {
	cfg      *Config
	queues   map[string][]ndjson.Due // by host key, in arrival order
	ready    []string
	sleeping wakeHeap
	place    map[string]placeKind
	inFlight int
	queued   int
	done     chan string // a fetch ended; its host
}

type placeKind int

const (
	idle placeKind = iota
	inReady
	inSleeping
	inBlocked
)

func newDispatcher(cfg *Config) *dispatcher {
	return &dispatcher{
		cfg:    cfg,
		queues: map[string][]ndjson.Due{},
		place:  map[string]placeKind{},
		done:   make(chan string, cfg.Concurrency),
	}
}

// run fetches everything that comes from input until input closes and the
// last fetch ends, or until ctx is done, after which nothing new starts. It
// returns how many due feeds were left unfetched.
func (d *dispatcher) run(ctx context.Context, input <-chan ndjson.Due, results chan<- result) (skipped int) {
	// Fetches in flight finish even after a signal: their records are
	// stored and emitted.
	fetchCtx := context.WithoutCancel(ctx)
	stopped := ctx.Done()
	var (
		timer   <-chan time.Time
		timerAt time.Time // when timer fires; zero if there is none
	)
	for {
		if stopped != nil {
			if at := d.start(fetchCtx, results); !at.IsZero() && !at.Equal(timerAt) {
				timer, timerAt = d.cfg.Clock.After(at.Sub(d.cfg.Clock.Now())), at
			}
		}
		if input == nil && (d.queued == 0 || stopped == nil) && d.inFlight == 0 {
			return d.queued
		}
		select {
		case due, ok := <-input:
			if !ok {
				input = nil
				continue
			}
			d.enqueue(due)
		case host := <-d.done:
			d.inFlight--
			switch d.place[host] {
			case inBlocked:
				d.makeReady(host)
			case inSleeping:
				// The fetch may have given its start back (a refused
				// address): the host's rate is asked again now.
				d.wakeEarly(host)
			}
		case <-timer:
			timer, timerAt = nil, time.Time{}
			now := d.cfg.Clock.Now()
			for len(d.sleeping) > 0 && !d.sleeping[0].at.After(now) {
				d.makeReady(heap.Pop(&d.sleeping).(wake).host)
			}
		case <-stopped:
			// Nothing new starts; the reader stops sending too.
			stopped, input, timer = nil, nil, nil
		}
	}
}

func (d *dispatcher) enqueue(due ndjson.Due) {
	host := httpx.HostKey(due.URL)
	d.queues[host] = append(d.queues[host], due)
	d.queued++
	if d.place[host] == idle {
		d.makeReady(host)
	}
}

// wakeEarly takes a sleeping host out of the sleepers and makes it ready.
func (d *dispatcher) wakeEarly(host string) {
	for i, w := range d.sleeping {
		if w.host == host {
			heap.Remove(&d.sleeping, i)
			break
		}
	}
	d.makeReady(host)
}

func (d *dispatcher) makeReady(host string) {
	d.place[host] = inReady
	d.ready = append(d.ready, host)
}

// start starts as many fetches as the limits allow, and returns when the
// first sleeping host may start one (zero if none sleeps).
func (d *dispatcher) start(ctx context.Context, results chan<- result) time.Time {
	for len(d.ready) > 0 && d.inFlight < d.cfg.Concurrency {
		host := d.ready[0]
		d.ready = d.ready[1:]
		slot, wait, ok := d.cfg.Limiter.TryTake(host)
		switch {
		case ok:
			due := d.queues[host][0]
			d.queues[host] = d.queues[host][1:]
			last := len(d.queues[host]) == 0
			d.queued--
			d.inFlight++
			go func() {
				// A redirect to another host waits for a turn there, in
				// the client: a feed proxy that many feeds redirect to
				// gets no more than its limits. The wait keeps its place
				// among cfg.Concurrency, bounded by the total timeout.
				f := d.cfg.fetchOne(ctx, due, last, slot)
				slot.Release() // if the fetch ended before the client had it
				results <- result{fetch: f}
				d.done <- host
			}()
			if len(d.queues[host]) == 0 {
				delete(d.queues, host)
				d.place[host] = idle
			} else {
				d.ready = append(d.ready, host) // its next turn comes after the other hosts'
			}
		case wait > 0:
			d.place[host] = inSleeping
			heap.Push(&d.sleeping, wake{at: d.cfg.Clock.Now().Add(wait), host: host})
		default:
			d.place[host] = inBlocked
		}
	}
	if len(d.sleeping) == 0 {
		return time.Time{}
	}
	return d.sleeping[0].at
}

// wake is when a sleeping host may start a request.
type wake struct {
	at   time.Time
	host string
}

type wakeHeap []wake

func (h wakeHeap) Len() int           { return len(h) }
func (h wakeHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h wakeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *wakeHeap) Push(x any)        { *h = append(*h, x.(wake)) }
func (h *wakeHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	*h = old[:len(old)-1]
	return w
}
