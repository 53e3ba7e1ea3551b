package catalog

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/feedpipe/feedpipe/internal/websub"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Push (docs/design.md#push): the WebSub subscriptions feed-sub push sync
// asks hubs for (W3C WebSub §5.1), one row of the websub table per
// callback, which feed-serve reads and completes when a hub verifies its
// intent (§5.3) or denies it (§5.2); and what was pushed to each feed
// (pushes), which feed-serve counts and feed-store marks when a poll finds
// what no push brought.

// PushSafetyPoll is how often a feed whose push is live (PushOnly
// aside) is polled all the same: a daily check that the pushes bring
// everything (docs/design.md#push).
const PushSafetyPoll = 24 * time.Hour

// The states of a WebSub subscription (WebSub.State).
const (
	// WebSubRequested: asked of the hub, which has not verified it yet.
	WebSubRequested = "requested"
	// WebSubVerified: the hub verified our intent; its lease runs.
	WebSubVerified = "verified"
	// WebSubDenied: the hub denied it, or cancelled it (§5.2).
	WebSubDenied = "denied"
	// WebSubFailed: the hub refused the request, or could not be
	// reached; asked again later.
	WebSubFailed = "failed"
)

// WebSub is a subscription feedpipe asked a hub for, or an unsubscription
// it asked for (Mode).
type WebSub struct {
	// CallbackID is the callback URL's last segment: 32 random hex digits,
	// unique to the subscription and unguessable.
	CallbackID string
	// Callback is the callback URL given to the hub: the public URL then,
	// WebSubPath, CallbackID.
	Callback   string
	FeedID     string
	Hub, Topic string
	// Secret is the hub.secret the hub signs distributions with.
	Secret string
	// Mode is what was asked last: websub.ModeSubscribe, or
	// ModeUnsubscribe for a subscription being ended.
	Mode  string
	State string
	// AskedAt is when the hub was asked last, and Tries how many times
	// in a row it was asked without a verification.
	AskedAt    time.Time
	Tries      int
	VerifiedAt time.Time
	// LeaseSec is the lease the hub granted (hub.lease_seconds), and
	// LeaseEnd when it ends.
	LeaseSec int
	LeaseEnd time.Time
	// Reason is the hub's reason for a denial, or what it answered a
	// request it refused.
	Reason string
}

// Live reports whether the subscription is verified and its lease runs
// at now.
func (w WebSub) Live(now time.Time) bool {
	return w.State == WebSubVerified && now.Before(w.LeaseEnd)
}

const webSubColumns = `w.callback_id, w.callback, f.feed_id, w.hub, w.topic, w.secret, w.mode, w.state, w.asked_at, w.tries, w.verified_at,
	w.lease_sec, w.lease_end, w.reason`

func scanWebSub(scan func(...any) error, w *WebSub) error {
	var asked int64
	var verified, leaseEnd sql.NullInt64
	if err := scan(&w.CallbackID, &w.Callback, &w.FeedID, &w.Hub, &w.Topic, &w.Secret, &w.Mode, &w.State, &asked, &w.Tries, &verified,
		&w.LeaseSec, &leaseEnd, &w.Reason); err != nil {
		return err
	}
	w.AskedAt, w.VerifiedAt, w.LeaseEnd = time.UnixMilli(asked).UTC(), fromMS(verified), fromMS(leaseEnd)
	return nil
}

// WebSubs are every WebSub subscription and unsubscription asked for, by
// feed and then callback.
func (c *Catalog) WebSubs(ctx context.Context) ([]WebSub, error) {
	rows, err := c.read(ctx, once, webSubsSQL)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []WebSub
	for rows.Next() {
		var w WebSub
		if err := scanWebSub(rows.Scan, &w); err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// webSubsSQL reads websub first, then each row's feed (CROSS JOIN keeps
// that order): the planner walked every feed in feed_id order to spare
// the sort, probing websub for each, where a catalog has far fewer
// subscriptions than feeds.
const webSubsSQL = `SELECT ` + webSubColumns + ` FROM websub w CROSS JOIN feeds f ON f.key = w.feed_key ORDER BY f.feed_id, w.callback_id`

// WebSubByCallback is the subscription of callback id; ok is false when
// there is none.
func (c *Catalog) WebSubByCallback(ctx context.Context, id string) (w WebSub, ok bool, err error) {
	err = scanWebSub(c.readRow(ctx, kept, `SELECT `+webSubColumns+` FROM websub w JOIN feeds f ON f.key = w.feed_key WHERE w.callback_id = ?`, id).Scan, &w)
	if errors.Is(err, sql.ErrNoRows) {
		return w, false, nil
	}
	return w, err == nil, err
}

// PutWebSub writes w, a new row or its callback's row changed.
func (c *Catalog) PutWebSub(ctx context.Context, w WebSub) error {
	return c.Update(ctx, func(t *Tx) error {
		defer t.within(w.FeedID)()
		key, err := t.feedKey(w.FeedID)
		if err != nil {
			return err
		}
		_, err = t.write(kept, `INSERT OR REPLACE INTO websub (callback_id, callback, feed_key, hub, topic, secret, mode, state, asked_at, tries,
			verified_at, lease_sec, lease_end, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			w.CallbackID, w.Callback, key, w.Hub, w.Topic, w.Secret, w.Mode, w.State, unixMS(w.AskedAt), w.Tries, ms(w.VerifiedAt),
			w.LeaseSec, ms(w.LeaseEnd), w.Reason)
		return err
	})
}

// RemoveWebSub forgets the subscription of callback id.
func (c *Catalog) RemoveWebSub(ctx context.Context, w WebSub) error {
	return c.Update(ctx, func(t *Tx) error {
		defer t.within(w.FeedID)()
		_, err := t.write(kept, `DELETE FROM websub WHERE callback_id = ?`, w.CallbackID)
		return err
	})
}

// Verified is what a hub's verification of intent (WebSub §5.3) found.
type Verified int

const (
	// VerifyUnknown: no subscription of ours has that callback, topic
	// and mode: the hub is answered 404.
	VerifyUnknown Verified = iota
	// VerifySubscribed: a subscription of ours, verified now with its
	// lease.
	VerifySubscribed
	// VerifyUnsubscribed: an unsubscription of ours, done: its row goes.
	VerifyUnsubscribed
)

// VerifyWebSub takes a hub's verification of intent at callback id, for
// topic and mode, with the lease the hub grants (subscribe), at now:
// only a subscription we asked for, of that topic and mode, is
// confirmed; a subscription becomes verified with its lease, an
// unsubscription is done and its row removed.
func (c *Catalog) VerifyWebSub(ctx context.Context, id, mode, topic string, lease time.Duration, now time.Time) (Verified, error) {
	w, ok, err := c.WebSubByCallback(ctx, id)
	if err != nil || !ok || w.Topic != topic || w.Mode != mode {
		return VerifyUnknown, err
	}
	if mode == websub.ModeUnsubscribe {
		return VerifyUnsubscribed, c.RemoveWebSub(ctx, w)
	}
	if lease <= 0 { // the hub did not say: the lease asked for
		lease = time.Duration(w.LeaseSec) * time.Second
	}
	w.State, w.VerifiedAt, w.Tries, w.Reason = WebSubVerified, now, 0, ""
	w.LeaseSec, w.LeaseEnd = int(lease/time.Second), now.Add(lease)
	return VerifySubscribed, c.PutWebSub(ctx, w)
}

// DenyWebSub takes a hub's denial (WebSub §5.2) of the subscription of
// callback id to topic, with its reason: ok is false when we have none
// such.
func (c *Catalog) DenyWebSub(ctx context.Context, id, topic, reason string, now time.Time) (ok bool, err error) {
	w, ok, err := c.WebSubByCallback(ctx, id)
	if err != nil || !ok || w.Topic != topic || w.Mode != websub.ModeSubscribe {
		return false, err
	}
	w.State, w.Reason, w.LeaseEnd, w.AskedAt = WebSubDenied, reason, time.Time{}, now
	return true, c.PutWebSub(ctx, w)
}

// Pushed counts a body pushed to feedID (a WebSub distribution, a webhook
// POST) and taken, at at.
func (c *Catalog) Pushed(ctx context.Context, feedID string, at time.Time) error {
	return c.Update(ctx, func(t *Tx) error {
		defer t.within(feedID)()
		key, err := t.feedKey(feedID)
		if err != nil {
			return err
		}
		_, err = t.write(kept, `INSERT INTO pushes (feed_key, last_push_at, pushes) VALUES (?, ?, 1)
			ON CONFLICT (feed_key) DO UPDATE SET last_push_at = max(coalesce(last_push_at, 0), excluded.last_push_at), pushes = pushes + 1`,
			key, unixMS(at))
		return err
	})
}

// MissedPush notes that a poll of feedID at at, while push was live,
// found entries no push had brought: the feed goes back to its polling
// interval until the next push comes (docs/design.md#push).
func (t *Tx) MissedPush(feedID string, at time.Time) error {
	defer t.within(feedID)()
	key, err := t.feedKey(feedID)
	if err != nil {
		return err
	}
	_, err = t.write(kept, `INSERT INTO pushes (feed_key, missed_at) VALUES (?, ?)
		ON CONFLICT (feed_key) DO UPDATE SET missed_at = excluded.missed_at`, key, unixMS(at))
	return err
}

// PushTarget is the hub and topic a feed's last body read named (W3C
// WebSub §4: its HTTP Link header first, then the document's links).
type PushTarget struct{ Hub, Topic string }

// PushTargets are the targets recorded, by feed id.
func (c *Catalog) PushTargets(ctx context.Context) (map[string]PushTarget, error) {
	rows, err := c.read(ctx, once, `SELECT f.feed_id, p.hub, p.topic FROM pushes p JOIN feeds f ON f.key = p.feed_key WHERE p.hub != '' OR p.topic != ''`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]PushTarget{}
	for rows.Next() {
		var id string
		var pt PushTarget
		if err := rows.Scan(&id, &pt.Hub, &pt.Topic); err != nil {
			return nil, err
		}
		out[id] = pt
	}
	return out, rows.Err()
}

// SetPushTarget records the hub and topic feedID's last body read named
// (feed-store, storing a poll); a hub "" says it names none now.
func (t *Tx) SetPushTarget(feedID string, pt PushTarget) error {
	defer t.within(feedID)()
	key, err := t.feedKey(feedID)
	if err != nil {
		return err
	}
	_, err = t.write(kept, `INSERT INTO pushes (feed_key, hub, topic) VALUES (?, ?, ?)
		ON CONFLICT (feed_key) DO UPDATE SET hub = excluded.hub, topic = excluded.topic`, key, pt.Hub, pt.Topic)
	return err
}

// PushStatus is a feed's push, as feed-sub ls --json, the API and feed-due
// --explain show it (pkg/ndjson's doc, "push").
type PushStatus struct {
	Mode       string      `json:"mode"`
	Hub        string      `json:"hub"`
	Topic      string      `json:"topic"`
	State      string      `json:"state"`
	Live       bool        `json:"live"`
	VerifiedAt ndjson.Time `json:"verified_at"`
	LeaseEnd   ndjson.Time `json:"lease_end"`
	LastPushAt ndjson.Time `json:"last_push_at"`
	Pushes     int         `json:"pushes"`
	MissedAt   ndjson.Time `json:"missed_at"`
	Reason     string      `json:"reason"`
	// Endpoint is a webhook source's path on feed-serve.
	Endpoint string `json:"endpoint,omitempty"`

	asked time.Time // when its subscription was asked: the newest wins
}

// Missed reports whether a poll found what pushes had not brought, and
// no push came since.
func (p *PushStatus) Missed() bool {
	return !p.MissedAt.IsZero() && !p.LastPushAt.After(p.MissedAt.Time)
}

// PushStatuses are the push of every feed that has any: a WebSub
// subscription being asked or held (the newest of a feed's that is not
// an unsubscription), or pushes counted; Live as of now. The mode and a
// webhook source's endpoint are the caller's to fill in (the
// subscription's).
func (c *Catalog) PushStatuses(ctx context.Context, now time.Time) (map[string]*PushStatus, error) {
	subs, err := c.WebSubs(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]*PushStatus{}
	for _, w := range subs {
		if w.Mode != websub.ModeSubscribe {
			continue
		}
		if p := out[w.FeedID]; p != nil && !w.AskedAt.After(p.asked) {
			continue
		}
		out[w.FeedID] = &PushStatus{Hub: w.Hub, Topic: w.Topic, State: w.State, Live: w.Live(now), VerifiedAt: ndjson.At(w.VerifiedAt),
			LeaseEnd: ndjson.At(w.LeaseEnd), Reason: w.Reason, asked: w.AskedAt}
	}
	rows, err := c.read(ctx, once, `SELECT f.feed_id, p.last_push_at, p.pushes, p.missed_at FROM pushes p JOIN feeds f ON f.key = p.feed_key`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var last, missed sql.NullInt64
		var n int
		if err := rows.Scan(&id, &last, &n, &missed); err != nil {
			return nil, err
		}
		p := out[id]
		if p == nil {
			p = &PushStatus{}
			out[id] = p
		}
		p.LastPushAt, p.Pushes, p.MissedAt = ndjson.At(fromMS(last)), n, ndjson.At(fromMS(missed))
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, p := range out {
		p.Live = p.Live && !p.Missed()
	}
	return out, nil
}

// nullIfEmpty is s, or NULL for "".
func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
