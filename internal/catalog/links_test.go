package catalog

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/testids"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// linkedAt is entry with a canonical link.
func linkedAt(feed, uid, hash, link string, seen time.Time) *ndjson.Entry {
	e := entry(feed, uid, hash, seen)
	e.CanonicalLink = link
	return e
}

// firstWith names the first entry the catalog holds of link, "" for none.
func firstWith(t *testing.T, c *Catalog, link string) string {
	t.Helper()
	h, _ := LinkHash(link)
	o, err := c.LinkOwners(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	if !o.Known() {
		return ""
	}
	return testids.Name(o.First.FeedID) + "/" + testids.Name(o.First.EntryUID)
}

// TestKeepLinks: a catalog keeps no link index until KeepLinks, which
// builds it from the stored versions' lines: every version's link, each
// link's first entry the one stored first with it (not the one first
// seen: an entry's first_seen is its fetch's, or an archive page's date);
// from then on every stored version adds its link, the first staying.
func TestKeepLinks(t *testing.T) {
	var logs bytes.Buffer
	c := openTemp(t)
	c.log = slog.New(slog.NewTextHandler(&logs, nil))
	const story, other, moved = "https://news.example/story", "https://news.example/other", "https://news.example/moved"
	storeLines(t, c, "2026-11-20",
		linkedAt("A", "a1", "h", story, t0.Add(time.Hour)),
		linkedAt("B", "b1", "h", "http://NEWS.example/story", t0), // the same link, stored after, seen an hour earlier
		linkedAt("C", "c1", "h", other, t0.Add(2*time.Hour)),
		entry("C", "c2", "h", t0)) // no link
	storeLines(t, c, "2026-11-21", linkedAt("C", "c1", "h2", moved, t0.Add(24*time.Hour))) // its second version's link
	if kept, err := c.LinksKept(ctx); kept || err != nil {
		t.Fatalf("kept %v before KeepLinks (%v)", kept, err)
	}
	addLink := func(link, feed, uid string) {
		t.Helper()
		h, _ := LinkHash(link)
		if err := c.Update(ctx, func(t *Tx) error {
			return t.AddLink(h, ndjson.EntryRef{FeedID: testids.Feed(feed), EntryUID: testids.UID(uid)})
		}); err != nil {
			t.Fatal(err)
		}
	}
	addLink(story, "A", "a1") // not kept: nothing
	if got := firstWith(t, c, story); got != "" {
		t.Fatalf("a link kept before KeepLinks: %s", got)
	}
	built, err := c.KeepLinks(ctx)
	if err != nil || built != 3 {
		t.Fatalf("built %d links (%v), want 3", built, err)
	}
	if !strings.Contains(logs.String(), "built the index of the stored entries' links") {
		t.Errorf("no log line:\n%s", logs.String())
	}
	for link, want := range map[string]string{story: "A/a1", other: "C/c1", moved: "C/c1", "https://news.example/none": ""} {
		if got := firstWith(t, c, link); got != want {
			t.Errorf("%s: first %q, want %q", link, got, want)
		}
	}
	if built, err := c.KeepLinks(ctx); built != 0 || err != nil {
		t.Fatalf("a second KeepLinks built %d (%v)", built, err)
	}
	// Kept from now on, by this process and any other.
	addLink(story, "D", "d1")
	addLink("https://news.example/new", "D", "d2")
	c2 := reopen(t, c)
	for link, want := range map[string]string{story: "A/a1", "https://news.example/new": "D/d2"} {
		if got := firstWith(t, c2, link); got != want {
			t.Errorf("%s after: first %q, want %q", link, got, want)
		}
	}
	if kept, err := c2.LinksKept(ctx); !kept || err != nil {
		t.Fatalf("kept %v after KeepLinks (%v)", kept, err)
	}
	// Reindex keeps it kept, and builds it again from entries/.
	if _, err := Reindex(ctx, c2.st, nil); err != nil {
		t.Fatal(err)
	}
	c3 := reopen(t, c2)
	if kept, err := c3.LinksKept(ctx); !kept || err != nil {
		t.Fatalf("kept %v after reindex (%v)", kept, err)
	}
	for link, want := range map[string]string{story: "A/a1", other: "C/c1", moved: "C/c1"} {
		if got := firstWith(t, c3, link); got != want {
			t.Errorf("%s after reindex: first %q, want %q", link, got, want)
		}
	}
}

// TestKeepLinksOfVersionsStoredMeanwhile: a version stored between the
// build's reading and its transaction has its link in the index too.
func TestKeepLinksOfVersionsStoredMeanwhile(t *testing.T) {
	c := openTemp(t)
	storeLines(t, c, "2026-11-20", linkedAt("A", "a1", "h", "https://news.example/1", t0))
	defer func(f func()) { afterLinksRead = f }(afterLinksRead)
	afterLinksRead = func() {
		storeLines(t, c, "2026-11-20", linkedAt("B", "b1", "h", "https://news.example/2", t0))
	}
	if built, err := c.KeepLinks(ctx); built != 2 || err != nil {
		t.Fatalf("built %d (%v), want 2", built, err)
	}
	if got := firstWith(t, c, "https://news.example/2"); got != "B/b1" {
		t.Fatalf("the link of the version stored meanwhile: %q", got)
	}
}

// TestStoredLinksReadOnce: the lines read before KeepLinks's transaction
// are not read again in it, unless their version's place changed; a line
// that cannot be read is counted.
func TestStoredLinksReadOnce(t *testing.T) {
	c := openTemp(t)
	storeLines(t, c, "2026-11-20", linkedAt("A", "a1", "h", "https://news.example/1", t0), linkedAt("A", "a2", "h", "https://news.example/2", t0))
	query := func(q string) (rows, error) { return c.read(ctx, once, q) }
	first, err := c.storedLinks(query, nil)
	if err != nil || len(first.links) != 2 || first.unread != 0 {
		t.Fatalf("%+v (%v)", first, err)
	}
	known := storedLink{hash: [16]byte{1}, ok: true}
	again, err := c.storedLinks(query, func(k versionKey, loc Location) (storedLink, bool) {
		if k == first.keys[0] && loc == first.links[0].loc {
			return known, true // a1, read before
		}
		return storedLink{}, false
	})
	if err != nil || len(again.links) != 2 || again.links[0] != known || again.links[1] != first.links[1] {
		t.Fatalf("again: %+v (%v)", again, err)
	}
	if err := os.Truncate(c.st.Path("entries/2026-11-20.ndjson"), 10); err != nil {
		t.Fatal(err)
	}
	cut, err := c.storedLinks(query, nil)
	if err != nil || cut.unread != 2 || cut.links[0].ok || cut.links[1].ok {
		t.Fatalf("after the file was cut: %+v (%v)", cut, err)
	}
}

// TestMigrationKeepsLinksOfAliases: migration 17 keeps the link index of
// a store that recorded an alias, and empties any other's.
func TestMigrationKeepsLinksOfAliases(t *testing.T) {
	for _, alias := range []bool{false, true} {
		c := openAtVersion(t, 16)
		qs := []string{`INSERT INTO feeds (feed_id) VALUES ('` + testids.Feed("A") + `'), ('` + testids.Feed("B") + `')`,
			`INSERT INTO links VALUES ('00112233445566778899aabbccddeeff', 1, 'a1')`}
		if alias {
			qs = append(qs, `INSERT INTO aliases VALUES (2, 'b1', '00112233445566778899aabbccddeeff', 1, 'a1', 0, '2026-11-20')`)
		}
		for _, q := range qs {
			if _, err := c.db.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		c = reopen(t, c)
		var links int
		if err := c.db.QueryRow(`SELECT count(*) FROM links`).Scan(&links); err != nil {
			t.Fatal(err)
		}
		kept, err := c.LinksKept(ctx)
		if err != nil || kept != alias || links != map[bool]int{false: 0, true: 1}[alias] {
			t.Errorf("with an alias %v: kept %v (%v), %d links", alias, kept, err, links)
		}
	}
}
