package catalog

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/urlnorm"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// SubscriptionsFile is the subscription log, the record of truth of the
// subscription list: a subscription record each time one is added or
// changed, a subscription_removed record when one is removed; the last
// line of a feed wins. Its lines are written before the catalog's rows,
// and the catalog catches up with what a crash left between.
const SubscriptionsFile = "subscriptions.ndjson"

// subsLock serialises the writers of the subscription log.
const subsLock = ".subscriptions.lock"

// subColumns are the subscription columns, in the order scanSub reads them.
const subColumns = `f.feed_id, s.url, s.name, s.labels, s.source_type, s.interval_sec, s.cron, s.disabled, s.created_at,
	s.fulltext, s.scrape, s.user_agent, s.headers, s.auth, s.min_interval_sec, s.max_interval_sec, s.paused_until, s.allow_private, s.media,
	s.push, s.backfill, coalesce(s.webhook_secret, '')`

// subRow receives a row of subColumns (targets), then decodes it.
type subRow struct {
	s                     ndjson.Subscription
	labels                string
	scrape, headers, auth sql.NullString
	created, paused       sql.NullInt64
	media                 sql.NullString
}

func (r *subRow) targets() []any {
	s := &r.s
	return []any{&s.FeedID, &s.URL, &s.Name, &r.labels, &s.SourceType, &s.IntervalSec, &s.Cron, &s.Disabled, &r.created,
		&s.Fulltext, &r.scrape, &s.UserAgent, &r.headers, &r.auth, &s.MinIntervalSec, &s.MaxIntervalSec, &r.paused, &s.AllowPrivate, &r.media,
		&s.Push, &s.Backfill, &s.WebhookSecret}
}

func (r *subRow) decode(dst *ndjson.Subscription) error {
	s := r.s
	s.Header = ndjson.Head(ndjson.TypeSubscription)
	s.CreatedAt, s.PausedUntil = ndjson.At(fromMS(r.created)), ndjson.At(fromMS(r.paused))
	s.Labels, s.Scrape, s.Headers, s.Auth, s.Media = nil, nil, nil, nil, nil
	if err := ndjson.Unmarshal([]byte(r.labels), &s.Labels); err != nil {
		return fmt.Errorf("catalog: labels of %s: %w", s.FeedID, err)
	}
	if r.scrape.Valid {
		s.Scrape = json.RawMessage(r.scrape.String)
	}
	if r.headers.Valid {
		if err := json.Unmarshal([]byte(r.headers.String), &s.Headers); err != nil {
			return fmt.Errorf("catalog: headers of %s: %w", s.FeedID, err)
		}
	}
	if r.auth.Valid {
		s.Auth = new(ndjson.Auth)
		if err := json.Unmarshal([]byte(r.auth.String), s.Auth); err != nil {
			return fmt.Errorf("catalog: auth of %s: %w", s.FeedID, err)
		}
	}
	if r.media.Valid {
		s.Media = new(ndjson.MediaSettings)
		if err := json.Unmarshal([]byte(r.media.String), s.Media); err != nil {
			return fmt.Errorf("catalog: media settings of %s: %w", s.FeedID, err)
		}
	}
	*dst = s
	return nil
}

// scanSub reads a row of subColumns.
func scanSub(scan func(...any) error, s *ndjson.Subscription) error {
	var r subRow
	if err := scan(r.targets()...); err != nil {
		return err
	}
	return r.decode(s)
}

// subscriptionsSQL is Subscriptions's statement, a constant so that
// TestIndexesEarnTheirWrites reads its plan.
const subscriptionsSQL = `SELECT ` + subColumns + ` FROM subscriptions s JOIN feeds f ON f.key = s.feed_key ORDER BY s.position, s.feed_key`

// Subscriptions returns the subscription list, in its order.
func (c *Catalog) Subscriptions(ctx context.Context) ([]ndjson.Subscription, error) {
	rows, err := c.read(ctx, once, subscriptionsSQL)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var subs []ndjson.Subscription
	for rows.Next() {
		var s ndjson.Subscription
		if err := scanSub(rows.Scan, &s); err != nil {
			return nil, err
		}
		subs = append(subs, s)
	}
	return subs, rows.Err()
}

// Subscription returns the subscription of feedID; ok is false when there
// is none.
func (c *Catalog) Subscription(ctx context.Context, feedID string) (s ndjson.Subscription, ok bool, err error) {
	row := c.readRow(ctx, kept, `SELECT `+subColumns+` FROM subscriptions s JOIN feeds f ON f.key = s.feed_key WHERE f.feed_id = ?`, feedID)
	switch err := scanSub(row.Scan, &s); {
	case errors.Is(err, sql.ErrNoRows):
		return s, false, nil
	case err != nil:
		return s, false, err
	}
	return s, true, nil
}

// ErrNoSuchSubscription is returned for a reference that names no
// subscription, or more than one.
var ErrNoSuchSubscription = errors.New("no such subscription")

// FindSubscription returns the index in subs of the subscription that ref
// names: a feed id, a unique prefix of one (at least four characters), or
// a URL (as given or normalized).
func FindSubscription(subs []ndjson.Subscription, ref string) (int, error) {
	ref = strings.TrimSpace(ref)
	norm, _ := urlnorm.Normalize(ref)
	var matches []int
	for i, s := range subs {
		if s.FeedID == ref || s.URL == ref || (norm != "" && s.URL == norm) {
			return i, nil
		}
		if strings.HasPrefix(s.FeedID, ref) {
			matches = append(matches, i)
		}
	}
	switch {
	case len(matches) == 1 && len(ref) >= 4:
		return matches[0], nil
	case len(matches) > 0 && len(ref) < 4:
		return -1, fmt.Errorf("%w: %q is too short: give at least 4 characters of the feed id", ErrNoSuchSubscription, ref)
	case len(matches) > 1:
		ids := make([]string, 0, 3)
		for _, i := range matches[:min(3, len(matches))] {
			ids = append(ids, subs[i].FeedID[:min(12, len(subs[i].FeedID))]+"…")
		}
		return -1, fmt.Errorf("%w: %q is ambiguous: it begins %d feed ids (%s)", ErrNoSuchSubscription, ref, len(matches), strings.Join(ids, ", "))
	}
	return -1, fmt.Errorf("%w: nothing matches %q (see feed-sub ls)", ErrNoSuchSubscription, ref)
}

// EditSubscriptions loads the subscription list, lets edit change it, and
// saves what changed: the changed records to the subscription log, then
// the catalog's rows, holding the log's lock so that two edits (two
// feed-sub runs) cannot lose each other's changes. Nothing is saved when
// edit returns an error. A feed id may be in the list once.
func (c *Catalog) EditSubscriptions(ctx context.Context, edit func([]ndjson.Subscription) ([]ndjson.Subscription, error)) error {
	unlock, err := c.st.Lock(subsLock, true, nil)
	if err != nil {
		return err
	}
	defer unlock()
	if err := c.catchUpSubscriptionsLocked(ctx); err != nil {
		return err
	}
	old, err := c.Subscriptions(ctx)
	if err != nil {
		return err
	}
	pos, err := c.positions(ctx)
	if err != nil {
		return err
	}
	byID := make(map[string]*ndjson.Subscription, len(old))
	for i := range old {
		byID[old[i].FeedID] = &old[i]
	}
	edited, err := edit(cloneSubs(old))
	if err != nil {
		return err
	}
	var (
		lines   []byte
		changed []placed
		kept    = make(map[string]bool, len(edited))
		last    = int64(-1)
	)
	for i := range edited {
		s := &edited[i]
		s.Header = ndjson.Head(ndjson.TypeSubscription)
		if err := s.Check(); err != nil {
			return fmt.Errorf("catalog: %w", err)
		}
		if kept[s.FeedID] {
			return fmt.Errorf("catalog: feed %s is in the subscription list twice", s.FeedID)
		}
		kept[s.FeedID] = true
		// A subscription keeps its place while the list keeps its order;
		// one added (or moved) goes after the one before it.
		p, had := pos[s.FeedID]
		moved := !had || p <= last
		if moved {
			p = last + 1
		}
		last = p
		if o := byID[s.FeedID]; o != nil && !moved && reflect.DeepEqual(normalSub(*o), normalSub(*s)) {
			continue
		}
		line, err := ndjson.Marshal(s)
		if err != nil {
			return err
		}
		lines = append(lines, line...)
		changed = append(changed, placed{s, p})
	}
	now := ndjson.At(time.Now())
	var removed []string
	for _, s := range old {
		if !kept[s.FeedID] {
			removed = append(removed, s.FeedID)
			line, err := ndjson.Marshal(ndjson.SubscriptionRemoved{Header: ndjson.Head(ndjson.TypeSubscriptionRemoved), FeedID: s.FeedID, RemovedAt: now})
			if err != nil {
				return err
			}
			lines = append(lines, line...)
		}
	}
	if len(lines) == 0 {
		return nil
	}
	// The log holds credentials: its owner's only.
	if err := c.st.CreatePrivate(SubscriptionsFile); err != nil {
		return err
	}
	off, err := c.st.AppendLines(SubscriptionsFile, lines, storedir.Durable)
	if err != nil {
		return err
	}
	end := off + int64(len(lines))
	err = c.Update(ctx, func(t *Tx) error {
		for _, p := range changed {
			if err := t.putSubscription(p.sub, p.position); err != nil {
				return err
			}
		}
		for _, id := range removed {
			if err := t.removeSubscription(id); err != nil {
				return err
			}
		}
		return t.setCheckpoint(TapSubscriptions, Checkpoint{File: SubscriptionsFile, Offset: end})
	})
	if err != nil {
		return err
	}
	return c.compactSubscriptions(ctx, edited, end)
}

// compactLogMin is the size under which the subscription log is never
// compacted: rewriting it would cost more than reading it.
const compactLogMin = 64 << 10

// compactSubscriptions rewrites the subscription log as the list subs
// alone, one line each in the list's order, once the log of size size has
// grown to more than four times that (every edit appends): atomically,
// then the checkpoint. A crash between the two leaves a log smaller than
// the checkpoint, which the catch-up reads again as a whole, as it reads a
// log restored from a backup.
func (c *Catalog) compactSubscriptions(ctx context.Context, subs []ndjson.Subscription, size int64) error {
	if size < compactLogMin {
		return nil
	}
	var list []byte
	for i := range subs {
		line, err := ndjson.Marshal(&subs[i])
		if err != nil {
			return err
		}
		list = append(list, line...)
	}
	if size <= 4*int64(len(list)) {
		return nil
	}
	if err := c.st.WriteFileAtomic(SubscriptionsFile, list); err != nil {
		return err
	}
	c.log.Info("compacted the subscription log", "file", c.st.Path(SubscriptionsFile), "bytes_before", size, "bytes_after", len(list))
	return c.Update(ctx, func(t *Tx) error {
		return t.setCheckpoint(TapSubscriptions, Checkpoint{File: SubscriptionsFile, Offset: int64(len(list))})
	})
}

// placed is a subscription and its place in the list.
type placed struct {
	sub      *ndjson.Subscription
	position int64
}

// normalSub is s as the catalog gives it back, for comparisons: nil and
// empty collections alike.
func normalSub(s ndjson.Subscription) ndjson.Subscription {
	if len(s.Labels) == 0 {
		s.Labels = nil
	}
	if len(s.Headers) == 0 {
		s.Headers = nil
	}
	if len(s.Scrape) == 0 || string(s.Scrape) == "null" {
		s.Scrape = nil
	}
	if !s.Media.On() {
		s.Media = nil
	}
	s.Header = ndjson.Header{}
	return s
}

func cloneSubs(subs []ndjson.Subscription) []ndjson.Subscription {
	out := make([]ndjson.Subscription, len(subs))
	copy(out, subs)
	return out
}

// positions are the places of the subscriptions in the list.
func (c *Catalog) positions(ctx context.Context) (map[string]int64, error) {
	rows, err := c.read(ctx, once, `SELECT f.feed_id, s.position FROM subscriptions s JOIN feeds f ON f.key = s.feed_key`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	pos := map[string]int64{}
	for rows.Next() {
		var id string
		var p int64
		if err := rows.Scan(&id, &p); err != nil {
			return nil, err
		}
		pos[id] = p
	}
	return pos, rows.Err()
}

// putSubscription writes s at position (-1: after the last).
func (t *Tx) putSubscription(s *ndjson.Subscription, position int64) error {
	key, err := t.feedKey(s.FeedID)
	if err != nil {
		return err
	}
	if position < 0 {
		if err := t.readRow(kept, `SELECT coalesce((SELECT position FROM subscriptions WHERE feed_key = ?),
			(SELECT coalesce(max(position), -1) + 1 FROM subscriptions))`, key).Scan(&position); err != nil {
			return err
		}
	}
	labels, err := json.Marshal(ndjson.NonNil(s.Labels))
	if err != nil {
		return err
	}
	var scrape, headers, auth, media any
	if s.Media.On() {
		b, err := json.Marshal(s.Media)
		if err != nil {
			return err
		}
		media = string(b)
	}
	if len(s.Scrape) > 0 && string(s.Scrape) != "null" {
		scrape = string(s.Scrape)
	}
	if len(s.Headers) > 0 {
		b, err := json.Marshal(s.Headers)
		if err != nil {
			return err
		}
		headers = string(b)
	}
	if s.Auth != nil {
		b, err := json.Marshal(s.Auth)
		if err != nil {
			return err
		}
		auth = string(b)
	}
	_, err = t.write(kept, `INSERT OR REPLACE INTO subscriptions (feed_key, position, url, name, labels, source_type, interval_sec, cron, disabled,
		created_at, fulltext, scrape, user_agent, headers, auth, min_interval_sec, max_interval_sec, paused_until, allow_private, media,
		push, backfill, webhook_secret)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		key, position, s.URL, s.Name, string(labels), cmp.Or(s.SourceType, ndjson.SourceAuto), s.IntervalSec, s.Cron, s.Disabled,
		ms(s.CreatedAt.Time), s.Fulltext, scrape, s.UserAgent, headers, auth, s.MinIntervalSec, s.MaxIntervalSec, ms(s.PausedUntil.Time), s.AllowPrivate, media,
		s.Push, s.Backfill, nullIfEmpty(s.WebhookSecret))
	return err
}

func (t *Tx) removeSubscription(feedID string) error {
	_, err := t.write(kept, `DELETE FROM subscriptions WHERE feed_key = (SELECT key FROM feeds WHERE feed_id = ?)`, feedID)
	return err
}

// catchUpSubscriptions applies what the subscription log holds past the
// catalog's checkpoint: lines a crash kept from the catalog, or a log
// replaced as a whole (restored from a backup, written by hand), which is
// read again from its start.
func (c *Catalog) catchUpSubscriptions(ctx context.Context) error {
	cp, err := c.Checkpoint(ctx, TapSubscriptions)
	if err != nil {
		return err
	}
	fi, err := c.st.Stat(SubscriptionsFile)
	if err != nil || fi.Size() == cp.Offset {
		return nil // no log (no subscriptions), or nothing new
	}
	unlock, err := c.st.Lock(subsLock, true, nil)
	if err != nil {
		return err
	}
	defer unlock()
	return c.catchUpSubscriptionsLocked(ctx)
}

func (c *Catalog) catchUpSubscriptionsLocked(ctx context.Context) error {
	cp, err := c.Checkpoint(ctx, TapSubscriptions)
	if err != nil {
		return err
	}
	fi, err := c.st.Stat(SubscriptionsFile)
	if err != nil || fi.Size() == cp.Offset {
		return nil
	}
	whole := fi.Size() < cp.Offset
	from := cp.Offset
	if whole {
		from = 0
	}
	type change struct {
		sub     *ndjson.Subscription
		removed bool
	}
	var order []string
	last := map[string]change{}
	bad := 0
	end, malformed, err := c.st.ReadLog(SubscriptionsFile, from, func(l ndjson.Line) error {
		var ch change
		var id string
		switch l.Type {
		case ndjson.TypeSubscription:
			var s ndjson.Subscription
			if l.Decode(&s) != nil {
				bad++
				return nil
			}
			ch.sub, id = &s, s.FeedID
		case ndjson.TypeSubscriptionRemoved:
			var r ndjson.SubscriptionRemoved
			if l.Decode(&r) != nil {
				bad++
				return nil
			}
			ch.removed, id = true, r.FeedID
		default:
			return nil
		}
		if _, ok := last[id]; !ok {
			order = append(order, id)
		}
		last[id] = ch
		return nil
	})
	if err != nil {
		return err
	}
	if bad += malformed; bad > 0 {
		c.log.Warn("skipped malformed lines of the subscription log", "file", c.st.Path(SubscriptionsFile), "lines", bad)
	}
	return c.Update(ctx, func(t *Tx) error {
		if whole {
			if _, err := t.write(once, `DELETE FROM subscriptions`); err != nil {
				return err
			}
		}
		for _, id := range order {
			ch := last[id]
			var err error
			if ch.removed {
				err = t.removeSubscription(id)
			} else {
				err = t.putSubscription(ch.sub, -1)
			}
			if err != nil {
				return err
			}
		}
		return t.setCheckpoint(TapSubscriptions, Checkpoint{File: SubscriptionsFile, Offset: end})
	})
}

// PrivateFeeds returns the ids of the subscriptions that may be fetched
// from private addresses (ndjson.Access.AllowPrivate): the stages that
// fetch believe this, not a record's claim.
func (c *Catalog) PrivateFeeds(ctx context.Context) (map[string]bool, error) {
	return c.readSet(ctx, once, `SELECT f.feed_id FROM subscriptions s JOIN feeds f ON f.key = s.feed_key WHERE s.allow_private`)
}
