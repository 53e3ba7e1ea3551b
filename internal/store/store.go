// Package store is feed-store: it stores entries durably, then indexes
// them, records each fetched feed's state, and announces what it stored as
// new_entry and updated_entry events.
package store

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/internal/stats"
	"github.com/feedpipe/feedpipe/internal/storage"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// DefaultInterval is how long after a fetch a feed without an interval of
// its own is due again.
const DefaultInterval = time.Hour

// maxBatch bounds the records committed together.
const maxBatch = 4096

// Config is everything feed-store touches.
type Config struct {
	In    io.Reader
	Out   *ndjson.Writer
	Log   *slog.Logger
	Store *storage.Store
	Now   func() time.Time // default time.Now
	// Sched are the scheduler's parameters (zero: sched.Defaults, the
	// adaptive policy); feed-store sets Sched.Scale itself, once per run.
	Sched sched.Params
	// Interval, when set, polls every feed without an interval of its own
	// at this fixed interval: the policy fixed:Interval.
	Interval time.Duration
	// Rand draws the scheduler's jitter; nil: seeded from the clock.
	Rand *rand.Rand
	// NoWait makes Run fail at once, instead of waiting, when another
	// feed-store holds the store's writer lock.
	NoWait bool
	// MetricsFile, when set, gets the store's figures in the Prometheus
	// text format at the end of the run (node_exporter's textfile
	// collector).
	MetricsFile string
	// Summary, when set, receives the run's counts.
	Summary *Summary
}

// Summary counts what one run stored.
type Summary struct {
	Feeds       int   // fetch records seen
	NotModified int   // fetches answered 304
	SameBody    int   // fetches answered 200 with the body of the last one
	Errors      int   // fetches that failed
	BytesSaved  int64 // bytes 304 answers spared
	New         int   // entries stored for the first time
	Updated     int   // new versions of stored entries
	Known       int   // entries already stored as they are
	Moved       int   // feeds whose URL was changed after permanent redirects
	Aliases     int   // entries recorded as aliases of another feed's (crossfeed.go)
	Replayed    int   // fetch records committed by an earlier run, skipped
}

// item is one input record, decoded if feed-store consumes it.
type item struct {
	entry *ndjson.Entry
	fetch *ndjson.Fetch
	raw   []byte
}

// Run stores what it reads. Records are committed in batches: whatever
// arrived while the last batch was being made durable. Within a batch the
// entries are appended to entries/ and synced before anything else, then
// the index, the feed states and the events follow, and only then are the
// events written to stdout. Other record types pass through, in order.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg = schedDefaults(cfg)
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Summary == nil {
		cfg.Summary = &Summary{}
	}
	var fails pipe.Failures
	items := make(chan item, maxBatch)
	readErr := make(chan error, 1)
	go func() {
		defer close(items)
		readErr <- pipe.Each(pipe.Drain(ctx), cfg.In, cfg.Log, &fails, func(line ndjson.Line) error {
			switch line.Type {
			case ndjson.TypeEntry:
				var e ndjson.Entry
				if pipe.Decode(line, &e, cfg.Log, &fails) {
					items <- item{entry: &e}
				}
			case ndjson.TypeFetch:
				var f ndjson.Fetch
				if pipe.Decode(line, &f, cfg.Log, &fails) {
					items <- item{fetch: &f}
				}
			default:
				items <- item{raw: append([]byte(nil), line.Raw...)}
			}
			return nil
		})
	}()

	var (
		c         *committer
		unlock    = func() {}
		commitErr error
	)
	defer func() { unlock() }()
	for first := range items {
		if commitErr != nil {
			continue // drain, so the reader can finish
		}
		if c == nil {
			if c, unlock, commitErr = start(cfg); commitErr != nil {
				unlock = func() {}
				continue
			}
		}
		commitErr = c.commit(pipe.Batch(first, items, maxBatch, 50*time.Millisecond))
	}
	if c != nil && commitErr == nil && len(c.held) > 0 {
		c.final = true // entries no fetch record followed: seen now
		commitErr = c.commit(nil)
	}
	if commitErr != nil {
		return commitErr
	}
	if err := <-readErr; err != nil {
		return err
	}
	if err := finish(cfg, c); err != nil {
		return err
	}
	if c != nil {
		fails.Records += c.failed
	}
	s := cfg.Summary
	cfg.Log.Info("stored", "feeds", s.Feeds, "not_modified", s.NotModified, "same_body", s.SameBody, "errors", s.Errors,
		"bytes_saved", s.BytesSaved, "new", s.New, "updated", s.Updated, "moved", s.Moved,
		"aliases", s.Aliases, "replayed", s.Replayed)
	return fails.Err("record", "records")
}

// start takes the store's writer lock, once there is something to write,
// and holds it to the end of the run: the index entries are checked against
// must not change under the run. Taking it only then, and not at start,
// keeps a store waiting on the lock from holding up a pipeline that has
// work. Then it indexes and announces what an interrupted run stored, and
// loads the feed states.
func start(cfg Config) (*committer, func(), error) {
	unlock, err := cfg.Store.Lock(storage.StoreLock, !cfg.NoWait, func() {
		cfg.Log.Info("waiting for the store lock: another feed-store is writing", "lock", cfg.Store.Path(storage.StoreLock))
	})
	if err != nil {
		return nil, nil, err
	}
	announced, err := cfg.Store.Recover(cfg.Now())
	if err == nil {
		err = cfg.Store.CatchUpURLs()
	}
	if err == nil && len(announced) > 0 {
		cfg.Log.Warn("announced entries an interrupted run had stored", "entries", len(announced))
		for i := range announced {
			if err = cfg.Out.Write(&announced[i]); err != nil {
				break
			}
		}
	}
	var c *committer
	if err == nil {
		c, err = newCommitter(cfg)
	}
	if err != nil {
		unlock()
		return nil, nil, err
	}
	return c, func() { c.close(); unlock() }, nil
}

// committer holds what feed-store knows across batches.
type committer struct {
	cfg       Config
	subs      *storage.Subs
	durations *stats.Histogram // fetch_duration_seconds, across runs
	states    *storage.States
	sch       *scheduling                   // the scheduler's part (schedule.go)
	indexes   map[string]*storage.FeedIndex // by feed id
	idem      *ledgers                      // run ledger, URL index, aliases (crossfeed.go)
	// Entries stored new, and new versions, since the feed's last fetch
	// record, by feed id.
	newByFeed, updatedByFeed map[string]int
	// Entries waiting for the fetch record of their feed, which says when
	// they were seen (hold); final releases them at the end of the input.
	held  []item
	final bool
	// failed counts the fetch records not stored: their bodies were not
	// read (missingStage).
	failed int
	// The buffers of a batch's entry and event lines, kept for the next:
	// grown anew for every batch they were most of feed-store's
	// allocations.
	entryBuf, eventBuf []byte
}

// newCommitter opens the feed states and the subscriptions lazily: a run
// reads the whole state and subscription of only the feeds in its input
// (storage.OpenStates, OpenSubscriptions; the budget scale reads their
// indexes), so that it starts in milliseconds whatever the number of feeds.
func newCommitter(cfg Config) (*committer, error) {
	states, err := cfg.Store.OpenStates()
	if err != nil {
		return nil, err
	}
	subs, err := cfg.Store.OpenSubscriptions()
	if err != nil {
		states.Close()
		return nil, err
	}
	c := &committer{cfg: cfg, subs: subs, durations: stats.LoadHistogram(cfg.Store), states: states,
		indexes: map[string]*storage.FeedIndex{}, newByFeed: map[string]int{}, updatedByFeed: map[string]int{}}
	if err := c.startScheduling(); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// close lets go of the files the lazy states and subscriptions keep open.
func (c *committer) close() {
	c.states.Close()
	c.subs.Close()
}

func (c *committer) index(feedID string) (*storage.FeedIndex, error) {
	if idx, ok := c.indexes[feedID]; ok {
		return idx, nil
	}
	idx, err := c.cfg.Store.SeenEntries(feedID)
	if err != nil {
		return nil, err
	}
	c.indexes[feedID] = idx
	return idx, nil
}

// commit makes one batch durable, then writes its output.
func (c *committer) commit(batch []item) error {
	now := c.cfg.Now()
	entriesKey := storage.DayFile(storage.DirEntries, now)
	batch, seenAt := c.hold(batch, now)
	entryLines, eventLines := c.entryBuf[:0], c.eventBuf[:0]
	defer func() { c.entryBuf, c.eventBuf = keepBuf(entryLines), keepBuf(eventLines) }()
	var (
		seen   = map[string][]storage.Seen{}
		states []storage.FeedState
		moves  []*ndjson.Fetch // proposing a feed's new URL
		out    []any           // records, or lines without their newline, in input order
	)
	for _, it := range batch {
		switch {
		case it.entry != nil:
			if a, skip, err := c.crossFeed(it.entry, now); err != nil {
				return err
			} else if a != nil || skip {
				if a != nil {
					out = append(out, a)
				}
				continue
			}
			ev, err := c.stage(it.entry, now, seenAt[it.entry], entriesKey, seen)
			if err != nil {
				return err
			}
			if ev == nil {
				continue
			}
			c.noteURL(it.entry)
			if entryLines, err = ndjson.Append(entryLines, it.entry); err != nil {
				return err
			}
			n := len(eventLines)
			if eventLines, err = ndjson.Append(eventLines, ev); err != nil {
				return err
			}
			// Encoded once for the file and stdout; the line stays as it is
			// until the batch is written out (appends go past it).
			end := len(eventLines) - 1
			out = append(out, eventLines[n:end:end])
		case it.fetch != nil && it.fetch.Page != nil:
			// A page feed-scrape fetched for a source (in a replay of
			// fetches/): not a fetch of the source, nothing to record.
		case it.fetch != nil && c.replayed(it.fetch):
			// Committed by an earlier run (crossfeed.go): not twice.
		case it.fetch != nil && missingStage(it.fetch) != "":
			// Not committed: the feed stays due for this run, and the
			// next pipeline (feed-fetch replays the recorded fetch) reads
			// its body.
			c.failed++
			stage := missingStage(it.fetch)
			what := map[string]string{"feed-parse": "unparsed", "feed-scrape": "unscraped"}[stage]
			c.cfg.Log.Error(fmt.Sprintf("fetch of %s reached feed-store %s: is %s in the pipeline?", it.fetch.Due.URL, what, stage),
				"feed_id", it.fetch.Due.FeedID, "fetch_id", it.fetch.FetchID)
		case it.fetch != nil:
			c.noteCommitted(it.fetch)
			c.cfg.Summary.count(it.fetch)
			c.durations.Observe(float64(it.fetch.DurationMS) / 1000)
			st, recs, ok, err := c.nextState(it.fetch)
			if err != nil {
				return err
			}
			if ok {
				states = append(states, st)
				if it.fetch.NewURL != "" {
					moves = append(moves, it.fetch)
				}
				out = append(out, recs...)
			}
		default:
			out = append(out, it.raw)
		}
	}

	store := c.cfg.Store
	var end storage.IndexCheckpoint
	if len(entryLines) > 0 {
		off, err := store.AppendLines(entriesKey, entryLines, storage.Durable)
		if err != nil {
			return err
		}
		eventsKey := storage.DayFile(storage.DirEvents, now)
		evOff, err := store.AppendLines(eventsKey, eventLines, storage.Lazy)
		if err != nil {
			return err
		}
		end = storage.IndexCheckpoint{File: entriesKey, Offset: off + int64(len(entryLines)),
			EventsFile: eventsKey, EventsOffset: evOff + int64(len(eventLines))}
		for feedID, recs := range seen {
			if err := store.PutSeen(feedID, recs, storage.Lazy); err != nil {
				return err
			}
		}
	}
	if err := c.appendFeedEvents(now, out); err != nil {
		return err
	}
	if err := c.flushCross(); err != nil {
		return err
	}
	if err := c.states.Put(storage.Lazy, states...); err != nil {
		return err
	}
	if len(entryLines) > 0 || len(states) > 0 || c.wroteCross() {
		if err := store.Sync(); err != nil {
			return err
		}
	}
	if end.File != "" {
		if err := store.SetCheckpoint(end); err != nil {
			return err
		}
	}
	if err := c.afterSync(); err != nil {
		return err
	}
	if err := c.move(moves); err != nil {
		return err
	}
	for _, o := range out {
		var err error
		switch o := o.(type) {
		case []byte:
			err = c.cfg.Out.WriteRaw(o)
		default:
			err = c.cfg.Out.Write(o)
		}
		if err != nil {
			return fmt.Errorf("write stdout: %w", err)
		}
	}
	if err := c.cfg.Out.Flush(); err != nil {
		return fmt.Errorf("write stdout: %w", err)
	}
	// A feed's fetch is stored, and its index file now says all its index
	// in memory does: let it go, so memory holds the feeds in flight, not
	// every feed of the run (a later fetch of it reads the file again).
	for _, st := range states {
		delete(c.indexes, st.FeedID)
	}
	return nil
}

// keepBuf returns b emptied for reuse, or nil when it is too large to
// keep: a batch of huge entries does not pin its size of memory.
func keepBuf(b []byte) []byte {
	if cap(b) > 32<<20 {
		return nil
	}
	return b[:0]
}

// stage decides what becomes of an entry against the index: stored new,
// stored as an update, or dropped as already stored. For a stored one it
// fills in the lineage fields, queues its index record and returns its
// event. feed-store checks the index itself, so a pipeline without
// feed-dedup, or a replay, never stores a version twice. first_seen and
// last_seen are at, when the entry was fetched, not now: a replay of the
// same fetches stores the same bytes.
func (c *committer) stage(e *ndjson.Entry, now, at time.Time, entriesKey string, seen map[string][]storage.Seen) (*ndjson.Event, error) {
	idx, err := c.index(e.FeedID)
	if err != nil {
		return nil, err
	}
	s := c.cfg.Summary
	status := idx.Judge(e.EntryUID, e.ContentHash)
	if status == "" {
		s.Known++
		return nil, nil
	}
	e.Status, e.FirstSeen, e.SeenCount = status, ndjson.At(at), 1
	if prev, ok := idx.Latest(e.EntryUID); ok {
		e.FirstSeen, e.SeenCount = prev.FirstSeen, prev.SeenCount+1
		s.Updated++
		c.updatedByFeed[e.FeedID]++
	} else {
		s.New++
		c.newByFeed[e.FeedID]++
		c.sch.published(e)
	}
	e.LastSeen = ndjson.At(at)
	rec := storage.Seen{UID: e.EntryUID, Hash: e.ContentHash, FirstSeen: e.FirstSeen, LastSeen: e.LastSeen, SeenCount: e.SeenCount}
	idx.Add(rec)
	seen[e.FeedID] = append(seen[e.FeedID], rec)
	ev := ndjson.EventFor(e, ndjson.At(now), entriesKey)
	return &ev, nil
}

// nextState is the feed's state after the fetch f: its cache validators,
// its counters and the scheduler's decision on when it is due again, with
// the records that announce it (schedule). State only moves forward: a
// fetch no later than the last one recorded (a replay of stored fetch
// records) changes nothing, and ok is false.
func (c *committer) nextState(f *ndjson.Fetch) (_ storage.FeedState, recs []any, ok bool, err error) {
	feedID := f.Due.FeedID
	st, known, err := c.states.Get(feedID)
	if err != nil {
		return st, nil, false, err
	}
	if feedID == "" || known && !f.FetchedAt.After(st.LastFetchAt.Time) {
		c.sch.forget(feedID)
		return st, nil, false, nil
	}
	st.FeedID = feedID
	st.LastFetchAt = f.FetchedAt
	st.LastStatus = f.HTTPStatus
	if f.Error == nil {
		st.LastSuccessAt = f.FetchedAt
		st.ConsecutiveFailures = 0
		st.LastError = nil
	} else {
		st.ConsecutiveFailures++
		st.LastError = f.Error
	}
	// A validator is kept until a response replaces it (a 200 without an
	// ETag does not erase the last one), and only for a body that was read.
	if f.NotModified || bodyRead(f) {
		if v := header(f.ResponseHeaders, "ETag"); v != "" {
			st.Validators.ETag = v
		}
		if v := header(f.ResponseHeaders, "Last-Modified"); v != "" {
			st.Validators.LastModified = v
		}
	}
	if f.Error == nil && f.BodySHA256 != "" { // not an error page
		st.LastBodySHA256, st.LastContentLength = f.BodySHA256, f.ContentLength
	}
	st.MovedTo, st.MovedCount = f.MovedTo, f.MovedCount
	st.Counts.Add(f)
	st.Counts.NewEntries += c.newByFeed[feedID]
	st.Counts.Updated += c.updatedByFeed[feedID]
	delete(c.updatedByFeed, feedID)
	if f.Parse != nil && f.Parse.Title != "" {
		st.Title = f.Parse.Title
	}
	st.NewEntriesLastFetch = c.newByFeed[feedID]
	delete(c.newByFeed, feedID)
	if recs, err = c.schedule(&st, f); err != nil {
		return st, nil, false, err
	}
	c.states.ByFeed[feedID] = st // later fetches in this batch build on it
	return st, recs, true, nil
}

// finish keeps the run's figures: the duration histogram, and the metrics
// file when one is asked for (c is nil when nothing was stored).
func finish(cfg Config, c *committer) error {
	if err := c.closeCross(); err != nil {
		return err
	}
	if c == nil {
		if cfg.MetricsFile == "" {
			return nil
		}
		subs, _, err := cfg.Store.Subscriptions()
		if err != nil {
			return err
		}
		states, err := cfg.Store.States()
		if err != nil {
			return err
		}
		return stats.WriteMetricsFile(cfg.MetricsFile, stats.Compute(subs, states, cfg.Now()), stats.LoadHistogram(cfg.Store))
	}
	if cfg.Summary.Feeds > 0 {
		if err := stats.SaveHistogram(cfg.Store, c.durations); err != nil {
			return err
		}
		if err := c.saveBudget(cfg.Summary.Feeds); err != nil {
			return err
		}
	}
	if cfg.MetricsFile == "" {
		return nil
	}
	subs, err := c.subs.All()
	if err == nil {
		err = c.states.Load()
	}
	if err != nil {
		return err
	}
	return stats.WriteMetricsFile(cfg.MetricsFile, stats.Compute(subs, c.states, cfg.Now()), c.durations)
}

// move saves the new URLs that feed-fetch proposed for feeds moved
// permanently. The feed id stays: it names the feed, not the URL. A URL
// that another subscription already has is left alone, with a warning.
func (c *committer) move(moves []*ndjson.Fetch) error {
	if len(moves) == 0 {
		return nil
	}
	return c.cfg.Store.EditSubscriptions(func(subs []ndjson.Subscription) ([]ndjson.Subscription, error) {
		taken := make(map[string]string, len(subs))
		for _, s := range subs {
			taken[s.URL] = s.FeedID
		}
		for _, f := range moves {
			log := c.cfg.Log.With("feed_id", f.Due.FeedID, "fetch_id", f.FetchID)
			if other, ok := taken[f.NewURL]; ok && other != f.Due.FeedID {
				log.Warn("feed moved to a URL already subscribed as another feed; disable one of them", "new_url", f.NewURL, "other_feed_id", other)
				continue
			}
			for i := range subs {
				if subs[i].FeedID == f.Due.FeedID && subs[i].URL != f.NewURL {
					log.Info("feed moved permanently: subscription URL changed", "url", subs[i].URL, "new_url", f.NewURL)
					delete(taken, subs[i].URL)
					subs[i].URL = f.NewURL
					taken[f.NewURL] = f.Due.FeedID
					c.cfg.Summary.Moved++
				}
			}
		}
		return subs, nil
	})
}

func (s *Summary) count(f *ndjson.Fetch) {
	s.Feeds++
	s.BytesSaved += f.BytesSaved
	switch {
	case f.Error != nil:
		s.Errors++
	case f.NotModified:
		s.NotModified++
	case f.Unchanged:
		s.SameBody++
	}
}

// bodyRead reports whether f is a 2xx whose body was read into entries:
// parsed (a feed) or scraped (a website) without error, or the same as
// the last body, which was. Only then are its validators kept: the next
// fetch sends them, and a 304 to them skips the body. A body that broke
// off (a reset, a short Content-Length, a timeout, a bad content coding),
// one that did not parse (not a feed, too many items: a parser raised to
// read it must get it again), or one no stage read would be lost.
func bodyRead(f *ndjson.Fetch) bool {
	switch {
	case f.HTTPStatus < 200 || f.HTTPStatus > 299:
		return false
	case f.Unchanged:
		return true
	case f.Error != nil && f.Error.Code != "body_too_large": // broke off, or did not parse
		return false
	case f.Due.SourceType == ndjson.SourceWebsite:
		return f.Scrape != nil && f.Scrape.Error == ""
	}
	return f.Parse != nil && f.Parse.Error == ""
}

// missingStage names the stage that should have read the body of fetch
// record f and did not: feed-parse for a feed, feed-scrape for a website;
// "" when f brought no body or it was read (with success or not). The
// pipeline lacks that stage: storing f would lose the body's entries.
func missingStage(f *ndjson.Fetch) string {
	switch {
	case f.Page != nil || !f.HasBody():
		return ""
	case f.Due.SourceType == ndjson.SourceWebsite && f.Scrape == nil:
		return "feed-scrape"
	case f.Due.SourceType != ndjson.SourceWebsite && f.Parse == nil:
		return "feed-parse"
	}
	return ""
}

func header(h map[string]string, name string) string {
	return h[http.CanonicalHeaderKey(name)]
}
