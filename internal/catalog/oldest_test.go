package catalog

import (
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/testids"
)

// TestOldestAndRead: entries oldest first, paged by cursor, and only
// those a reader has read.
func TestOldestAndRead(t *testing.T) {
	c := openTemp(t)
	add(t, c, sub("A"))
	storeLines(t, c, "2026-11-20",
		entry("A", "a1", "h", t0), entry("A", "a2", "h", t0.Add(time.Hour)), entry("A", "a3", "h", t0.Add(2*time.Hour)))
	c.Mark(ctx, "bob", MarkRead, []EntryKey{{testids.Feed("A"), testids.UID("a2")}}, t0)
	for _, tc := range []struct {
		q    EntryQuery
		want string
	}{
		{EntryQuery{Order: OrderFirstSeen, Oldest: true}, "a1,a2,a3"},
		{EntryQuery{Order: OrderFirstSeen, Oldest: true, Since: t0.Add(time.Hour)}, "a2,a3"},
		{EntryQuery{Order: OrderFirstSeen, Reader: "bob", Read: true}, "a2r"},
		{EntryQuery{Order: OrderFirstSeen, Reader: "bob", Oldest: true, Unread: true}, "a1,a3"},
	} {
		if got := listed(t, c, tc.q); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.q, got, tc.want)
		}
	}
	p, err := c.AllEntries(ctx, EntryQuery{Order: OrderFirstSeen, Oldest: true, Limit: 2})
	if err != nil || p.Next == "" {
		t.Fatalf("%+v %v", p, err)
	}
	if got := listed(t, c, EntryQuery{Order: OrderFirstSeen, Oldest: true, Cursor: p.Next}); got != "a3" {
		t.Errorf("the page after: %s", got)
	}
}
