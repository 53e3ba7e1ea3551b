// Package fetch is feed-fetch: it fetches every due feed, stores each
// payload and its fetch record, and only then emits the record.
package fetch

import (
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/ids"
	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/progress"
	"github.com/feedpipe/feedpipe/internal/storage"
	"github.com/feedpipe/feedpipe/internal/urlnorm"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// DefaultConcurrency is how many feeds are fetched at once (seed 001 §8.1).
const DefaultConcurrency = 5

// Config is everything feed-fetch touches. Nil fields take the documented
// defaults.
type Config struct {
	In          io.Reader
	Out         *ndjson.Writer
	Log         *slog.Logger
	Store       *storage.Store
	Client      *httpx.Client    // default: httpx.New(httpx.Options{})
	Concurrency int              // default DefaultConcurrency
	Now         func() time.Time // default time.Now
	Rand        io.Reader        // random bits of fetch ids; default crypto/rand
	Progress    *progress.Line   // nil: no progress line
}

// result is one line of output: a fetch record, or a record passed through.
type result struct {
	fetch *ndjson.Fetch
	raw   []byte
}

// Run reads due records from cfg.In and writes a fetch record for each, in
// the order the fetches finish; other records pass through. A feed that
// cannot be fetched gets a fetch record with an error and makes Run return
// an error matching pipe.ErrFailed once everything else is done. A store
// that cannot be written stops the run.
func Run(ctx context.Context, cfg Config) error {
	cfg.defaults()
	var (
		fails   pipe.Failures
		work    = make(chan ndjson.Due)
		results = make(chan result, 64)
		workers sync.WaitGroup
		stats   counts
	)
	// In-flight fetches finish even after a signal: their records are
	// stored and emitted, and only new input stops.
	fetchCtx := context.WithoutCancel(ctx)
	for range cfg.Concurrency {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for due := range work {
				results <- result{fetch: cfg.fetchOne(fetchCtx, due)}
			}
		}()
	}
	// A write failure (a full disk) stops reading new input.
	readCtx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	writeErr := make(chan error, 1)
	go func() { writeErr <- cfg.write(results, &stats, stopReading) }()

	readErr := pipe.Each(readCtx, cfg.In, cfg.Log, &fails, func(line ndjson.Line) error {
		if line.Type != ndjson.TypeDue {
			results <- result{raw: append([]byte(nil), line.Raw...)}
			return nil
		}
		var due ndjson.Due
		if !pipe.Decode(line, &due, cfg.Log, &fails) {
			return nil
		}
		if due.FeedID == "" {
			// A due record written by hand ({"type":"due","url":"..."})
			// gets the id a subscription to that URL would have. (An
			// invalid URL fails the fetch, with its own message.)
			u, _ := urlnorm.Normalize(due.URL)
			due.FeedID = ids.FeedID(cmp.Or(u, due.URL))
		}
		if readCtx.Err() != nil {
			return nil // a signal: no new fetches
		}
		select {
		case work <- due:
		case <-readCtx.Done():
		}
		return nil
	})
	close(work)
	workers.Wait()
	close(results)
	if err := <-writeErr; err != nil {
		return err
	}
	if readErr != nil {
		return readErr
	}
	if err := cfg.Out.Flush(); err != nil {
		return fmt.Errorf("write stdout: %w", err)
	}
	cfg.Progress.Done()
	if ctx.Err() != nil {
		cfg.Log.Warn("stopped early on a signal: the feeds not fetched stay due for the next run")
	}
	cfg.Log.Info("fetch done", "fetched", stats.fetched, "not_modified", stats.notModified, "failed", stats.failed)
	fails.Records = stats.failed
	return fails.Err("feed", "feeds")
}

type counts struct{ fetched, notModified, failed int }

type lockedReader struct {
	mu sync.Mutex
	r  io.Reader
}

func (l *lockedReader) Read(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r.Read(p)
}

func (cfg *Config) defaults() {
	if cfg.Client == nil {
		cfg.Client = httpx.New(httpx.Options{})
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	cfg.Rand = &lockedReader{r: cfg.Rand} // the workers share it
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
}

// fetchOne fetches one feed and stores its payload.
func (cfg *Config) fetchOne(ctx context.Context, due ndjson.Due) *ndjson.Fetch {
	fetchedAt := cfg.Now()
	f := &ndjson.Fetch{
		Header:       ndjson.Head(ndjson.TypeFetch),
		Due:          due,
		RequestedURL: due.URL,
		FetchedAt:    ndjson.At(fetchedAt),
	}
	id, err := ids.FetchID(fetchedAt, cfg.Rand)
	if err != nil {
		f.Error = &ndjson.Error{Class: ndjson.ClassTransient, Code: "internal", Message: err.Error()}
		return f
	}
	f.FetchID = id
	log := cfg.Log.With("feed_id", due.FeedID, "fetch_id", id)

	r := cfg.Client.Get(ctx, httpx.Request{URL: due.URL, Validators: due.Validators})
	f.URL = r.URL
	f.Redirects = r.Redirects
	if f.Redirects == nil {
		f.Redirects = []ndjson.Redirect{}
	}
	f.DurationMS = r.Duration.Milliseconds()
	f.HTTPStatus = r.Status
	f.NotModified = r.NotModified
	f.RequestHeaders = httpx.Flatten(r.RequestHeader)
	f.ResponseHeaders = httpx.Flatten(r.Header)
	f.ContentType = r.Header.Get("Content-Type")
	f.Truncated = r.Truncated
	if r.HasRetryAfter {
		f.RetryAfterSec = int((r.RetryAfter + time.Second - 1) / time.Second)
	}
	f.Error = r.Err
	if r.Status != 0 && !r.NotModified {
		key, sum, err := cfg.Store.PutRaw(fetchedAt, r.Body)
		if err != nil {
			// The payload is lost, so the record must say so; the
			// writer stops the run on the same broken store soon after.
			f.Error = &ndjson.Error{Class: ndjson.ClassTransient, Code: "store", Message: err.Error()}
			log.Error("cannot store payload", "error", err)
			return f
		}
		f.BodyRef = &ndjson.BlobRef{Storage: storage.RawStorage, Key: key}
		f.BodySHA256 = sum
		f.ContentLength = int64(len(r.Body))
	}
	if f.Error != nil {
		log.Warn("fetch failed", "url", due.URL, "status", r.Status, "class", f.Error.Class, "error", f.Error.Message, "elapsed_ms", f.DurationMS)
	} else {
		log.Debug("fetched", "url", due.URL, "status", r.Status, "bytes", f.ContentLength, "elapsed_ms", f.DurationMS)
	}
	return f
}

// write appends fetch records to fetches/ (synced) and only then writes
// them, and the passed-through records, to stdout. Whatever has arrived
// while the last batch was being synced makes the next batch, so a busy run
// syncs rarely and a quiet one promptly.
func (cfg *Config) write(results <-chan result, stats *counts, stop func()) error {
	var firstErr error
	for first := range results {
		batch := pipe.Batch(first, results, 512)
		if firstErr != nil {
			continue // keep draining so that the workers can finish
		}
		if firstErr = cfg.emit(batch, stats); firstErr != nil {
			stop()
		}
		cfg.Progress.Show("feed-fetch: %d fetched, %d not modified, %d failed", stats.fetched, stats.notModified, stats.failed)
	}
	return firstErr
}

// emit stores a batch of fetch records, then writes the batch out.
func (cfg *Config) emit(batch []result, stats *counts) error {
	if err := cfg.persist(batch); err != nil {
		return err
	}
	for _, r := range batch {
		var err error
		if r.fetch != nil {
			stats.add(r.fetch)
			err = cfg.Out.Write(r.fetch)
		} else {
			err = cfg.Out.WriteRaw(r.raw)
		}
		if err != nil {
			return fmt.Errorf("write stdout: %w", err)
		}
	}
	return nil
}

func (s *counts) add(f *ndjson.Fetch) {
	s.fetched++
	switch {
	case f.Error != nil:
		s.failed++
	case f.NotModified:
		s.notModified++
	}
}

// persist appends the batch's fetch records to their day files.
func (cfg *Config) persist(batch []result) error {
	byDay := map[string][]byte{}
	var order []string
	for _, r := range batch {
		if r.fetch == nil {
			continue
		}
		key := storage.DayFile(storage.DirFetches, r.fetch.FetchedAt.Time)
		line, err := ndjson.Marshal(r.fetch)
		if err != nil {
			return err
		}
		if _, ok := byDay[key]; !ok {
			order = append(order, key)
		}
		byDay[key] = append(byDay[key], line...)
	}
	for _, key := range order {
		if _, err := cfg.Store.AppendLines(key, byDay[key], storage.Durable); err != nil {
			return err
		}
	}
	return nil
}
