package catalog

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// Reading: each reader's marks on entries (read, starred), kept by the
// feed and the entry's uid, not the entry's row id, so that reparse,
// replay and reindex keep them; prune drops those of the entries it
// drops. A reader is a name: a person or a tool keeping its own marks
// (feed-read --reader, a Google Reader API user). An entry with no mark is
// unread and not starred.

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
	err = c.Update(ctx, func(t *Tx) error {
		for _, k := range keys {
			r, err := t.run(`INSERT INTO marks (reader, feed_key, entry_uid, `+col+`, changed_at)
				SELECT ?, e.feed_key, e.entry_uid, ?, ? FROM entries e
				WHERE e.feed_key = (SELECT key FROM feeds WHERE feed_id = ?) AND e.entry_uid = ?
				ON CONFLICT DO UPDATE SET `+col+` = excluded.`+col+`, changed_at = excluded.changed_at`,
				reader, v, at.UnixMilli(), k.FeedID, k.UID)
			if err != nil {
				return err
			}
			m, _ := r.RowsAffected()
			n += int(m)
		}
		return t.dropBlankMarks(reader)
	})
	return n, err
}

// MarkAllRead marks read, for reader, the entries of the feed feedID (of
// every feed when "") first seen before until (every one when zero). It
// returns how many were unread.
func (c *Catalog) MarkAllRead(ctx context.Context, reader, feedID string, until time.Time) (int, error) {
	return c.markAllRead(ctx, reader, `e.feed_key = (SELECT key FROM feeds WHERE feed_id = ?)`, []any{feedID}, feedID == "", until)
}

// MarkLabelRead is MarkAllRead for the entries of the feeds subscribed
// with label.
func (c *Catalog) MarkLabelRead(ctx context.Context, reader, label string, until time.Time) (int, error) {
	keys, err := c.labelFeeds(ctx, label)
	if err != nil || len(keys) == 0 {
		return 0, err
	}
	return c.markAllRead(ctx, reader, `e.feed_key IN (SELECT value FROM json_each(?))`, []any{jsonInts(keys)}, false, until)
}

func (c *Catalog) markAllRead(ctx context.Context, reader, where string, args []any, all bool, until time.Time) (n int, err error) {
	if err := CheckReader(reader); err != nil {
		return 0, err
	}
	if all {
		where, args = "1", nil
	}
	if !until.IsZero() {
		where, args = where+" AND e.first_seen < ?", append(args, until.UnixMilli())
	}
	err = c.Update(ctx, func(t *Tx) error {
		r, err := t.exec(`INSERT INTO marks (reader, feed_key, entry_uid, read, changed_at)
			SELECT ?, e.feed_key, e.entry_uid, 1, ? FROM entries e WHERE `+where+`
			AND NOT EXISTS (SELECT 1 FROM marks m WHERE m.reader = ? AND m.feed_key = e.feed_key AND m.entry_uid = e.entry_uid AND m.read)
			ON CONFLICT DO UPDATE SET read = 1, changed_at = excluded.changed_at`,
			append(append([]any{reader, time.Now().UnixMilli()}, args...), reader)...)
		if err != nil {
			return err
		}
		m, _ := r.RowsAffected()
		n = int(m)
		return nil
	})
	return n, err
}

// dropBlankMarks deletes reader's marks that say nothing (unread and not
// starred: the same as no mark).
func (t *Tx) dropBlankMarks(reader string) error {
	_, err := t.run(`DELETE FROM marks WHERE reader = ? AND NOT read AND NOT starred`, reader)
	return err
}

// Marks are an entry's marks for a reader.
type Marks struct {
	Read, Starred bool
}

// MarksOf returns reader's marks on the entries of rows, by EntryRow.ID;
// entries without a mark are not in the map.
func (c *Catalog) MarksOf(ctx context.Context, reader string, rows []EntryRow) (map[int64]Marks, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	ids := make([]any, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	// CROSS JOIN keeps the page's ids the outer loop: left to itself,
	// SQLite walked all of the reader's marks (13 s a page for a reader
	// who has read a million entries).
	q, err := c.db.QueryContext(ctx, `SELECT e.id, m.read, m.starred FROM json_each(?) j
		CROSS JOIN entries e CROSS JOIN marks m
		WHERE e.id = j.value AND m.reader = ? AND m.feed_key = e.feed_key AND m.entry_uid = e.entry_uid`, jsonInts(ids), reader)
	if err != nil {
		return nil, c.damaged(fmt.Errorf("catalog: marks: %w", err))
	}
	defer q.Close()
	marks := map[int64]Marks{}
	for q.Next() {
		var id int64
		var m Marks
		if err := q.Scan(&id, &m.Read, &m.Starred); err != nil {
			return nil, c.damaged(fmt.Errorf("catalog: marks: %w", err))
		}
		marks[id] = m
	}
	return marks, c.damaged(q.Err())
}

// UnreadCounts returns, for reader, how many entries of each feed first
// seen at or after since (all when zero) are unread, and the newest first
// seen time among them, by feed id; feeds with none are left out.
func (c *Catalog) UnreadCounts(ctx context.Context, reader string, since time.Time) (map[string]Unread, error) {
	rows, err := c.db.QueryContext(ctx, `SELECT f.feed_id, count(*), max(e.first_seen) FROM entries e JOIN feeds f ON f.key = e.feed_key
		WHERE e.first_seen >= ? AND NOT EXISTS (SELECT 1 FROM marks m WHERE m.reader = ? AND m.feed_key = e.feed_key AND m.entry_uid = e.entry_uid AND m.read)
		GROUP BY e.feed_key`, unixMS(since), reader)
	if err != nil {
		return nil, c.damaged(fmt.Errorf("catalog: unread counts: %w", err))
	}
	defer rows.Close()
	counts := map[string]Unread{}
	for rows.Next() {
		var id string
		var u Unread
		var newest int64
		if err := rows.Scan(&id, &u.Count, &newest); err != nil {
			return nil, c.damaged(fmt.Errorf("catalog: unread counts: %w", err))
		}
		u.Newest = time.UnixMilli(newest).UTC()
		counts[id] = u
	}
	return counts, c.damaged(rows.Err())
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
