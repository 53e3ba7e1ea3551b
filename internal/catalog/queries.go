package catalog

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/feedpipe/feedpipe/internal/storage"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// The queries of the REST API (seed 000 §4.8): entries of a feed or a
// label by time, an entry and its versions, fetches and their payloads.

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
	return c.entries(ctx, oneFeed(feedID), `e.feed_key = (SELECT key FROM feeds WHERE feed_id = ?)`, []any{feedID}, q)
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
	if len(keys) <= labelFeedsByIndex {
		return c.entries(ctx, keyFeeds(keys), `e.feed_key IN (`+placeholders(len(keys))+`)`, keys, q)
	}
	return c.entries(ctx, keyFeeds(keys), `+e.feed_key IN (SELECT value FROM json_each(?))`, []any{jsonInts(keys)}, q)
}

// HasLabel reports whether a subscription has the label.
func (c *Catalog) HasLabel(ctx context.Context, label string) (bool, error) {
	keys, err := c.labelFeeds(ctx, label)
	return len(keys) > 0, err
}

// placeholders is n question marks for an IN list.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// labelFeedsByIndex is the most feeds of a label whose entries
// LabelEntries reads through the index by feed.
const labelFeedsByIndex = 50

// labelFeeds returns the keys of the feeds subscribed with label
// (subscription_labels, migration 9).
//
// The keys are kept, by label, while the subscriptions are unchanged (a
// feed-serve asks for a label's feeds at each make of its Atom feed, tens
// a second while a pipeline commits): each change of the subscriptions
// table moves the subscription log's checkpoint in the same transaction,
// and the log's size and time tell a log rewritten (compacted, restored)
// whose checkpoint came back to an earlier offset.
func (c *Catalog) labelFeeds(ctx context.Context, label string) ([]any, error) {
	version, err := c.subscriptionsVersion(ctx)
	if err != nil {
		return nil, err
	}
	if keys, ok := c.labels.get(version, label); ok {
		return keys, nil
	}
	keys, err := c.queryLabelFeeds(ctx, label)
	if err != nil {
		return nil, err
	}
	c.labels.put(version, label, keys)
	return keys[:len(keys):len(keys)], nil
}

// labelCache is labelFeeds' keys of the subscriptions' version.
type labelCache struct {
	mu      sync.Mutex
	version string
	keys    map[string][]any
}

// labelCacheMax is the most labels kept.
const labelCacheMax = 1024

func (l *labelCache) get(version, label string) ([]any, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	keys, ok := l.keys[label]
	if !ok || l.version != version {
		return nil, false
	}
	return keys[:len(keys):len(keys)], true // an append copies
}

func (l *labelCache) put(version, label string, keys []any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.version != version || len(l.keys) >= labelCacheMax {
		l.version, l.keys = version, map[string][]any{}
	}
	l.keys[label] = keys
}

// subscriptionsVersion is the subscriptions table's version: the log's
// checkpoint, which every change of the table moves in its transaction,
// and the log file's size and time.
func (c *Catalog) subscriptionsVersion(ctx context.Context) (string, error) {
	var cp sql.NullString
	err := c.readRow(ctx, kept, `SELECT value FROM meta WHERE key = ?`, TapSubscriptions).Scan(&cp)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", err
	}
	v := cp.String + ";"
	if fi, err := c.st.Stat(SubscriptionsFile); err == nil {
		v += strconv.FormatInt(fi.Size(), 10) + "." + strconv.FormatInt(fi.ModTime().UnixNano(), 10)
	}
	return v, nil
}

// queryLabelFeeds is labelFeeds from the catalog.
func (c *Catalog) queryLabelFeeds(ctx context.Context, label string) ([]any, error) {
	rows, err := c.read(ctx, kept, `SELECT feed_key FROM subscription_labels WHERE label = ? ORDER BY feed_key`, label)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var keys []any
	for rows.Next() {
		var k int64
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}

// jsonInts is a JSON array of integer keys.
func jsonInts(keys []any) string {
	b := []byte{'['}
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, k.(int64), 10)
	}
	return string(append(b, ']'))
}

// AllEntries returns a page of every stored entry.
func (c *Catalog) AllEntries(ctx context.Context, q EntryQuery) (EntryPage, error) {
	return c.entries(ctx, allFeeds, `1`, nil, q)
}

// unreadFewAt is how many entries after their feeds' "read up to" marks
// an EntryQuery.Unread may find for entries to list its page from them
// (fetched by id and sorted), rather than walk the index by time testing
// each entry: after mark-all-read, those are the entries since, where the
// walk would read the whole store to find there are none.
var unreadFewAt = 20_000

// entries lists a page of the entries of where (on e, with args), all in
// the feeds of sc, as q selects them.
func (c *Catalog) entries(ctx context.Context, sc feedScope, where string, args []any, q EntryQuery) (EntryPage, error) {
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
	conds := []string{where}
	if !q.Since.IsZero() {
		from = unixMS(q.Since)
		conds, args = append(conds, col+" >= ?"), append(args, from)
	}
	if !q.Until.IsZero() {
		to = unixMS(q.Until) - 1
		conds, args = append(conds, col+" < ?"), append(args, unixMS(q.Until))
	}
	if q.Reader != "" || q.Unread || q.Starred || q.Read {
		if err := CheckReader(q.Reader); err != nil {
			return EntryPage{}, fmt.Errorf("catalog: %w", err)
		}
	}
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
			conds, args = append(conds, `e.id IN (SELECT value FROM json_each(?))`), append(args, ids)
		}
		conds, args = append(conds, "NOT "+readSQL(len(args)+1)), append(args, q.Reader)
	}
	if q.Starred {
		few = true
		conds, args = append(conds, starredIDs), append(args, q.Reader)
	}
	if q.Read {
		conds, args = append(conds, readSQL(len(args)+1)), append(args, q.Reader)
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
		conds, args = append(conds, "("+col+" "+past+" ? OR ("+col+" = ? AND e.id "+past+" ?))"), append(args, at, at, id)
	}
	var found []EntryRow
	var err error
	if q.Text == "" {
		found, err = c.queryEntries(ctx, `SELECT `+entryColumns+` FROM entries e JOIN feeds f ON f.key = e.feed_key
			WHERE `+strings.Join(conds, " AND ")+` ORDER BY `+col+` `+dir+`, e.id `+dir+` LIMIT ?`, append(args, limit+1))
	} else {
		found, err = c.searchEntries(ctx, sc, conds, args, q, searchBounds{col: col, from: from, to: to, limit: limit, few: few})
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

// queryEntries runs a query of entryColumns, prepared once per shape of
// query (the conditions given; a label of many feeds is one shape), not
// parsed at each page.
func (c *Catalog) queryEntries(ctx context.Context, query string, args []any) ([]EntryRow, error) {
	rows, err := c.read(ctx, kept, query, args...)
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
	rows, err := c.read(ctx, once, `SELECT x.id FROM feeds f LEFT JOIN read_until w ON w.reader = ?1 AND w.feed_key = f.key
		CROSS JOIN entries x ON x.feed_key = f.key AND x.first_seen >= max(coalesce(w.until, 0), ?2) WHERE `+sc.in("f.key")+`
		UNION ALL SELECT x.id FROM marks m INDEXED BY marks_unread CROSS JOIN entries x ON x.feed_key = m.feed_key AND x.entry_uid = m.entry_uid
		WHERE m.reader = ?1 AND NOT m.read AND `+sc.in("m.feed_key")+` LIMIT ?`,
		append(append(append([]any{q.Reader, unreadLow(q, col)}, sc.args...), sc.args...), unreadFewAt)...)
	if err != nil {
		return "", false, err
	}
	defer rows.Close()
	b := []byte{'['}
	n := 0
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return "", false, err
		}
		if n > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
		n++
	}
	if err := rows.Err(); err != nil {
		return "", false, err
	}
	return string(append(b, ']')), n < unreadFewAt, nil
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

// EntriesByUID returns the stored entries with the uid entry_uid (one, but
// for a collision of two feeds' uids), each with its versions, oldest
// first.
func (c *Catalog) EntriesByUID(ctx context.Context, uid string) ([]EntryRow, [][]Version, error) {
	rows, err := c.read(ctx, kept, `SELECT `+entryColumns+` FROM entries e JOIN feeds f ON f.key = e.feed_key WHERE e.entry_uid = ? ORDER BY e.id`, uid)
	if err != nil {
		return nil, nil, err
	}
	var found []EntryRow
	for rows.Next() {
		var r EntryRow
		if err := scanEntry(rows.Scan, &r); err != nil {
			rows.Close()
			return nil, nil, err
		}
		found = append(found, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	versions := make([][]Version, len(found))
	for i, r := range found {
		vs, err := c.versions(ctx, r.ID)
		if err != nil {
			return nil, nil, err
		}
		versions[i] = vs
	}
	return found, versions, nil
}

func (c *Catalog) versions(ctx context.Context, entryID int64) ([]Version, error) {
	rows, err := c.read(ctx, kept, `SELECT version, content_hash, stored_at, day, offset, length FROM entry_versions WHERE entry_id = ? ORDER BY version`, entryID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Version
	for rows.Next() {
		var v Version
		var at int64
		if err := rows.Scan(&v.Version, &v.Hash, &at, &v.Day, &v.Offset, &v.Length); err != nil {
			return nil, err
		}
		v.StoredAt = time.UnixMilli(at).UTC()
		out = append(out, v)
	}
	return out, rows.Err()
}

// Line reads the line at loc in the day files of dir (storage.DirEntries,
// storage.DirFetches), without its newline.
func (c *Catalog) Line(dir string, loc Location) ([]byte, error) {
	if !ndjson.IsDay(loc.Day) || loc.Offset < 0 || loc.Length <= 0 || loc.Length > ndjson.MaxLineBytes+2 {
		return nil, fmt.Errorf("catalog: %s: no line at %+v", dir, loc)
	}
	b, err := c.st.ReadAt(dir+"/"+loc.Day+".ndjson", loc.Offset, loc.Length)
	if err != nil {
		return nil, err
	}
	return bytes.TrimSpace(b), nil
}

// Entry reads a stored entry's latest version.
func (c *Catalog) Entry(r EntryRow) (ndjson.Entry, error) {
	var e ndjson.Entry
	b, err := c.Line(storage.DirEntries, r.Location)
	if err != nil {
		return e, err
	}
	if err := ndjson.Unmarshal(b, &e); err != nil || e.EntryUID != r.UID {
		return e, fmt.Errorf("catalog: the line of entry %s in entries/%s.ndjson is not its record: rebuild the catalog with feed-store reindex", r.UID, r.Day)
	}
	return e, nil
}

// FetchRecord reads the fetch record of a fetch id; ok is false for a fetch
// the catalog does not know.
func (c *Catalog) FetchRecord(ctx context.Context, fetchID string) (f ndjson.Fetch, ok bool, err error) {
	ref, ok, err := c.Fetch(ctx, fetchID)
	if err != nil || !ok {
		return f, false, err
	}
	b, err := c.Line(storage.DirFetches, ref.Location)
	if err != nil {
		return f, false, err
	}
	if err := ndjson.Unmarshal(b, &f); err != nil || f.FetchID != fetchID {
		return f, false, fmt.Errorf("catalog: the line of fetch %s in fetches/%s.ndjson is not its record: rebuild the catalog with feed-store reindex", fetchID, ref.Day)
	}
	return f, true, nil
}

// Raw returns the payload of a fetch exactly as it was served, and its
// Content-Type; ok is false for a fetch the catalog does not know, or one
// that stored no payload.
func (c *Catalog) Raw(ctx context.Context, fetchID string, max int64) (body []byte, contentType string, ok bool, err error) {
	f, ok, err := c.FetchRecord(ctx, fetchID)
	if err != nil || !ok || f.BodyRef == nil {
		return nil, "", false, err
	}
	body, err = c.st.GetRaw(f.BodyRef.Key, max)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", false, nil // pruned
	}
	if err != nil {
		return nil, "", false, err
	}
	return body, f.ContentType, true, nil
}

// Sizes counts the rows of the catalog's tables, by table: what feed-stats
// reports of the catalog, and how tests see that a reader wrote nothing.
func (c *Catalog) Sizes(ctx context.Context) (map[string]int, error) {
	sizes := map[string]int{}
	for _, table := range []string{"feeds", "subscriptions", "feed_state", "entries", "entry_versions", "links", "aliases", "fetches", "runs"} {
		var n int
		if err := c.readRow(ctx, once, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
			return nil, err
		}
		sizes[table] = n
	}
	return sizes, nil
}
