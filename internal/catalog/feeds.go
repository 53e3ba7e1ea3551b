package catalog

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Feed is a subscription and its feed's state.
type Feed struct {
	Sub   ndjson.Subscription
	State FeedState
	// Stored is set when the feed has a state: it was fetched, or
	// scheduled by hand.
	Stored bool
}

// FeedFilter narrows Feeds; its zero value is every subscription.
type FeedFilter struct {
	// DueBy, when set, keeps the enabled subscriptions that may be due at
	// that time: never fetched, or whose next fetch time has come (or who
	// have none, and no scheduler state), and not paused by hand. (feed-due
	// decides among them: what a Retry-After holds back, say.)
	DueBy time.Time
	// Label keeps the subscriptions with this label.
	Label string
}

// nullStateColumns are stateColumns with the defaults of a feed without a
// state (a LEFT JOIN's NULLs).
const nullStateColumns = `coalesce(st.title, ''), coalesce(st.etag, ''), coalesce(st.last_modified, ''), st.last_fetch_at,
	st.last_success_at, st.last_run_at, coalesce(st.last_status, 0), st.last_error, coalesce(st.consecutive_failures, 0),
	coalesce(st.interval_sec, 0), st.next_fetch_at, coalesce(st.last_body_sha256, ''), coalesce(st.last_content_length, 0),
	coalesce(st.new_entries_last_fetch, 0), coalesce(st.moved_to, ''), coalesce(st.moved_count, 0), coalesce(st.counts, '{}'),
	st.sched, st.decision, coalesce(st.format, ''), coalesce(st.format_version, ''), coalesce(st.content_type, ''),
	coalesce(st.publisher, '')`

// Feeds calls fn for each subscription that f keeps, with its feed's
// state, in the list's order. It streams: 100,000 feeds are never all in
// memory at once. fn must not keep the *Feed, which is reused.
func (c *Catalog) Feeds(ctx context.Context, f FeedFilter, fn func(*Feed) error) error {
	var (
		where []string
		args  []any
	)
	if !f.DueBy.IsZero() {
		at := unixMS(f.DueBy)
		where = append(where, `s.disabled = 0 AND (s.paused_until IS NULL OR s.paused_until <= ?)
			AND (st.feed_key IS NULL OR st.last_fetch_at IS NULL OR st.next_fetch_at <= ? OR st.next_fetch_at IS NULL AND st.sched IS NULL)`)
		args = append(args, at, at)
	}
	if f.Label != "" {
		where = append(where, `EXISTS (SELECT 1 FROM json_each(s.labels) WHERE json_each.value = ?)`)
		args = append(args, f.Label)
	}
	q := `SELECT ` + subColumns + `, st.feed_key IS NOT NULL, f.feed_id, ` + nullStateColumns + `
		FROM subscriptions s JOIN feeds f ON f.key = s.feed_key LEFT JOIN feed_state st ON st.feed_key = s.feed_key`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY s.position, s.feed_key`
	rows, err := c.db.QueryContext(ctx, q, args...)
	if err != nil {
		return c.damaged(fmt.Errorf("catalog: feeds: %w", err))
	}
	defer rows.Close()
	var (
		feed Feed
		sr   subRow
		st   stateRow
	)
	targets := append(append(sr.targets(), &feed.Stored), st.targets()...)
	for rows.Next() {
		if err := rows.Scan(targets...); err != nil {
			return c.damaged(fmt.Errorf("catalog: feeds: %w", err))
		}
		if err := sr.decode(&feed.Sub); err != nil {
			return c.damaged(fmt.Errorf("catalog: feeds: %w", err))
		}
		if err := st.decode(&feed.State); err != nil {
			return c.damaged(fmt.Errorf("catalog: feeds: %w", err))
		}
		if err := fn(&feed); err != nil {
			return err
		}
	}
	return c.damaged(rows.Err())
}
