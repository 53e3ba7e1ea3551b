package sub

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/websub"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Subscribing is the pipeline's job, not the server's (docs/design.md#push):
// feed-sub push sync, which feed-loop runs after each cycle, brings the
// WebSub subscriptions in line with the feeds: it subscribes each feed
// that names a hub (the catalog's pushes.hub, which feed-store keeps from
// the feed's polls) with push not off, renews a lease before it lapses,
// unsubscribes a feed removed, disabled or set to push off, and
// subscribes anew when the hub, the topic or the public URL changed.
// feed-serve, at the callback, answers the hub's verification of intent.

// DefaultLease is the lease asked of hubs (hub.lease_seconds): ten days,
// which hubs commonly grant.
const DefaultLease = 10 * 24 * time.Hour

// verifyWait is how long a hub may take to verify a request before it is
// asked again (then later and later: retryAfter).
const verifyWait = 5 * time.Minute

// unsubscribeTries is how many times an unsubscription is asked before it
// is given up (the lease ends it anyway, and a distribution to its
// callback is answered 410 Gone, which ends it at the hub).
const unsubscribeTries = 3

// PushOptions are feed-sub push sync's settings.
type PushOptions struct {
	// PublicURL is the URL the world reaches feed-serve at
	// (--public-url): the callbacks are under it. "" subscribes nothing
	// and unsubscribes everything.
	PublicURL string
	// Lease is the lease asked of hubs; 0: DefaultLease.
	Lease time.Duration
	// Client asks the hubs, under its address rules (a hub on a private
	// address is asked only for a feed allowed such addresses, or with
	// a client allowed them all); nil: httpx.New's.
	Client *httpx.Client
	// Rand makes the callback ids and secrets; nil: crypto/rand.
	Rand io.Reader
}

// PushReport counts what a sync did.
type PushReport struct {
	Subscribed, Renewed, Unsubscribed, Retried, Failed, Forgotten int
}

// retryAfter is how long after a request that was not verified (or that
// the hub refused, or denied) it is asked again: 5 minutes, doubling with
// each try, a day at most.
func retryAfter(tries int) time.Duration {
	d := verifyWait
	for i := 1; i < tries && d < 24*time.Hour; i++ {
		d *= 2
	}
	return min(d, 24*time.Hour)
}

// renewBefore is how long before its lease ends a subscription is renewed:
// a tenth of the lease, an hour at least.
func renewBefore(lease time.Duration) time.Duration { return max(lease/10, time.Hour) }

// PushSync brings the WebSub subscriptions in line with the feeds, once.
func PushSync(ctx context.Context, cfg Config, o PushOptions) (PushReport, error) {
	cfg.defaults()
	var rep PushReport
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.Client == nil {
		o.Client = httpx.New(httpx.Options{})
	}
	if o.Rand == nil {
		o.Rand = rand.Reader
	}
	public := strings.TrimRight(o.PublicURL, "/")
	if public != "" {
		if u, err := url.Parse(public); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return rep, fmt.Errorf("%w: --public-url %q: an absolute http or https URL, such as https://feeds.example.org", ErrInvalid, o.PublicURL)
		}
	}
	cat, done, err := cfg.catalog()
	if err != nil {
		return rep, err
	}
	defer done()
	subs, err := cat.Subscriptions(ctx)
	if err != nil {
		return rep, err
	}
	targets, err := cat.PushTargets(ctx)
	if err != nil {
		return rep, err
	}
	rows, err := cat.WebSubs(ctx)
	if err != nil {
		return rep, err
	}
	s := &syncer{ctx: ctx, cfg: cfg, o: o, cat: cat, rep: &rep, now: cfg.Now(), public: public}
	byFeed := map[string][]catalog.WebSub{}
	for _, w := range rows {
		byFeed[w.FeedID] = append(byFeed[w.FeedID], w)
	}
	followed := map[string]bool{}
	for _, sb := range subs {
		followed[sb.FeedID] = true
		var active *catalog.WebSub
		for i, w := range byFeed[sb.FeedID] {
			switch {
			case w.Mode == websub.ModeUnsubscribe:
				if err := s.ending(w, sb); err != nil {
					return rep, err
				}
			case active == nil || w.AskedAt.After(active.AskedAt):
				if active != nil {
					if err := s.unsubscribe(*active, sb); err != nil {
						return rep, err
					}
				}
				active = &byFeed[sb.FeedID][i]
			default:
				if err := s.unsubscribe(w, sb); err != nil {
					return rep, err
				}
			}
		}
		t := targets[sb.FeedID]
		want := public != "" && isHTTP(t.Hub) && t.Topic != "" && !sb.Disabled && sb.Push != ndjson.PushOff &&
			sb.SourceType != ndjson.SourceWebhook && sb.SourceType != ndjson.SourceWebsite
		if active != nil && (!want || active.Hub != t.Hub || active.Topic != t.Topic || !strings.HasPrefix(active.Callback, public+WebSubPath)) {
			if err := s.unsubscribe(*active, sb); err != nil {
				return rep, err
			}
			active = nil
		}
		switch {
		case want && active == nil:
			err = s.subscribe(sb, t)
		case want:
			err = s.keep(*active, sb)
		}
		if err != nil {
			return rep, err
		}
	}
	// The subscriptions of feeds removed.
	for feed, ws := range byFeed {
		if followed[feed] {
			continue
		}
		for _, w := range ws {
			gone := ndjson.Subscription{FeedID: feed}
			if w.Mode == websub.ModeUnsubscribe {
				err = s.ending(w, gone)
			} else {
				err = s.unsubscribe(w, gone)
			}
			if err != nil {
				return rep, err
			}
		}
	}
	if rep != (PushReport{}) {
		cfg.Log.Info("push sync", "subscribed", rep.Subscribed, "renewed", rep.Renewed, "unsubscribed", rep.Unsubscribed,
			"retried", rep.Retried, "failed", rep.Failed, "forgotten", rep.Forgotten)
	}
	return rep, nil
}

// syncer is one PushSync.
type syncer struct {
	ctx    context.Context
	cfg    Config
	o      PushOptions
	cat    *catalog.Catalog
	rep    *PushReport
	now    time.Time
	public string
}

// random is n random bytes in hex.
func (s *syncer) random(n int) (string, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(s.o.Rand, b); err != nil {
		return "", fmt.Errorf("sub: random bytes: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// subscribe asks t's hub for a new subscription of the feed of sb: a new
// callback, a new secret.
func (s *syncer) subscribe(sb ndjson.Subscription, t catalog.PushTarget) error {
	id, err := s.random(16)
	if err != nil {
		return err
	}
	secret, err := s.random(32)
	if err != nil {
		return err
	}
	w := catalog.WebSub{CallbackID: id, Callback: s.public + WebSubPath + id, FeedID: sb.FeedID, Hub: t.Hub, Topic: t.Topic,
		Secret: secret, Mode: websub.ModeSubscribe, LeaseSec: int(s.o.Lease / time.Second)}
	s.rep.Subscribed++
	return s.ask(w, sb)
}

// keep renews a live subscription before its lease ends, and asks again
// for one not verified in time, refused, or denied.
func (s *syncer) keep(w catalog.WebSub, sb ndjson.Subscription) error {
	switch w.State {
	case catalog.WebSubVerified:
		lease := time.Duration(w.LeaseSec) * time.Second
		if w.LeaseEnd.Sub(s.now) > renewBefore(lease) || s.now.Sub(w.AskedAt) < retryAfter(w.Tries) {
			return nil
		}
		s.rep.Renewed++
	case catalog.WebSubDenied:
		if s.now.Sub(w.AskedAt) < 24*time.Hour {
			return nil
		}
		s.rep.Retried++
	default: // requested, failed
		if s.now.Sub(w.AskedAt) < retryAfter(w.Tries) {
			return nil
		}
		s.rep.Retried++
	}
	w.LeaseSec = int(s.o.Lease / time.Second)
	return s.ask(w, sb)
}

// unsubscribe asks the hub to end the subscription w: its row stays, in
// mode unsubscribe, until the hub verifies it (feed-serve then removes
// it) or it is given up (ending).
func (s *syncer) unsubscribe(w catalog.WebSub, sb ndjson.Subscription) error {
	if w.State == catalog.WebSubDenied || w.State == catalog.WebSubFailed && w.VerifiedAt.IsZero() {
		// The hub holds no subscription to end.
		s.rep.Forgotten++
		return s.cat.RemoveWebSub(s.ctx, w)
	}
	w.Mode, w.Tries = websub.ModeUnsubscribe, 0
	s.rep.Unsubscribed++
	return s.ask(w, sb)
}

// ending asks again for an unsubscription not verified, and gives it up
// after unsubscribeTries, or once its lease ended.
func (s *syncer) ending(w catalog.WebSub, sb ndjson.Subscription) error {
	switch {
	case w.Tries >= unsubscribeTries || !w.LeaseEnd.IsZero() && s.now.After(w.LeaseEnd) || w.VerifiedAt.IsZero() && w.LeaseEnd.IsZero():
		s.rep.Forgotten++
		return s.cat.RemoveWebSub(s.ctx, w)
	case s.now.Sub(w.AskedAt) < retryAfter(w.Tries):
		return nil
	}
	s.rep.Retried++
	return s.ask(w, sb)
}

// ask records the request w before it sends it (the hub may verify it
// before its answer comes), then records what the hub answered. A hub
// that refuses a renewal leaves the subscription live until its lease
// ends.
func (s *syncer) ask(w catalog.WebSub, sb ndjson.Subscription) error {
	w.AskedAt, w.Tries = s.now, w.Tries+1
	if w.State != catalog.WebSubVerified {
		w.State = catalog.WebSubRequested
	}
	if err := s.cat.PutWebSub(s.ctx, w); err != nil {
		return err
	}
	client := s.o.Client
	if sb.AllowPrivate {
		client = client.Private()
	}
	req := websub.Request{Hub: w.Hub, Topic: w.Topic, Callback: w.Callback, Mode: w.Mode, Lease: time.Duration(w.LeaseSec) * time.Second}
	if w.Mode == websub.ModeSubscribe {
		req.Secret = w.Secret
	}
	err := websub.Ask(s.ctx, client.Plain(), req)
	if err == nil {
		s.cfg.Log.Debug("asked a WebSub hub", "mode", w.Mode, "hub", w.Hub, "topic", w.Topic, "feed_id", w.FeedID)
		return nil
	}
	s.rep.Failed++
	s.cfg.Log.Warn("a WebSub hub refused a request", "mode", w.Mode, "hub", w.Hub, "topic", w.Topic, "feed_id", w.FeedID, "err", err)
	// Read the row again: the hub may have verified or denied meanwhile.
	now, ok, rerr := s.cat.WebSubByCallback(s.ctx, w.CallbackID)
	if rerr != nil || !ok {
		return rerr
	}
	if now.State == catalog.WebSubRequested {
		now.State = catalog.WebSubFailed
	}
	now.Reason = clip(err.Error(), 300)
	return s.cat.PutWebSub(s.ctx, now)
}

// isHTTP reports whether s is an absolute http(s) URL.
func isHTTP(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// clip keeps s to n bytes at most.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
