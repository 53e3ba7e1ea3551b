package catalog

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/testids"
)

// listed is the names of the uids of a page of entries, each with r when
// read and s when starred.
func listed(t *testing.T, c *Catalog, q EntryQuery) string {
	t.Helper()
	p, err := c.AllEntries(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, e := range p.Entries {
		n := testids.Name(e.UID)
		if e.Read {
			n += "r"
		}
		if e.Starred {
			n += "s"
		}
		s = append(s, n)
	}
	return strings.Join(s, ",")
}

// TestMarks: each reader's marks, set, filtered by and listed; marks of
// unknown entries left out; mark-all by feed, label and time; counts.
func TestMarks(t *testing.T) {
	c := openTemp(t)
	add(t, c, sub("A", "news"), sub("B"))
	storeLines(t, c, "2026-11-20",
		entry("A", "a1", "h", t0), entry("A", "a2", "h", t0.Add(time.Hour)),
		entry("B", "b1", "h", t0.Add(2*time.Hour)), entry("B", "b2", "h", t0.Add(3*time.Hour)))
	key := func(feed, uid string) EntryKey { return EntryKey{testids.Feed(feed), testids.UID(uid)} }
	steps := []struct {
		reader, action string
		keys           []EntryKey
		n              int
	}{
		{"default", MarkRead, []EntryKey{key("A", "a1"), key("B", "b2")}, 2},
		{"default", MarkStar, []EntryKey{key("A", "a1"), key("A", "nope"), key("C", "a1")}, 1},
		{"alice", MarkStar, []EntryKey{key("B", "b1")}, 1},
		{"default", MarkUnread, []EntryKey{key("B", "b2")}, 1},
	}
	for _, s := range steps {
		n, err := c.Mark(ctx, s.reader, s.action, s.keys, t0)
		if err != nil || n != s.n {
			t.Fatalf("%s %s: %d, %v; want %d", s.reader, s.action, n, err, s.n)
		}
	}
	for _, tc := range []struct {
		q    EntryQuery
		want string
	}{
		{EntryQuery{Order: OrderFirstSeen}, "b2,b1,a2,a1"},
		{EntryQuery{Order: OrderFirstSeen, Reader: "default"}, "b2,b1,a2,a1rs"},
		{EntryQuery{Order: OrderFirstSeen, Reader: "alice"}, "b2,b1s,a2,a1"},
		{EntryQuery{Order: OrderFirstSeen, Reader: "default", Unread: true}, "b2,b1,a2"},
		{EntryQuery{Order: OrderFirstSeen, Reader: "default", Starred: true}, "a1rs"},
		{EntryQuery{Order: OrderFirstSeen, Reader: "nobody", Unread: true, Limit: 2}, "b2,b1"},
	} {
		if got := listed(t, c, tc.q); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.q, got, tc.want)
		}
	}
	// Unstar and unread leave no row behind.
	c.Mark(ctx, "default", MarkUnstar, []EntryKey{key("A", "a1")}, t0)
	c.Mark(ctx, "default", MarkUnread, []EntryKey{key("A", "a1")}, t0)
	var rows int
	c.db.QueryRow(`SELECT count(*) FROM marks WHERE reader = 'default'`).Scan(&rows)
	if rows != 0 {
		t.Errorf("%d blank marks kept", rows)
	}

	// Mark all: a label's entries before a time, then a feed's, then all.
	if n, err := c.MarkLabelRead(ctx, "default", "news", t0.Add(30*time.Minute)); err != nil || n != 1 {
		t.Errorf("label news until a1's time: %d, %v", n, err)
	}
	counts, err := c.UnreadCounts(ctx, "default", time.Time{})
	if err != nil || counts[testids.Feed("A")].Count != 1 || counts[testids.Feed("B")].Count != 2 ||
		!counts[testids.Feed("B")].Newest.Equal(t0.Add(3*time.Hour)) {
		t.Errorf("counts %v, %v", counts, err)
	}
	if counts, _ := c.UnreadCounts(ctx, "default", t0.Add(150*time.Minute)); len(counts) != 1 || counts[testids.Feed("B")].Count != 1 {
		t.Errorf("counts since b1: %v", counts)
	}
	if n, _ := c.MarkAllRead(ctx, "default", testids.Feed("B"), time.Time{}); n != 2 {
		t.Errorf("feed B: %d marked", n)
	}
	if n, _ := c.MarkAllRead(ctx, "default", "", time.Time{}); n != 1 {
		t.Errorf("all: %d marked", n)
	}
	if got := listed(t, c, EntryQuery{Reader: "default", Unread: true}); got != "" {
		t.Errorf("unread after all read: %s", got)
	}

	// Bad input: a reader name that is no name, an action that is none.
	for _, r := range []string{"", "Alice", "../x", strings.Repeat("a", 65)} {
		if _, err := c.Mark(ctx, r, MarkRead, nil, t0); !errors.Is(err, ErrBadReader) {
			t.Errorf("reader %q: %v", r, err)
		}
		if _, err := c.AllEntries(ctx, EntryQuery{Reader: r, Unread: true}); !errors.Is(err, ErrBadReader) {
			t.Errorf("query of reader %q: %v", r, err)
		}
	}
	if _, err := c.Mark(ctx, "default", "delete", nil, t0); !errors.Is(err, ErrBadQuery) {
		t.Errorf("action delete: %v", err)
	}
}

// TestMarksSurvive: reindex keeps marks (they name the feed and uid, not
// the row); prune drops those of the entries it drops.
func TestMarksSurvive(t *testing.T) {
	c := openTemp(t)
	add(t, c, sub("A"))
	storeLines(t, c, "2026-11-20", entry("A", "a1", "h", t0))
	storeLines(t, c, "2026-11-21", entry("A", "a2", "h", t0.Add(time.Hour)))
	keys := []EntryKey{{testids.Feed("A"), testids.UID("a1")}, {testids.Feed("A"), testids.UID("a2")}}
	if _, err := c.Mark(ctx, "default", MarkStar, keys, t0); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := Reindex(ctx, c.st, nil); err != nil {
		t.Fatal(err)
	}
	c, err := Open(ctx, c.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := listed(t, c, EntryQuery{Reader: "default", Starred: true}); got != "a2s,a1s" {
		t.Errorf("after reindex: %s", got)
	}
	if _, _, err := c.ForgetEntryDays(ctx, "2026-11-21", false); err != nil {
		t.Fatal(err)
	}
	var rows int
	c.db.QueryRow(`SELECT count(*) FROM marks`).Scan(&rows)
	if got := listed(t, c, EntryQuery{Reader: "default", Starred: true}); got != "a2s" || rows != 1 {
		t.Errorf("after prune: %s, %d marks", got, rows)
	}
}

// TestNewSince: feed-read --new's cursor, per reader.
func TestNewSince(t *testing.T) {
	c := openTemp(t)
	if _, ok, err := c.NewSince(ctx, "default"); ok || err != nil {
		t.Fatalf("before: %v %v", ok, err)
	}
	if err := c.NewSeen(ctx, "default", t0); err != nil {
		t.Fatal(err)
	}
	if at, ok, err := c.NewSince(ctx, "default"); !ok || err != nil || !at.Equal(t0) {
		t.Fatalf("after: %v %v %v", at, ok, err)
	}
	if _, ok, _ := c.NewSince(ctx, "alice"); ok {
		t.Error("alice has no cursor of her own")
	}
	if err := c.NewSeen(ctx, "A B", t0); !errors.Is(err, ErrBadReader) {
		t.Errorf("bad reader: %v", err)
	}
}
