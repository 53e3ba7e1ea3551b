// Package fetch is feed-fetch: it fetches every due feed, stores each
// payload and its fetch record, and only then emits the record.
package fetch

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/clock"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/ids"
	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/progress"
	"github.com/feedpipe/feedpipe/internal/spool"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/urlnorm"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Defaults of Config (docs/design.md#fetching).
const (
	DefaultConcurrency       = 5
	DefaultRedirectThreshold = 3
	// SlowFetch is how long a fetch may take before it is logged as slow
	// (docs/design.md#logging).
	SlowFetch = 30 * time.Second
)

// Config is everything feed-fetch touches. Nil fields take the documented
// defaults.
type Config struct {
	In          io.Reader
	Out         *ndjson.Writer
	Log         *slog.Logger
	Store       *storedir.Store
	Catalog     *catalog.Catalog // the store's catalog; nil: opened for the run
	Client      *httpx.Client    // default: httpx.New(httpx.Options{})
	Limiter     *httpx.Limiter   // per-host politeness; default httpx.DefaultHostConcurrency, DefaultHostRPS
	Concurrency int              // fetches in flight in all; default DefaultConcurrency
	// RedirectThreshold is how many fetches in a row must be moved
	// permanently to one URL before it is proposed as the feed's new URL.
	RedirectThreshold int
	Clock             clock.Clock    // default the wall clock
	Rand              io.Reader      // random bits of fetch ids; default crypto/rand
	Progress          *progress.Line // nil: no progress line
	// SlowAfter is how long a fetch may take before it is logged as slow;
	// 0 means SlowFetch.
	SlowAfter time.Duration

	// private are the feeds whose subscriptions allow private addresses
	// (catalog.PrivateFeeds), read at the start of the run.
	private map[string]bool
	// recorded are the runs whose fetch records are appended and indexed:
	// written by write, read by runs.release once write has ended.
	recorded map[catalog.Run]bool
}

// result is one line of output: a fetch record, or a record passed through
// (raw, which is also the fetch record once encoded).
type result struct {
	fetch *ndjson.Fetch
	raw   []byte
	// spooled is the spool file the record came from, removed once it is
	// written out (spool.go).
	spooled *spool.Item
}

// Run reads due records from cfg.In and writes a fetch record for each, in
// the order the fetches finish; other records pass through. Fetches run
// cfg.Concurrency at a time, and each host gets its requests no faster
// than cfg.Limiter allows, so one slow or rate-limited host holds back only
// its own feeds. A feed that cannot be fetched gets a fetch record with an
// error and makes Run return an error matching pipe.ErrFailed once
// everything else is done. A store that cannot be written stops the run.
// A signal (ctx) stops new fetches; those in flight finish and are stored.
func Run(ctx context.Context, cfg Config) error {
	cfg.defaults()
	var (
		fails   pipe.Failures
		stats   counts
		results = make(chan result, 64)
		input   = make(chan ndjson.Due, 256)
	)
	// A write failure (a full disk) stops reading and fetching.
	readCtx, stop := context.WithCancel(ctx)
	defer stop()
	writeErr := make(chan error, 1)
	cfg.recorded = map[catalog.Run]bool{}
	go func() { writeErr <- cfg.write(results, &stats, stop) }()

	cat, done, err := catalog.Use(ctx, cfg.Catalog, cfg.Store, cfg.Log)
	if err != nil {
		return err
	}
	defer done()
	cfg.Catalog = cat
	if err := cfg.catchUp(ctx); err != nil {
		return err
	}
	if cfg.private, err = cat.PrivateFeeds(ctx); err != nil {
		return err
	}
	unlockSpool, err := cfg.drainSpool(ctx, results)
	if err != nil {
		return err
	}
	defer unlockSpool()
	readErr, claimErr := make(chan error, 1), make(chan error, 1)
	rs := &runs{cat: cat, taken: map[catalog.Run]bool{}}
	dues := make(chan ndjson.Due, claimBatch)
	go func() {
		defer close(input)
		claimErr <- cfg.claimer(readCtx, rs, dues, func(due ndjson.Due) error {
			select {
			case input <- due:
			case <-readCtx.Done():
			}
			return nil
		}, results)
	}()
	go func() {
		defer close(dues)
		in := pipe.Decoded(cfg.In, ndjson.TypeDue)
		readErr <- pipe.EachFrom(readCtx, in, cfg.Log, &fails, func(line ndjson.Line) error {
			if line.Type != ndjson.TypeDue {
				results <- result{raw: append([]byte(nil), line.Raw...)}
				return nil
			}
			var due ndjson.Due
			if !pipe.Decode(line, &due, cfg.Log, &fails) {
				return nil
			}
			due = withoutUserinfo(due)
			if due.FeedID == "" {
				// A due record written by hand ({"type":"due","url":"..."})
				// gets the id a subscription to that URL would have. (An
				// invalid URL fails the fetch, with its own message.)
				u, _ := urlnorm.Normalize(due.URL)
				due.FeedID = ids.FeedID(cmp.Or(u, due.URL))
			}
			select {
			case dues <- due:
			case <-readCtx.Done():
			}
			return nil
		})
	}()

	skipped := newDispatcher(&cfg).run(readCtx, input, results)
	close(results)
	werr := <-writeErr
	// Every fetch made is recorded by now (or never will be): the claims
	// of the others go.
	if err := rs.release(pipe.Drain(ctx), cfg.recorded); err != nil && werr == nil {
		werr = err
	}
	if werr != nil {
		return werr
	}
	if err := <-readErr; err != nil {
		return err
	}
	if err := <-claimErr; err != nil {
		return err
	}
	if err := cfg.Out.Flush(); err != nil {
		return fmt.Errorf("write stdout: %w", err)
	}
	cfg.Progress.Done()
	if ctx.Err() != nil {
		cfg.Log.Warn("stopped early on a signal: the feeds not fetched stay due for the next run", "not_fetched", skipped)
	}
	cfg.Log.Info("fetch done", "fetched", stats.fetched, "not_modified", stats.notModified, "unchanged", stats.unchanged,
		"failed", stats.failed, "bytes_saved", stats.bytesSaved, "skipped", rs.skipped, "resumed", rs.resumed)
	fails.Records = stats.failed
	return fails.Err("feed", "feeds")
}

// withoutUserinfo moves credentials written into the due URL
// (http://user:password@host/) to its basic auth, unless it has its own, so
// that they are sent but never recorded or logged with the URL, nor make
// its feed id. (feed-sub moves them when it subscribes; a due record
// written by hand, or an older subscription, may still hold them.)
func withoutUserinfo(due ndjson.Due) ndjson.Due {
	u, user := urlnorm.SplitUserinfo(due.URL)
	if user == nil {
		return due
	}
	due.URL = u
	if due.Auth == nil {
		pass, _ := user.Password()
		due.Auth = &ndjson.Auth{Username: user.Username(), Password: pass}
	}
	return due
}

type counts struct {
	fetched, notModified, unchanged, failed int
	bytesSaved                              int64
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
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.RedirectThreshold <= 0 {
		cfg.RedirectThreshold = DefaultRedirectThreshold
	}
	if cfg.SlowAfter <= 0 {
		cfg.SlowAfter = SlowFetch
	}
	cfg.Rand = ids.SharedRand(cfg.Rand) // the fetches share it
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
}

// write appends fetch records to fetches/ (synced) and only then writes
// them, and the passed-through records, to stdout. Whatever has arrived
// while the last batch was being synced makes the next batch, so a busy run
// syncs rarely and a quiet one promptly.
func (cfg *Config) write(results <-chan result, stats *counts, stop func()) error {
	var firstErr error
	for first := range results {
		// Up to 100 ms of records to a batch: each batch is a sync of
		// fetches/ and a transaction of the catalog's fetch index, which
		// waits for feed-store's, so fewer batches wait less (a warm
		// cycle of 10,000 304s: 37 of them;
		// docs/bench/2026-11-26-store-round3.md).
		batch := pipe.Batch(first, results, 512, 100*time.Millisecond)
		if firstErr != nil {
			continue // keep draining so that the workers can finish
		}
		if firstErr = cfg.emit(batch, stats); firstErr != nil {
			stop()
		} else if len(results) == 0 {
			// Nothing more is ready: what was fetched goes on now, not
			// when the buffer fills or the input ends. A bus worker's
			// take waits for its records to be handed on before it takes
			// more (docs/bus.md, "Window").
			if err := cfg.Out.Flush(); err != nil {
				firstErr = fmt.Errorf("write stdout: %w", err)
				stop()
			}
		}
		cfg.Progress.Show("feed-fetch: %d fetched, %d not modified, %d unchanged, %d failed", stats.fetched, stats.notModified, stats.unchanged, stats.failed)
	}
	return firstErr
}

// emit stores a batch of fetch records, then writes the batch out. Each
// record is encoded once, for both.
func (cfg *Config) emit(batch []result, stats *counts) error {
	var (
		records []*ndjson.Fetch
		lines   [][]byte
	)
	for i, r := range batch {
		if r.fetch == nil {
			continue
		}
		line, err := ndjson.Marshal(r.fetch)
		if err != nil {
			return err
		}
		records = append(records, r.fetch)
		lines = append(lines, line)
		batch[i].raw = bytes.TrimSuffix(line, []byte{'\n'})
	}
	if err := cfg.Store.AppendFetchLines(records, lines, cfg.Catalog.FetchIndexer(context.Background())); err != nil {
		return err
	}
	for _, f := range records {
		if f.Page == nil && !f.Due.ScheduledAt.IsZero() { // as IndexFetch notes the run's fetch
			cfg.recorded[catalog.Run{FeedID: f.Due.FeedID, ScheduledAt: f.Due.ScheduledAt.Time}] = true
		}
	}
	if err := cfg.archivesFetched(records); err != nil {
		return err
	}
	for _, r := range batch {
		if r.fetch != nil && r.spooled == nil {
			stats.add(r.fetch)
		}
		if err := cfg.Out.WriteRaw(r.raw); err != nil {
			return fmt.Errorf("write stdout: %w", err)
		}
	}
	return cfg.doneSpooled(batch)
}

func (s *counts) add(f *ndjson.Fetch) {
	s.fetched++
	s.bytesSaved += f.BytesSaved
	switch {
	case f.Error != nil:
		s.failed++
	case f.NotModified:
		s.notModified++
	case f.Unchanged:
		s.unchanged++
	}
}

// catchUp indexes the fetch records a crash left past the catalog's
// checkpoint, under the fetch lock, before anything else is fetched: a
// run fetched then must be found claimed.
func (cfg *Config) catchUp(ctx context.Context) error {
	unlock, err := cfg.Store.Lock(storedir.FetchLock, true, nil)
	if err != nil {
		return err
	}
	defer unlock()
	return cfg.Catalog.CatchUpFetches(ctx)
}
