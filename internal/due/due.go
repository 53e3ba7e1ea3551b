// Package due is feed-due: it decides which subscriptions are due for a
// fetch now and writes a due record for each.
package due

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/internal/stats"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Item limits on a first or stale fetch (docs/design.md#backfill): only the most
// recent entries of a feed never seen, or not seen for a long time, are
// taken, so a subscription does not flood its consumers with old news.
const (
	FirstFetchItemLimit = 20
	StaleAfter          = 15 * 24 * time.Hour
)

// Config is everything feed-due touches.
type Config struct {
	Out     *ndjson.Writer
	Log     *slog.Logger
	Store   *storedir.Store
	Catalog *catalog.Catalog // the store's catalog; nil: opened for the run
	Now     time.Time        // the moment to decide for
	// All lists every subscription in service, due or not: enabled,
	// failing or refused, as feed-sub ls says (stats.StatusOf), not
	// paused or disabled; IncludePaused adds the paused ones (by hand, or
	// by the scheduler). A disabled one is listed only by name (Feeds).
	All           bool
	IncludePaused bool
	Feeds         []string // these subscriptions (ids, id prefixes or URLs), due or not
	// AllowPrivate says every feed may be on a private address
	// (FEEDPIPE_ALLOW_PRIVATE=1): a feed whose address was refused is
	// due at once, as is one allowed such addresses by its subscription.
	AllowPrivate bool
	// Sched are the scheduler's parameters, for the decision on a feed
	// never fetched (and for Explain).
	Sched sched.Params
	// Msg, when set, is told, when nothing is due, which feed is due next
	// and when: feed-due sets it to stderr on a terminal.
	Msg io.Writer
}

// Run writes a due record for every enabled subscription whose
// next_fetch_at (from the state feed-store wrote) has passed, or that was
// never fetched, most overdue first.
func Run(cfg Config) error {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	ctx := context.Background()
	cat, done, err := catalog.Use(ctx, cfg.Catalog, cfg.Store, cfg.Log)
	if err != nil {
		return err
	}
	defer done()
	// Feeds named are looked up in the whole list; otherwise the catalog
	// gives the feeds that may be due (all of them with --all), and the
	// loop below decides.
	filter := catalog.FeedFilter{DueBy: cfg.Now, Brief: true}
	forced := map[string]bool{}
	if len(cfg.Feeds) > 0 {
		subs, err := cat.Subscriptions(ctx)
		if err != nil {
			return err
		}
		for _, ref := range cfg.Feeds {
			i, err := catalog.FindSubscription(subs, ref)
			if err != nil {
				return err
			}
			forced[subs[i].FeedID] = true
		}
		filter = catalog.FeedFilter{Brief: true}
	} else if cfg.All || cfg.allowedSince(ctx, cat) {
		filter = catalog.FeedFilter{Brief: true}
	}
	// Each due record is kept encoded, as the line it is written as: a
	// record in memory took twice its line, and with --all they were most
	// of feed-due's memory (100,000 feeds: 170 MB).
	var (
		due   []dueLine
		lines lineArena
	)
	n := 0
	push, err := cfg.pushState(ctx, cat) // push.go
	if err != nil {
		return err
	}
	err = cat.Feeds(ctx, filter, func(f *catalog.Feed) error {
		n++
		d, ok := cfg.due(f, forced[f.Sub.FeedID])
		if !ok {
			return nil
		}
		if held, why := cfg.pushHeld(f, &d, push[f.Sub.FeedID]); held {
			cfg.Log.Debug("held: "+why, "feed_id", f.Sub.FeedID)
			return nil
		}
		line, err := lines.add(&d)
		if err != nil {
			return err
		}
		due = append(due, dueLine{at: d.ScheduledAt.UnixNano(), feedID: d.FeedID, line: line})
		return nil
	})
	if err != nil {
		return err
	}
	// Most overdue first; feed ids are unique: the order is total.
	slices.SortFunc(due, func(a, b dueLine) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.feedID, b.feedID))
	})
	for _, d := range due {
		if err := cfg.Out.WriteRaw(d.line); err != nil {
			return fmt.Errorf("write stdout: %w", err)
		}
	}
	// The walks' pages come after the feeds' own fetches (push.go).
	var named map[string]bool
	if len(cfg.Feeds) > 0 {
		named = forced
	}
	pages, err := cfg.archiveDues(ctx, cat, named)
	if err != nil {
		return err
	}
	for i := range pages {
		if err := cfg.Out.Write(&pages[i]); err != nil {
			return fmt.Errorf("write stdout: %w", err)
		}
	}
	if err := cfg.Out.Flush(); err != nil {
		return fmt.Errorf("write stdout: %w", err)
	}
	cfg.Log.Info("due", "feeds", len(due), "archive_pages", len(pages), "looked_at", n)
	if len(due)+len(pages) == 0 && cfg.Msg != nil && len(cfg.Feeds) == 0 {
		return cfg.sayNext(ctx, cat)
	}
	return nil
}

// metaAllowPrivate is the catalog's record of whether the last feed-fetch
// let every feed reach private addresses (RecordAllowPrivate).
const metaAllowPrivate = "fetch:allow_private"

// RecordAllowPrivate keeps in the catalog whether feed-fetch ran letting
// every feed reach private addresses (FEEDPIPE_ALLOW_PRIVATE=1), when that
// changed: feed-fetch calls it after its run, so that the next feed-due
// knows the feeds refused before were fetched since.
func RecordAllowPrivate(ctx context.Context, cat *catalog.Catalog, allow bool) error {
	var was bool
	if _, err := cat.Meta(ctx, metaAllowPrivate, &was); err != nil || was == allow {
		return err
	}
	return cat.Update(ctx, func(t *catalog.Tx) error { return t.SetMeta(metaAllowPrivate, allow) })
}

// allowedSince says whether every feed is allowed private addresses
// (AllowPrivate) since the last feed-fetch, which ran without
// (RecordAllowPrivate): the feeds it refused are due now, and only a look
// at every feed finds them, as the catalog keeps a refused feed's next
// fetch (after its interval), not its refusal.
func (cfg *Config) allowedSince(ctx context.Context, cat *catalog.Catalog) bool {
	var was bool
	if !cfg.AllowPrivate {
		return false
	}
	_, err := cat.Meta(ctx, metaAllowPrivate, &was)
	return err == nil && !was
}

// sayNext tells cfg.Msg that nothing is due, and which feed is due next
// and when, as feed-sub ls's NEXT says it (stats.StatusOf).
func (cfg *Config) sayNext(ctx context.Context, cat *catalog.Catalog) error {
	var (
		next     time.Time
		nextSub  ndjson.Subscription
		nextName string
		subs     int
	)
	err := cat.Feeds(ctx, catalog.FeedFilter{}, func(f *catalog.Feed) error {
		subs++
		st := stats.StatusOf(f.Sub, f.State, cfg.Now)
		if st.Listed && (next.IsZero() || st.Next.Before(next)) {
			next, nextSub, nextName = st.Next, f.Sub, cmp.Or(f.Sub.Name, f.State.Title)
		}
		return nil
	})
	if err != nil {
		return err
	}
	switch {
	case subs == 0:
		_, err = fmt.Fprintln(cfg.Msg, "feed-due: nothing is due: there are no subscriptions (feed-sub add URL subscribes to a feed)")
	case next.IsZero():
		_, err = fmt.Fprintf(cfg.Msg, "feed-due: nothing is due, and nothing will be: every subscription is disabled (feed-sub ls says why; feed-sub enable puts one back)\n")
	default:
		what := nextSub.URL
		if nextName != "" {
			what = fmt.Sprintf("%s (%s)", nextName, nextSub.URL)
		}
		_, err = fmt.Fprintf(cfg.Msg, "feed-due: nothing is due now; next: %s, %s, at %s\n", what, stats.Until(cfg.Now, next), next.UTC().Format(time.RFC3339))
	}
	return err
}

// dueLine is a due record encoded, and what it is sorted by.
type dueLine struct {
	at     int64 // scheduled_at, Unix nanoseconds
	feedID string
	line   []byte // without its newline
}

// lineArena holds encoded lines in blocks, so that 100,000 of them are a
// few allocations that are never copied to grow.
type lineArena struct{ block []byte }

const arenaBlock = 1 << 20

// add encodes d and returns its line, without the newline.
func (a *lineArena) add(d *ndjson.Due) ([]byte, error) {
	if len(a.block) > arenaBlock-4096 {
		a.block = nil
	}
	if a.block == nil {
		a.block = make([]byte, 0, arenaBlock)
	}
	start := len(a.block)
	b, err := ndjson.Append(a.block, d)
	if err != nil {
		return nil, err
	}
	if cap(b) != cap(a.block) {
		// Longer than the block's room: it got a block of its own.
		a.block = nil
		return b[start : len(b)-1 : len(b)-1], nil
	}
	a.block = b
	return b[start : len(b)-1 : len(b)-1], nil
}

// due decides whether the feed f is due, forced when named by --feed, and
// makes its due record.
func (cfg *Config) due(f *catalog.Feed, forced bool) (ndjson.Due, bool) {
	sub, st := &f.Sub, &f.State
	if sub.SourceType == ndjson.SourceWebhook {
		return ndjson.Due{}, false // nothing to fetch: pushed to (push.go)
	}
	fetched := f.Stored && !st.LastFetchAt.IsZero()
	d := ndjson.Due{
		Header:     ndjson.Head(ndjson.TypeDue),
		FeedID:     sub.FeedID,
		URL:        sub.URL,
		SourceType: cmp.Or(sub.SourceType, ndjson.SourceAuto),
		Name:       sub.Name,
		Labels:     ndjson.NonNil(sub.Labels),
		Validators: validators(*st),
		Fulltext:   sub.Fulltext,
		Scrape:     sub.Scrape,
		Access:     sub.Access,
		Last: ndjson.LastFetch{
			BodySHA256:    st.LastBodySHA256,
			ContentLength: st.LastContentLength,
			MovedTo:       st.MovedTo,
			MovedCount:    st.MovedCount,
		},
	}
	if st.Sched != nil && cfg.Now.Before(st.Sched.RetryUntil.Time) && (forced || cfg.All) {
		// The server asked for this much quiet: --all and --feed make a
		// feed due before its schedule says, not before its server.
		cfg.Log.Info("held back: the server's Retry-After runs", "feed_id", sub.FeedID, "until", st.Sched.RetryUntil)
		return d, false
	}
	switch {
	case forced:
		if sub.Disabled {
			cfg.Log.Info("fetching a disabled subscription because it was asked for by name", "feed_id", sub.FeedID)
		}
		d.Reason, d.ScheduledAt = ndjson.ReasonForced, ndjson.At(cfg.Now)
	case len(cfg.Feeds) > 0 || sub.Disabled:
		return d, false
	case pausedByHand(*sub, cfg.Now):
		if !cfg.All || !cfg.IncludePaused {
			return d, false
		}
		d.Reason, d.ScheduledAt = ndjson.ReasonForced, ndjson.At(cfg.Now)
	case st.Sched != nil && st.Sched.Due(cfg.Now) && st.Sched.Reason == sched.ReasonManual:
		d.Reason, d.ScheduledAt = ndjson.ReasonManual, st.Sched.NextAt
	case !fetched:
		d.Reason, d.ScheduledAt = ndjson.ReasonNew, sub.CreatedAt
	case st.Sched != nil && st.Sched.Reason == sched.ReasonRefused && st.Sched.Lifecycle != sched.StateDisabled && (sub.AllowPrivate || cfg.AllowPrivate):
		// Its address was refused, and is allowed now: due at once, not
		// after the interval the refusal left it. The refused fetch's
		// time names the run, the same in every feed-due until it is
		// fetched.
		d.Reason, d.ScheduledAt = ndjson.ReasonScheduled, st.LastFetchAt
	case st.Sched != nil && st.Sched.Due(cfg.Now):
		// A feed the scheduler disabled for errors is due too: its
		// probes are how it comes back.
		d.Reason, d.ScheduledAt = ndjson.ReasonScheduled, st.Sched.NextAt
	case st.Sched == nil && !cfg.Now.Before(st.NextFetchAt.Time):
		d.Reason, d.ScheduledAt = ndjson.ReasonScheduled, st.NextFetchAt
	case cfg.All && cfg.allLists(sub, st):
		d.Reason, d.ScheduledAt = ndjson.ReasonForced, ndjson.At(cfg.Now)
	default:
		return d, false
	}
	if d.ScheduledAt.IsZero() {
		d.ScheduledAt = ndjson.At(cfg.Now)
	}
	if !fetched || st.LastSuccessAt.IsZero() || cfg.Now.Sub(st.LastSuccessAt.Time) > StaleAfter {
		d.ItemLimit = FirstFetchItemLimit
	}
	return d, true
}

// allLists says whether --all lists the feed of sub and st, not due:
// one in service (enabled, failing or refused), or paused with
// IncludePaused; never a disabled one.
func (cfg *Config) allLists(sub *ndjson.Subscription, st *catalog.FeedState) bool {
	switch stats.StatusOf(*sub, *st, cfg.Now).State {
	case stats.StateEnabled, stats.StateFailing, stats.StateRefused:
		return true
	case stats.StatePaused:
		return cfg.IncludePaused
	}
	return false
}

// pausedByHand reports whether feed-sub pause holds the feed at now.
func pausedByHand(sub ndjson.Subscription, now time.Time) bool {
	return now.Before(sub.PausedUntil.Time)
}

// validators are the validators a feed's next fetch sends: none after a
// body that did not parse. feed-store keeps only those of bodies read, but
// a store written before it did may hold a failed body's, and a 304 to
// them would skip the body a raised limit could read now.
func validators(st catalog.FeedState) ndjson.Validators {
	if st.LastError != nil && st.LastError.Class == ndjson.ClassParse {
		return ndjson.Validators{}
	}
	return st.Validators
}
