package catalog

import (
	"context"
	"database/sql"
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
	// Brief leaves out of each state its counts and its last decision
	// (zero and nil), which feed-due does not read: decoding them for
	// 100,000 feeds took seconds.
	Brief bool
}

// nullStateColumns are stateColumns with the defaults of a feed without a
// state (a LEFT JOIN's NULLs).
const nullStateColumns = `coalesce(st.title, ''), coalesce(st.etag, ''), coalesce(st.last_modified, ''), st.last_fetch_at,
	st.last_success_at, st.last_run_at, coalesce(st.last_status, 0), st.last_error, coalesce(st.consecutive_failures, 0),
	coalesce(st.interval_sec, 0), st.next_fetch_at, coalesce(st.last_body_sha256, ''), coalesce(st.last_content_length, 0),
	coalesce(st.new_entries_last_fetch, 0), coalesce(st.moved_to, ''), coalesce(st.moved_count, 0), coalesce(st.counts, '{}'),
	st.sched, st.decision, coalesce(st.format, ''), coalesce(st.format_version, ''), coalesce(st.content_type, ''),
	coalesce(st.publisher, ''), coalesce(st.link, ''), coalesce(st.warnings, '')`

// briefStateColumns are nullStateColumns without the counts and the
// decision (FeedFilter.Brief).
var briefStateColumns = strings.NewReplacer(`coalesce(st.counts, '{}')`, `'{}'`, `st.decision`, `NULL`).Replace(nullStateColumns)

// Feeds calls fn for each subscription that f keeps, with its feed's
// state, in the list's order. It streams: 100,000 feeds are never all in
// memory at once. fn must not keep the *Feed, which is reused.
func (c *Catalog) Feeds(ctx context.Context, f FeedFilter, fn func(*Feed) error) error {
	var w where
	if !f.DueBy.IsZero() {
		at := unixMS(f.DueBy)
		keys, err := c.mayBeDue(ctx, at)
		if err != nil {
			return err
		}
		w.and(`s.feed_key IN (SELECT value FROM json_each(:due))`, sql.Named("due", keys))
		w.and(`s.disabled = 0 AND (s.paused_until IS NULL OR s.paused_until <= :at)
			AND (st.feed_key IS NULL OR st.last_fetch_at IS NULL OR st.next_fetch_at <= :at OR st.next_fetch_at IS NULL AND st.sched IS NULL)`,
			sql.Named("at", at))
	}
	if f.Label != "" {
		w.and(`s.feed_key IN (SELECT feed_key FROM subscription_labels WHERE label = :label)`, sql.Named("label", f.Label))
	}
	cols := nullStateColumns
	if f.Brief {
		cols = briefStateColumns
	}
	q := `SELECT ` + subColumns + `, st.feed_key IS NOT NULL, f.feed_id, ` + cols + `
		FROM subscriptions s JOIN feeds f ON f.key = s.feed_key LEFT JOIN feed_state st ON st.feed_key = s.feed_key`
	if len(w.conds) > 0 {
		q += ` WHERE ` + w.sql()
	}
	q += ` ORDER BY s.position, s.feed_key`
	rows, err := c.read(ctx, kept, q, w.args...) // a few texts, by the filter's fields
	if err != nil {
		return err
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
			return err
		}
		if err := sr.decode(&feed.Sub); err != nil {
			return err
		}
		if err := st.decode(&feed.State); err != nil {
			return err
		}
		if err := fn(&feed); err != nil {
			return err
		}
	}
	return rows.Err()
}

// mayBeDue returns, as a JSON list, the keys of the enabled subscriptions
// that may be due at at (Unix ms): never fetched, or next fetched by then
// or at no set time. It reads feed_state_due, not the states: at 100,000
// feeds their rows are 200 MB, the index 2 MB. (Feeds then reads the
// states of these and decides as FeedFilter.DueBy says.)
func (c *Catalog) mayBeDue(ctx context.Context, at int64) (string, error) {
	rows, err := c.read(ctx, kept, `SELECT s.feed_key FROM subscriptions s LEFT JOIN feed_state st INDEXED BY feed_state_due ON st.feed_key = s.feed_key
		WHERE s.disabled = 0 AND (s.paused_until IS NULL OR s.paused_until <= :at)
			AND (st.feed_key IS NULL OR st.last_fetch_at IS NULL OR st.next_fetch_at IS NULL OR st.next_fetch_at <= :at)`, sql.Named("at", at))
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var list jsonInts
	for rows.Next() {
		var key int64
		if err := rows.Scan(&key); err != nil {
			return "", err
		}
		list.add(key)
	}
	return list.String(), rows.Err()
}
