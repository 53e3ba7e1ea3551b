package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"time"
)

// Reading: each reader's marks on entries (read, starred), kept by the
// feed and the entry's uid, not the entry's row id, so that reparse,
// replay and reindex keep them; prune drops those of the entries it
// drops. A reader is a name: a person or a tool keeping its own marks
// (feed-read --reader, a Google Reader API user). An entry with no row of
// marks is not starred, and read only when first seen before its feed's
// "read up to" mark (read_until, set by MarkAllRead and MarkLabelRead).

// DefaultReader is the reader of feed-read and the web page when none is
// named.
const DefaultReader = "default"

// readerName is what a reader's (and a user's) name looks like: it is a
// key in the catalog and a path segment in the Google Reader API.
var readerName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// ErrBadReader marks a reader name that is not one.
var ErrBadReader = errors.New("bad reader name")

// CheckReader returns an error unless name is a reader's name: 1 to 64 of
// a-z, 0-9, '.', '_' and '-', starting with a letter or digit.
func CheckReader(name string) error {
	if !readerName.MatchString(name) {
		return fmt.Errorf("%w %q: 1 to 64 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit", ErrBadReader, name)
	}
	return nil
}

// Mark actions.
const (
	MarkRead   = "read"
	MarkUnread = "unread"
	MarkStar   = "star"
	MarkUnstar = "unstar"
)

// EntryKey names an entry: its feed and its uid.
type EntryKey struct {
	FeedID string
	UID    string
}

// markSet is the column an action sets and the value it sets it to.
func markSet(action string) (column string, value int, err error) {
	switch action {
	case MarkRead:
		return "read", 1, nil
	case MarkUnread:
		return "read", 0, nil
	case MarkStar:
		return "starred", 1, nil
	case MarkUnstar:
		return "starred", 0, nil
	}
	return "", 0, fmt.Errorf("catalog: %w: mark %q: it is read, unread, star or unstar", ErrBadQuery, action)
}

// Read state is two things per reader: a "read up to" mark per feed
// (table read_until: the feed's entries first seen before it are read) and
// a row of marks per entry that says otherwise or is starred. A row's read
// is what the entry is, whatever the feed's mark says; an entry without a
// row is read when first seen before its feed's mark, unread otherwise. A
// row that says only what the mark says (not starred, and read exactly
// when first seen before the mark) is deleted: mark-all-read writes a row
// per feed, not a row per entry, and unread entries are those after the
// mark (the index by feed and first_seen) and the few rows saying unread.

// readByMark is whether the entry e is read for the reader :reader by
// its feed's "read up to" mark alone: what an entry without a row of
// marks is.
const readByMark = `e.first_seen < coalesce((SELECT w.until FROM read_until w WHERE w.reader = :reader AND w.feed_key = e.feed_key), 0)`

// Mark applies action to the entries of keys for reader, in one
// transaction. It returns how many of them are stored entries; the others
// (an unknown feed or uid) are left out.
func (c *Catalog) Mark(ctx context.Context, reader, action string, keys []EntryKey, at time.Time) (n int, err error) {
	if err := CheckReader(reader); err != nil {
		return 0, err
	}
	col, v, err := markSet(action)
	if err != nil {
		return 0, err
	}
	// A new row says what the entry was, but for the column set: read as
	// its feed's mark makes it, not starred.
	read, starred := readByMark, "0"
	if col == "read" {
		read = strconv.Itoa(v)
	} else {
		starred = strconv.Itoa(v)
	}
	err = c.Update(ctx, func(t *Tx) error {
		feeds := map[string]bool{}
		// The arguments of both statements, the entry's set for each.
		args := []any{sql.Named("reader", reader), sql.Named("at", at.UnixMilli()), nil, nil}
		for _, k := range keys {
			feeds[k.FeedID] = true
			args[2], args[3] = sql.Named("feed", k.FeedID), sql.Named("uid", k.UID)
			r, err := t.write(kept, `INSERT INTO marks (reader, feed_key, entry_uid, read, starred, changed_at)
				SELECT :reader, e.feed_key, e.entry_uid, `+read+`, `+starred+`, :at FROM entries e
				WHERE e.feed_key = (SELECT key FROM feeds WHERE feed_id = :feed) AND e.entry_uid = :uid
				ON CONFLICT DO UPDATE SET `+col+` = excluded.`+col+`, changed_at = excluded.changed_at`, args...)
			if err != nil {
				return err
			}
			m, _ := r.RowsAffected()
			n += int(m)
			// The row goes when it says nothing the feed's mark does not.
			if _, err := t.write(kept, `DELETE FROM marks WHERE reader = :reader AND feed_key = (SELECT key FROM feeds WHERE feed_id = :feed)
				AND entry_uid = :uid AND NOT starred
				AND read = (SELECT `+readByMark+` FROM entries e WHERE e.feed_key = marks.feed_key AND e.entry_uid = marks.entry_uid)`,
				args...); err != nil {
				return err
			}
		}
		if action != MarkRead {
			return nil
		}
		for feedID := range feeds {
			if err := t.raiseReadUntil(reader, feedID); err != nil {
				return err
			}
		}
		return nil
	})
	return n, err
}

// raiseReadUntil raises the reader's "read up to" mark of the feed feedID
// to its oldest unread entry, when the entries marked read one by one
// have reached it: their rows go (but for starred ones), the mark says
// the same. A reader who reads everything, one entry at a time (a reader
// app), keeps a mark per feed and the rows of the entries read out of
// order, not a row per entry read: "unread" listings and counts start
// from the marks (unreadFew, UnreadCounts) instead of testing every entry
// of the store. One look-up when the oldest unread entry is the one at
// the mark, the usual case.
func (t *Tx) raiseReadUntil(reader, feedID string) error {
	key, err := t.feedKey(feedID)
	if err != nil {
		return err
	}
	var old int64
	if err := t.readRow(kept, `SELECT coalesce((SELECT until FROM read_until WHERE reader = ? AND feed_key = ?), 0)`, reader, key).Scan(&old); err != nil {
		return err
	}
	u := int64(math.MaxInt64) // every entry is read: up to just after the newest
	err = t.readRow(kept, `SELECT e.first_seen FROM entries e INDEXED BY entries_feed_first_seen
		WHERE e.feed_key = :key AND e.first_seen >= :old
			AND NOT coalesce((SELECT m.read FROM marks m WHERE m.reader = :reader AND m.feed_key = :key AND m.entry_uid = e.entry_uid), 0)
		ORDER BY e.first_seen LIMIT 1`, sql.Named("reader", reader), sql.Named("key", key), sql.Named("old", old)).Scan(&u)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return err
	case u <= old:
		return nil
	}
	_, err = t.markReadUntil(reader, oneFeed(feedID), u)
	return err
}

// MarkAllRead marks read, for reader, the entries of the feed feedID (of
// every feed when "") first seen before until (every one when zero). It
// returns how many were unread.
//
// It raises each feed's "read up to" mark to until, or to just after the
// feed's newest entry when that is sooner (so that an entry stored later
// with an earlier first_seen is read only when the mark had to cover it),
// and deletes the rows of marks it makes redundant: O(feeds + the reader's
// rows in them), not O(entries). A row saying unread below until goes too
// (mark-all makes every entry before until read); a starred one says read.
func (c *Catalog) MarkAllRead(ctx context.Context, reader, feedID string, until time.Time) (int, error) {
	if feedID == "" {
		return c.markAllRead(ctx, reader, allFeeds, until)
	}
	return c.markAllRead(ctx, reader, oneFeed(feedID), until)
}

// MarkLabelRead is MarkAllRead for the entries of the feeds subscribed
// with label.
func (c *Catalog) MarkLabelRead(ctx context.Context, reader, label string, until time.Time) (int, error) {
	keys, err := c.labelFeeds(ctx, label)
	if err != nil || len(keys) == 0 {
		return 0, err
	}
	return c.markAllRead(ctx, reader, keyFeeds(keys), until)
}

func (c *Catalog) markAllRead(ctx context.Context, reader string, sc feedScope, until time.Time) (n int, err error) {
	if err := CheckReader(reader); err != nil {
		return 0, err
	}
	u := int64(math.MaxInt64)
	if !until.IsZero() {
		u = until.UnixMilli()
	}
	err = c.Update(ctx, func(t *Tx) error {
		n, err = t.markReadUntil(reader, sc, u)
		return err
	})
	return n, err
}

// markReadUntil is markAllRead up to u (ms) in t.
func (t *Tx) markReadUntil(reader string, sc feedScope, u int64) (n int, err error) {
	// p: each feed of the scope with entries, its mark (old) and the time
	// this call marks read up to (new).
	plan := `WITH p(k, old, new) AS MATERIALIZED (SELECT f.key, coalesce(w.until, 0),
			min(:until, (SELECT max(x.first_seen) FROM entries x WHERE x.feed_key = f.key) + 1)
		FROM feeds f LEFT JOIN read_until w ON w.reader = :reader AND w.feed_key = f.key
		WHERE ` + sc.in("f.key") + `)`
	// rows: the reader's rows of marks in those feeds, with the entry's
	// first_seen.
	const rows = `p CROSS JOIN marks m ON m.reader = :reader AND m.feed_key = p.k CROSS JOIN entries x ON x.feed_key = m.feed_key AND x.entry_uid = m.entry_uid`
	args := append([]any{sql.Named("reader", reader), sql.Named("until", u), sql.Named("now", time.Now().UnixMilli())}, sc.args...)
	// Unread before: the entries between the old mark and the new
	// without a row, and the rows saying unread below the new.
	var span, rowsSpan, unreadRows int
	if err := t.readRow(once, plan+`SELECT coalesce(sum((SELECT count(*) FROM entries x
		WHERE x.feed_key = p.k AND x.first_seen >= p.old AND x.first_seen < p.new)), 0) FROM p WHERE p.new > p.old`, args...).Scan(&span); err != nil {
		return 0, err
	}
	if err := t.readRow(once, plan+`SELECT coalesce(sum(x.first_seen >= p.old AND x.first_seen < p.new), 0),
		coalesce(sum(NOT m.read AND x.first_seen < p.new), 0) FROM `+rows, args...).Scan(&rowsSpan, &unreadRows); err != nil {
		return 0, err
	}
	n = span - rowsSpan + unreadRows
	if _, err := t.write(once, plan+`DELETE FROM marks WHERE reader = :reader AND (feed_key, entry_uid) IN (SELECT m.feed_key, m.entry_uid FROM `+rows+`
		WHERE NOT m.starred AND (x.first_seen < p.new OR m.read AND x.first_seen < max(p.old, p.new)))`, args...); err != nil {
		return 0, err
	}
	if _, err := t.write(once, plan+`UPDATE marks SET read = 1, changed_at = :now WHERE reader = :reader AND NOT read AND (feed_key, entry_uid) IN (
		SELECT m.feed_key, m.entry_uid FROM `+rows+` WHERE NOT m.read AND x.first_seen < p.new)`, args...); err != nil {
		return 0, err
	}
	_, err = t.write(once, plan+`INSERT INTO read_until (reader, feed_key, until) SELECT :reader, p.k, p.new FROM p WHERE p.new IS NOT NULL
		ON CONFLICT DO UPDATE SET until = max(until, excluded.until)`, args...)
	return n, err
}

// Marks are an entry's marks for a reader.
type Marks struct {
	Read, Starred bool
}

// MarksOf returns reader's marks on the entries of rows, by EntryRow.ID;
// entries neither read nor starred are not in the map.
func (c *Catalog) MarksOf(ctx context.Context, reader string, rows []EntryRow) (map[int64]Marks, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	var ids jsonInts
	for _, r := range rows {
		ids.add(r.ID)
	}
	// CROSS JOIN keeps the page's ids the outer loop: left to itself,
	// SQLite walked all of the reader's marks (13 s a page for a reader
	// who has read a million entries).
	q, err := c.read(ctx, once, `SELECT e.id, coalesce(m.read, e.first_seen < coalesce(w.until, 0)), coalesce(m.starred, 0) FROM json_each(:ids) j
		CROSS JOIN entries e LEFT JOIN marks m ON m.reader = :reader AND m.feed_key = e.feed_key AND m.entry_uid = e.entry_uid
		LEFT JOIN read_until w ON w.reader = :reader AND w.feed_key = e.feed_key
		WHERE e.id = j.value`, sql.Named("ids", ids.String()), sql.Named("reader", reader))
	if err != nil {
		return nil, err
	}
	defer q.Close()
	marks := map[int64]Marks{}
	for q.Next() {
		var id int64
		var m Marks
		if err := q.Scan(&id, &m.Read, &m.Starred); err != nil {
			return nil, err
		}
		if m.Read || m.Starred {
			marks[id] = m
		}
	}
	return marks, q.Err()
}

// UnreadCounts returns, for reader, how many entries of each feed first
// seen at or after since (all when zero) are unread, and the newest first
// seen time among them, by feed id; feeds with none are left out. It reads
// each feed's entries after its "read up to" mark (and since), and the
// rows saying unread below the mark: after mark-all-read, the entries
// since then, not the store.
func (c *Catalog) UnreadCounts(ctx context.Context, reader string, since time.Time) (map[string]Unread, error) {
	return c.unreadCounts(ctx, reader, since, allFeeds)
}

// FeedUnread is UnreadCounts of one feed.
func (c *Catalog) FeedUnread(ctx context.Context, reader, feedID string) (Unread, error) {
	counts, err := c.unreadCounts(ctx, reader, time.Time{}, oneFeed(feedID))
	return counts[feedID], err
}

// unreadCounts is UnreadCounts of the feeds of sc.
func (c *Catalog) unreadCounts(ctx context.Context, reader string, since time.Time, sc feedScope) (map[string]Unread, error) {
	rows, err := c.read(ctx, once, `SELECT f.feed_id, count(*), max(e.first_seen) FROM feeds f
		LEFT JOIN read_until w ON w.reader = :reader AND w.feed_key = f.key
		CROSS JOIN entries e ON e.feed_key = f.key AND e.first_seen >= max(:since, coalesce(w.until, 0))
		WHERE `+sc.in("f.key")+` AND NOT coalesce((SELECT m.read FROM marks m WHERE m.reader = :reader AND m.feed_key = e.feed_key AND m.entry_uid = e.entry_uid), 0)
		GROUP BY f.key
		UNION ALL
		SELECT f.feed_id, count(*), max(e.first_seen) FROM marks m INDEXED BY marks_unread
		CROSS JOIN read_until w ON w.reader = m.reader AND w.feed_key = m.feed_key
		CROSS JOIN entries e ON e.feed_key = m.feed_key AND e.entry_uid = m.entry_uid
		CROSS JOIN feeds f ON f.key = m.feed_key
		WHERE m.reader = :reader AND `+sc.in("m.feed_key")+` AND NOT m.read AND e.first_seen < w.until AND e.first_seen >= :since
		GROUP BY m.feed_key`, append([]any{sql.Named("reader", reader), sql.Named("since", unixMS(since))}, sc.args...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	counts := map[string]Unread{}
	for rows.Next() {
		var id string
		var n int
		var newest int64
		if err := rows.Scan(&id, &n, &newest); err != nil {
			return nil, err
		}
		u := counts[id]
		u.Count += n
		if at := time.UnixMilli(newest).UTC(); at.After(u.Newest) {
			u.Newest = at
		}
		counts[id] = u
	}
	return counts, rows.Err()
}

// Unread is how many entries of a feed are unread, and when the newest of
// them was first seen.
type Unread struct {
	Count  int
	Newest time.Time
}

// NewSince returns the time reader's last NewSeen recorded (feed-read
// --new): the first_seen of the newest entry it listed; ok is false when
// there is none.
func (c *Catalog) NewSince(ctx context.Context, reader string) (at time.Time, ok bool, err error) {
	var v string
	ok, err = c.Meta(ctx, newKey(reader), &v)
	if err != nil || !ok {
		return time.Time{}, false, err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("catalog: %s: %q is not a time in ms", newKey(reader), v)
	}
	return time.UnixMilli(n).UTC(), true, nil
}

// NewSeen records that reader has seen the entries first seen up to at
// (NewSince).
func (c *Catalog) NewSeen(ctx context.Context, reader string, at time.Time) error {
	if err := CheckReader(reader); err != nil {
		return err
	}
	return c.SetMeta(ctx, newKey(reader), strconv.FormatInt(at.UnixMilli(), 10))
}

func newKey(reader string) string { return "new:" + reader }
