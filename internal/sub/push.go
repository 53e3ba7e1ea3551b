package sub

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/ids"
	"github.com/feedpipe/feedpipe/internal/safetext"
	"github.com/feedpipe/feedpipe/internal/stats"
	"github.com/feedpipe/feedpipe/internal/table"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Push and history, as subscriptions say them (docs/design.md#push,
// #backfill): a feed's push mode and backfill switch, webhook sources,
// a walk asked for by hand, and what listings show of each.

// The paths of feed-serve's push routes, under the public URL: a WebSub
// callback is WebSubPath + its id, a webhook source's endpoint
// WebhookPath + its feed id.
const (
	WebSubPath  = "/websub/"
	WebhookPath = "/webhooks/"
)

// PushModes are the push settings a subscription takes ("" is preferred).
var PushModes = []string{ndjson.PushOff, ndjson.PushPreferred, ndjson.PushOnly}

// checkPush is the push setting v as a subscription keeps it: "" for
// preferred, the default.
func checkPush(v string) (string, error) {
	v = strings.ToLower(strings.TrimSpace(v))
	switch {
	case v == "" || v == ndjson.PushPreferred:
		return "", nil
	case slices.Contains(PushModes, v):
		return v, nil
	}
	return "", fmt.Errorf("%w: push %q is not one of %s", ErrInvalid, v, strings.Join(PushModes, ", "))
}

// webhookScheme begins the URL of a webhook source: webhook:NAME.
const webhookScheme = "webhook:"

// webhookName is what a webhook source's name may be: it is its URL and
// makes its feed id.
var webhookName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// isWebhook reports whether spec makes a webhook source.
func (spec Spec) isWebhook() bool {
	return strings.EqualFold(strings.TrimSpace(spec.Type), ndjson.SourceWebhook) || strings.HasPrefix(spec.URL, webhookScheme)
}

// newWebhook is newSubscription for a webhook source: a source with no URL
// to poll, named by spec.URL (NAME, or webhook:NAME), whose content is
// POSTed to feed-serve. What a poll needs (an interval, a cron, access,
// scraping, full text) it has not.
func newWebhook(spec Spec, now time.Time) (ndjson.Subscription, error) {
	if t := strings.ToLower(strings.TrimSpace(spec.Type)); t != "" && t != ndjson.SourceWebhook {
		return ndjson.Subscription{}, fmt.Errorf("%w: %s is a webhook source: its type cannot be %s", ErrInvalid, spec.URL, t)
	}
	name := strings.TrimPrefix(strings.TrimSpace(spec.URL), webhookScheme)
	if !webhookName.MatchString(name) {
		return ndjson.Subscription{}, fmt.Errorf("%w: webhook source %q: its name is 1 to 64 of a-z, 0-9, '.', '_', '-', beginning with a letter or digit", ErrInvalid, name)
	}
	switch {
	case spec.Interval != 0 || strings.TrimSpace(spec.Cron) != "":
		return ndjson.Subscription{}, fmt.Errorf("%w: a webhook source is not polled: it takes no interval or cron", ErrInvalid)
	case spec.Scrape != nil || spec.Fulltext || spec.UserAgent != "" || len(spec.Headers) > 0 || spec.BasicAuth != "" || spec.AllowPrivate:
		return ndjson.Subscription{}, fmt.Errorf("%w: a webhook source fetches nothing: it takes no scraping, full text or access settings", ErrInvalid)
	}
	if err := spec.checkNames(); err != nil {
		return ndjson.Subscription{}, err
	}
	u := webhookScheme + name
	return ndjson.Subscription{
		Header:     ndjson.Head(ndjson.TypeSubscription),
		FeedID:     ids.FeedID(u),
		URL:        u,
		Name:       strings.TrimSpace(spec.Name),
		Labels:     cleanLabels(spec.Labels),
		SourceType: ndjson.SourceWebhook,
		CreatedAt:  ndjson.At(now),
	}, nil
}

// NewSecret is a new random secret: 32 bytes, in hex.
func NewSecret(r io.Reader) (string, error) {
	if r == nil {
		r = rand.Reader
	}
	b := make([]byte, 32)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", fmt.Errorf("sub: a random secret: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// sayWebhook tells the person who made (or gave a new secret to) the
// webhook source s where to POST and with which secret: the secret is
// shown this once.
func sayWebhook(cfg Config, s ndjson.Subscription) {
	fmt.Fprintf(cfg.Msg, "feed-sub: webhook source %s: POST feeds (RSS, Atom, JSON Feed) or NDJSON entries to PUBLIC_URL%s%s,\n"+
		"feed-sub: signed: X-Hub-Signature-256: sha256=HMAC-SHA256 of the body under the secret, shown this once:\n%s\n",
		s.URL, WebhookPath, s.FeedID, s.WebhookSecret)
}

// Backfill starts a walk of the archive of each feed refs names, by hand
// (feed-sub backfill): from the head its last poll found, or from where a
// stopped walk stopped; a walk under way goes on as it is. The pages come
// with the next runs, within the walk's limits (docs/design.md#backfill).
func Backfill(cfg Config, refs []string) error {
	cfg.defaults()
	cat, done, err := cfg.catalog()
	if err != nil {
		return err
	}
	defer done()
	subs, err := cat.Subscriptions(context.Background())
	if err != nil {
		return err
	}
	picked, err := pick(subs, refs)
	if err != nil {
		return err
	}
	walks, err := cat.Walks(context.Background(), cfg.Now().UTC().Truncate(24*time.Hour))
	if err != nil {
		return err
	}
	var r report
	for _, i := range picked {
		s := subs[i]
		if s.SourceType == ndjson.SourceWebhook || s.SourceType == ndjson.SourceWebsite {
			r.feed(false, "%s has no archive to walk (a "+s.SourceType+" source)", s.URL)
			continue
		}
		ok, err := cat.AskWalk(context.Background(), s.FeedID)
		if err != nil {
			return err
		}
		w := walks[s.FeedID]
		switch {
		case !ok:
			r.feed(false, "%s: its walk goes on (page %d, next %s)", s.URL, w.Pages+1, w.NextURL)
		case w == nil || w.Head == "":
			r.feed(true, "asked for a walk of %s: it starts once a poll finds the feed's prev-archive or next link (none yet)", s.URL)
		default:
			r.feed(true, "asked for a walk of %s", s.URL)
		}
	}
	r.write(cfg, counted("asked for walks of", "as they were"))
	return nil
}

// pushOf fills the listing's push and backfill from what the catalog
// holds of them (nil when there is nothing to say).
func (l *listing) pushOf(p *catalog.PushStatus, w *catalog.Walk) {
	s := &l.Subscription
	if s.SourceType == ndjson.SourceWebhook {
		ps := catalog.PushStatus{}
		if p != nil {
			ps = *p
		}
		ps.Mode, ps.Endpoint, ps.Live = ndjson.PushOnly, WebhookPath+s.FeedID, !s.Disabled
		l.PushState = &ps
	} else if p != nil {
		ps := *p
		ps.Mode = s.Push
		if ps.Mode == "" {
			ps.Mode = ndjson.PushPreferred
		}
		ps.Live = ps.Live && ps.Mode != ndjson.PushOff && !s.Disabled
		l.PushState = &ps
	}
	if w != nil && (w.Head != "" || w.State != "") {
		l.Walk = w
	}
}

// WithPush is the listing l with the feed's push and backfill, from the
// maps of catalog.PushStatuses and catalog.Walks.
func WithPush(l *Listing, push map[string]*catalog.PushStatus, walks map[string]*catalog.Walk) *Listing {
	l.pushOf(push[l.FeedID], walks[l.FeedID])
	return l
}

// pushCell and walkCell are feed-sub ls's PUSH and BACKFILL columns.
func pushCell(l *listing, now time.Time) string {
	p := l.PushState
	switch {
	case p == nil:
		return ""
	case l.SourceType == ndjson.SourceWebhook:
		if p.LastPushAt.IsZero() {
			return "webhook, no push yet"
		}
		return "webhook, last " + stats.Ago(now, p.LastPushAt.Time)
	case p.Mode == ndjson.PushOff:
		return "off"
	}
	var b strings.Builder
	b.WriteString(p.State)
	if p.State == "" {
		b.WriteString("hub known")
	}
	if p.Live {
		b.WriteString(", lease " + stats.Until(now, p.LeaseEnd.Time))
	}
	if !p.LastPushAt.IsZero() {
		b.WriteString(", last " + stats.Ago(now, p.LastPushAt.Time))
	}
	if p.Missed() {
		b.WriteString(", polled (a poll found more)")
	}
	return b.String()
}

func walkCell(l *listing) string {
	w := l.Walk
	if w == nil {
		return ""
	}
	switch w.State {
	case catalog.WalkNone:
		if l.Subscription.Backfill {
			return "to start"
		}
		return "archive known"
	case catalog.WalkWalking:
		return fmt.Sprintf("walking, %d pages", w.Pages)
	case catalog.WalkAsked:
		return "asked"
	}
	return fmt.Sprintf("%s, %d pages: %s", w.State, w.Pages, w.Reason)
}

// pushAndWalks are what catalog.PushStatuses and catalog.Walks give, at
// now.
func pushAndWalks(cat *catalog.Catalog, now time.Time) (map[string]*catalog.PushStatus, map[string]*catalog.Walk, error) {
	push, err := cat.PushStatuses(context.Background(), now)
	if err != nil {
		return nil, nil, err
	}
	walks, err := cat.Walks(context.Background(), now.UTC().Truncate(24*time.Hour))
	return push, walks, err
}

// pushNext is what NEXT says of a feed that push spares polls: a webhook
// source is never polled; a feed whose push is live is polled once a day
// (catalog.PushSafetyPoll), or not at all when its push is only; ok false
// for a feed polled as any other.
func pushNext(l *listing, st catalog.FeedState, now time.Time) (string, bool) {
	p := l.PushState
	switch {
	case l.SourceType == ndjson.SourceWebhook:
		return "on push", true
	case p == nil || !p.Live:
		return "", false
	case p.Mode == ndjson.PushOnly:
		return "on push", true
	}
	at := st.LastFetchAt.Add(catalog.PushSafetyPoll)
	if st.NextFetchAt.After(at) {
		at = st.NextFetchAt.Time
	}
	return stats.Until(now, at) + " (daily)", true
}

// addColumn puts the column head, of cells (one a row below the head),
// before the table's last (the URL), when a cell is not empty.
func addColumn(rows [][]string, cols []table.Col, head string, cells []string) ([][]string, []table.Col) {
	if !slices.ContainsFunc(cells, func(c string) bool { return c != "" }) {
		return rows, cols
	}
	for i := range rows {
		cell := head
		if i > 0 {
			cell = cmp.Or(safetext.Cell(cells[i-1], 60), "-")
		}
		last := len(rows[i]) - 1
		rows[i] = append(rows[i][:last:last], cell, rows[i][last])
	}
	last := len(cols) - 1
	return rows, append(cols[:last:last], table.Col{Min: 10}, cols[last])
}

// applyPush makes the push changes of c to s.
func (c Changes) applyPush(s *ndjson.Subscription) error {
	if c.Push != nil {
		v, err := checkPush(*c.Push)
		if err != nil {
			return err
		}
		if s.SourceType != ndjson.SourceWebhook { // pushed to, always
			s.Push = v
		}
	}
	if c.Backfill != nil {
		// A webhook source or a website has no archive to walk.
		s.Backfill = *c.Backfill && s.SourceType != ndjson.SourceWebhook && s.SourceType != ndjson.SourceWebsite
	}
	if c.NewSecret {
		if s.SourceType != ndjson.SourceWebhook {
			return fmt.Errorf("%w: only a webhook source has a secret to renew", ErrInvalid)
		}
		secret, err := NewSecret(nil)
		if err != nil {
			return err
		}
		s.WebhookSecret = secret
	}
	return nil
}

// sayNewSecrets shows the new secrets of the webhook sources refs name,
// once.
func sayNewSecrets(cfg Config, refs []string) error {
	cat, done, err := cfg.catalog()
	if err != nil {
		return err
	}
	defer done()
	subs, err := cat.Subscriptions(context.Background())
	if err != nil {
		return err
	}
	picked, err := pick(subs, refs)
	if err != nil {
		return err
	}
	for _, i := range picked {
		sayWebhook(cfg, subs[i])
	}
	return nil
}
