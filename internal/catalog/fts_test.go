package catalog

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/testids"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

func TestTextOf(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain  words\n here", "plain words here"},
		{"<p>Hello <b>wor</b>ld &amp; more</p>", "Hello world & more"},
		{"<p>one</p><p>two</p>", "one two"},
		{`<script>var secret = 1</script><style>p{}</style>kept`, "kept"},
		{`<a href="https://x.example/path">link text</a>`, "link text"},
		{"", ""},
	} {
		if got := TextOf(tc.in); got != tc.want {
			t.Errorf("TextOf(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	long := strings.Repeat("word ", MaxIndexedText)
	if got := TextOf(long); len(got) > MaxIndexedText || len(got) < MaxIndexedText-10 {
		t.Errorf("long text kept %d bytes", len(got))
	}
}

func TestFTSMatch(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"golang sqlite", `"golang" "sqlite"`},
		{`"exact phrase" word*`, `"exact" "phrase" "word"*`},
		{`NEAR( OR AND NOT ^ - : col:x`, `"NEAR" "OR" "AND" "NOT" "col" "x"`},
		{`a"b`, `"a" "b"`},
		{`don't x:y*`, `"don" "t" "x" "y"*`},
		{`***  ---`, ``},
		{`"unclosed phrase`, `"unclosed" "phrase"`},
	} {
		if got := ftsMatch(tc.in); got != tc.want {
			t.Errorf("ftsMatch(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// FuzzFTSMatch: no search a person types is an error of SQLite's.
// TestWordsSpacedOnce: text that is its words spaced once is its own
// result; any other is split and joined again, the same either way.
func TestWordsSpacedOnce(t *testing.T) {
	for _, s := range []string{"", "a", "a b", " a", "a ", "a  b", "a\tb", "a\nb", "a\u00a0b", "a\u2003b", "a\u0085b", "é ü ß",
		"\xff\xfe a", "a \xff", strings.Repeat("w ", MaxIndexedText/2), strings.Repeat("w", MaxIndexedText), strings.Repeat("w", MaxIndexedText-1)} {
		if got, want := words(s), joinWords(s); got != want {
			t.Errorf("words(%.40q) = %.40q, want %.40q", s, got, want)
		}
	}
}

// FuzzWords: the shortcut of words never changes its result.
func FuzzWords(f *testing.F) {
	for _, s := range []string{"a b", " a", "a  b", "a\u00a0b", "\xff b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := words(s), joinWords(s); got != want {
			t.Errorf("words(%q) = %q, want %q", s, got, want)
		}
	})
}

func FuzzFTSMatch(f *testing.F) {
	for _, s := range []string{"golang", `"a b" c*`, `NEAR(a b)`, `x:y`, `"`, `*`, "\x00", "é*"} {
		f.Add(s)
	}
	c := openTemp(f)
	f.Fuzz(func(t *testing.T, q string) {
		_, err := c.AllEntries(ctx, EntryQuery{Text: q})
		if err != nil && !errors.Is(err, ErrBadQuery) {
			t.Fatalf("search %q: %v", q, err)
		}
	})
}

// storeLines appends entries to entries/ and indexes them as feed-store
// does, returning their locations.
func storeLines(t *testing.T, c *Catalog, day string, es ...*ndjson.Entry) {
	t.Helper()
	key := "entries/" + day + ".ndjson"
	for _, e := range es {
		b, err := ndjson.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		off, err := c.st.AppendLines(key, b, storedir.Durable)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Update(ctx, func(tx *Tx) error {
			return tx.StoreVersion(e, Location{Day: day, Offset: off, Length: int64(len(b))})
		}); err != nil {
			t.Fatal(err)
		}
	}
}

func search(t *testing.T, c *Catalog, q string) string {
	t.Helper()
	p, err := c.AllEntries(ctx, EntryQuery{Text: q})
	if err != nil {
		t.Fatalf("search %q: %v", q, err)
	}
	var s []string
	for _, e := range p.Entries {
		s = append(s, testids.Name(e.UID))
	}
	return strings.Join(s, ",")
}

func textEntry(feed, uid, hash string, seen time.Time, title, summary, content string) *ndjson.Entry {
	e := entry(feed, uid, hash, seen)
	e.Title, e.Summary, e.Content = title, summary, content
	return e
}

// TestFullTextSearch: the words of the title, summary and content of each
// entry's latest version are found; a new version replaces the old words;
// prune and reindex keep the index in step.
func TestFullTextSearch(t *testing.T) {
	c := openTemp(t)
	add(t, c, sub("A"))
	storeLines(t, c, "2026-11-20",
		textEntry("A", "a1", "h1", t0, "Gophers in space", "", "<p>The <b>rocket</b> launched.</p>"),
		textEntry("A", "a2", "h1", t0.Add(time.Hour), "Café news", "A summary about <i>coffee</i>", ""))
	storeLines(t, c, "2026-11-21", textEntry("A", "a3", "h1", t0.Add(2*time.Hour), "Rocket science", "", "no gophers here <script>rocketjs</script>"))
	for _, tc := range []struct{ q, want string }{
		{"rocket", "a3,a1"},
		{"ROCKET gophers", "a3,a1"},
		{"coffee", "a2"},
		{"cafe", "a2"}, // diacritics removed
		{"roc*", "a3,a1"},
		{`"gophers in space"`, "a1"},
		{`"space gophers"`, "a1"}, // no positions: the words, each required
		{`gophers science`, "a3"},
		{"rocketjs", ""}, // script is no text
		{"b", ""},        // tag names are not words
	} {
		if got := search(t, c, tc.q); got != tc.want {
			t.Errorf("search %q: %q, want %q", tc.q, got, tc.want)
		}
	}
	if _, err := c.AllEntries(ctx, EntryQuery{Text: "** --"}); !errors.Is(err, ErrBadQuery) {
		t.Errorf("a search without words: %v", err)
	}
	// A new version: its words replace the old ones.
	v2 := textEntry("A", "a1", "h2", t0.Add(3*time.Hour), "Gophers on the moon", "", "landed")
	v2.FirstSeen = ndjson.At(t0)
	storeLines(t, c, "2026-11-21", v2)
	if got := search(t, c, "rocket"); got != "a3" {
		t.Errorf("after a new version, rocket: %q", got)
	}
	if got := search(t, c, "moon"); got != "a1" {
		t.Errorf("after a new version, moon: %q", got)
	}
	// Prune drops the entries of the days before 2026-11-21: a2 (a1's
	// latest version is on the 21st).
	if n, _, err := c.ForgetEntryDays(ctx, "2026-11-21", false); err != nil || n != 1 {
		t.Fatalf("prune: %d %v", n, err)
	}
	if got := search(t, c, "coffee"); got != "" {
		t.Errorf("after prune, coffee: %q", got)
	}
	if err := c.ForgetEntries(ctx, map[string][]string{testids.Feed("A"): {testids.UID("a3")}}); err != nil {
		t.Fatal(err)
	}
	if got := search(t, c, "science"); got != "" {
		t.Errorf("after forget, science: %q", got)
	}
	// Reindex builds the index from entries/ again: a2 and a3 come back
	// (their lines are still there), a1 with its latest words.
	c.Close()
	if _, err := Reindex(ctx, c.st, nil); err != nil {
		t.Fatal(err)
	}
	c2, err := Open(ctx, c.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	for q, want := range map[string]string{"coffee": "a2", "science": "a3", "moon": "a1", "launched": ""} {
		if got := search(t, c2, q); got != want {
			t.Errorf("after reindex, %s: %q, want %q", q, got, want)
		}
	}
}

// TestFTSBackfill: a catalog made before the search index (schema version
// 3) gets the words of its entries when it is opened, once, in chunks; a
// crash half-way resumes.
func TestFTSBackfill(t *testing.T) {
	// Chunks of 20 entries: the same chunk boundaries as 5,000, at a
	// fraction of the time under -race.
	defer func(n int) { backfillChunk = n }(backfillChunk)
	backfillChunk = 20
	c := openAtVersion(t, 3)
	st := c.st
	n := 2*backfillChunk + 7
	var es []*ndjson.Entry
	for i := range n {
		es = append(es, textEntry("A", fmt.Sprint("e", i), "h", t0.Add(time.Duration(i)*time.Second), fmt.Sprintf("title%d", i), "", "common words"))
	}
	storeOld(t, c, "2026-11-20", es...)
	c.Close()
	// Two processes open it at once: each chunk is indexed once (an entry
	// indexed twice would leave a second key's words behind).
	var wg sync.WaitGroup
	opened := make([]*Catalog, 2)
	errs := make([]error, 2)
	for i := range opened {
		wg.Go(func() { opened[i], errs[i] = Open(ctx, st, nil) })
	}
	wg.Wait()
	for i := range opened {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
	}
	opened[1].Close()
	c = opened[0]
	defer c.Close()
	if got := search(t, c, fmt.Sprint("title", n-1)); got != fmt.Sprint("e", n-1) {
		t.Errorf("after the backfill: %q", got)
	}
	indexedAll := func(want int) {
		t.Helper()
		var left, indexed, keyless int
		c.db.QueryRow(`SELECT count(*) FROM meta WHERE key = ?`, metaFTSBackfill).Scan(&left)
		c.db.QueryRow(`SELECT count(*) FROM entries_fts WHERE entries_fts MATCH 'common'`).Scan(&indexed)
		c.db.QueryRow(`SELECT count(*) FROM entries WHERE search_key IS NULL`).Scan(&keyless)
		if left != 0 || indexed != want || keyless != 0 {
			t.Errorf("mark left %d, %d of %d indexed, %d entries without a search key", left, indexed, want, keyless)
		}
	}
	indexedAll(n)
	// A crash after the first chunk: the mark says where to go on.
	var mark int64 // the id of the first chunk's last entry (ids are numbered by feed)
	if err := c.db.QueryRow(`SELECT id FROM entries ORDER BY id LIMIT 1 OFFSET ?`, backfillChunk-1).Scan(&mark); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DELETE FROM entries_fts WHERE rowid IN (SELECT search_key FROM entries WHERE id > ?)`,
		`UPDATE entries SET search_key = NULL WHERE id > ?`} {
		if _, err := c.db.Exec(q, mark); err != nil {
			t.Fatal(err)
		}
	}
	c.SetMeta(ctx, metaFTSBackfill, mark)
	if err := c.backfillFTS(ctx); err != nil {
		t.Fatal(err)
	}
	indexedAll(n)
	if got := search(t, c, "title3"); got != "e3" {
		t.Errorf("after the resumed backfill: %q", got)
	}
}

// TestSearchKeyMigration: a catalog whose search index was keyed by the
// entries' ids (schema version 7) is keyed by time once opened: every
// entry found, the newest match first.
func TestSearchKeyMigration(t *testing.T) {
	c := openAtVersion(t, 7)
	storeOld(t, c, "2026-11-20",
		textEntry("A", "a1", "h", t0.Add(3*time.Hour), "apple", "", ""), textEntry("A", "a2", "h", t0, "apple pie", "", ""),
		textEntry("B", "b1", "h", t0.Add(time.Hour), "apple", "", ""))
	if _, err := c.db.Exec(`INSERT INTO entries_fts (rowid, title, summary, content) SELECT id, 'apple', '', '' FROM entries`); err != nil {
		t.Fatal(err)
	}
	c = reopen(t, c)
	for q, want := range map[string]string{"apple": "a1,b1,a2", "pie": "a2"} {
		if got := search(t, c, q); got != want {
			t.Errorf("%s: %q, want %q", q, got, want)
		}
	}
}

// TestLabelEntriesManyFeeds: a label of many feeds reads the index by
// time (labelFeedsByIndex), and pages through the same entries as a label
// of few.
func TestLabelEntriesManyFeeds(t *testing.T) {
	c := openTemp(t)
	var subs []ndjson.Subscription
	for i := range labelFeedsByIndex + 10 {
		labels := []string{"many"}
		if i%20 == 0 {
			labels = append(labels, "few", `a "quoted" <label>`)
		}
		subs = append(subs, sub(fmt.Sprint("F", i), labels...))
	}
	subs = append(subs, sub("other", "manyx", "xmany"))
	add(t, c, subs...)
	err := c.Update(ctx, func(tx *Tx) error {
		for i := range labelFeedsByIndex + 11 {
			name := fmt.Sprint("F", i)
			if i == labelFeedsByIndex+10 {
				name = "other"
			}
			for j := range 3 {
				if err := tx.StoreVersion(entry(name, fmt.Sprint(name, "e", j), "h", t0.Add(time.Duration(i*3+j)*time.Minute)), Location{Day: "2026-11-21", Length: 1}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for label, want := range map[string]int{"many": 3 * (labelFeedsByIndex + 10), "few": 9, `a "quoted" <label>`: 9, "nothing": 0, "man": 0} {
		var got []string
		q := EntryQuery{Limit: 7}
		for {
			p, err := c.LabelEntries(ctx, label, q)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range p.Entries {
				if e.FeedID == testids.Feed("other") {
					t.Fatalf("label %q: an entry of a feed without it", label)
				}
				got = append(got, e.UID)
			}
			if p.Next == "" {
				break
			}
			q.Cursor = p.Next
		}
		if len(got) != want {
			t.Errorf("label %q: %d entries, want %d", label, len(got), want)
		}
	}
}

// storeInOne appends entries to entries/ and indexes them in one
// transaction, as feed-store does a batch.
func storeInOne(t *testing.T, c *Catalog, day string, es ...*ndjson.Entry) {
	t.Helper()
	locs := make([]Location, len(es))
	for i, e := range es {
		b, err := ndjson.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		off, err := c.st.AppendLines("entries/"+day+".ndjson", b, storedir.Durable)
		if err != nil {
			t.Fatal(err)
		}
		locs[i] = Location{Day: day, Offset: off, Length: int64(len(b))}
	}
	if err := c.Update(ctx, func(tx *Tx) error {
		for i, e := range es {
			if err := tx.StoreVersion(e, locs[i]); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// hourVersion is a version of feed A's entry uid, first seen at t0,
// last seen ten hours after, published the given hours after t0, with a
// title and summary.
func hourVersion(uid, hash string, published int, title, summary string) *ndjson.Entry {
	e := textEntry("A", uid, hash, t0.Add(10*time.Hour), title, summary, "")
	e.Published = ndjson.At(t0.Add(time.Duration(published) * time.Hour))
	e.FirstSeen = ndjson.At(t0)
	return e
}

// TestFTSBatch: a transaction's changes to the index, made at its end in
// key order, leave what writing each as it came would: every entry's
// latest words once, under its row's search key, whatever the order and
// however often an entry changes within the transaction or across two.
func TestFTSBatch(t *testing.T) {
	c := openTemp(t)
	add(t, c, sub("A"))
	version := func(uid, hash string, published int, words string) *ndjson.Entry {
		return hourVersion(uid, hash, published, words, "")
	}
	// One transaction: newest first (keys going down), a1 replaced at its
	// millisecond, then moved to another; a2 moved and moved back.
	storeInOne(t, c, "2026-11-21",
		version("a3", "h1", 3, "three"),
		version("a2", "h1", 2, "two"),
		version("a1", "h1", 1, "one first"),
		version("a1", "h2", 1, "one second"),
		version("a1", "h3", 5, "one third"),
		version("a2", "h2", 6, "two moved"),
		version("a2", "h3", 2, "two back"),
	)
	// Another: a3 replaced at its millisecond (its words from the first
	// are in the index now), a1 moved back before it, a new one.
	storeInOne(t, c, "2026-11-22",
		version("a4", "h1", 4, "four"),
		version("a3", "h2", 3, "three again"),
		version("a1", "h4", 1, "one fourth"),
	)
	for q, want := range map[string]string{
		"one": "a1", "first": "", "second": "", "third": "", "fourth": "a1",
		"two": "a2", "moved": "", "back": "a2",
		"three": "a3", "again": "a3", "four": "a4",
	} {
		if got := search(t, c, q); got != want {
			t.Errorf("search %q: %q, want %q", q, got, want)
		}
	}
	// Every word of the index is under a row's key, once.
	rows, err := c.db.QueryContext(ctx, `SELECT s.rowid, e.entry_uid FROM entries_fts s LEFT JOIN entries e ON e.search_key = s.rowid
		WHERE entries_fts MATCH 'one OR two OR three OR four OR first OR second OR third OR moved'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := map[int64]bool{}
	for rows.Next() {
		var key int64
		var uid *string
		if err := rows.Scan(&key, &uid); err != nil {
			t.Fatal(err)
		}
		if uid == nil || seen[key] {
			t.Errorf("search key %d: entry %v, seen before %v", key, uid, seen[key])
		}
		seen[key] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 4 {
		t.Errorf("%d keys in the index, want 4", len(seen))
	}
}

// TestFTSBatchFlushedEarly: a batch made before its transaction ends (its
// text past ftsBatchBytes) leaves the same index: an entry stored and then
// moved to another millisecond within the transaction loses the words it
// had when the batch was made.
func TestFTSBatchFlushedEarly(t *testing.T) {
	defer func(n int) { ftsBatchBytes = n }(ftsBatchBytes)
	ftsBatchBytes = 64 // every entry's words past it: each put makes the batch
	c := openTemp(t)
	add(t, c, sub("A"))
	version := func(uid, hash string, published int, words string) *ndjson.Entry {
		return hourVersion(uid, hash, published, words, strings.Repeat("filler ", 20))
	}
	storeInOne(t, c, "2026-11-21",
		version("a1", "h1", 1, "early"),
		version("a2", "h1", 2, "other"),
		version("a1", "h2", 5, "moved"),
		version("a2", "h2", 2, "replaced"),
	)
	for q, want := range map[string]string{"early": "", "moved": "a1", "other": "", "replaced": "a2", "filler": "a1,a2"} {
		if got := search(t, c, q); got != want {
			t.Errorf("search %q: %q, want %q", q, got, want)
		}
	}
	var orphans int
	if err := c.db.QueryRowContext(ctx, `SELECT count(*) FROM entries_fts s WHERE entries_fts MATCH 'filler'
		AND NOT EXISTS (SELECT 1 FROM entries e WHERE e.search_key = s.rowid)`).Scan(&orphans); err != nil || orphans != 0 {
		t.Errorf("%d words under no entry's key (%v)", orphans, err)
	}
}
