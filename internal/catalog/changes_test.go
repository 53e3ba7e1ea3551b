package catalog

import (
	"slices"
	"strings"
	"testing"

	"github.com/feedpipe/feedpipe/internal/testids"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// TestChanges: each write transaction's row names the feeds a reader's
// kept answers of would change, or says anything may have; the writes no
// reader keeps an answer of name none.
func TestChanges(t *testing.T) {
	c := openTemp(t)
	a, b, d := testids.Feed("A"), testids.Feed("B"), testids.Feed("D")
	loc := Location{Day: "2026-11-21", Offset: 0, Length: 10}
	ch, err := c.Changes(ctx, 0)
	if err != nil || !ch.All || ch.Last == 0 {
		t.Fatalf("first look: %+v %v", ch, err)
	}
	last := ch.Last
	// look checks what committed since the last look: "all", or "feeds"
	// and their names; none (no commit) leaves the last change as it was.
	look := func(name, want string) {
		t.Helper()
		ch, err := c.Changes(ctx, last)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := "all"
		if !ch.All {
			var names []string
			for _, id := range ch.Feeds {
				names = append(names, testids.Name(id))
			}
			slices.Sort(names)
			got = strings.TrimSpace("feeds " + strings.Join(names, " "))
		}
		if ch.Last == last {
			got = "none"
		}
		if got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
		last = ch.Last
	}
	look("nothing written", "none")

	// feed-store's commit: a new entry, a sighting, a link, states, the
	// checkpoints and the runs released; then the search index's batch.
	err = c.Update(ctx, func(t *Tx) error {
		if err := t.StoreVersion(entry("A", "a1", "h1", t0), loc); err != nil {
			return err
		}
		if err := t.Sighted(b, []string{testids.UID("b1")}, t0); err != nil {
			return err
		}
		if err := t.AddLink("0123456789abcdef", ndjson.EntryRef{FeedID: a, EntryUID: testids.UID("a1")}); err != nil {
			return err
		}
		if err := t.PutStates(FeedState{FeedID: d, LastRunAt: ndjson.At(t0)}); err != nil {
			return err
		}
		if err := t.ReleaseRuns(d, t0); err != nil {
			return err
		}
		return t.SetEntriesCheckpoint(Checkpoint{File: "entries/2026-11-21.ndjson", Offset: 10}, Checkpoint{})
	})
	if err != nil {
		t.Fatal(err)
	}
	look("feed-store's commit", "feeds A B D")

	f := ndjson.Fetch{FetchID: testids.Fetch("F1"), Due: ndjson.Due{FeedID: b, ScheduledAt: ndjson.At(t0)}, FetchedAt: ndjson.At(t0), HTTPStatus: 304}
	if err := c.Update(ctx, func(t *Tx) error { return t.IndexFetch(&f, loc) }); err != nil {
		t.Fatal(err)
	}
	look("a fetch indexed", "feeds B")

	if _, err := c.ClaimRuns(ctx, []Run{{FeedID: a, ScheduledAt: t0}}, t0); err != nil {
		t.Fatal(err)
	}
	look("runs claimed", "feeds")
	if err := c.SetMeta(ctx, MetaBudget, 1); err != nil {
		t.Fatal(err)
	}
	look("meta", "feeds")

	// Writes outside a feed's scope change anything.
	add(t, c, sub("A", "news"))
	look("a subscription", "all")
	if _, _, err := c.ForgetEntryDays(ctx, "2026-11-01", false); err != nil {
		t.Fatal(err)
	}
	look("prune", "all")
	look("no commit since", "none")

	// Two looks' worth at once; then a reader behind what the table keeps.
	for _, id := range []string{a, b} {
		if err := c.Update(ctx, func(t *Tx) error { return t.PutStates(FeedState{FeedID: id}) }); err != nil {
			t.Fatal(err)
		}
	}
	look("two commits", "feeds A B")
	kept := changesKept
	changesKept = 20
	t.Cleanup(func() { changesKept = kept })
	behind := last
	for range 40 {
		if err := c.Update(ctx, func(t *Tx) error { return t.PutStates(FeedState{FeedID: a}) }); err != nil {
			t.Fatal(err)
		}
	}
	var rows int64
	if err := c.db.QueryRow(`SELECT count(*) FROM changes`).Scan(&rows); err != nil || rows > changesKept+changesKept/10 {
		t.Errorf("%d rows kept (%v), want %d at most", rows, err, changesKept+changesKept/10)
	}
	last = behind
	look("behind what is kept", "all")
	look("caught up", "none")
	// A catalog whose table was emptied (made anew).
	if _, err := c.db.Exec(`DELETE FROM changes`); err != nil {
		t.Fatal(err)
	}
	if ch, err := c.Changes(ctx, last); err != nil || !ch.All {
		t.Errorf("table emptied: %+v %v, want all", ch, err)
	}
}
