package catalog

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"

	"github.com/feedpipe/feedpipe/internal/storage"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// The full-text index of the entries (feed-serve's GET /entries?q=): an
// SQLite FTS5 table over the title, summary and content of each entry's
// latest version, as text (HTML tags dropped), its rowid the entry's id.
// It is contentless (content=''): it keeps only the index, never the text,
// which is in entries/ already; contentless_delete lets a new version
// replace the old one's words and prune drop an entry's. detail=none keeps
// which entries have a word, not where: phrase queries go (a phrase is
// its words, each required), and the index costs about a quarter of what
// it would with positions (docs/serve.md has the figures). StoreVersion
// keeps it, and so do prune (ForgetEntryDays, ForgetEntries) and reindex.

// ftsSchema is migration 4. A catalog that had entries before it gets
// their words from entries/ once, after the migration (backfillFTS): the
// migration marks where that starts.
const ftsSchema = `
CREATE VIRTUAL TABLE entries_fts USING fts5(title, summary, content,
	content='', contentless_delete=1, detail=none, tokenize='unicode61 remove_diacritics 2');
INSERT INTO meta (key, value) SELECT 'fts:backfill', '0' WHERE EXISTS (SELECT 1 FROM entries);
`

// metaFTSBackfill holds the id of the last entry whose words were indexed
// by backfillFTS; absent when there is nothing left to do.
const metaFTSBackfill = "fts:backfill"

// MaxIndexedText caps the text of one field that the index takes: the
// first 64 KiB of an article find it as well as its whole.
const MaxIndexedText = 64 << 10

// indexText puts the words of e, the latest version of the entry id, in
// the full-text index, replacing those of an older version.
func (t *Tx) indexText(id int64, e *ndjson.Entry) error {
	_, err := t.exec(`INSERT OR REPLACE INTO entries_fts (rowid, title, summary, content) VALUES (?, ?, ?, ?)`,
		id, TextOf(e.Title), TextOf(e.Summary), TextOf(e.Content))
	return err
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
const backfillChunk = 5000

// backfillFTS indexes the words of the entries stored before the index
// existed, reading each entry's latest line in entries/, a chunk of
// entries per transaction, each of which moves the mark; a crash resumes
// from the mark.
func (c *Catalog) backfillFTS(ctx context.Context) error {
	var from int64
	ok, err := c.Meta(ctx, metaFTSBackfill, &from)
	if err != nil || !ok {
		return err
	}
	c.log.Info("catalog: indexing the words of the stored entries for search, once", "catalog", c.path)
	for {
		rows, err := c.db.QueryContext(ctx, `SELECT id, entry_uid, day, offset, length FROM entries WHERE id > ? ORDER BY id LIMIT ?`, from, backfillChunk)
		if err != nil {
			return c.damaged(fmt.Errorf("catalog: search index: %w", err))
		}
		type row struct {
			id  int64
			uid string
			loc Location
		}
		var chunk []row
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.id, &r.uid, &r.loc.Day, &r.loc.Offset, &r.loc.Length); err != nil {
				rows.Close()
				return c.damaged(fmt.Errorf("catalog: search index: %w", err))
			}
			chunk = append(chunk, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return c.damaged(fmt.Errorf("catalog: search index: %w", err))
		}
		err = c.Update(ctx, func(t *Tx) error {
			if len(chunk) == 0 {
				_, err := t.exec(`DELETE FROM meta WHERE key = ?`, metaFTSBackfill)
				return err
			}
			for _, r := range chunk {
				var e ndjson.Entry
				b, err := c.Line(storage.DirEntries, r.loc)
				if err != nil || ndjson.Unmarshal(b, &e) != nil || e.EntryUID != r.uid {
					continue // a line gone or damaged: reindex finds what is left
				}
				if err := t.indexText(r.id, &e); err != nil {
					return err
				}
			}
			return t.SetMeta(metaFTSBackfill, chunk[len(chunk)-1].id)
		})
		if err != nil || len(chunk) == 0 {
			return err
		}
		from = chunk[len(chunk)-1].id
	}
}

// clearFTS empties the full-text index (reindex builds it again).
func (t *Tx) clearFTS() error {
	_, err := t.exec(`INSERT INTO entries_fts (entries_fts) VALUES ('delete-all')`)
	return err
}
