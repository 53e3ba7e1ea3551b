package catalog

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"

	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// The full-text index of the entries (feed-serve's GET /entries?q=): an
// SQLite FTS5 table over the title, summary and content of each entry's
// latest version, as text (HTML tags dropped). It is contentless
// (content=''): it keeps only the index, never the text, which is in
// entries/ already; contentless_delete lets a new version replace the old
// one's words and prune drop an entry's. detail=none keeps which entries
// have a word, not where: phrase queries go (a phrase is its words, each
// required), and the index costs about a quarter of what it would with
// positions (docs/serve.md has the figures). StoreVersion keeps it, and
// so do prune (ForgetEntryDays, ForgetEntries) and reindex.
//
// Its rowid is the entry's search key (entries.search_key), which orders
// the entries by the time they are listed by: the millisecond the entry
// was published in the high bits, a number among the entries of that
// millisecond in the low ones (searchKeyBits). FTS5 keeps each word's
// list of entries in rowid order and reads it from either end, so the
// newest matches of a search are the first of its list: a page of a word
// every entry has is found after a page of rows, not after the whole
// list (searchWalk). An entry without a key (NULL) is not in the index.

// The index is made by migration 4 and keyed by time by migration 8
// (migrations/0004_entries_fts.sql, 0008_search_key.sql); each marks the
// entries already stored for backfillFTS, after it, when there are some.

// metaFTSBackfill holds the id of the last entry whose words were indexed
// by backfillFTS; absent when there is nothing left to do.
const metaFTSBackfill = "fts:backfill"

// searchKeyBits is how many low bits of a search key number the entries of
// one millisecond: a million of them. The 43 bits above hold the
// millisecond, from 1970 to 2248; times outside clamp to those ends.
const (
	searchKeyBits  = 20
	searchKeyLast  = 1<<searchKeyBits - 1
	searchKeyMaxMS = 1<<43 - 1
)

// searchGroup is the first search key of the entries published at ms.
func searchGroup(ms int64) int64 { return min(max(ms, 0), searchKeyMaxMS) << searchKeyBits }

// lastSearchKeySQL is newSearchKey's statement, a constant so that
// TestIndexesEarnTheirWrites reads its plan.
const lastSearchKeySQL = `SELECT max(search_key) FROM entries WHERE search_key BETWEEN ? AND ?`

// newSearchKey returns an unused search key for an entry published at ms,
// one past the last of its millisecond's; ok is false when that
// millisecond's million keys are all taken, and the entry stays out of
// the index.
func (t *Tx) newSearchKey(ms int64) (key int64, ok bool, err error) {
	group := searchGroup(ms)
	last, cached := t.searchKeys[group]
	if !cached {
		var k sql.NullInt64
		err := t.readRow(kept, lastSearchKeySQL, group, group+searchKeyLast).Scan(&k)
		if err != nil {
			return 0, false, err
		}
		last = lastSearchKey(group, k)
	}
	if last >= group+searchKeyLast {
		// Not silent: the entry is stored and listed, but no search
		// finds it (feed-store reindex keys them again, once some of the
		// millisecond's entries are pruned).
		t.c.log.Warn("catalog: a million entries are published in this millisecond: this one is left out of the search index",
			"published", time.UnixMilli(ms).UTC())
		return 0, false, nil
	}
	t.searchKeys[group] = last + 1
	return last + 1, true, nil
}

// SearchKeysFor readies the search keys of entries to be stored in the
// transaction (StoreVersion), published at the milliseconds ms: the last
// key of each millisecond not known yet, read in one query, instead of a
// query per entry (each of a batch's new entries has a millisecond of
// its own, and the queries were 7% of feed-store's CPU storing them).
func (t *Tx) SearchKeysFor(ms []int64) error {
	var want []int64
	seen := map[int64]bool{}
	for _, m := range ms {
		g := searchGroup(m)
		if _, ok := t.searchKeys[g]; !ok && !seen[g] {
			seen[g] = true
			want = append(want, g)
		}
	}
	if len(want) == 0 {
		return nil
	}
	list, err := json.Marshal(want)
	if err != nil {
		return err
	}
	rows, err := t.read(kept, `SELECT g.value, (SELECT max(search_key) FROM entries WHERE search_key BETWEEN g.value AND g.value + `+
		fmt.Sprint(searchKeyLast)+`) FROM json_each(?) g`, string(list))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var g int64
		var k sql.NullInt64
		if err := rows.Scan(&g, &k); err != nil {
			return err
		}
		t.searchKeys[g] = lastSearchKey(g, k)
	}
	return rows.Err()
}

// lastSearchKey is the last search key given in the group g, whose
// greatest key in the catalog is k.
func lastSearchKey(g int64, k sql.NullInt64) int64 {
	if k.Valid {
		return k.Int64
	}
	return max(g-1, 0) // 0 is no key
}

// MaxIndexedText caps the text of one field that the index takes: the
// first 64 KiB of an article find it as well as its whole.
const MaxIndexedText = 64 << 10

// indexText puts the words of e, the latest version of the entry id
// whose search key is old (0: none yet; fresh: given to the entry by this
// transaction, so none of its words are in the index), in the full-text
// index, under a search key of its published time: old when it is of
// that millisecond (the words replace those of the older version), a new
// one otherwise (the old one's words are dropped, and the entry's row
// takes the key).
func (t *Tx) indexText(id, old int64, fresh bool, e *ndjson.Entry) error {
	ms := unixMS(publishedOr(e))
	key := old
	if old == 0 || old>>searchKeyBits != searchGroup(ms)>>searchKeyBits {
		var ok bool
		var err error
		if key, ok, err = t.newSearchKey(ms); err != nil {
			return err
		}
		if old != 0 {
			t.fts.drop(old)
		}
		var set any // NULL: out of the index
		if ok {
			set = key
		}
		if _, err := t.write(once, `UPDATE entries SET search_key = ? WHERE id = ?`, set, id); err != nil {
			return err
		}
		if !ok {
			return nil
		}
		fresh = true
	}
	return t.fts.put(t, key, fresh, [3]string{TextOf(e.Title), TextOf(e.Summary), TextOf(e.Content)})
}

// ftsBatch holds a transaction's changes to the full-text index until its
// end, then makes them in rowid order. FTS5 gathers new words in memory
// only while rowids go up: one lower than the last written flushes what
// it has as a segment of its own, which later merges rewrite. Search keys
// follow the entries' published times, not the order a fetch stores them
// in, so written as they came every entry was a segment: a third of
// feed-store's CPU on a cycle of new entries.
type ftsBatch struct {
	ops   map[int64]*ftsOp
	fresh map[int64]bool // keys given in this transaction: none of their words are in the index
	bytes int
}

// ftsOp is what a transaction does to the words of a search key: drop
// the ones in the index, put new ones (text: title, summary, content), or
// both (a replacement).
type ftsOp struct {
	drop bool
	put  bool
	text [3]string
}

// ftsBatchBytes caps the text a batch holds: past it, the batch is made
// before the transaction ends. (A variable for the tests.)
var ftsBatchBytes = 16 << 20

// op returns key's pending change, made empty if there is none.
func (b *ftsBatch) op(key int64) *ftsOp {
	if b.ops == nil {
		b.ops, b.fresh = map[int64]*ftsOp{}, map[int64]bool{}
	}
	o := b.ops[key]
	if o == nil {
		o = &ftsOp{}
		b.ops[key] = o
	}
	return o
}

// put sets the words of key; fresh says the key was given in this
// transaction (nothing of it to drop from the index).
func (b *ftsBatch) put(t *Tx, key int64, fresh bool, text [3]string) error {
	o := b.op(key)
	if fresh {
		b.fresh[key] = true
	} else if !b.fresh[key] {
		o.drop = true // the older version's words
	}
	o.put, o.text = true, text
	b.bytes += len(text[0]) + len(text[1]) + len(text[2])
	if b.bytes > ftsBatchBytes {
		return b.flush(t)
	}
	return nil
}

// drop removes the words of key.
func (b *ftsBatch) drop(key int64) {
	o := b.op(key)
	o.put, o.text = false, [3]string{}
	if b.fresh[key] {
		delete(b.ops, key) // never in the index
		return
	}
	o.drop = true
}

// flush makes the pending changes, in rowid order; a key's drop before
// its put, which FTS5 takes without a flush too.
func (b *ftsBatch) flush(t *Tx) error {
	if len(b.ops) == 0 {
		return nil
	}
	keys := make([]int64, 0, len(b.ops))
	for k := range b.ops {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		o := b.ops[k]
		if o.drop {
			if _, err := t.write(kept, `DELETE FROM entries_fts WHERE rowid = ?`, k); err != nil {
				return err
			}
		}
		if o.put {
			if _, err := t.write(kept, `INSERT INTO entries_fts (rowid, title, summary, content) VALUES (?, ?, ?, ?)`,
				k, o.text[0], o.text[1], o.text[2]); err != nil {
				return err
			}
		}
	}
	// What is flushed is in the index now: a later drop of a fresh key
	// must delete it.
	*b = ftsBatch{}
	return nil
}

// TextOf returns the text of an HTML fragment (or of plain text, which
// reads as itself), its words separated by single spaces, at most
// MaxIndexedText bytes of it: what the search index takes of a field.
// Script and style elements are no text; the tags of other elements
// separate words, but for inline ones (<b>wor</b>ld is one word).
func TextOf(s string) string {
	if !strings.ContainsAny(s, "<&") {
		return words(s)
	}
	var raw strings.Builder
	z := html.NewTokenizer(strings.NewReader(s))
	skip := 0 // inside script or style
	for raw.Len() < 2*MaxIndexedText {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return words(raw.String())
		case html.TextToken:
			if skip == 0 {
				raw.Write(z.Text())
			}
		case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			switch n := string(name); {
			case n == "script" || n == "style":
				if tt == html.StartTagToken {
					skip++
				} else if tt == html.EndTagToken && skip > 0 {
					skip--
				}
				raw.WriteByte(' ')
			case !inlineTags[n]:
				raw.WriteByte(' ')
			}
		}
	}
	return words(raw.String())
}

// inlineTags are the elements whose tags do not separate words.
var inlineTags = map[string]bool{
	"a": true, "abbr": true, "b": true, "bdi": true, "bdo": true, "cite": true, "code": true, "data": true,
	"dfn": true, "em": true, "i": true, "kbd": true, "mark": true, "q": true, "s": true, "samp": true,
	"small": true, "span": true, "strong": true, "sub": true, "sup": true, "time": true, "u": true,
	"var": true, "font": true, "del": true, "ins": true,
}

// words joins the words of s with single spaces, at most MaxIndexedText
// bytes of them.
func words(s string) string {
	// Most text is its words already, spaced once: it is its own result,
	// without splitting and joining it again (8% of feed-store's CPU
	// storing new entries).
	if len(s) < MaxIndexedText && spacedOnce(s) {
		return s
	}
	return joinWords(s)
}

// spacedOnce reports whether s has no space (unicode.IsSpace) but single
// ' ' between words: none at either end, none other.
func spacedOnce(s string) bool {
	space := true // before the first byte: a leading space is one too many
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch c {
			case ' ':
				if space {
					return false
				}
				space = true
			case '\t', '\n', '\v', '\f', '\r':
				return false
			default:
				space = false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if unicode.IsSpace(r) {
			return false
		}
		space = false
		i += n
	}
	return !space || s == ""
}

// joinWords is words of any s.
func joinWords(s string) string {
	var b strings.Builder
	for _, w := range strings.FieldsFunc(s, unicode.IsSpace) {
		if b.Len()+len(w)+1 > MaxIndexedText {
			break
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	return b.String()
}

// ftsMatch turns a search as a person types it into an FTS5 query that
// cannot be malformed: each word must be in the entry (in any field), and
// a word ending in * is a prefix. Quotes are ignored: the index keeps no
// positions, so "quoted words" are the words, each required. FTS5's own
// operators are words like any other. It returns "" for a search without
// words.
func ftsMatch(q string) string {
	var terms []string
	for _, w := range strings.FieldsFunc(q, separates) {
		prefix := strings.HasSuffix(w, "*")
		// The tokens the tokenizer would make of it: each a term of its
		// own (two in one string would be a phrase, which the index
		// cannot answer).
		tokens := strings.FieldsFunc(w, func(r rune) bool { return !isTokenChar(r) })
		for i, t := range tokens {
			t = `"` + t + `"` // a token has no quote in it
			if prefix && i == len(tokens)-1 {
				t += "*"
			}
			terms = append(terms, t)
		}
	}
	return strings.Join(terms, " ")
}

// separates reports whether r separates the words of a search: space,
// control characters (SQLite reads a query up to a NUL) and bytes that are
// not UTF-8.
func separates(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == utf8.RuneError }

// isTokenChar reports whether the unicode61 tokenizer keeps r in a token:
// its default categories, letters, numbers and private-use characters
// (L* N* Co); the rest, combining marks too, separates tokens.
func isTokenChar(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Co, r)
}

// backfillChunk is how many entries backfillFTS indexes per transaction.
// (A variable for the tests.)
var backfillChunk = 5000

// backfillFTS indexes the words of the entries stored before the index
// existed (or was keyed by time), reading each entry's latest line in
// entries/, a chunk of entries per transaction, each of which moves the
// mark; a crash resumes from the mark. Each chunk is read and indexed in
// its write transaction: two processes opening the catalog at once index
// a chunk once, one after the other, and a stage storing entries
// meanwhile keys its own.
func (c *Catalog) backfillFTS(ctx context.Context) error {
	var from int64
	if ok, err := c.Meta(ctx, metaFTSBackfill, &from); err != nil || !ok {
		return err
	}
	c.log.Info("catalog: indexing the words of the stored entries for search, once", "catalog", c.path)
	started := time.Now()
	for chunks := 1; ; chunks++ {
		done := false
		err := c.Update(ctx, func(t *Tx) error {
			ok, err := t.Meta(metaFTSBackfill, &from)
			if err != nil || !ok {
				done = true // another process finished it
				return err
			}
			chunk, err := t.unindexed(from)
			if err != nil {
				return err
			}
			if len(chunk) == 0 {
				done = true
				_, err := t.write(once, `DELETE FROM meta WHERE key = ?`, metaFTSBackfill)
				return err
			}
			for _, r := range chunk {
				if r.indexed {
					continue // stored since: StoreVersion indexed it
				}
				var e ndjson.Entry
				b, err := c.Line(storedir.DirEntries, r.loc)
				if err != nil || ndjson.Unmarshal(b, &e) != nil || e.EntryUID != r.uid {
					continue // a line gone or damaged: reindex finds what is left
				}
				if err := t.indexText(r.id, 0, false, &e); err != nil {
					return err
				}
			}
			return t.SetMeta(metaFTSBackfill, chunk[len(chunk)-1].id)
		})
		if err != nil || done {
			return err
		}
		// A line every million entries: a large store takes minutes.
		if chunks%200 == 0 {
			c.log.Info("catalog: search index", "entries", chunks*backfillChunk, "elapsed", time.Since(started).Round(time.Second))
		}
	}
}

// backfillRow is an entry backfillFTS goes through.
type backfillRow struct {
	id      int64
	uid     string
	loc     Location
	indexed bool
}

// unindexed returns the next backfillChunk entries after the id from.
func (t *Tx) unindexed(from int64) ([]backfillRow, error) {
	rows, err := t.read(once, `SELECT id, entry_uid, day, offset, length, search_key IS NOT NULL FROM entries WHERE id > ? ORDER BY id LIMIT ?`,
		from, backfillChunk)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var chunk []backfillRow
	for rows.Next() {
		var r backfillRow
		if err := rows.Scan(&r.id, &r.uid, &r.loc.Day, &r.loc.Offset, &r.loc.Length, &r.indexed); err != nil {
			return nil, err
		}
		chunk = append(chunk, r)
	}
	return chunk, rows.Err()
}

// clearFTS empties the full-text index (reindex builds it again).
func (t *Tx) clearFTS() error {
	t.fts = ftsBatch{} // nothing pending is left to make
	_, err := t.write(once, `INSERT INTO entries_fts (entries_fts) VALUES ('delete-all')`)
	return err
}
