// Command benchstore builds a synthetic feedpipe store for scripts/bench-store:
// N entries across F feeds, written in the store's own formats through
// internal/storage and internal/catalog (subscriptions, feed states,
// entries/ day files and the catalog's index of them), in minutes rather
// than the hours a pipeline would take. It can also write parse output (entry records
// followed by their fetch record, as feed-parse writes them) for feeds of
// that store, for feed-dedup and feed-store to be timed on.
//
//	benchstore -store DIR [-feeds 100000] [-entries 10000000]
//	benchstore -store DIR -fetches N [-per-fetch 100] [-new 3] [-updated 1] > fetches.ndjson
//	benchstore -store DIR -not-modified N > fetches.ndjson
//
// Everything is a pure function of the flags (and -seed): feed f's k-th
// entry has the same uid, content hash and first_seen in the store as in
// the generated fetches, so these dedup to "unchanged".
package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/ids"
	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/internal/storage"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "benchstore:", err)
		os.Exit(1)
	}
}

type gen struct {
	feeds, entries int
	days           int
	now            time.Time
	dueFraction    float64
	stateHistory   float64
	summaryBytes   int
	seed           uint64
	workers        int
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("benchstore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var g gen
	root := fs.String("store", "", "store `directory` to fill (created; must not hold a store yet unless -fetches or -not-modified)")
	fs.IntVar(&g.feeds, "feeds", 100000, "subscriptions")
	fs.IntVar(&g.entries, "entries", 10000000, "stored entries, spread evenly over the feeds")
	fs.IntVar(&g.days, "days", 365, "days of entries/ files the entries are spread over, ending the day before -now")
	nowFlag := fs.String("now", "2026-11-21T12:00:00Z", "the store's present, RFC 3339 (give feed-due the same --now)")
	fs.Float64Var(&g.dueFraction, "due", 1.0/60, "fraction of feeds due at -now (hourly feeds polled every minute: 1/60)")
	fs.Float64Var(&g.stateHistory, "state-history", 0.5, "older state lines per feed in the state log, before the current one (the log is compacted at 1)")
	fs.IntVar(&g.summaryBytes, "summary-bytes", 120, "bytes of summary text per entry")
	fs.Uint64Var(&g.seed, "seed", 1, "seed of the random choices")
	fs.IntVar(&g.workers, "workers", 2, "goroutines writing")
	fetches := fs.Int("fetches", 0, "write this many parse outputs of distinct feeds to stdout instead of building a store")
	perFetch := fs.Int("per-fetch", 100, "entries per generated fetch")
	newPer := fs.Int("new", 3, "of them, entries never stored")
	updPer := fs.Int("updated", 1, "of them, stored entries whose content changed")
	notModified := fs.Int("not-modified", 0, "write this many 304 fetch records (no entries) of distinct feeds to stdout instead")
	statesOnly := fs.Bool("states-only", false, "rewrite only the state log of an existing store (and drop its snapshot)")
	skip := fs.Int("skip", 0, "with -fetches or -not-modified: start at the feed this many places into the shuffled order (disjoint sets for repeated runs)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *root == "" || g.feeds <= 0 || g.entries < 0 || g.days <= 0 {
		fs.Usage()
		return errors.New("-store is required, -feeds and -days must be positive")
	}
	var err error
	if g.now, err = time.Parse(time.RFC3339, *nowFlag); err != nil {
		return fmt.Errorf("-now: %w", err)
	}
	g.now = g.now.UTC()
	if g.workers < 1 {
		g.workers = 1
	}
	st, err := storage.Open(*root)
	if err != nil {
		return err
	}
	cat, err := catalog.Open(context.Background(), st, nil)
	if err != nil {
		return err
	}
	defer cat.Close()
	out := bufio.NewWriterSize(stdout, 1<<20)
	switch {
	case *fetches > 0:
		if *newPer+*updPer > *perFetch {
			return errors.New("-new plus -updated exceed -per-fetch")
		}
		err = g.writeFetches(out, *fetches, *skip, *perFetch, *newPer, *updPer, false)
	case *notModified > 0:
		err = g.writeFetches(out, *notModified, *skip, 0, 0, 0, true)
	case *statesOnly:
		err = g.rewriteStates(cat)
	default:
		if !st.Created {
			return fmt.Errorf("%s exists: benchstore builds a new store", *root)
		}
		err = g.build(st, cat, stderr)
	}
	if err != nil {
		return err
	}
	return out.Flush()
}

// Feed f.

func (g *gen) feedURL(f int) string {
	return fmt.Sprintf("https://publisher%d.example.org/feeds/%d.xml", f%5000, f)
}

func (g *gen) feedID(f int) string { return ids.FeedID(g.feedURL(f)) }

// entriesOf is how many entries feed f has stored.
func (g *gen) entriesOf(f int) int {
	n := g.entries / g.feeds
	if f < g.entries%g.feeds {
		n++
	}
	return n
}

// Entry k of feed f is the store's entry j = k*feeds + f: the entries go
// round the feeds, and day by day.

func (g *gen) start() time.Time {
	d := g.now.Truncate(24 * time.Hour)
	return d.AddDate(0, 0, -g.days)
}

// firstSeen is when the store's j-th entry was stored.
func (g *gen) firstSeen(j int) time.Time {
	span := time.Duration(g.days) * 24 * time.Hour
	if g.entries == 0 {
		return g.start()
	}
	return g.start().Add(time.Duration(float64(span) * float64(j) / float64(g.entries))).Truncate(time.Millisecond)
}

var lorem = strings.Repeat("feedpipe stores what it fetched once and only once, whatever happens. ", 64)

// entry is feed f's k-th entry, version v (0 as stored).
func (g *gen) entry(feedID string, f, k, v int) ndjson.Entry {
	link := fmt.Sprintf("https://publisher%d.example.org/posts/%d/%d", f%5000, f, k)
	native := fmt.Sprintf("tag:publisher%d.example.org,2026:%d:%d", f%5000, f, k)
	title := fmt.Sprintf("Post %d of feed %d", k, f)
	summary := lorem[(f+k)%64 : (f+k)%64+g.summaryBytes]
	if v > 0 {
		title += fmt.Sprintf(" (revised %d)", v)
	}
	j := k*g.feeds + f
	published := g.firstSeen(j).Add(-time.Hour).Truncate(time.Second)
	return ndjson.Entry{
		Header:        ndjson.Head(ndjson.TypeEntry),
		EntryUID:      ids.EntryUID(ids.EntryKey{FeedID: feedID, NativeID: native}),
		FeedID:        feedID,
		NativeID:      native,
		CanonicalLink: link,
		Title:         title,
		Summary:       summary,
		Authors:       []ndjson.Author{{Name: "A. Writer"}},
		Categories:    []string{"bench"},
		Enclosures:    []ndjson.Enclosure{},
		Published:     ndjson.At(published),
		ContentHash:   ids.ContentHash(title, summary, "", []string{link}),
	}
}

// build writes the whole store.
func (g *gen) build(st *storage.Store, cat *catalog.Catalog, log io.Writer) error {
	t0 := time.Now()
	say := func(format string, args ...any) {
		fmt.Fprintf(log, "benchstore: %6.1fs  %s\n", time.Since(t0).Seconds(), fmt.Sprintf(format, args...))
	}
	feedIDs := make([]string, g.feeds)
	for f := range feedIDs {
		feedIDs[f] = g.feedID(f)
	}

	// Subscriptions, created before the first entry.
	subs := make([]ndjson.Subscription, g.feeds)
	for f := range subs {
		subs[f] = ndjson.Subscription{
			Header:     ndjson.Head(ndjson.TypeSubscription),
			FeedID:     feedIDs[f],
			URL:        g.feedURL(f),
			Name:       fmt.Sprintf("Bench feed %d", f),
			Labels:     []string{"bench", fmt.Sprintf("group%d", f%10)},
			SourceType: ndjson.SourceAuto,
			CreatedAt:  ndjson.At(g.start().Add(-24 * time.Hour)),
		}
	}
	ctx := context.Background()
	if err := cat.EditSubscriptions(ctx, func([]ndjson.Subscription) ([]ndjson.Subscription, error) { return subs, nil }); err != nil {
		return err
	}
	say("%d subscriptions", g.feeds)

	if err := g.writeStates(cat, feedIDs); err != nil {
		return err
	}
	say("feed states")

	// entries/: day j*days/entries, in order; the days go to the workers
	// in turn, and each indexes its day in the catalog.
	lastKey, lastEnd, err := g.writeEntries(st, cat, feedIDs, say)
	if err != nil {
		return err
	}
	if err := st.Sync(); err != nil {
		return err
	}
	if lastKey != "" {
		err := cat.Update(ctx, func(tx *catalog.Tx) error {
			return tx.SetEntriesCheckpoint(catalog.Checkpoint{File: lastKey, Offset: lastEnd}, catalog.Checkpoint{})
		})
		if err != nil {
			return err
		}
	}
	say("%d entries in entries/ and the catalog; done", g.entries)
	return nil
}

// rewriteStates replaces the feed states of an existing store.
func (g *gen) rewriteStates(cat *catalog.Catalog) error {
	feedIDs := make([]string, g.feeds)
	for f := range feedIDs {
		feedIDs[f] = g.feedID(f)
	}
	return g.writeStates(cat, feedIDs)
}

// schedState is the scheduler's state of feed f after half a day of hourly
// fetches up to last, a new entry every third: what feed-store keeps in
// every state line.
func schedState(f int, last time.Time) *sched.State {
	p := sched.Defaults()
	t := last.Add(-12 * time.Hour)
	st, _ := sched.Next(sched.State{}, sched.Outcome{Kind: sched.NeverFetched}, p, sched.Overrides{}, t, nil)
	for i := range 12 {
		t = t.Add(time.Hour)
		o := sched.Outcome{At: t, Status: 200, Items: 20, Parsed: true}
		if (i+f)%3 == 0 {
			o.NewEntries, o.Published = 1, []time.Time{t.Add(-10 * time.Minute)}
		}
		st, _ = sched.Next(st, o, p, sched.Overrides{}, t, nil)
	}
	return &st
}

func (g *gen) writeStates(cat *catalog.Catalog, feedIDs []string) error {
	r := rand.New(rand.NewPCG(g.seed, 1))
	states := make([]catalog.FeedState, 0, len(feedIDs))
	state := func(f int, at time.Time, fetches int) catalog.FeedState {
		interval := time.Hour
		next := at.Add(interval)
		fs := catalog.FeedState{
			FeedID:              feedIDs[f],
			Title:               fmt.Sprintf("Bench feed %d", f),
			Validators:          ndjson.Validators{ETag: fmt.Sprintf(`"%x-%d"`, f, fetches), LastModified: at.Add(-time.Hour).Format(time.RFC1123)},
			LastFetchAt:         ndjson.At(at),
			LastSuccessAt:       ndjson.At(at),
			LastStatus:          200,
			IntervalSec:         int(interval / time.Second),
			NextFetchAt:         ndjson.At(next),
			LastBodySHA256:      fmt.Sprintf("%064x", uint64(f)*2654435761+uint64(fetches)),
			LastContentLength:   20000 + int64(f%30000),
			NewEntriesLastFetch: 0,
			Counts: catalog.FeedCounts{Fetches: fetches, OK: fetches * 9 / 10, NotModified: fetches / 10,
				BytesIn: int64(fetches) * 20000, BytesSaved: int64(fetches/10) * 20000, DurationMS: int64(fetches) * 180,
				NewEntries: g.entriesOf(f)},
		}
		if fetches > 100 {
			fs.Sched = schedState(f, at)
			fs.Sched.NextAt = fs.NextFetchAt
		}
		if f%20 == 0 { // one feed in twenty is failing
			fs.LastStatus, fs.ConsecutiveFailures = 503, 2
			fs.LastError = &ndjson.Error{Class: "transient", Code: "http_503", Message: "503 Service Unavailable"}
			fs.Counts.Errors = 2
			fs.Counts.ErrorCodes = map[string]int{"http_503": 2}
		}
		return fs
	}
	for f := range feedIDs {
		// A due feed's last fetch was more than an hour ago.
		ago := time.Duration(r.Float64() * float64(time.Hour))
		if r.Float64() < g.dueFraction {
			ago += time.Hour
		}
		last := g.now.Add(-ago - time.Second)
		states = append(states, state(f, last, 101))
	}
	for chunk := range slices.Chunk(states, 10000) {
		if err := cat.Update(context.Background(), func(tx *catalog.Tx) error { return tx.PutStates(chunk...) }); err != nil {
			return err
		}
	}
	return nil
}

func (g *gen) writeEntries(st *storage.Store, cat *catalog.Catalog, feedIDs []string, say func(string, ...any)) (lastKey string, lastEnd int64, err error) {
	type day struct {
		key        string
		from, upto int // entries j in [from, upto)
	}
	var days []day
	for j := 0; j < g.entries; {
		key := storage.DayFile(storage.DirEntries, g.firstSeen(j))
		upto := j
		// The day's entries: first_seen before the next midnight.
		lo, hi := j, g.entries
		for lo < hi {
			m := (lo + hi) / 2
			if storage.DayFile(storage.DirEntries, g.firstSeen(m)) == key {
				lo = m + 1
			} else {
				hi = m
			}
		}
		upto = lo
		days = append(days, day{key, j, upto})
		j = upto
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		ends = make([]int64, len(days))
	)
	next := make(chan int)
	for range g.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range next {
				end, err := g.writeDay(st, cat, feedIDs, days[d].key, days[d].from, days[d].upto)
				mu.Lock()
				ends[d] = end
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		}()
	}
	for d := range days {
		next <- d
		if d%30 == 29 {
			say("entries/: %d of %d days", d+1, len(days))
		}
	}
	close(next)
	wg.Wait()
	if len(errs) > 0 {
		return "", 0, errs[0]
	}
	if len(days) == 0 {
		return "", 0, nil
	}
	return days[len(days)-1].key, ends[len(days)-1], nil
}

func (g *gen) writeDay(st *storage.Store, cat *catalog.Catalog, feedIDs []string, key string, from, upto int) (int64, error) {
	var (
		buf     []byte
		end     int64
		pending []ndjson.Entry
		starts  []int64 // offset of each pending entry's line in buf
	)
	day := strings.TrimSuffix(strings.TrimPrefix(key, storage.DirEntries+"/"), ".ndjson")
	flush := func() error {
		off, err := st.AppendLines(key, buf, storage.Lazy)
		if err != nil {
			return err
		}
		end = off + int64(len(buf))
		err = cat.Update(context.Background(), func(tx *catalog.Tx) error {
			for i := range pending {
				e := &pending[i]
				n := int64(len(buf)) - starts[i]
				if i+1 < len(starts) {
					n = starts[i+1] - starts[i]
				}
				if err := tx.StoreVersion(e, catalog.Location{Day: day, Offset: off + starts[i], Length: n}); err != nil {
					return err
				}
				if h, ok := catalog.LinkHash(e.CanonicalLink); ok {
					if err := tx.AddLink(h, ndjson.EntryRef{FeedID: e.FeedID, EntryUID: e.EntryUID}); err != nil {
						return err
					}
				}
			}
			return nil
		})
		buf, pending, starts = buf[:0], pending[:0], starts[:0]
		return err
	}
	for j := from; j < upto; j++ {
		f, k := j%g.feeds, j/g.feeds
		e := g.entry(feedIDs[f], f, k, 0)
		at := ndjson.At(g.firstSeen(j))
		e.Status, e.FirstSeen, e.LastSeen, e.SeenCount = ndjson.StatusNew, at, at, 1
		e.RawRef = ndjson.RawRef{FetchID: fakeFetchID(f, k), Offset: int64(k % 50 * 900), Length: 900}
		line, err := ndjson.Marshal(&e)
		if err != nil {
			return 0, err
		}
		pending, starts = append(pending, e), append(starts, int64(len(buf)))
		buf = append(buf, line...)
		if len(buf) > 4<<20 {
			if err := flush(); err != nil {
				return 0, err
			}
		}
	}
	if err := flush(); err != nil {
		return 0, err
	}
	return end, nil
}

func fakeFetchID(f, k int) string {
	var b [16]byte
	for i := range 8 {
		b[i] = byte(uint64(f) >> (8 * i))
		b[8+i] = byte(uint64(k) >> (8 * i))
	}
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-7" + h[13:16] + "-8" + h[17:20] + "-" + h[20:]
}

// writeFetches writes n parse outputs, each for a distinct feed (a
// shuffled order, from -skip on): per fetch, the feed's latest stored
// entries unchanged, upd of them changed, nw entries never stored, then
// the fetch record. With notModified, only a 304 fetch record per feed.
func (g *gen) writeFetches(w io.Writer, n, skip, per, nw, upd int, notModified bool) error {
	r := rand.New(rand.NewPCG(g.seed, 2))
	order := r.Perm(g.feeds)
	if skip+n > g.feeds {
		return fmt.Errorf("-skip %d plus %d fetches exceed the %d feeds", skip, n, g.feeds)
	}
	for i, f := range order[skip : skip+n] {
		feedID := g.feedID(f)
		at := g.now.Add(time.Duration(i) * time.Millisecond)
		have := g.entriesOf(f)
		known := per - nw
		for k := max(0, have-known); k < have+nw; k++ {
			v := 0
			if k < have && k >= have-upd {
				v = 1 // the newest stored ones were edited
			}
			e := g.entry(feedID, f, k, v)
			e.RawRef = ndjson.RawRef{FetchID: fakeFetchID(f, 1<<40+i), Offset: int64(k), Length: 900}
			if err := writeLine(w, &e); err != nil {
				return err
			}
		}
		due := ndjson.Due{Header: ndjson.Head(ndjson.TypeDue), FeedID: feedID, URL: g.feedURL(f), SourceType: ndjson.SourceAuto,
			Labels: []string{}, ScheduledAt: ndjson.At(at), Reason: ndjson.ReasonScheduled}
		fetch := ndjson.Fetch{
			Header: ndjson.Head(ndjson.TypeFetch), FetchID: fakeFetchID(f, 1<<40+i), Due: due,
			RequestedURL: due.URL, URL: due.URL, FetchedAt: ndjson.At(at), DurationMS: 120,
			HTTPStatus: 200, ResponseHeaders: map[string]string{"Etag": fmt.Sprintf(`"%x-bench"`, f)},
			BodySHA256: fmt.Sprintf("%064x", uint64(f)+uint64(i)<<32), ContentType: "application/rss+xml", ContentLength: 20000,
		}
		if notModified {
			fetch.HTTPStatus, fetch.NotModified, fetch.ContentLength, fetch.BodySHA256, fetch.BytesSaved = 304, true, 0, "", 20000
		} else {
			fetch.Parse = &ndjson.Parse{Format: "rss", Version: "2.0", Title: fmt.Sprintf("Bench feed %d", f), Items: per, Entries: per}
		}
		if err := writeLine(w, &fetch); err != nil {
			return err
		}
	}
	return nil
}

func writeLine(w io.Writer, v any) error {
	b, err := ndjson.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
