// Command benchstore builds a synthetic feedpipe store for scripts/bench-store:
// N entries across F feeds in the store's own formats, written through
// internal/storedir and internal/catalog: the subscription log and the
// catalog's subscriptions, every feed's state, the entries/ day files and
// the catalog's index of them (entries, versions, links), in minutes
// rather than the days a pipeline would take. It can also write parse
// output (entry records followed by their fetch record, as feed-parse
// writes them) for feeds of that store, for feed-dedup and feed-store to
// be timed on.
//
//	benchstore -store DIR [-feeds 100000] [-entries 10000000]
//	benchstore -store DIR -fetches N [-per-fetch 100] [-new 3] [-updated 1] [-skip S] > fetches.ndjson
//	benchstore -store DIR -not-modified N [-skip S] > fetches.ndjson
//	benchstore -store DIR -query N     # times N catalog.FeedEntries calls
//	benchstore -store DIR -check       # times PRAGMA quick_check
//	benchstore -store DIR -stale-scale # the next feed-store computes the adaptive scale
//
// Everything is a pure function of the flags (and -seed): feed f's k-th
// entry has the same uid, content hash and first_seen in the store as in
// the generated fetches, so these dedup to "unchanged". The entries and
// the fetches are those the benchstore of the stores before the catalog
// (commit a1e617d) made with the same flags, so that the two can be
// measured side by side.
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
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/benchgen"
	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/ids"
	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/internal/storedir"
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
	fs.IntVar(&g.summaryBytes, "summary-bytes", 120, "bytes of summary text per entry")
	fs.Uint64Var(&g.seed, "seed", 1, "seed of the random choices")
	fs.IntVar(&g.workers, "workers", 2, "goroutines making entry lines while the catalog indexes them")
	fetches := fs.Int("fetches", 0, "write this many parse outputs of distinct feeds to stdout instead of building a store")
	perFetch := fs.Int("per-fetch", 100, "entries per generated fetch")
	newPer := fs.Int("new", 3, "of them, entries never stored")
	updPer := fs.Int("updated", 1, "of them, stored entries whose content changed")
	notModified := fs.Int("not-modified", 0, "write this many 304 fetch records (no entries) of distinct feeds to stdout instead")
	queries := fs.Int("query", 0, "time this many queries of a random feed's newest entries (100, since -days before -now) on the store instead")
	check := fs.Bool("check", false, "time the catalog's quick_check on the store instead")
	staleScale := fs.Bool("stale-scale", false, "make the adaptive scale feed-store keeps stale instead, so that its next run computes it from every feed")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the build to `file`")
	skip := fs.Int("skip", 0, "with -fetches or -not-modified: start at the feed this many places into the shuffled order (disjoint sets for repeated runs)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *root == "" || g.feeds <= 0 || g.entries < 0 || g.days <= 0 || g.summaryBytes < 0 || g.summaryBytes > benchgen.MaxSummary {
		fs.Usage()
		return errors.New("-store is required, -feeds and -days must be positive, -summary-bytes at most 4,000")
	}
	var err error
	if g.now, err = time.Parse(time.RFC3339, *nowFlag); err != nil {
		return fmt.Errorf("-now: %w", err)
	}
	g.now = g.now.UTC()
	g.workers = max(g.workers, 1)
	out := bufio.NewWriterSize(stdout, 1<<20)
	switch {
	case *fetches > 0:
		if *newPer+*updPer > *perFetch {
			return errors.New("-new plus -updated exceed -per-fetch")
		}
		err = g.writeFetches(out, *fetches, *skip, *perFetch, *newPer, *updPer, false)
	case *notModified > 0:
		err = g.writeFetches(out, *notModified, *skip, 0, 0, 0, true)
	case *queries > 0:
		err = g.query(*root, *queries, out)
	case *check:
		err = checkCatalog(*root, out)
	case *staleScale:
		err = forgetScale(*root)
	default:
		if *cpuProfile != "" {
			f, err := os.Create(*cpuProfile)
			if err != nil {
				return err
			}
			defer f.Close()
			if err := pprof.StartCPUProfile(f); err != nil {
				return err
			}
			defer pprof.StopCPUProfile()
		}
		err = g.build(*root, stderr)
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

// entry is feed f's k-th entry, version v (0 as stored).
func (g *gen) entry(feedID string, f, k, v int) ndjson.Entry {
	published := g.firstSeen(k*g.feeds + f).Add(-time.Hour).Truncate(time.Second)
	return benchgen.Entry(feedID, f, k, v, g.summaryBytes, published)
}

// build writes the whole store.
func (g *gen) build(root string, log io.Writer) error {
	st, err := storedir.Open(root)
	if err != nil {
		return err
	}
	if !st.Created {
		return fmt.Errorf("%s exists: benchstore builds a new store", root)
	}
	ctx := context.Background()
	cat, err := catalog.Open(ctx, st, nil)
	if err != nil {
		return err
	}
	defer cat.Close()
	t0 := time.Now()
	say := func(format string, args ...any) {
		fmt.Fprintf(log, "benchstore: %6.1fs  %s\n", time.Since(t0).Seconds(), fmt.Sprintf(format, args...))
	}
	feedIDs := make([]string, g.feeds)
	for f := range feedIDs {
		feedIDs[f] = g.feedID(f)
	}

	// Subscriptions, created before the first entry, as feed-sub makes
	// them: the subscription log, then the catalog's rows.
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
	if err := cat.EditSubscriptions(ctx, func([]ndjson.Subscription) ([]ndjson.Subscription, error) { return subs, nil }); err != nil {
		return err
	}
	say("%d subscriptions", g.feeds)

	if err := g.writeStates(cat, feedIDs); err != nil {
		return err
	}
	say("feed states")

	var last catalog.Checkpoint
	if err := cat.LoadEntries(ctx, g.entryDays(st, feedIDs, &last, say)); err != nil {
		return err
	}
	if err := st.Sync(); err != nil {
		return err
	}
	if last.File != "" {
		// The catalog indexes entries/ to its end; events/ is empty.
		err := cat.Update(ctx, func(tx *catalog.Tx) error { return tx.SetEntriesCheckpoint(last, catalog.Checkpoint{}) })
		if err != nil {
			return err
		}
	}
	say("%d entries in entries/ and the catalog; done", g.entries)
	return nil
}

// writeStates gives every feed the state feed-store would have left after
// a hundred fetches, the last an hour ago or less (a due fraction longer).
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
			fs.Sched, fs.Decision = schedState(f, at)
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
		// A due feed's last fetch was more than an hour ago. (The draws
		// are those of the state log the stores before the catalog had,
		// without its older lines.)
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

// A day of entries/: the store's entries j in [from, upto).
type dayRange struct {
	key        string
	from, upto int
}

// A day made: its file's lines and each entry's place in them.
type day struct {
	dayRange
	lines   []byte
	entries []catalog.Located // Loc.Offset in lines, until written
	err     error
}

// dayFiles splits the store's entries into the days of their first_seen.
func (g *gen) dayFiles() []dayRange {
	var days []dayRange
	for j := 0; j < g.entries; {
		key := storedir.DayFile(storedir.DirEntries, g.firstSeen(j))
		// The day's entries: first_seen before the next midnight.
		lo, hi := j, g.entries
		for lo < hi {
			m := (lo + hi) / 2
			if storedir.DayFile(storedir.DirEntries, g.firstSeen(m)) == key {
				lo = m + 1
			} else {
				hi = m
			}
		}
		days = append(days, dayRange{key, j, lo})
		j = lo
	}
	return days
}

// entryDays returns the catalog.LoadEntries source of the store's entries:
// day by day, in order, each day's lines made by the workers meanwhile,
// appended to its file, then handed to the catalog. last is set to the
// end of the last file written.
func (g *gen) entryDays(st *storedir.Store, feedIDs []string, last *catalog.Checkpoint, say func(string, ...any)) func() ([]catalog.Located, error) {
	days := g.dayFiles()
	type job struct {
		d    dayRange
		done chan *day
	}
	jobs := make(chan job)
	for range g.workers {
		go func() {
			for j := range jobs {
				j.done <- g.makeDay(feedIDs, j.d)
			}
		}()
	}
	// ready has the days in order, each given when made; its size bounds
	// the days held in memory.
	ready := make(chan chan *day, 2*g.workers)
	go func() {
		defer close(jobs)
		defer close(ready)
		for _, d := range days {
			done := make(chan *day, 1)
			ready <- done
			jobs <- job{d, done}
		}
	}()
	written := 0
	return func() ([]catalog.Located, error) {
		done, ok := <-ready
		if !ok {
			return nil, nil
		}
		d := <-done
		if d.err != nil {
			return nil, d.err
		}
		off, err := st.AppendLines(d.key, d.lines, storedir.Lazy)
		if err != nil {
			return nil, err
		}
		for i := range d.entries {
			d.entries[i].Loc.Offset += off
		}
		*last = catalog.Checkpoint{File: d.key, Offset: off + int64(len(d.lines))}
		if written++; written%30 == 0 {
			say("entries/ and the catalog: %d of %d days", written, len(days))
		}
		return d.entries, nil
	}
}

// makeDay makes the lines of the day d's entries, as feed-store stored
// them.
func (g *gen) makeDay(feedIDs []string, r dayRange) *day {
	d := &day{dayRange: r}
	name := strings.TrimSuffix(strings.TrimPrefix(d.key, storedir.DirEntries+"/"), ".ndjson")
	entries := make([]ndjson.Entry, d.upto-d.from)
	d.entries = make([]catalog.Located, 0, len(entries))
	for j := d.from; j < d.upto; j++ {
		f, k := j%g.feeds, j/g.feeds
		e := &entries[j-d.from]
		*e = g.entry(feedIDs[f], f, k, 0)
		at := ndjson.At(g.firstSeen(j))
		e.Status, e.FirstSeen, e.LastSeen, e.SeenCount = ndjson.StatusNew, at, at, 1
		e.RawRef = ndjson.RawRef{FetchID: fakeFetchID(f, k), Offset: int64(k % 50 * 900), Length: 900}
		start := len(d.lines)
		if d.lines, d.err = ndjson.Append(d.lines, e); d.err != nil {
			return d
		}
		d.entries = append(d.entries, catalog.Located{Entry: e, Loc: catalog.Location{Day: name, Offset: int64(start), Length: int64(len(d.lines) - start)}})
	}
	return d
}

// schedState is the scheduler's state of feed f after half a day of hourly
// fetches up to last, a new entry every third, and its last decision:
// what feed-store keeps in every feed's row.
func schedState(f int, last time.Time) (*sched.State, *sched.Decision) {
	p := sched.Defaults()
	t := last.Add(-12 * time.Hour)
	st, d := sched.Next(sched.State{}, sched.Outcome{Kind: sched.NeverFetched}, p, sched.Overrides{}, t, nil)
	for i := range 12 {
		t = t.Add(time.Hour)
		o := sched.Outcome{At: t, Status: 200, Items: 20, Parsed: true}
		if (i+f)%3 == 0 {
			o.NewEntries, o.Published = 1, []time.Time{t.Add(-10 * time.Minute)}
		}
		st, d = sched.Next(st, o, p, sched.Overrides{}, t, nil)
	}
	return &st, &d
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

// openCatalog opens the catalog of the store at root, which must exist.
func openCatalog(root string) (*catalog.Catalog, error) {
	st, err := storedir.Open(root)
	if err != nil {
		return nil, err
	}
	if st.Created {
		os.Remove(root)
		return nil, fmt.Errorf("no store at %s", root)
	}
	return catalog.Open(context.Background(), st, nil)
}

// query times n calls of catalog.FeedEntries, each for a random feed: its
// newest 100 entries published since the store's first day, newest first,
// as the REST API will ask. It writes one line: the calls, the median,
// 90th percentile and slowest call in milliseconds, and the median rows.
func (g *gen) query(root string, n int, w io.Writer) error {
	cat, err := openCatalog(root)
	if err != nil {
		return err
	}
	defer cat.Close()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(g.seed, 3))
	since := g.start()
	took := make([]time.Duration, n)
	rows := make([]int, n)
	for i := range n {
		feedID := g.feedID(r.IntN(g.feeds))
		t := time.Now()
		page, err := cat.FeedEntries(ctx, feedID, catalog.EntryQuery{Since: since, Limit: 100})
		took[i] = time.Since(t)
		if err != nil {
			return err
		}
		rows[i] = len(page.Entries)
	}
	slices.Sort(took)
	slices.Sort(rows)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	_, err = fmt.Fprintf(w, "feed_entries\t%d\t%.3f\t%.3f\t%.3f\t%d\n", n, ms(took[n/2]), ms(took[n*9/10]), ms(took[n-1]), rows[n/2])
	return err
}

// checkCatalog times the catalog's quick_check and writes its seconds and
// its verdict.
func checkCatalog(root string, w io.Writer) error {
	cat, err := openCatalog(root)
	if err != nil {
		return err
	}
	defer cat.Close()
	t := time.Now()
	err = cat.Check(context.Background())
	verdict := "ok"
	if err != nil {
		verdict = err.Error()
	}
	_, err = fmt.Fprintf(w, "quick_check\t%.2f\t%s\n", time.Since(t).Seconds(), verdict)
	return err
}

// forgetScale replaces the scale feed-store keeps (catalog.MetaScale) by
// one that serves no run.
func forgetScale(root string) error {
	cat, err := openCatalog(root)
	if err != nil {
		return err
	}
	defer cat.Close()
	return cat.SetMeta(context.Background(), catalog.MetaScale, struct{}{})
}
