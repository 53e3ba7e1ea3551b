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
	rows, err := c.read(ctx, once, `SELECT f.feed_id, coalesce(nullif(s.name, ''), nullif(st.title, ''), s.url)
		FROM feeds f LEFT JOIN subscriptions s ON s.feed_key = f.key LEFT JOIN feed_state st ON st.feed_key = f.key
		WHERE f.feed_id IN (SELECT value FROM json_each(?))`, string(list))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	names := map[string]string{}
	for rows.Next() {
		var id string
		var name *string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, err
		}
		if name != nil {
			names[id] = *name
		}
	}
	return names, rows.Err()
}

// feedByURLSQL is FindFeed's statement, a constant so that
// TestIndexesEarnTheirWrites reads its plan.
const feedByURLSQL = `SELECT f.feed_id FROM subscriptions s JOIN feeds f ON f.key = s.feed_key WHERE s.url IN (?, ?)`

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
		{feedByURLSQL, []any{ref, norm}},
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
	rows, err := c.read(ctx, once, query+` LIMIT 4`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// ReaderEntries returns a page of the entries of the feed feedID, or of
// the feeds with label, or of every feed (both ""), as q selects them.
func (c *Catalog) ReaderEntries(ctx context.Context, feedID, label string, q EntryQuery) (EntryPage, error) {
	switch {
	case feedID != "":
		return c.FeedEntries(ctx, feedID, q)
	case label != "":
		return c.LabelEntries(ctx, label, q)
	}
	return c.AllEntries(ctx, q)
}
