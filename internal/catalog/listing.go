package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The listings of entries that feed-serve's REST API and web page, its
// Google Reader API and feed-read page through (docs/serve.md, docs/
// read.md): the entries of a feed, of a label's feeds or of all, newest
// (or oldest) first by the time they were published or first seen, each
// filter a condition of the query (where).

// EntryRow is what the catalog holds of a stored entry; its latest
// version's line is at Location in entries/.
type EntryRow struct {
	ID        int64 // the entry's number in the catalog: its feed's key in the high 32 bits, its number in the feed in the low ones (entriesPerFeed)
	FeedID    string
	UID       string
	Hash      string
	FirstSeen time.Time
	LastSeen  time.Time
	// Published is when the latest version was published, or first seen
	// when its feed did not say.
	Published time.Time
	SeenCount int
	Versions  int
	Location
	// The marks of EntryQuery.Reader (marks.go); false when it named none.
	Marks
}

// Version is one stored version of an entry, its line at Location in
// entries/.
type Version struct {
	Version  int
	Hash     string
	StoredAt time.Time // the last_seen of the version when it was stored
	Location
}

// Orders of EntryQuery.
const (
	OrderPublished = "published"
	OrderFirstSeen = "first_seen"
)

// EntryQuery selects entries, newest first.
type EntryQuery struct {
	Order  string    // OrderPublished (the default) or OrderFirstSeen: the time the others refer to
	Since  time.Time // at or after; zero: no bound
	Until  time.Time // before; zero: no bound
	Limit  int       // at most this many (0: DefaultLimit; at most MaxLimit)
	Cursor string    // EntryPage.Next of the page before
	// Text keeps the entries whose latest version has every word of it in
	// its title, summary or content (fts.go: "quoted words" a phrase, a
	// word* a prefix); "" keeps all.
	Text string
	// Reader is whose marks the rows carry, and Unread and Starred keep
	// only the entries that reader has not read, or has starred.
	Reader  string
	Unread  bool
	Starred bool
	// Read keeps only the entries Reader has marked read.
	Read bool
	// Oldest lists oldest first (Since and Until bound it as ever; a
	// cursor goes on towards the newest).
	Oldest bool
}

// The limits of an EntryQuery.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// EntryPage is a page of entries, and the cursor of the next ("" when this
// is the last).
type EntryPage struct {
	Entries []EntryRow
	Next    string
}

// ErrBadQuery marks a query the catalog cannot run: an unknown order, a
// cursor it did not make.
var ErrBadQuery = errors.New("bad query")

const entryColumns = `e.id, f.feed_id, e.entry_uid, e.content_hash, e.first_seen, e.last_seen, e.published, e.seen_count, e.versions,
	e.day, e.offset, e.length`

func scanEntry(scan func(...any) error, r *EntryRow) error {
	var first, last, pub int64
	if err := scan(&r.ID, &r.FeedID, &r.UID, &r.Hash, &first, &last, &pub, &r.SeenCount, &r.Versions, &r.Day, &r.Offset, &r.Length); err != nil {
		return err
	}
	r.FirstSeen, r.LastSeen, r.Published = time.UnixMilli(first).UTC(), time.UnixMilli(last).UTC(), time.UnixMilli(pub).UTC()
	return nil
}

// FeedEntries returns a page of the entries of a feed.
func (c *Catalog) FeedEntries(ctx context.Context, feedID string, q EntryQuery) (EntryPage, error) {
	sc := oneFeed(feedID)
	return c.entries(ctx, sc, sc.in("e.feed_key"), q)
}

// LabelEntries returns a page of the entries of the feeds subscribed
// with a label.
func (c *Catalog) LabelEntries(ctx context.Context, label string, q EntryQuery) (EntryPage, error) {
	keys, err := c.labelFeeds(ctx, label)
	if err != nil {
		return EntryPage{}, err
	}
	if len(keys) == 0 {
		return EntryPage{}, nil
	}
	// A few feeds: their entries through the index by feed, sorted. Many:
	// the index by time, newest first, keeping those of the label's feeds
	// (the unary + keeps SQLite off the index by feed), which finds a
	// page after about limit × feeds / label's feeds rows.
	sc := keyFeeds(keys)
	if len(keys) <= labelFeedsByIndex {
		return c.entries(ctx, sc, sc.in("e.feed_key"), q)
	}
	return c.entries(ctx, sc, sc.in("+e.feed_key"), q)
}

// labelFeedsByIndex is the most feeds of a label whose entries
// LabelEntries reads through the index by feed.
const labelFeedsByIndex = 50

// AllEntries returns a page of every stored entry.
func (c *Catalog) AllEntries(ctx context.Context, q EntryQuery) (EntryPage, error) {
	return c.entries(ctx, allFeeds, "1", q)
}

// unreadFewAt is how many entries after their feeds' "read up to" marks
// an EntryQuery.Unread may find for entries to list its page from them
// (fetched by id and sorted), rather than walk the index by time testing
// each entry: after mark-all-read, those are the entries since, where the
// walk would read the whole store to find there are none.
var unreadFewAt = 20_000

// entries lists a page of the entries of the feeds of sc, as q selects
// them; scope is the condition on e that keeps the feeds of sc (its
// arguments sc's).
func (c *Catalog) entries(ctx context.Context, sc feedScope, scope string, q EntryQuery) (EntryPage, error) {
	col := "e.published"
	switch q.Order {
	case "", OrderPublished:
	case OrderFirstSeen:
		col = "e.first_seen"
	default:
		return EntryPage{}, fmt.Errorf("catalog: %w: order %q: it is published or first_seen", ErrBadQuery, q.Order)
	}
	limit := q.Limit
	switch {
	case limit <= 0:
		limit = DefaultLimit
	case limit > MaxLimit:
		limit = MaxLimit
	}
	// The times the page is within: at or after from, at or before to
	// (milliseconds of col).
	from, to := int64(math.MinInt64), int64(math.MaxInt64)
	var w where
	w.and(scope, sc.args...)
	if !q.Since.IsZero() {
		from = unixMS(q.Since)
		w.and(col+" >= :since", sql.Named("since", from))
	}
	if !q.Until.IsZero() {
		to = unixMS(q.Until) - 1
		w.and(col+" < :until", sql.Named("until", unixMS(q.Until)))
	}
	if q.Reader != "" || q.Unread || q.Starred || q.Read {
		if err := CheckReader(q.Reader); err != nil {
			return EntryPage{}, fmt.Errorf("catalog: %w", err)
		}
	}
	reader := sql.Named("reader", q.Reader)
	// few: the entries are those of a list the catalog made first (the
	// unread ones after mark-all-read, the starred ones), fetched by id.
	few := false
	if q.Unread {
		ids, ok, err := c.unreadFew(ctx, sc, q, col)
		if err != nil {
			return EntryPage{}, err
		}
		if ok {
			few = true
			w.and(`e.id IN (SELECT value FROM json_each(:unread))`, sql.Named("unread", ids))
		}
		w.and("NOT "+isRead, reader)
	}
	if q.Starred {
		few = true
		w.and(isStarred, reader)
	}
	if q.Read {
		w.and(isRead, reader)
	}
	dir, past := "DESC", "<"
	if q.Oldest {
		dir, past = "ASC", ">"
	}
	if q.Cursor != "" {
		at, id, err := parseCursor(q.Cursor)
		if err != nil {
			return EntryPage{}, err
		}
		if q.Oldest {
			from = max(from, at)
		} else {
			to = min(to, at)
		}
		w.and("("+col+" "+past+" :at OR ("+col+" = :at AND e.id "+past+" :id))", sql.Named("at", at), sql.Named("id", id))
	}
	var found []EntryRow
	var err error
	if q.Text == "" {
		// Prepared once per shape of query (the filters given), not
		// parsed at each page.
		found, err = c.entryRows(ctx, kept, `SELECT `+entryColumns+` FROM entries e JOIN feeds f ON f.key = e.feed_key
			WHERE `+w.sql()+` ORDER BY `+col+` `+dir+`, e.id `+dir+` LIMIT :limit`, append(w.args, sql.Named("limit", limit+1))...)
	} else {
		found, err = c.searchEntries(ctx, sc, w, q, searchBounds{col: col, from: from, to: to, limit: limit, few: few})
	}
	if err != nil {
		return EntryPage{}, err
	}
	page := EntryPage{Entries: found}
	more := len(page.Entries) > limit
	if more {
		page.Entries = page.Entries[:limit]
	}
	if q.Reader != "" {
		marks, err := c.MarksOf(ctx, q.Reader, page.Entries)
		if err != nil {
			return EntryPage{}, err
		}
		for i := range page.Entries {
			page.Entries[i].Marks = marks[page.Entries[i].ID]
		}
	}
	if more {
		last := page.Entries[limit-1]
		at := last.Published
		if col == "e.first_seen" {
			at = last.FirstSeen
		}
		page.Next = strconv.FormatInt(at.UnixMilli(), 10) + "." + strconv.FormatInt(last.ID, 10)
	}
	return page, nil
}

// entryRows runs a query of entryColumns.
func (c *Catalog) entryRows(ctx context.Context, p prep, query string, args ...any) ([]EntryRow, error) {
	rows, err := c.read(ctx, p, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var found []EntryRow
	for rows.Next() {
		var r EntryRow
		if err := scanEntry(rows.Scan, &r); err != nil {
			return nil, err
		}
		found = append(found, r)
	}
	return found, rows.Err()
}

// unreadLow is the first_seen no unread entry of q is before: q.Since
// when q is by first_seen.
func unreadLow(q EntryQuery, col string) int64 {
	if col == "e.first_seen" && !q.Since.IsZero() {
		return max(unixMS(q.Since), 0)
	}
	return 0
}

// unreadFew returns, as a JSON array, the ids of the entries of the feeds
// of sc after their feed's "read up to" mark (and unreadLow), and of those
// with a row saying unread: every unread entry is one of them. ok is false
// when the reader has no such mark, or when they are unreadFewAt or more:
// then the unread filter walks the index by time.
func (c *Catalog) unreadFew(ctx context.Context, sc feedScope, q EntryQuery, col string) (ids string, ok bool, err error) {
	var has int
	err = c.readRow(ctx, once, `SELECT count(*) FROM (SELECT 1 FROM read_until WHERE reader = ? LIMIT 1)`, q.Reader).Scan(&has)
	if err != nil || has == 0 {
		return "", false, err
	}
	rows, err := c.read(ctx, once, `SELECT x.id FROM feeds f LEFT JOIN read_until w ON w.reader = :reader AND w.feed_key = f.key
		CROSS JOIN entries x ON x.feed_key = f.key AND x.first_seen >= max(coalesce(w.until, 0), :low) WHERE `+sc.in("f.key")+`
		UNION ALL SELECT x.id FROM marks m INDEXED BY marks_unread CROSS JOIN entries x ON x.feed_key = m.feed_key AND x.entry_uid = m.entry_uid
		WHERE m.reader = :reader AND NOT m.read AND `+sc.in("m.feed_key")+` LIMIT :limit`,
		append([]any{sql.Named("reader", q.Reader), sql.Named("low", unreadLow(q, col)), sql.Named("limit", unreadFewAt)}, sc.args...)...)
	if err != nil {
		return "", false, err
	}
	defer rows.Close()
	var list jsonInts
	n := 0
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return "", false, err
		}
		list.add(id)
		n++
	}
	if err := rows.Err(); err != nil {
		return "", false, err
	}
	return list.String(), n < unreadFewAt, nil
}

// parseCursor reads a cursor: the time (Unix ms) and the id of the last
// entry of the page before.
func parseCursor(s string) (at, id int64, err error) {
	a, b, ok := strings.Cut(s, ".")
	at, err1 := strconv.ParseInt(a, 10, 64)
	id, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("catalog: %w: cursor %q is not one a page of entries gave", ErrBadQuery, s)
	}
	return at, id, nil
}

// isRead is whether the entry e is read for the reader :reader: its row
// of marks says so, or its feed's "read up to" mark does (marks.go).
const isRead = `coalesce((SELECT m.read FROM marks m WHERE m.reader = :reader AND m.feed_key = e.feed_key AND m.entry_uid = e.entry_uid),
	` + readByMark + `)`

// isStarred keeps the entries the reader :reader starred, found from the
// reader's starred marks (marks_starred) and each entry's row by its feed
// and uid: testing every entry newest first for a star finds a reader's
// few stars only at the end of the table (6 s at a million entries). The
// index is named: SQLite took the marks' primary key instead, and read
// every mark of a reader who had read a million entries (280 ms).
const isStarred = `e.id IN (SELECT s.id FROM marks m INDEXED BY marks_starred JOIN entries s ON s.feed_key = m.feed_key AND s.entry_uid = m.entry_uid
	WHERE m.reader = :reader AND m.starred)`
