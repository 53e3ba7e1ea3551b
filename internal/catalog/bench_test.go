package catalog

import (
	"fmt"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/internal/testids"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// reportCPU reports, when the function it returns is called at the end of
// the timed loop, the process's CPU time per operation beside its wall
// time: on a machine shared with other work the wall time of an operation
// varies with that work, its CPU time much less.
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() {
		if end := cpuTime(); end > 0 {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

// BenchmarkStoreVersion times Tx.StoreVersion of new entries with text, as
// feed-store stores a cold cycle's: 100 feeds, 500 entries a transaction,
// published a second apart.
func BenchmarkStoreVersion(b *testing.B) {
	c := openTemp(b)
	const perTx = 500
	n := 0
	entries := func() []*ndjson.Entry {
		es := make([]*ndjson.Entry, perTx)
		for i := range es {
			at := t0.Add(time.Duration(n) * time.Second)
			e := textEntry(fmt.Sprint("F", n%100), fmt.Sprint("e", n), "h", at,
				fmt.Sprintf("Post %d of the feed", n), "A summary of <b>the</b> post", "<p>Some words of the post's content, and a <a href=\"x\">link</a>.</p>")
			es[i] = e
			n++
		}
		return es
	}
	b.ResetTimer()
	defer reportCPU(b)()
	for i := 0; i < b.N; i += perTx {
		es := entries()
		if err := c.Update(ctx, func(t *Tx) error {
			for j, e := range es {
				if err := t.StoreVersion(e, Location{Day: "2026-11-20", Offset: int64(n*1000 + j), Length: 500}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// benchCatalog is a catalog of 50 feeds of 200 entries each, every other
// feed labelled "news", and a reader "r" who has read the first ten feeds
// up to their newest, read some entries of the others one by one and
// starred a few: what the page queries of feed-serve and feed-read run
// against.
func benchCatalog(b *testing.B) *Catalog {
	c := openTemp(b)
	var subs []ndjson.Subscription
	for i := range 50 {
		var labels []string
		if i%2 == 0 {
			labels = []string{"news"}
		}
		subs = append(subs, sub(fmt.Sprint("F", i), labels...))
	}
	if err := c.EditSubscriptions(ctx, func(list []ndjson.Subscription) ([]ndjson.Subscription, error) {
		return append(list, subs...), nil
	}); err != nil {
		b.Fatal(err)
	}
	var read, starred []EntryKey
	if err := c.Update(ctx, func(t *Tx) error {
		for n := range 10_000 {
			e := entry(fmt.Sprint("F", n%50), fmt.Sprint("e", n), "h", t0.Add(time.Duration(n)*time.Minute))
			if err := t.StoreVersion(e, Location{Day: "2026-11-21", Offset: int64(n) * 500, Length: 500}); err != nil {
				return err
			}
			switch {
			case n%50 >= 10 && n%7 == 0:
				read = append(read, EntryKey{e.FeedID, e.EntryUID})
			case n%97 == 0:
				starred = append(starred, EntryKey{e.FeedID, e.EntryUID})
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	for i := range 10 {
		if _, err := c.MarkAllRead(ctx, "r", testids.Feed(fmt.Sprint("F", i)), time.Time{}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := c.Mark(ctx, "r", MarkRead, read, t0); err != nil {
		b.Fatal(err)
	}
	if _, err := c.Mark(ctx, "r", MarkStar, starred, t0); err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkEntryPages times the pages feed-serve and feed-read list: a
// feed's, a label's, a reader's unread and starred ones, each with the
// reader's marks, and the page after the first.
func BenchmarkEntryPages(b *testing.B) {
	c := benchCatalog(b)
	feed := testids.Feed("F12")
	for _, bc := range []struct {
		name string
		page func(q EntryQuery) (EntryPage, error)
		q    EntryQuery
	}{
		{"feed", func(q EntryQuery) (EntryPage, error) { return c.FeedEntries(ctx, feed, q) }, EntryQuery{Reader: "r", Limit: 50}},
		{"feed-since", func(q EntryQuery) (EntryPage, error) { return c.FeedEntries(ctx, feed, q) },
			EntryQuery{Reader: "r", Limit: 20, Order: OrderFirstSeen, Since: t0.Add(24 * time.Hour), Until: t0.Add(96 * time.Hour)}},
		{"label", func(q EntryQuery) (EntryPage, error) { return c.LabelEntries(ctx, "news", q) }, EntryQuery{Reader: "r", Limit: 50}},
		{"all-unread", func(q EntryQuery) (EntryPage, error) { return c.AllEntries(ctx, q) }, EntryQuery{Reader: "r", Unread: true, Limit: 50}},
		{"all-starred", func(q EntryQuery) (EntryPage, error) { return c.AllEntries(ctx, q) }, EntryQuery{Reader: "r", Starred: true}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			defer reportCPU(b)()
			for b.Loop() {
				p, err := bc.page(bc.q)
				if err != nil || len(p.Entries) == 0 {
					b.Fatalf("%d entries, %v", len(p.Entries), err)
				}
				if p.Next != "" {
					q := bc.q
					q.Cursor = p.Next
					if _, err := bc.page(q); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkUnreadCounts times a reader's unread counts of every feed (the
// Google Reader API's unread-count, the web page's list of feeds).
func BenchmarkUnreadCounts(b *testing.B) {
	c := benchCatalog(b)
	defer reportCPU(b)()
	for b.Loop() {
		if counts, err := c.UnreadCounts(ctx, "r", time.Time{}); err != nil || len(counts) != 40 {
			b.Fatalf("%d feeds, %v", len(counts), err)
		}
	}
}

// BenchmarkMark times marking 20 entries read, then unread again.
func BenchmarkMark(b *testing.B) {
	c := benchCatalog(b)
	var keys []EntryKey
	for n := 20; n < 40; n++ {
		keys = append(keys, EntryKey{testids.Feed(fmt.Sprint("F", n%50)), testids.UID(fmt.Sprint("e", n+5000))})
	}
	defer reportCPU(b)()
	for b.Loop() {
		for _, action := range []string{MarkRead, MarkUnread} {
			if n, err := c.Mark(ctx, "r", action, keys, t0); err != nil || n != len(keys) {
				b.Fatalf("%d marked, %v", n, err)
			}
		}
	}
}

// BenchmarkStates times what feed-store and feed-due do with feed states:
// a transaction writing 50 feeds' states, and the list of the feeds due.
func BenchmarkStates(b *testing.B) {
	c := benchCatalog(b)
	states := make([]EncodedState, 50)
	for i := range states {
		fs := FeedState{FeedID: testids.Feed(fmt.Sprint("F", i)), LastFetchAt: ndjson.At(t0), Counts: FeedCounts{Fetches: 3, OK: 3}}
		fs.SetSched(sched.State{Lifecycle: sched.StateHealthy, IntervalSec: 3600, NextAt: ndjson.At(t0.Add(time.Duration(i) * time.Minute))},
			sched.Decision{Kind: sched.Defer})
		var err error
		if states[i], err = EncodeState(&fs); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("put", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			if err := c.Update(ctx, func(t *Tx) error { return t.PutEncodedStates(states...) }); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("due", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			n := 0
			if err := c.Feeds(ctx, FeedFilter{DueBy: t0.Add(30 * time.Minute), Brief: true}, func(*Feed) error { n++; return nil }); err != nil || n != 31 {
				b.Fatalf("%d due, %v", n, err)
			}
		}
	})
}
