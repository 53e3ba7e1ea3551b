package catalog

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/testids"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// dump is the rows of the tables entries are indexed in, and the schema.
func dump(t *testing.T, c *Catalog) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		`SELECT id, feed_key, entry_uid, content_hash, versions, first_seen, last_seen, seen_count, published, day, offset, length, stored_at FROM entries ORDER BY id`,
		`SELECT entry_id, version, content_hash, stored_at, day, offset, length FROM stored_versions ORDER BY entry_id, version`,
		`SELECT link_hash, feed_key, entry_uid FROM links ORDER BY link_hash`,
		`SELECT type, name, sql FROM sqlite_schema ORDER BY name`,
	} {
		rows, err := c.db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(&b, vals...)
		}
		rows.Close()
	}
	return b.String()
}

// loadable are entries of three feeds, interleaved as a store holds them,
// two sharing a link (the first keeps it).
func loadable() []Located {
	var out []Located
	for i := range 30 {
		feed := string(rune('A' + i%3))
		e := entry(feed, fmt.Sprintf("%s%d", strings.ToLower(feed), i), fmt.Sprintf("h%d", i), t0.Add(time.Duration(i)*time.Minute))
		e.CanonicalLink = fmt.Sprintf("https://%s.example/%d", feed, i)
		if i == 7 {
			e.CanonicalLink = "https://A.example/0"
		}
		out = append(out, Located{e, Location{Day: "2026-11-21", Offset: int64(100 * i), Length: 100}})
	}
	return out
}

func batches(all []Located, n int) func() ([]Located, error) {
	return func() ([]Located, error) {
		b := all[:min(n, len(all))]
		all = all[len(b):]
		return b, nil
	}
}

// TestLoadEntries: the bulk load makes the rows, the ids and the indexes
// StoreVersion and AddLink make one by one; an entry stored already makes
// it fail and change nothing.
func TestLoadEntries(t *testing.T) {
	one, bulk := openTemp(t), openTemp(t)
	err := one.Update(ctx, func(t *Tx) error {
		for _, l := range loadable() {
			if err := t.StoreVersion(l.Entry, l.Loc); err != nil {
				return err
			}
			if h, ok := LinkHash(l.Entry.CanonicalLink); ok {
				if err := t.AddLink(h, ndjson.EntryRef{FeedID: l.Entry.FeedID, EntryUID: l.Entry.EntryUID}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := bulk.LoadEntries(ctx, batches(loadable(), 7)); err != nil {
		t.Fatal(err)
	}
	want, got := dump(t, one), dump(t, bulk)
	if got != want {
		t.Fatalf("bulk load:\n%s\none by one:\n%s", got, want)
	}
	again := loadable()[5:6]
	if err := bulk.LoadEntries(ctx, batches(again, 1)); err == nil {
		t.Fatal("loading a stored entry again: no error")
	}
	if after := dump(t, bulk); after != want {
		t.Fatalf("a failed load changed the catalog:\n%s", after)
	}
	// The page cache of the connection the load used is the pool's again.
	var size int
	if err := bulk.db.QueryRow(`PRAGMA cache_size`).Scan(&size); err != nil || size == -262144 {
		t.Fatalf("cache_size %d (%v)", size, err)
	}
}

// TestEntryIDs: a feed's entries are numbered in its own range, in the
// order stored; a catalog whose entries were numbered in one sequence
// (before) keeps them, and they are found.
func TestEntryIDs(t *testing.T) {
	c := openTemp(t)
	loc := Location{Day: "2026-11-21", Length: 10}
	var keyA int64
	err := c.Update(ctx, func(t *Tx) error {
		var err error
		if keyA, err = t.feedKey(testids.Feed("A")); err != nil {
			return err
		}
		// An entry numbered as before.
		if _, err := t.write(once, `INSERT INTO entries (id, feed_key, entry_uid, content_hash, versions, first_seen, last_seen, seen_count, published, day, offset, length)
			VALUES (7, ?, ?, 'old', 1, 0, 0, 1, 0, '2026-11-20', 0, 10)`, keyA, testids.UID("a0")); err != nil {
			return err
		}
		for _, uid := range []string{"a1", "a2"} {
			if err := t.StoreVersion(entry("A", uid, "h", t0), loc); err != nil {
				return err
			}
		}
		return t.StoreVersion(entry("B", "b1", "h", t0), loc)
	})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	rows, _ := c.db.Query(`SELECT id FROM entries ORDER BY id`)
	for rows.Next() {
		var id int64
		rows.Scan(&id)
		ids = append(ids, id)
	}
	rows.Close()
	if want := []int64{7, keyA<<32 + 1, keyA<<32 + 2, (keyA+1)<<32 + 1}; fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Fatalf("ids %v, want %v", ids, want)
	}
	// The old one is found, though not among the feed's latest.
	x := c.Index()
	for uid, want := range map[string]string{"a0": "", "a1": "", "a2": "", "a3": "new"} {
		hash := "h"
		if uid == "a0" {
			hash = "old"
		}
		if got, err := x.Judge(ctx, testids.Feed("A"), testids.UID(uid), hash); got != want || err != nil {
			t.Errorf("%s: %q %v, want %q", uid, got, err, want)
		}
	}
}

// TestIndexForgets: what feed-store commits is read again once it forgets
// a feed, not the feed's entries as read before.
func TestIndexForgets(t *testing.T) {
	c := openTemp(t)
	loc := Location{Day: "2026-11-21", Length: 10}
	store := func(e *ndjson.Entry) {
		if err := c.Update(ctx, func(t *Tx) error { return t.StoreVersion(e, loc) }); err != nil {
			t.Fatal(err)
		}
	}
	store(entry("A", "a1", "h1", t0))
	x := c.Index()
	a := testids.Feed("A")
	if got, _ := x.Judge(ctx, a, testids.UID("a1"), "h2"); got != "updated" {
		t.Fatalf("h2: %q", got)
	}
	v2 := entry("A", "a1", "h2", t0.Add(time.Hour))
	v2.FirstSeen, v2.SeenCount = ndjson.At(t0), 2
	x.Add(a, Seen{UID: v2.EntryUID, Hash: "h2", FirstSeen: v2.FirstSeen, LastSeen: v2.LastSeen, SeenCount: 2})
	store(v2)
	x.Forget(a)
	for hash, want := range map[string]string{"h1": "", "h2": "", "h3": "updated"} {
		if got, _ := x.Judge(ctx, a, testids.UID("a1"), hash); got != want {
			t.Errorf("after Forget, %s: %q, want %q", hash, got, want)
		}
	}
	if s, _, _ := x.Latest(ctx, a, testids.UID("a1")); s.Versions != 2 || s.SeenCount != 2 {
		t.Errorf("latest after Forget: %+v", s)
	}
}

// TestStoreVersionStatus: a version is stored as the catalog has its
// entry, whatever status the record says (a replay, a catch-up).
func TestStoreVersionStatus(t *testing.T) {
	c := openTemp(t)
	loc := Location{Day: "2026-11-21", Length: 10}
	a := testids.Feed("A")
	for i, tc := range []struct {
		status, hash string
		versions     int
	}{
		{ndjson.StatusUpdated, "h1", 1}, // said updated, never stored: made
		{ndjson.StatusNew, "h2", 2},     // said new, stored: a version
		{ndjson.StatusUpdated, "h3", 3},
	} {
		e := entry("A", "a1", tc.hash, t0.Add(time.Duration(i)*time.Hour))
		e.Status = tc.status
		if err := c.Update(ctx, func(t *Tx) error { return t.StoreVersion(e, loc) }); err != nil {
			t.Fatal(err)
		}
		s, ok, err := c.Index().Latest(ctx, a, testids.UID("a1"))
		if err != nil || !ok || s.Versions != tc.versions || s.Hash != tc.hash {
			t.Fatalf("after %s %s: %+v %v %v", tc.status, tc.hash, s, ok, err)
		}
	}
	_, versions, err := c.EntriesByUID(ctx, testids.UID("a1"))
	if err != nil || len(versions) != 1 {
		t.Fatalf("%v %v", versions, err)
	}
	if got := versionList(versions[0]); got != "1 h1 0h, 2 h2 1h, 3 h3 2h" {
		t.Errorf("versions: %s", got)
	}
	// The latest is the entry's row; the two it replaced have theirs.
	if n := table(t, c, `SELECT count(*) FROM entry_versions`); n[0] != "2" {
		t.Errorf("%s rows in entry_versions, want 2", n[0])
	}
}

// versionList is vs as "VERSION HASH HOURS" (stored_at, hours after
// t0), comma-separated.
func versionList(vs []Version) string {
	var out []string
	for _, v := range vs {
		out = append(out, fmt.Sprintf("%d %s %gh", v.Version, v.Hash, v.StoredAt.Sub(t0).Hours()))
	}
	return strings.Join(out, ", ")
}

// TestVersionsOfOlderRows: an entry whose row was made before migration
// 16 (its latest version in entry_versions, no stored_at) keeps every
// version, listed once, as new ones come; its older hashes stay known.
func TestVersionsOfOlderRows(t *testing.T) {
	c := openTemp(t)
	storeOld(t, c, "2026-11-20", entry("A", "a1", "h1", t0))
	for i, hash := range []string{"h2", "h3"} {
		e := entry("A", "a1", hash, t0.Add(time.Duration(i+1)*time.Hour))
		e.Status, e.FirstSeen = ndjson.StatusUpdated, ndjson.At(t0)
		loc := Location{Day: "2026-11-21", Offset: int64(10 * i), Length: 10}
		if err := c.Update(ctx, func(t *Tx) error { return t.StoreVersion(e, loc) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Update(ctx, func(t *Tx) error {
		return t.StoreVersion(entry("A", "b1", "h", t0), Location{Day: "2026-11-21", Offset: 20, Length: 10})
	}); err != nil {
		t.Fatal(err)
	}
	for uid, want := range map[string]string{"a1": "1 h1 0h, 2 h2 1h, 3 h3 2h", "b1": "1 h 0h"} {
		_, versions, err := c.EntriesByUID(ctx, testids.UID(uid))
		if err != nil || len(versions) != 1 {
			t.Fatalf("%s: %v %v", uid, versions, err)
		}
		if got := versionList(versions[0]); got != want {
			t.Errorf("%s: versions %s, want %s", uid, got, want)
		}
	}
	if got := strings.Join(table(t, c, `SELECT version || ' ' || day || ' ' || offset FROM stored_versions ORDER BY entry_id, version`), ", "); got != "1 2026-11-20 0, 2 2026-11-21 0, 3 2026-11-21 10, 1 2026-11-21 20" {
		t.Errorf("stored_versions: %s", got)
	}
	x := c.Index()
	for hash, want := range map[string]string{"h1": "", "h2": "", "h3": "", "h4": "updated"} {
		if got, err := x.Judge(ctx, testids.Feed("A"), testids.UID("a1"), hash); got != want || err != nil {
			t.Errorf("judge %s: %q %v, want %q", hash, got, err, want)
		}
	}
}
