package serve

import (
	"context"
	"net/http"
	"os"
	"runtime"
	"sync/atomic"

	"github.com/feedpipe/feedpipe/internal/catalog"
)

// The reads that query the catalog pass a gate that lets a few in at a
// time, in the order they came. The catalog has a pool of a few
// connections, and database/sql hands a connection that comes free to a
// waiter picked at random (Go 1.23 and later): with 200 requests queued
// on it, most wait a little and some a very long time, the p99 of a
// loaded server. Behind the gate they wait in line instead, about as long
// each as the mean. The gate covers the work alone: an answer kept in the
// cache (cache.go) is replayed without it, and a request that waits for
// another's make of its answer waits outside it. Never gated: the event
// stream (it lasts as long as its client), /healthz (it must answer when
// the server is busiest), /openapi.json, /metrics (made once a second),
// /raw (a payload's bytes can take long to send), the web page's static
// files (they read no catalog) and every write.

// DefaultCPUs is how many CPUs feed-serve runs on at once (GOMAXPROCS)
// when not told: all but one, at least one, or GOMAXPROCS when the
// environment sets it. feed-serve runs on the machine of the pipeline
// that writes its store (SQLite shares a database within one machine),
// and a cycle's writer needs about one CPU: under bench-serve's load on
// two CPUs the cycle ran +6% slower than alone with feed-serve on one CPU
// (+59% on two; docs/serve.md#load).
func DefaultCPUs() int {
	if os.Getenv("GOMAXPROCS") != "" {
		return runtime.GOMAXPROCS(0)
	}
	return max(1, runtime.GOMAXPROCS(0)-1)
}

// DefaultMaxReads is how many catalog reads feed-serve runs at once when
// not told: one a CPU it runs on (a make is CPU work; more at once only share the
// CPUs, and take them from a pipeline on the same machine), and never
// more than the catalog's connections (catalog.MaxConns), on which more
// would queue again, at random: on two CPUs, 2 at once kept a pipeline's
// cycle near +22% under load, 4 +46%
// (docs/bench/2026-11-26-serve-read-gate.md).
func DefaultMaxReads() int { return min(catalog.MaxConns, runtime.GOMAXPROCS(0)) }

// gate admits at most cap(slots) holders at once, first come first in: a
// channel queues the goroutines blocked sending to it in order, and a
// receive that frees a slot hands it to the first of them.
type gate struct {
	slots   chan struct{}
	waiting atomic.Int64 // in line now (/metrics: feedpipe_http_reads_waiting)
}

func newGate(n int) *gate { return &gate{slots: make(chan struct{}, max(1, n))} }

// enter waits for a slot, or for ctx to be done (then it holds none and
// has left the line). A nil gate lets everyone in.
func (g *gate) enter(ctx context.Context) error {
	if g == nil {
		return nil
	}
	select {
	case g.slots <- struct{}{}:
		return nil
	default:
	}
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	select {
	case g.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// leave frees the slot enter took.
func (g *gate) leave() {
	if g != nil {
		<-g.slots
	}
}

// gateKind is how a route's reads wait for the catalog (its policy).
type gateKind int

const (
	// gateNone: not at all (see above for which).
	gateNone gateKind = iota
	// gateRead: in line at the read gate.
	gateRead
	// gateHeavy: a read that merges the entries of many feeds (a label's
	// or the whole store's meta-feed, 16 ms of CPU each on a store of a
	// million entries, ten times a feed's page; /entries). At most
	// MaxHeavyReads of them hold a slot of the read gate at once, so that
	// while a pipeline's commits (ten a second) make every kept answer
	// anew, the meta-feeds of a dozen labels, each remade after each
	// commit, cannot take every slot from the cheap reads: one make of
	// each answer at a time, while the kept one serves its requests
	// (cache.go).
	gateHeavy
)

// MaxHeavyReads is how many gateHeavy reads hold a slot at once.
const MaxHeavyReads = 1

// enterReads waits for r's slot at the gate (and, for a heavy read, for a
// heavy one first); ok is false when r's client went away meanwhile.
// leave frees what it took.
func (s *Server) enterReads(r *http.Request, kind gateKind) (leave func(), ok bool) {
	if kind == gateNone {
		return func() {}, true
	}
	heavy := kind == gateHeavy
	if heavy {
		if s.heavy.enter(r.Context()) != nil {
			return nil, false
		}
	}
	if s.reads.enter(r.Context()) != nil {
		if heavy {
			s.heavy.leave()
		}
		return nil, false
	}
	return func() {
		s.reads.leave()
		if heavy {
			s.heavy.leave()
		}
	}, true
}

// gated runs h behind the gate of kind; a request whose client went away
// while it waited is not answered (no one is left to read it).
func (s *Server) gated(kind gateKind, h func(http.ResponseWriter, *http.Request)) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		leave, ok := s.enterReads(r, kind)
		if !ok {
			return
		}
		defer leave()
		h(w, r)
	}
}

// isRead reports whether r only reads: a GET or HEAD.
func isRead(r *http.Request) bool { return r.Method == http.MethodGet || r.Method == http.MethodHead }
