// Package store is feed-store: it stores entries durably, then indexes
// them, records each fetched feed's state, and announces what it stored as
// new_entry and updated_entry events.
package store

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/internal/stats"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// DefaultInterval is how long after a fetch a feed without an interval of
// its own is due again.
const DefaultInterval = time.Hour

// maxBatch bounds the records committed together.
const maxBatch = 4096

// Config is everything feed-store touches.
type Config struct {
	In      io.Reader
	Out     *ndjson.Writer
	Log     *slog.Logger
	Store   *storedir.Store
	Catalog *catalog.Catalog // the store's catalog; nil: opened for the run
	Now     func() time.Time // default time.Now
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
	// Decisions writes the scheduler's decision records to Out too,
	// beside the events; they always go to the decisions/ tap.
	Decisions bool
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
	// Pushed bodies, archive pages read and entries stored from them
	// (push.go).
	Pushed, ArchivePages, Backfilled int
}

// item is one input record, decoded if feed-store consumes it.
type item struct {
	entry *ndjson.Entry
	fetch *ndjson.Fetch
	raw   []byte
	link  string // the entry's link hash (catalog.LinkHash), "" when it has none: set by loadLinks
	// ack: raw is a bus_ack, which acknowledges the records before it on
	// their stream once it is passed on: the entries before it are
	// committed with it, never held past it (hold).
	ack bool
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
	// A signal does not stop feed-store: it stores all it reads, to the
	// end of its input, which ends once the stages upstream have stopped
	// (pipe.Drain).
	ctx = pipe.Drain(ctx)
	cat, done, err := catalog.Use(ctx, cfg.Catalog, cfg.Store, cfg.Log)
	if err != nil {
		return err
	}
	defer done()
	cfg.Catalog = cat
	var fails pipe.Failures
	items := make(chan item, maxBatch)
	readErr := make(chan error, 1)
	go func() {
		defer close(items)
		in := pipe.Decoded(cfg.In, ndjson.TypeEntry, ndjson.TypeFetch)
		readErr <- pipe.EachFrom(ctx, in, cfg.Log, &fails, func(line ndjson.Line) error {
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
				items <- item{raw: append([]byte(nil), line.Raw...), ack: line.Type == ndjson.TypeBusAck}
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
			if c, unlock, commitErr = start(ctx, cfg); commitErr != nil {
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
	if err := finish(ctx, cfg, c); err != nil {
		return err
	}
	if c != nil {
		fails.Records += c.failed
	}
	s := cfg.Summary
	cfg.Log.Info("stored", "feeds", s.Feeds, "not_modified", s.NotModified, "same_body", s.SameBody, "errors", s.Errors,
		"bytes_saved", s.BytesSaved, "new", s.New, "updated", s.Updated, "moved", s.Moved,
		"aliases", s.Aliases, "replayed", s.Replayed, "pushed", s.Pushed, "archive_pages", s.ArchivePages, "backfilled", s.Backfilled)
	return fails.Err("record", "records")
}

// start takes the store's writer lock, once there is something to write,
// and holds it to the end of the run: the entries it judges must not be
// stored by another feed-store meanwhile. Taking it only then, and not at
// start, keeps a store waiting on the lock from holding up a pipeline that
// has work. Then it indexes and announces what an interrupted run stored.
func start(ctx context.Context, cfg Config) (*committer, func(), error) {
	unlock, err := cfg.Store.Lock(storedir.StoreLock, !cfg.NoWait, func() {
		cfg.Log.Info("waiting for the store lock: another feed-store is writing", "lock", cfg.Store.Path(storedir.StoreLock))
	})
	if err != nil {
		return nil, nil, err
	}
	announced, err := cfg.Catalog.CatchUpEntries(ctx, cfg.Now())
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
		c, err = newCommitter(ctx, cfg)
	}
	if err != nil {
		unlock()
		return nil, nil, err
	}
	return c, unlock, nil
}

// committer holds what feed-store knows across batches.
type committer struct {
	ctx       context.Context
	cfg       Config
	cat       *catalog.Catalog
	durations *stats.Histogram // fetch_duration_seconds, across runs
	sch       *scheduling      // the scheduler's part (schedule.go)
	index     *catalog.Index   // the entry index, plus this batch's entries
	// states are the feed states this run changed, which later fetches
	// build on; read from the catalog the first time.
	states map[string]catalog.FeedState
	// Entries stored new, and new versions, since the feed's last fetch
	// record, by feed id; and the uids of those it found stored, unchanged
	// (sightings, as feed-dedup's dedup.unchanged_uids).
	newByFeed, updatedByFeed map[string]int
	knownByFeed              map[string][]string
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
	// feeds is what the events say of each feed (name, labels), looked
	// up once a run.
	feeds map[string]catalog.EventFeed
	side  side // push and history (push.go)
	// The states and scheduling settings of the feeds of the batch's fetch
	// records, read in one query each at its start (readAhead): asked
	// holds the feeds asked for, found or not.
	asked   map[string]bool
	aheadSt map[string]catalog.FeedState
	aheadOv map[string]sched.Overrides
}

func newCommitter(ctx context.Context, cfg Config) (*committer, error) {
	c := &committer{ctx: ctx, cfg: cfg, cat: cfg.Catalog, durations: stats.LoadHistogram(ctx, cfg.Catalog), index: cfg.Catalog.Index(),
		states: map[string]catalog.FeedState{}, newByFeed: map[string]int{}, updatedByFeed: map[string]int{}, knownByFeed: map[string][]string{},
		feeds: map[string]catalog.EventFeed{}, asked: map[string]bool{}}
	if err := c.startScheduling(); err != nil {
		return nil, err
	}
	if err := c.startSide(); err != nil {
		return nil, err
	}
	return c, nil
}

// priorState is a feed's state as this run has it before a fetch: read
// once per fetch record, for replayed and nextState.
type priorState struct {
	st    catalog.FeedState
	known bool
	err   error
}

// prior is the feed's state as this run has it.
func (c *committer) prior(feedID string) priorState {
	if st, ok := c.states[feedID]; ok {
		return priorState{st, true, nil}
	}
	if c.asked[feedID] {
		st, ok := c.aheadSt[feedID]
		if !ok {
			st = catalog.FeedState{FeedID: feedID}
		}
		return priorState{st, ok, nil}
	}
	st, known, err := c.cat.State(c.ctx, feedID)
	return priorState{st, known, err}
}

// overrides are the scheduling settings of the feed's subscription, none
// when it has none.
func (c *committer) overrides(feedID string) (sched.Overrides, error) {
	if c.asked[feedID] {
		return c.aheadOv[feedID], nil
	}
	sub, _, err := c.cat.Subscription(c.ctx, feedID)
	return sched.OverridesOf(sub), err
}

// readAhead reads the states and scheduling settings of the feeds of the
// batch's fetch records whose state the run does not hold, in a query
// each, instead of two queries for each fetch record.
func (c *committer) readAhead(batch []item) error {
	clear(c.asked)
	var ids []string
	for _, it := range batch {
		if f := it.fetch; f != nil && f.Page == nil {
			if id := f.Due.FeedID; id != "" && !c.asked[id] {
				if _, ok := c.states[id]; !ok {
					c.asked[id] = true
					ids = append(ids, id)
				}
			}
		}
	}
	var err error
	if c.aheadSt, err = c.cat.StatesOf(c.ctx, ids); err == nil {
		c.aheadOv, err = c.cat.OverridesOf(c.ctx, ids)
	}
	if err != nil {
		clear(c.asked)
	}
	return err
}

// batchWrites are what a batch writes to the catalog, in one transaction,
// once its lines are durable.
type batchWrites struct {
	versions  []staged       // entry versions, at their lines in entries/
	links     []linkRef      // links first stored
	linksKept bool           // by the catalog as the batch began (catalog.LinksKept)
	aliases   []ndjson.Alias // aliases recorded
	decisions []*ndjson.Decision
	states    []catalog.FeedState
	sighted   []sighting
	released  []catalog.Run   // runs whose fetch is committed
	parsed    []*ndjson.Fetch // fetches whose parse the catalog keeps (IndexParse)
	side      sideWrites      // push and history (push.go)
}

type staged struct {
	entry *ndjson.Entry
	at    int // offset of its line in the batch's entry lines
	n     int // its length
}

type linkRef struct {
	hash string
	ref  ndjson.EntryRef
}

type sighting struct {
	feedID string
	uids   []string
	at     time.Time
}

// commit makes one batch durable, then writes its output.
func (c *committer) commit(batch []item) error {
	now := c.cfg.Now()
	entriesKey := storedir.DayFile(storedir.DirEntries, now)
	batch, seenAt := c.hold(batch, now)
	entryLines, eventLines := c.entryBuf[:0], c.eventBuf[:0]
	defer func() { c.entryBuf, c.eventBuf = keepBuf(entryLines), keepBuf(eventLines) }()
	var (
		w     batchWrites
		moves []*ndjson.Fetch // proposing a feed's new URL
		out   []any           // records, or lines without their newline, in input order
	)
	titles := feedTitles(batch)
	past := history(batch) // entries of archive pages (push.go)
	linksKept, err := c.loadLinks(batch)
	if err != nil {
		return err
	}
	w.linksKept = linksKept
	if err := c.readAhead(batch); err != nil {
		return err
	}
	for _, it := range batch {
		switch {
		case it.entry != nil:
			if a, skip, err := c.crossFeed(it.entry, it.link, now); err != nil {
				return err
			} else if a != nil || skip {
				if a != nil { // to aliases/: stdout carries events only
					w.aliases = append(w.aliases, *a)
				}
				continue
			}
			stage := c.stage
			if past[it.entry] {
				stage = c.stageHistory
			}
			ev, err := stage(it.entry, now, seenAt[it.entry], entriesKey)
			if err != nil {
				return err
			}
			if ev == nil {
				continue
			}
			if err := c.fillFeed(ev, titles); err != nil {
				return err
			}
			if l, ok, err := c.newLink(it.entry, it.link); err != nil {
				return err
			} else if ok {
				w.links = append(w.links, l)
			}
			n := len(entryLines)
			if entryLines, err = ndjson.Append(entryLines, it.entry); err != nil {
				return err
			}
			w.versions = append(w.versions, staged{it.entry, n, len(entryLines) - n})
			n = len(eventLines)
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
		case it.fetch != nil:
			f := it.fetch
			if done, err := c.sideFetch(f, &w); err != nil {
				return err
			} else if done {
				break // pushed, or an archive page's: no poll (push.go)
			}
			// The feed's state, read once for both questions below.
			prev := c.prior(f.Due.FeedID)
			if c.replayed(f, prev) {
				break // committed by an earlier run: not twice
			}
			if stage := missingStage(f); stage != "" {
				// Not committed: the feed stays due for this run, and the
				// next pipeline (feed-fetch passes on the recorded fetch)
				// reads its body.
				c.failed++
				what := map[string]string{"feed-parse": "unparsed", "feed-scrape": "unscraped"}[stage]
				c.cfg.Log.Error(fmt.Sprintf("fetch of %s reached feed-store %s: is %s in the pipeline?", f.Due.URL, what, stage),
					"feed_id", f.Due.FeedID, "fetch_id", f.FetchID)
				break
			}
			c.cfg.Summary.count(f)
			c.durations.Observe(float64(f.DurationMS) / 1000)
			st, recs, ok, err := c.nextState(f, prev)
			if err != nil {
				return err
			}
			if ok {
				c.sidePoll(f, st, &w)
				w.states = append(w.states, st)
				if !f.Due.ScheduledAt.IsZero() {
					w.released = append(w.released, catalog.Run{FeedID: f.Due.FeedID, ScheduledAt: f.Due.ScheduledAt.Time})
				}
				if f.NewURL != "" {
					moves = append(moves, f)
				}
				for _, r := range recs {
					if d, ok := r.(*ndjson.Decision); ok {
						w.decisions = append(w.decisions, d)
						if !c.cfg.Decisions {
							continue
						}
					}
					out = append(out, r)
				}
			}
			w.sighted = append(w.sighted, c.sightings(f)...)
			if f.Parse != nil && bodyRead(f) && !f.Unchanged {
				w.parsed = append(w.parsed, f)
			}
		default:
			out = append(out, it.raw)
		}
	}

	if err := c.write(now, entriesKey, entryLines, eventLines, out, &w); err != nil {
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
	// The batch is in the catalog now: let go of what the run kept of it,
	// so that memory holds the feeds in flight, not every feed of the run.
	for _, st := range w.states {
		delete(c.states, st.FeedID)
		c.index.Forget(st.FeedID)
	}
	return nil
}

// write makes a batch durable: the entries appended to entries/ and
// synced, the events and aliases appended to their logs, all synced; then
// the batch's rows in the catalog, with the logs' checkpoints, in one
// transaction. A crash before the commit leaves lines past the
// checkpoints, which the next run indexes (catalog.CatchUpEntries).
func (c *committer) write(now time.Time, entriesKey string, entryLines, eventLines []byte, out []any, w *batchWrites) error {
	st := c.cfg.Store
	var entriesEnd, eventsEnd, aliasesEnd catalog.Checkpoint
	if len(entryLines) > 0 {
		off, err := st.AppendLines(entriesKey, entryLines, storedir.Durable)
		if err != nil {
			return err
		}
		entriesEnd = catalog.Checkpoint{File: entriesKey, Offset: off + int64(len(entryLines))}
		for i := range w.versions {
			w.versions[i].at += int(off)
		}
	}
	feedEvents, err := feedEventLines(out)
	if err != nil {
		return err
	}
	if lines := append(eventLines, feedEvents...); len(lines) > 0 {
		key := storedir.DayFile(storedir.DirEvents, now)
		off, err := st.AppendLines(key, lines, storedir.Lazy)
		if err != nil {
			return err
		}
		eventsEnd = catalog.Checkpoint{File: key, Offset: off + int64(len(lines))}
	}
	if len(w.aliases) > 0 {
		key := storedir.DayFile(storedir.DirAliases, now)
		lines, err := encodeAll(w.aliases)
		if err != nil {
			return err
		}
		off, err := st.AppendLines(key, lines, storedir.Lazy)
		if err != nil {
			return err
		}
		aliasesEnd = catalog.Checkpoint{File: key, Offset: off + int64(len(lines))}
	}
	if len(w.decisions) > 0 {
		// A tap for people and tools; nothing is rebuilt from it, so it
		// needs no checkpoint, nor a sync of its own (the state keeps
		// each feed's last decision): a crash may cost its last lines.
		lines, err := encodeAll(w.decisions)
		if err != nil {
			return err
		}
		if _, err := st.AppendLines(storedir.DayFile(storedir.DirDecisions, now), lines, storedir.Lazy); err != nil {
			return err
		}
	}
	if eventsEnd.File != "" || aliasesEnd.File != "" {
		if err := st.Sync(); err != nil {
			return err
		}
	}
	states := make([]catalog.EncodedState, len(w.states))
	for i := range w.states {
		if states[i], err = catalog.EncodeState(&w.states[i]); err != nil {
			return err
		}
	}
	day := storedir.Day(now)
	published := make([]int64, len(w.versions))
	for i, v := range w.versions {
		published[i] = catalog.ListedAt(v.entry).UnixMilli()
	}
	return c.cat.Update(c.ctx, func(t *catalog.Tx) error {
		if err := t.SearchKeysFor(published); err != nil {
			return err
		}
		for _, v := range w.versions {
			if err := t.StoreVersion(v.entry, catalog.Location{Day: day, Offset: int64(v.at), Length: int64(v.n)}); err != nil {
				return err
			}
		}
		if err := addLinks(t, w); err != nil {
			return err
		}
		for i := range w.aliases {
			if err := t.AddAlias(&w.aliases[i], day); err != nil {
				return err
			}
		}
		if err := t.PutEncodedStates(states...); err != nil {
			return err
		}
		for _, s := range w.sighted {
			if err := t.Sighted(s.feedID, s.uids, s.at); err != nil {
				return err
			}
		}
		for _, r := range w.released {
			if err := t.ReleaseRuns(r.FeedID, r.ScheduledAt); err != nil {
				return err
			}
		}
		if err := w.side.apply(t); err != nil {
			return err
		}
		for _, f := range w.parsed {
			if err := t.IndexParse(f); err != nil {
				return err
			}
		}
		if entriesEnd.File != "" || eventsEnd.File != "" {
			if entriesEnd.File == "" {
				cp, err := c.cat.Checkpoint(c.ctx, catalog.TapEntries)
				if err != nil {
					return err
				}
				entriesEnd = cp
			}
			if err := t.SetEntriesCheckpoint(entriesEnd, eventsEnd); err != nil {
				return err
			}
		}
		if aliasesEnd.File != "" {
			return t.SetAliasesCheckpoint(aliasesEnd)
		}
		return nil
	})
}

// feedTitles are the titles the fetch records of a batch found for their
// feeds, for the events of a feed whose first fetch this is.
func feedTitles(batch []item) map[string]string {
	titles := map[string]string{}
	for _, it := range batch {
		if f := it.fetch; f != nil && f.Parse != nil && f.Parse.Title != "" {
			titles[f.Due.FeedID] = f.Parse.Title
		}
	}
	return titles
}

// fillFeed sets the feed's name and labels in the event ev: the
// subscription's name, else the feed's title as stored or as its fetch in
// this batch found it.
func (c *committer) fillFeed(ev *ndjson.Event, titles map[string]string) error {
	ef, ok := c.feeds[ev.FeedID]
	if !ok {
		var err error
		if ef, err = c.cat.EventFeed(c.ctx, ev.FeedID); err != nil {
			return err
		}
		// Kept without a name too: a title stored later comes with its
		// fetch record, which is in the batch of its entries (hold), so
		// in titles.
		c.feeds[ev.FeedID] = ef
	}
	if ef.Name == "" {
		ef.Name = titles[ev.FeedID]
	}
	ef.Fill(ev)
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
// stored as an update, or dropped as already stored (a sighting, counted
// with its feed's fetch). For a stored one it fills in the lineage fields,
// notes it in the index and returns its event. feed-store checks the index
// itself, so a pipeline without feed-dedup, or a replay, never stores a
// version twice. first_seen and last_seen are at, when the entry was
// fetched, not now: a replay of the same fetches stores the same bytes.
func (c *committer) stage(e *ndjson.Entry, now, at time.Time, entriesKey string) (*ndjson.Event, error) {
	s := c.cfg.Summary
	status, err := c.index.Judge(c.ctx, e.FeedID, e.EntryUID, e.ContentHash)
	if err != nil {
		return nil, err
	}
	if status == "" {
		s.Known++
		c.knownByFeed[e.FeedID] = append(c.knownByFeed[e.FeedID], e.EntryUID)
		return nil, nil
	}
	e.Status, e.FirstSeen, e.SeenCount = status, ndjson.At(at), 1
	prev, ok, err := c.index.Latest(c.ctx, e.FeedID, e.EntryUID)
	if err != nil {
		return nil, err
	}
	if ok {
		e.FirstSeen, e.SeenCount = prev.FirstSeen, prev.SeenCount+1
		s.Updated++
		c.updatedByFeed[e.FeedID]++
	} else {
		s.New++
		c.newByFeed[e.FeedID]++
		c.sch.published(e)
	}
	e.LastSeen = ndjson.At(at)
	c.index.Add(e.FeedID, catalog.Seen{UID: e.EntryUID, Hash: e.ContentHash, FirstSeen: e.FirstSeen, LastSeen: e.LastSeen, SeenCount: e.SeenCount})
	ev := ndjson.EventFor(e, ndjson.At(now), entriesKey)
	return &ev, nil
}

// sightings are the entries the fetch f showed unchanged: those feed-dedup
// dropped (its dedup section) and those feed-store found stored.
func (c *committer) sightings(f *ndjson.Fetch) []sighting {
	feedID := f.Due.FeedID
	uids := c.knownByFeed[feedID]
	delete(c.knownByFeed, feedID)
	if f.Dedup != nil {
		uids = append(uids, f.Dedup.UnchangedUIDs...)
	}
	if len(uids) == 0 || f.FetchedAt.IsZero() {
		return nil
	}
	return []sighting{{feedID, uids, f.FetchedAt.Time}}
}

// nextState is the feed's state after the fetch f, with the scheduler's
// decision (schedule.go). ok is false for a fetch older than the feed's
// last one (a replay), which changes nothing.
func (c *committer) nextState(f *ndjson.Fetch, prev priorState) (_ catalog.FeedState, recs []any, ok bool, err error) {
	feedID := f.Due.FeedID
	st, known := prev.st, prev.known
	if prev.err != nil {
		return st, nil, false, prev.err
	}
	if feedID == "" || known && !f.FetchedAt.After(st.LastFetchAt.Time) {
		c.sch.forget(feedID)
		return st, nil, false, nil
	}
	st.FeedID = feedID
	st.LastFetchAt = f.FetchedAt
	st.LastStatus = f.HTTPStatus
	if f.Due.ScheduledAt.After(st.LastRunAt.Time) {
		st.LastRunAt = f.Due.ScheduledAt
	}
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
	if f.Parse != nil && f.Parse.Title != "" {
		st.Title = f.Parse.Title
	}
	if n := c.newByFeed[feedID]; n > 0 { // docs/design.md#logging: a line per feed with new items
		c.cfg.Log.Info(fmt.Sprintf("%d new %s", n, map[bool]string{true: "item", false: "items"}[n == 1]),
			"feed_id", feedID, "fetch_id", f.FetchID, "feed", cmp.Or(f.Due.Name, st.Title, f.Due.URL), "updated", c.updatedByFeed[feedID])
	}
	delete(c.updatedByFeed, feedID)
	describe(&st, f)
	st.NewEntriesLastFetch = c.newByFeed[feedID]
	delete(c.newByFeed, feedID)
	if recs, err = c.schedule(&st, f); err != nil {
		return st, nil, false, err
	}
	c.states[feedID] = st // later fetches in this batch build on it
	return st, recs, true, nil
}

// describe keeps what the fetch f says the feed is (docs/design.md#mapping): the
// format, publisher and site its body was read as, the warnings of its
// parse, and the Content-Type it came with. A fetch that brought no body read (a 304, an error, the same body)
// leaves them as they were.
func describe(st *catalog.FeedState, f *ndjson.Fetch) {
	if !bodyRead(f) || f.Unchanged {
		return
	}
	st.ContentType = f.ContentType
	switch {
	case f.Parse != nil:
		st.Format, st.FormatVersion, st.Publisher = f.Parse.Format, f.Parse.Version, f.Parse.Publisher
		st.Link, st.Warnings = f.Parse.Link, slices.Clone(f.Parse.Warnings)
	case f.Scrape != nil:
		st.Format, st.FormatVersion, st.Publisher, st.Link, st.Warnings = "html", "", "", f.Due.URL, nil
	}
}

// finish keeps the run's figures: the duration histogram, and the metrics
// file when one is asked for (c is nil when nothing was stored).
func finish(ctx context.Context, cfg Config, c *committer) error {
	durations := c.histogram(ctx, cfg)
	if c != nil && cfg.Summary.Feeds > 0 {
		if err := stats.SaveHistogram(ctx, cfg.Catalog, c.durations); err != nil {
			return err
		}
		if err := c.saveBudget(cfg.Summary.Feeds); err != nil {
			return err
		}
	}
	if cfg.MetricsFile == "" {
		return nil
	}
	t, err := stats.Compute(ctx, cfg.Catalog, cfg.Now())
	if err != nil {
		return err
	}
	return stats.WriteMetricsFile(cfg.MetricsFile, t, durations)
}

// histogram is the run's fetch duration histogram, or the store's when
// nothing was stored.
func (c *committer) histogram(ctx context.Context, cfg Config) *stats.Histogram {
	if c == nil {
		return stats.LoadHistogram(ctx, cfg.Catalog)
	}
	return c.durations
}

// move saves the new URLs that feed-fetch proposed for feeds moved
// permanently. The feed id stays: it names the feed, not the URL. A URL
// that another subscription already has is left alone, with a warning.
func (c *committer) move(moves []*ndjson.Fetch) error {
	if len(moves) == 0 {
		return nil
	}
	return c.cat.EditSubscriptions(c.ctx, func(subs []ndjson.Subscription) ([]ndjson.Subscription, error) {
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
