package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/feedpipe/feedpipe/internal/urlnorm"
)

// What feed-read looks up beside the entries: the names of a page's feeds
// and the feed a --feed names, each by the rows it needs rather than the
// whole subscription list (100,000 feeds).

// FeedNames returns the names of the feeds of ids as feed-sub ls shows
// them: the subscription's name, else the feed's title, else its URL. A
// feed neither subscribed nor fetched (entries of a feed since removed)
// is left out.
func (c *Catalog) FeedNames(ctx context.Context, ids []string) (map[string]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	rows, err := c.db.QueryContext(ctx, `SELECT f.feed_id, coalesce(nullif(s.name, ''), nullif(st.title, ''), s.url)
		FROM feeds f LEFT JOIN subscriptions s ON s.feed_key = f.key LEFT JOIN feed_state st ON st.feed_key = f.key
		WHERE f.feed_id IN (SELECT value FROM json_each(?))`, string(list))
	if err != nil {
		return nil, c.damaged(fmt.Errorf("catalog: feed names: %w", err))
	}
	defer rows.Close()
	names := map[string]string{}
	for rows.Next() {
		var id string
		var name *string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, c.damaged(fmt.Errorf("catalog: feed names: %w", err))
		}
		if name != nil {
			names[id] = *name
		}
	}
	return names, c.damaged(rows.Err())
}

// FindFeed returns the feed id of the feed ref names: its feed id (a feed
// with stored entries need not be subscribed), a subscription's URL, a
// subscription's name or its feed's title (case aside; a name two feeds
// share is ambiguous), or a unique prefix of a subscribed feed's id of at
// least four characters. The error wraps ErrNoSuchSubscription.
func (c *Catalog) FindFeed(ctx context.Context, ref string) (string, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return "", fmt.Errorf("%w: an empty name", ErrNoSuchSubscription)
	}
	norm, _ := urlnorm.Normalize(ref)
	for _, q := range []struct {
		query string
		args  []any
	}{
		{`SELECT feed_id FROM feeds WHERE feed_id = ?`, []any{ref}},
		{`SELECT f.feed_id FROM subscriptions s JOIN feeds f ON f.key = s.feed_key WHERE s.url IN (?, ?)`, []any{ref, norm}},
		{`SELECT f.feed_id FROM subscriptions s JOIN feeds f ON f.key = s.feed_key WHERE s.name = ? COLLATE NOCASE`, []any{ref}},
		{`SELECT f.feed_id FROM subscriptions s JOIN feeds f ON f.key = s.feed_key JOIN feed_state st ON st.feed_key = s.feed_key
			WHERE s.name = '' AND st.title = ? COLLATE NOCASE`, []any{ref}},
		{`SELECT f.feed_id FROM subscriptions s JOIN feeds f ON f.key = s.feed_key WHERE f.feed_id >= ? AND f.feed_id < ? || x'7f'`, []any{ref, ref}},
	} {
		ids, err := c.feedIDs(ctx, q.query, q.args...)
		if err != nil {
			return "", err
		}
		switch {
		case len(ids) == 1 && (len(ref) >= 4 || !strings.Contains(q.query, ">=")):
			return ids[0], nil
		case len(ids) > 1:
			for i := range ids {
				ids[i] = ids[i][:min(12, len(ids[i]))] + "…"
			}
			return "", fmt.Errorf("%w: %q is ambiguous: more than one feed has it (%s): give the feed id", ErrNoSuchSubscription, ref, strings.Join(ids[:min(3, len(ids))], ", "))
		case len(ids) == 1:
			return "", fmt.Errorf("%w: %q is too short: give at least 4 characters of the feed id", ErrNoSuchSubscription, ref)
		}
	}
	return "", fmt.Errorf("%w: no feed has the id, URL or name %q (see feed-sub ls)", ErrNoSuchSubscription, ref)
}

func (c *Catalog) feedIDs(ctx context.Context, query string, args ...any) ([]string, error) {
	rows, err := c.db.QueryContext(ctx, query+` LIMIT 4`, args...)
	if err != nil {
		return nil, c.damaged(fmt.Errorf("catalog: find feed: %w", err))
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, c.damaged(fmt.Errorf("catalog: find feed: %w", err))
		}
		ids = append(ids, id)
	}
	return ids, c.damaged(rows.Err())
}

// starredIDs keeps the entries a reader starred, found from the reader's
// starred marks (marks_starred) and each entry's row by its feed and uid:
// the filter of EntryQuery.Starred tests every entry newest first, and a
// reader's few stars are then found only at the end of the table (6 s at
// a million entries). The index is named: SQLite took the marks' primary
// key instead, and read every mark of a reader who had read a million
// entries (280 ms).
const starredIDs = `e.id IN (SELECT s.id FROM marks m INDEXED BY marks_starred JOIN entries s ON s.feed_key = m.feed_key AND s.entry_uid = m.entry_uid
	WHERE m.reader = ? AND m.starred)`

// searchScanAt is how many entries a search must match for ReaderEntries
// to look for its page by time, newest first, among them, rather than
// fetch and sort every entry it matches.
var searchScanAt = 50_000

// ReaderEntries returns a page of the entries of the feed feedID, or of
// the feeds with label, or of every feed (both ""), as q selects them,
// the way feed-read needs them fast on a large store:
//   - q.Starred: from the reader's starred marks (marks_starred), not by
//     testing every entry newest first (6 s at a million entries, with a
//     few stars);
//   - q.Text: a search matching fewer than searchScanAt entries fetches
//     them by id and sorts them, as FeedEntries does; one matching more
//     walks the index by time and keeps the matches, which finds a page
//     after a few rows instead of sorting a million (a word every entry
//     has: 3.9 s, then 1.2 s, at a million entries). Either way SQLite
//     reads the search's list of matches whole.
func (c *Catalog) ReaderEntries(ctx context.Context, feedID, label string, q EntryQuery) (EntryPage, error) {
	var where []string
	var args []any
	sc := allFeeds
	switch {
	case feedID != "":
		where, args = append(where, `e.feed_key = (SELECT key FROM feeds WHERE feed_id = ?)`), append(args, feedID)
		sc = oneFeed(feedID)
	case label != "":
		keys, err := c.labelFeeds(ctx, label)
		if err != nil || len(keys) == 0 {
			return EntryPage{}, err
		}
		sc = keyFeeds(keys)
		if len(keys) <= labelFeedsByIndex {
			where, args = append(where, `e.feed_key IN (`+placeholders(len(keys))+`)`), append(args, keys...)
		} else {
			where, args = append(where, `+e.feed_key IN (SELECT value FROM json_each(?))`), append(args, jsonInts(keys))
		}
	}
	if q.Starred {
		if err := CheckReader(q.Reader); err != nil {
			return EntryPage{}, fmt.Errorf("catalog: %w", err)
		}
		where, args = append(where, starredIDs), append(args, q.Reader)
		q.Starred = false
	}
	if q.Text != "" {
		m := ftsMatch(q.Text)
		if m == "" {
			return EntryPage{}, fmt.Errorf("catalog: %w: search %q has no word to look for (letters or digits)", ErrBadQuery, q.Text)
		}
		var n int
		err := c.db.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT rowid FROM entries_fts WHERE entries_fts MATCH ? LIMIT ?)`, m, searchScanAt).Scan(&n)
		if err != nil && strings.Contains(err.Error(), "fts5:") {
			return EntryPage{}, fmt.Errorf("catalog: %w: search %q: write it with plain words (letters and digits)", ErrBadQuery, q.Text)
		}
		if err != nil {
			return EntryPage{}, c.damaged(fmt.Errorf("catalog: search: %w", err))
		}
		if n >= searchScanAt {
			// The unary + keeps SQLite from fetching the matches by id.
			where, args = append(where, `+e.id IN (SELECT rowid FROM entries_fts WHERE entries_fts MATCH ?)`), append(args, m)
			q.Text = ""
		}
	}
	if len(where) == 0 {
		where = append(where, "1")
	}
	return c.entries(ctx, sc, strings.Join(where, " AND "), args, q)
}
