package catalog

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/testids"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// listed is the names of the uids of a page of entries, each with r when
// read and s when starred.
func listed(t *testing.T, c *Catalog, q EntryQuery) string {
	t.Helper()
	p, err := c.AllEntries(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	return pageNames(p)
}

// pageNames is listed's form of a page.
func pageNames(p EntryPage) string {
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
	// Unstar and unread leave no row that says only what the feed's
	// "read up to" mark does (reading a1, A's oldest, raised it).
	c.Mark(ctx, "default", MarkUnstar, []EntryKey{key("A", "a1")}, t0)
	c.Mark(ctx, "default", MarkUnread, []EntryKey{key("A", "a1")}, t0)
	var rows int
	c.db.QueryRow(`SELECT count(*) FROM marks m JOIN entries e ON e.feed_key = m.feed_key AND e.entry_uid = m.entry_uid
		WHERE m.reader = 'default' AND NOT m.starred
		AND m.read = (e.first_seen < coalesce((SELECT until FROM read_until w WHERE w.reader = m.reader AND w.feed_key = m.feed_key), 0))`).Scan(&rows)
	if rows != 0 {
		t.Errorf("%d blank marks kept", rows)
	}
	if got := listed(t, c, EntryQuery{Order: OrderFirstSeen, Reader: "default", Unread: true}); got != "b2,b1,a2,a1" {
		t.Errorf("unread after unread: %s", got)
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
	// A feed's "read up to" mark survives too.
	if _, err := c.MarkAllRead(ctx, "default", testids.Feed("A"), t0.Add(time.Minute)); err != nil {
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
	if got := listed(t, c, EntryQuery{Reader: "default", Starred: true}); got != "a2s,a1rs" {
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

// TestReadUntil: the truth table of read state, a feed's "read up to" mark
// (MarkAllRead) against the rows of marks saying read or unread, starred
// or not: each case a sequence of marks, then what every view of the
// catalog says of each entry (the marks listed, the unread and read
// filters with both of the unread filter's ways, MarksOf, UnreadCounts),
// how many rows are left (none saying only what the mark says), and what
// each mark-all counted.
func TestReadUntil(t *testing.T) {
	at := func(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }
	type op struct {
		action string    // a Mark action, or "all" (MarkAllRead of A), "label", "every"
		uid    string    // for a Mark
		until  time.Time // for a mark-all
		n      int       // what a mark-all counts
	}
	all := func(min, n int) op { return op{action: "all", until: at(min), n: n} }
	mark := func(action, uid string) op { return op{action: action, uid: uid} }
	for _, tc := range []struct {
		name string
		ops  []op
		want string // A's entries oldest first, as listed shows them
		rows int
	}{
		{"nothing", nil, "a1,a2,a3", 0},
		{"the mark alone", []op{all(90, 2)}, "a1r,a2r,a3", 0},
		{"the mark to the end", []op{{action: "all", n: 3}}, "a1r,a2r,a3r", 0},
		{"every feed", []op{{action: "every", n: 4}}, "a1r,a2r,a3r", 0},
		{"a label", []op{{action: "label", until: at(90), n: 2}}, "a1r,a2r,a3", 0},
		{"unread below the mark", []op{all(90, 2), mark(MarkUnread, "a1")}, "a1,a2r,a3", 1},
		{"read again below the mark", []op{all(90, 2), mark(MarkUnread, "a1"), mark(MarkRead, "a1")}, "a1r,a2r,a3", 0},
		{"read above the mark", []op{all(90, 2), mark(MarkRead, "a3")}, "a1r,a2r,a3r", 0}, // the mark rises past a3
		{"unread above the mark", []op{all(90, 2), mark(MarkRead, "a3"), mark(MarkUnread, "a3")}, "a1r,a2r,a3", 1},
		{"read one by one, oldest first", []op{mark(MarkRead, "a1"), mark(MarkRead, "a2")}, "a1r,a2r,a3", 0},
		{"read out of order", []op{mark(MarkRead, "a2")}, "a1,a2r,a3", 1},
		{"read out of order, then the oldest", []op{mark(MarkRead, "a2"), mark(MarkRead, "a1")}, "a1r,a2r,a3", 0},
		{"read, starred, out of order", []op{mark(MarkStar, "a2"), mark(MarkRead, "a2"), mark(MarkRead, "a1")}, "a1r,a2rs,a3", 1},
		{"starred below the mark", []op{all(90, 2), mark(MarkStar, "a2")}, "a1r,a2rs,a3", 1},
		{"unstarred below the mark", []op{all(90, 2), mark(MarkStar, "a2"), mark(MarkUnstar, "a2")}, "a1r,a2r,a3", 0},
		{"starred, unread below the mark", []op{all(90, 2), mark(MarkStar, "a2"), mark(MarkUnread, "a2")}, "a1r,a2s,a3", 1},
		{"starred above the mark", []op{all(90, 2), mark(MarkStar, "a3")}, "a1r,a2r,a3s", 1},
		{"starred, then the mark", []op{mark(MarkStar, "a1"), all(90, 2)}, "a1rs,a2r,a3", 1},
		{"starred unread, then the mark", []op{all(30, 1), mark(MarkStar, "a1"), mark(MarkUnread, "a1"), all(90, 2)}, "a1rs,a2r,a3", 1},
		{"read, then the mark", []op{mark(MarkRead, "a1"), mark(MarkRead, "a3"), all(90, 1)}, "a1r,a2r,a3r", 1},
		{"the mark again over unread", []op{all(90, 2), mark(MarkUnread, "a1"), mark(MarkUnread, "a2"), all(90, 2)}, "a1r,a2r,a3", 0},
		{"an earlier mark keeps later unread", []op{all(90, 2), mark(MarkUnread, "a1"), mark(MarkUnread, "a2"), all(30, 1)}, "a1r,a2,a3", 1},
		{"a later mark", []op{all(30, 1), mark(MarkUnread, "a1"), all(90, 2)}, "a1r,a2r,a3", 0},
		{"a mark never goes down", []op{all(90, 2), all(30, 0)}, "a1r,a2r,a3", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := openTemp(t)
			add(t, c, sub("A", "news"), sub("B"))
			storeLines(t, c, "2026-11-20", entry("A", "a1", "h", at(0)), entry("A", "a2", "h", at(60)), entry("A", "a3", "h", at(120)),
				entry("B", "b1", "h", at(10)))
			for _, o := range tc.ops {
				var n int
				var err error
				switch o.action {
				case "all":
					n, err = c.MarkAllRead(ctx, "default", testids.Feed("A"), o.until)
				case "label":
					n, err = c.MarkLabelRead(ctx, "default", "news", o.until)
				case "every":
					n, err = c.MarkAllRead(ctx, "default", "", o.until)
				default:
					_, err = c.Mark(ctx, "default", o.action, []EntryKey{{testids.Feed("A"), testids.UID(o.uid)}}, t0)
				}
				if err != nil {
					t.Fatal(err)
				}
				if o.action == "all" || o.action == "label" || o.action == "every" {
					if n != o.n {
						t.Errorf("%s until %v: %d unread marked, want %d", o.action, o.until, n, o.n)
					}
				}
			}
			q := EntryQuery{Order: OrderFirstSeen, Reader: "default", Oldest: true}
			feedA := func(q EntryQuery) string {
				p, err := c.FeedEntries(ctx, testids.Feed("A"), q)
				if err != nil {
					t.Fatal(err)
				}
				return pageNames(p)
			}
			if got := feedA(q); got != tc.want {
				t.Errorf("listed %s, want %s", got, tc.want)
			}
			// The unread and read filters, and the counts, agree.
			var unread, read []string
			for _, e := range strings.Split(tc.want, ",") {
				name, marks, _ := strings.Cut(e, "r")
				if name == e { // no r
					unread = append(unread, e)
				} else {
					read = append(read, name+"r"+marks)
				}
			}
			for _, few := range []int{0, 1 << 30} {
				was := unreadFewAt
				unreadFewAt = few
				u := q
				u.Unread = true
				got := feedA(u)
				all := listed(t, c, EntryQuery{Order: OrderFirstSeen, Reader: "default", Unread: true, Oldest: true})
				label, err := c.LabelEntries(ctx, "news", u)
				unreadFewAt = was
				if err != nil {
					t.Fatal(err)
				}
				wantAll := withB(unread)
				if len(tc.ops) > 0 && tc.ops[0].action == "every" {
					wantAll = unread // b1 read too
				}
				if got != strings.Join(unread, ",") || all != strings.Join(wantAll, ",") {
					t.Errorf("unread (unreadFewAt %d): %s, all %s, want %s and %s", few, got, all, strings.Join(unread, ","), strings.Join(wantAll, ","))
				}
				if len(label.Entries) != len(unread) {
					t.Errorf("unread of the label (unreadFewAt %d): %d, want %d", few, len(label.Entries), len(unread))
				}
			}
			r := q
			r.Read = true
			if got := feedA(r); got != strings.Join(read, ",") {
				t.Errorf("read: %s, want %s", got, strings.Join(read, ","))
			}
			counts, err := c.UnreadCounts(ctx, "default", time.Time{})
			if err != nil || counts[testids.Feed("A")].Count != len(unread) {
				t.Errorf("unread count %v, %v; want %d", counts, err, len(unread))
			}
			for _, f := range []string{"A", "B"} {
				if one, err := c.FeedUnread(ctx, "default", testids.Feed(f)); err != nil || one != counts[testids.Feed(f)] {
					t.Errorf("FeedUnread %s: %v, %v; UnreadCounts has %v", f, one, err, counts[testids.Feed(f)])
				}
			}
			var rows int
			c.db.QueryRow(`SELECT count(*) FROM marks`).Scan(&rows)
			if rows != tc.rows {
				t.Errorf("%d rows of marks, want %d", rows, tc.rows)
			}
		})
	}
}

// withB is the names of unread entries of A with B's b1 (first seen
// between a1 and a2) in its place, oldest first.
func withB(unread []string) []string {
	var out []string
	put := false
	for _, u := range unread {
		if !put && u[:2] != "a1" {
			out, put = append(out, "b1"), true
		}
		out = append(out, u)
	}
	if !put {
		out = append(out, "b1")
	}
	return out
}

// TestSeenBefore: the entries last seen before a time, by feed, but for
// those a reader starred.
func TestSeenBefore(t *testing.T) {
	c := openTemp(t)
	add(t, c, sub("A"), sub("B"))
	storeLines(t, c, "2026-11-20",
		entry("A", "a1", "h", t0), entry("A", "a2", "h", t0.Add(time.Hour)),
		entry("B", "b1", "h", t0.Add(2*time.Hour)), entry("B", "b2", "h", t0.Add(48*time.Hour)))
	if _, err := c.Mark(ctx, "alice", MarkStar, []EntryKey{{testids.Feed("A"), testids.UID("a1")}}, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Mark(ctx, "alice", MarkRead, []EntryKey{{testids.Feed("B"), testids.UID("b1")}}, t0); err != nil {
		t.Fatal(err)
	}
	old, err := c.SeenBefore(ctx, t0.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{testids.Feed("A"): {testids.UID("a2")}, testids.Feed("B"): {testids.UID("b1")}}
	if !reflect.DeepEqual(old, want) {
		t.Errorf("seen before: %v, want %v", old, want)
	}
}

// TestForgetEntries: the entries forgotten, across feeds, leave the index
// with their versions, links (and those links' aliases), marks and words;
// the others stay whole, in one transaction or in several.
func TestForgetEntries(t *testing.T) {
	defer func(n int) { forgetChunk = n }(forgetChunk)
	for _, chunk := range []int{10000, 1} {
		forgetChunk = chunk
		c := openTemp(t)
		add(t, c, sub("A"), sub("B"))
		storeLines(t, c, "2026-11-20",
			entry("A", "a1", "h", t0), entry("A", "a2", "h", t0.Add(time.Hour)),
			entry("B", "b1", "h", t0.Add(2*time.Hour)), entry("B", "b2", "h", t0.Add(3*time.Hour)))
		storeLines(t, c, "2026-11-21", entry("A", "a1", "h2", t0.Add(24*time.Hour))) // a second version
		ref := func(feed, uid string) ndjson.EntryRef {
			return ndjson.EntryRef{FeedID: testids.Feed(feed), EntryUID: testids.UID(uid)}
		}
		link := func(i int) string { return fmt.Sprintf("https://news.example/%d", i) }
		if _, err := c.KeepLinks(ctx); err != nil {
			t.Fatal(err)
		}
		err := c.Update(ctx, func(t *Tx) error {
			for i, r := range []ndjson.EntryRef{ref("A", "a1"), ref("A", "a2"), ref("B", "b1"), ref("B", "b2")} {
				h, _ := LinkHash(link(i))
				if err := t.AddLink(h, r); err != nil {
					return err
				}
			}
			// x1 is an alias of a1, which goes; x2 of b1, which stays.
			for _, a := range []ndjson.Alias{
				{FeedID: testids.Feed("B"), EntryUID: testids.UID("x1"), CanonicalLink: link(0), AliasOf: ref("A", "a1")},
				{FeedID: testids.Feed("A"), EntryUID: testids.UID("x2"), CanonicalLink: link(2), AliasOf: ref("B", "b1")},
			} {
				a.RecordedAt = ndjson.At(t0)
				if err := t.AddAlias(&a, "2026-11-21"); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		all := []EntryKey{{testids.Feed("A"), testids.UID("a1")}, {testids.Feed("A"), testids.UID("a2")},
			{testids.Feed("B"), testids.UID("b1")}, {testids.Feed("B"), testids.UID("b2")}}
		for _, reader := range []string{"default", "alice"} {
			if _, err := c.Mark(ctx, reader, MarkStar, all, t0); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.ForgetEntries(ctx, map[string][]string{
			testids.Feed("A"): {testids.UID("a1"), testids.UID("a1")},
			testids.Feed("B"): {testids.UID("b2"), testids.UID("nope")},
		}); err != nil {
			t.Fatal(err)
		}
		names := func(q string) string {
			var out []string
			for _, uid := range table(t, c, q) {
				out = append(out, testids.Name(uid))
			}
			return strings.Join(out, ",")
		}
		for q, want := range map[string]string{
			`SELECT entry_uid FROM entries ORDER BY entry_uid`:                                                                  "a2,b1",
			`SELECT e.entry_uid FROM stored_versions v JOIN entries e ON e.id = v.entry_id ORDER BY 1`:                          "a2,b1",
			`SELECT count(*) FROM stored_versions`:                                                                              "2",
			`SELECT entry_uid FROM links ORDER BY entry_uid`:                                                                    "a2,b1",
			`SELECT entry_uid FROM aliases ORDER BY entry_uid`:                                                                  "x2",
			`SELECT entry_uid FROM marks WHERE reader = 'default' ORDER BY entry_uid`:                                           "a2,b1",
			`SELECT entry_uid FROM marks WHERE reader = 'alice' ORDER BY entry_uid`:                                             "a2,b1",
			`SELECT count(*) FROM entries WHERE search_key IS NULL`:                                                             "0",
			`SELECT count(*) FROM entries_fts`:                                                                                  "2",
			`SELECT count(*) FROM entries_fts WHERE rowid NOT IN (SELECT search_key FROM entries WHERE search_key IS NOT NULL)`: "0",
		} {
			if got := names(q); got != want {
				t.Errorf("chunks of %d: %s: %s, want %s", chunk, q, got, want)
			}
		}
	}
}
