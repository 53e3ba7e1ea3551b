// Package scrape is feed-scrape: it turns websites without feeds into
// entries, fills in the full text of new entries of feeds that ask for
// it, and derives keywords from their text (docs/design.md#scraping).
package scrape

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/clock"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/ids"
	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/progress"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// DefaultConcurrency is how many sources are scraped at once.
const DefaultConcurrency = 5

// maxHeld bounds the records held back while waiting for the fetch record
// that closes their group: entries arriving without one (feed-parse FILE
// output) are passed on once this many wait.
const maxHeld = 10000

// Config is everything feed-scrape touches. Nil fields take the documented
// defaults.
type Config struct {
	In      io.Reader
	Out     *ndjson.Writer
	Log     *slog.Logger
	Store   *storedir.Store
	Catalog *catalog.Catalog // the store's catalog; nil: opened for the run
	// Client fetches the pages; default httpx.New(httpx.Options{}). Its
	// robots.txt cache lasts as long as it does.
	Client *httpx.Client
	// Limiter keeps per-host politeness across all the sources scraped at
	// once; default httpx.DefaultHostConcurrency and DefaultHostRPS.
	Limiter     *httpx.Limiter
	Clock       clock.Clock    // default the wall clock
	Rand        io.Reader      // random bits of fetch ids; default crypto/rand
	Concurrency int            // sources worked on at once; default DefaultConcurrency
	Progress    *progress.Line // nil: no progress line
	// Events reads the coordinator's events (the events stream) instead
	// of feed-parse's records: each new_entry becomes its entry's next
	// version with its page's text (events.go); Label, if set, limits
	// that to the entries of feeds with the label.
	Events bool
	Label  string
}

func (cfg *Config) defaults() {
	if cfg.Client == nil {
		cfg.Client = httpx.New(httpx.Options{})
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Limiter == nil {
		cfg.Limiter = httpx.NewLimiter(httpx.DefaultHostConcurrency, httpx.DefaultHostRPS, cfg.Clock)
	}
	cfg.Rand = ids.SharedRand(cfg.Rand) // the jobs share it
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
}

// output is one line to write: a record to encode, or one passed through.
type output struct {
	rec any
	raw []byte
}

// slot is a place in the output: ready, or waiting for a job. Slots are
// written in the order they were made, which is the input's order.
type slot struct {
	out  []output
	err  error         // a job's fatal error (the store cannot be written)
	done chan struct{} // nil when ready at once
}

// held is an input line held back until the fetch record of its group.
type held struct {
	raw   []byte
	entry *ndjson.Entry // nil for other records
}

// stage is one run's shared state.
type stage struct {
	cfg     *Config
	idx     *catalog.Index
	catCtx  context.Context // of the catalog's lookups: not cut by a signal
	indexes sync.Map        // feed id -> *feedIndex
	access  map[string]ndjson.Access
	stats   stats
}

type stats struct {
	sources, pages, found, known, fresh, rejected, failed atomic.Int64
}

// Run reads the pipeline's records and writes them on, in order. A fetch
// record of a website (source_type website) with a page is scraped: its
// article (direct mode) or the articles it links to (list mode) are written
// as entries before it, and it gets a scrape section. The entries before
// the fetch record of a feed with fulltext get the text of their pages, if
// they are new. Other records pass through unchanged. A source that cannot
// be scraped at all gets an error in its fetch record and makes Run return
// an error matching pipe.ErrFailed at the end; a rejected article is only
// counted and logged. A store that cannot be written stops the run. A
// signal (ctx) stops new page fetches; the sources in hand are finished
// with what they have.
func Run(ctx context.Context, cfg Config) error {
	cfg.defaults()
	cat, done, err := catalog.Use(ctx, cfg.Catalog, cfg.Store, cfg.Log)
	if err != nil {
		return err
	}
	defer done()
	cfg.Catalog = cat
	// The catalog is read for the sources in hand after a signal too.
	s := &stage{cfg: &cfg, access: loadAccess(ctx, cat, cfg.Log), idx: cat.Index(), catCtx: pipe.Drain(ctx)}
	var fails pipe.Failures

	slots := make(chan *slot, 4*cfg.Concurrency)
	writeErr := make(chan error, 1)
	readCtx, stop := context.WithCancel(pipe.Drain(ctx))
	defer stop()
	go func() { writeErr <- s.write(slots, stop) }()

	sem := make(chan struct{}, cfg.Concurrency)
	var pending []held
	emit := func(out ...output) {
		slots <- &slot{out: out}
	}
	// spawn runs a job, at most cfg.Concurrency at once, its output in
	// the next slot.
	spawn := func(job func() ([]output, error)) {
		sl := &slot{done: make(chan struct{})}
		select {
		case sem <- struct{}{}:
		case <-readCtx.Done():
			return
		}
		slots <- sl
		go func() {
			defer func() { <-sem }()
			defer close(sl.done)
			sl.out, sl.err = job()
		}()
	}
	flush := func() {
		for _, h := range pending {
			emit(output{raw: h.raw})
		}
		pending = nil
	}
	in := pipe.Decoded(cfg.In, ndjson.TypeEntry, ndjson.TypeFetch)
	err = pipe.EachFrom(readCtx, in, cfg.Log, &fails, func(line ndjson.Line) error {
		raw := append([]byte(nil), line.Raw...)
		if cfg.Events && eventTypes[line.Type] {
			var ev takenEvent
			if !pipe.Decode(line, &ev, cfg.Log, &fails) {
				return nil
			}
			flush()
			if !s.wantEvent(&ev) {
				emit(consumed(&ev)...)
				return nil
			}
			spawn(func() ([]output, error) { return s.eventJob(ctx, &ev) })
			return nil
		}
		switch line.Type {
		case ndjson.TypeEntry:
			var e ndjson.Entry
			if !pipe.Decode(line, &e, cfg.Log, &fails) {
				return nil
			}
			pending = append(pending, held{raw: raw, entry: &e})
			if len(pending) >= maxHeld {
				flush()
			}
			return nil
		case ndjson.TypeFetch:
			var f ndjson.Fetch
			if !pipe.Decode(line, &f, cfg.Log, &fails) {
				return nil
			}
			if f.Page != nil {
				// A page feed-scrape fetched itself, come back in a replay
				// of fetches/: it is not a fetch of its feed, and must not
				// reach feed-store, which would take it for one.
				cfg.Log.Debug("dropping the record of a page fetched by feed-scrape", "fetch_id", f.FetchID, "url", f.URL)
				return nil
			}
			kind := s.kindOf(&f, pending)
			if kind == kindNone {
				flush()
				emit(output{raw: raw})
				return nil
			}
			group := pending
			pending = nil
			spawn(func() ([]output, error) { return s.runJob(ctx, &f, kind, group) })
			return nil
		default:
			if len(pending) > 0 {
				pending = append(pending, held{raw: raw})
				return nil
			}
			emit(output{raw: raw})
			return nil
		}
	})
	flush()
	close(slots)
	if werr := <-writeErr; werr != nil {
		return werr
	}
	if err != nil {
		return err
	}
	if err := cfg.Out.Flush(); err != nil {
		return fmt.Errorf("write stdout: %w", err)
	}
	cfg.Progress.Done()
	if ctx.Err() != nil {
		cfg.Log.Warn("stopped early on a signal: the articles not fetched are fetched on the next run")
	}
	st := &s.stats
	cfg.Log.Info("scrape done", "sources", st.sources.Load(), "pages_fetched", st.pages.Load(), "articles_found", st.found.Load(),
		"known", st.known.Load(), "new", st.fresh.Load(), "rejected", st.rejected.Load(), "failed", st.failed.Load())
	fails.Records = int(st.failed.Load())
	return fails.Err("source", "sources")
}

// write writes the slots in order. After a fatal error it only drains, so
// that the jobs can finish, and stop ends the reading.
func (s *stage) write(slots <-chan *slot, stop func()) error {
	var firstErr error
	for sl := range slots {
		if sl.done != nil {
			<-sl.done
		}
		if firstErr != nil {
			continue
		}
		if sl.err != nil {
			firstErr = sl.err
			stop()
			continue
		}
		for _, o := range sl.out {
			var err error
			if o.rec != nil {
				err = s.cfg.Out.Write(o.rec)
			} else {
				err = s.cfg.Out.WriteRaw(o.raw)
			}
			if err != nil {
				firstErr = fmt.Errorf("write stdout: %w", err)
				stop()
				break
			}
		}
		if s.cfg.Events && len(slots) == 0 {
			// A worker on the events stream hands on what it has as soon
			// as nothing more is ready: its take holds a window of events
			// until they are acknowledged.
			if err := s.cfg.Out.Flush(); err != nil {
				firstErr = fmt.Errorf("write stdout: %w", err)
				stop()
			}
		}
		st := &s.stats
		s.cfg.Progress.Show("feed-scrape: %d sources, %d pages fetched, %d new, %d rejected", st.sources.Load(), st.pages.Load(), st.fresh.Load(), st.rejected.Load())
	}
	return firstErr
}

// loadAccess returns each subscription's own User-Agent, headers and
// credentials: the copies in fetch records have their secrets redacted.
func loadAccess(ctx context.Context, cat *catalog.Catalog, log *slog.Logger) map[string]ndjson.Access {
	m := map[string]ndjson.Access{}
	subs, err := cat.Subscriptions(ctx)
	if err != nil {
		log.Warn("cannot read the subscriptions: pages are fetched without their feeds' own headers and credentials", "error", err)
		return m
	}
	for _, sub := range subs {
		m[sub.FeedID] = sub.Access
	}
	return m
}

// feedIndex is a feed's view of the catalog's entry index, shared by the
// jobs of a run, plus the entries this run has taken on already.
type feedIndex struct {
	ctx   context.Context
	ix    *catalog.Index
	feed  string
	mu    sync.Mutex
	taken map[string]bool
}

func (s *stage) index(feedID string) *feedIndex {
	v, _ := s.indexes.LoadOrStore(feedID, &feedIndex{ctx: s.catCtx, ix: s.idx, feed: feedID, taken: map[string]bool{}})
	return v.(*feedIndex)
}

// take reports whether the entry uid is neither stored nor taken by this
// run already, and takes it if so.
func (fi *feedIndex) take(uid string) (bool, error) {
	fi.mu.Lock()
	defer fi.mu.Unlock()
	if fi.taken[uid] {
		return false, nil
	}
	if stored, err := fi.stored(uid); stored || err != nil {
		return false, err
	}
	fi.taken[uid] = true
	return true, nil
}

// stored reports whether the entry uid is in the store.
func (fi *feedIndex) stored(uid string) (bool, error) {
	_, ok, err := fi.ix.Latest(fi.ctx, fi.feed, uid)
	return ok, err
}
