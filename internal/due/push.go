package due

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/internal/stats"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Push and history in feed-due (docs/design.md#push, #backfill).
//
// A webhook source is never due: nothing is fetched of it. While a feed's
// WebSub push is live (verified, its lease running, and no poll since the
// last push found what the pushes had missed), its scheduled polls are
// held: it is polled once a day only (catalog.PushSafetyPoll), as a check,
// or never with push only; a lapsed lease, a dead hub or a miss returns
// it to its scheduler's interval by itself, with nothing to do. A refetch,
// --all, --feed and a first fetch are not held.
//
// The next page of each feed's archive walk is due too (reason archive),
// after the feeds' own fetches (live fetches win): one a run (a page's
// link onward is known once it is read), 20 a day, none while the feed
// backs off, is paused or disabled.

// pushHeld reports whether a push that lives holds back the due d of the
// feed f at now, and why.
func (cfg *Config) pushHeld(f *catalog.Feed, d *ndjson.Due, p *catalog.PushStatus) (bool, string) {
	if cfg.All || len(cfg.Feeds) > 0 || d.Reason != ndjson.ReasonScheduled || p == nil || !p.Live || f.Sub.Push == ndjson.PushOff {
		return false, ""
	}
	if f.Sub.Push == ndjson.PushOnly {
		return true, "push only, and the push lives"
	}
	next := f.State.LastFetchAt.Add(catalog.PushSafetyPoll)
	if cfg.Now.Before(next) {
		return true, "the push lives: polled once a day, next at " + next.UTC().Format(time.RFC3339)
	}
	return false, ""
}

// pushState reads every feed's push at cfg.Now.
func (cfg *Config) pushState(ctx context.Context, cat *catalog.Catalog) (map[string]*catalog.PushStatus, error) {
	return cat.PushStatuses(ctx, cfg.Now)
}

// archiveDues are the due records of the next pages of the feeds' walks,
// in feed id order; forced, when not nil, are the feeds asked for by
// name: only theirs.
func (cfg *Config) archiveDues(ctx context.Context, cat *catalog.Catalog, forced map[string]bool) ([]ndjson.Due, error) {
	walks, err := cat.Walks(ctx, cfg.Now.UTC().Truncate(24*time.Hour))
	if err != nil || len(walks) == 0 {
		return nil, err
	}
	var out []ndjson.Due
	for _, id := range slices.Sorted(maps.Keys(walks)) {
		w := walks[id]
		if forced != nil && !forced[id] || w.Next(w.Wanted) == "" {
			continue // most feeds with a head: read, or not wanted
		}
		sub, ok, err := cat.Subscription(ctx, id)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		st, _, err := cat.State(ctx, id)
		if err != nil {
			return nil, err
		}
		u, why := cfg.archiveNext(sub, st, w)
		if u == "" {
			if why != "" {
				cfg.Log.Debug("archive walk held", "feed_id", id, "why", why)
			}
			continue
		}
		out = append(out, ndjson.Due{
			Header: ndjson.Head(ndjson.TypeDue), FeedID: id, URL: u, SourceType: cmp.Or(sub.SourceType, ndjson.SourceAuto),
			Name: sub.Name, Labels: ndjson.NonNil(sub.Labels), Reason: ndjson.ReasonArchive, Access: sub.Access,
		})
	}
	return out, nil
}

// archiveNext is the page of the walk w to fetch now for the feed of sub
// and st, "" for none, with why not when a page waits.
func (cfg *Config) archiveNext(sub ndjson.Subscription, st catalog.FeedState, w *catalog.Walk) (string, string) {
	u := w.Next(sub.Backfill)
	switch {
	case u == "":
		return "", ""
	case sub.Disabled || sub.SourceType == ndjson.SourceWebhook || sub.SourceType == ndjson.SourceWebsite:
		return "", "the feed is disabled, or has no archive"
	case pausedByHand(sub, cfg.Now):
		return "", "the feed is paused"
	case st.Sched != nil && (st.Sched.Lifecycle == sched.StateBackoff || st.Sched.Lifecycle == sched.StatePaused || st.Sched.Lifecycle == sched.StateDisabled):
		return "", "the feed is " + string(st.Sched.Lifecycle)
	case st.Sched != nil && cfg.Now.Before(st.Sched.RetryUntil.Time):
		return "", "the server's Retry-After runs"
	case w.PagesToday >= catalog.MaxArchivePagesPerDay:
		return "", fmt.Sprintf("%d pages today already, the most a day", w.PagesToday)
	}
	return u, ""
}

// explainPush writes, for feed-due --explain, the feed's push and walk.
func (cfg *Config) explainPush(ctx context.Context, cat *catalog.Catalog, sub ndjson.Subscription, fs catalog.FeedState, b *strings.Builder) error {
	now := cfg.Now
	if sub.SourceType == ndjson.SourceWebhook {
		fmt.Fprintf(b, "Webhook source: never polled; its content is POSTed to feed-serve at PUBLIC_URL/webhooks/%s.\n", sub.FeedID)
	}
	ps, err := cat.PushStatuses(ctx, now)
	if err != nil {
		return err
	}
	mode := cmp.Or(sub.Push, ndjson.PushPreferred)
	if p := ps[sub.FeedID]; p != nil && sub.SourceType != ndjson.SourceWebhook {
		b.WriteString("\nPush (WebSub):\n")
		fmt.Fprintf(b, "  mode            %s\n", mode)
		if p.Hub != "" {
			fmt.Fprintf(b, "  hub, topic      %s, %s\n", p.Hub, p.Topic)
			fmt.Fprintf(b, "  subscription    %s", cmp.Or(p.State, "not asked yet (feed-sub push sync asks; it needs --public-url)"))
			if !p.VerifiedAt.IsZero() {
				fmt.Fprintf(b, ", verified %s", p.VerifiedAt)
			}
			if !p.LeaseEnd.IsZero() {
				fmt.Fprintf(b, ", lease until %s (%s)", p.LeaseEnd, stats.Until(now, p.LeaseEnd.Time))
			}
			if p.Reason != "" {
				fmt.Fprintf(b, ": %s", p.Reason)
			}
			b.WriteString("\n")
		}
		if !p.LastPushAt.IsZero() {
			fmt.Fprintf(b, "  last push       %s (%s ago), %d in all\n", p.LastPushAt, ago(now, p.LastPushAt.Time), p.Pushes)
		}
		live := p.Live && mode != ndjson.PushOff && !sub.Disabled
		switch {
		case live && mode == ndjson.PushOnly:
			b.WriteString("  polls           none while the push lives (push only)\n")
		case live:
			fmt.Fprintf(b, "  polls           once a day while the push lives: next at %s at the soonest\n", fs.LastFetchAt.Add(catalog.PushSafetyPoll).UTC().Format(time.RFC3339))
		case p.Missed():
			fmt.Fprintf(b, "  polls           at the scheduler's interval: a poll at %s found entries the pushes had not brought, and no push came since\n", p.MissedAt)
		default:
			b.WriteString("  polls           at the scheduler's interval: the push does not live\n")
		}
	}
	walks, err := cat.Walks(ctx, now.UTC().Truncate(24*time.Hour))
	if err != nil {
		return err
	}
	if w := walks[sub.FeedID]; w != nil && (w.Head != "" || w.State != "") {
		b.WriteString("\nBackfill (RFC 5005):\n")
		fmt.Fprintf(b, "  setting         %t; walk %s\n", sub.Backfill, cmp.Or(w.State, "never started"))
		if w.Head != "" {
			fmt.Fprintf(b, "  head            %s %s (read: %t)\n", w.HeadKind, w.Head, w.HeadRead)
		}
		if w.State != "" {
			fmt.Fprintf(b, "  walked          %d pages, %d entries, %d pages today of %d", w.Pages, w.Entries, w.PagesToday, catalog.MaxArchivePagesPerDay)
			if w.Reason != "" {
				fmt.Fprintf(b, "; %s", w.Reason)
			}
			b.WriteString("\n")
		}
		switch u, why := cfg.archiveNext(sub, fs, w); {
		case u != "":
			fmt.Fprintf(b, "  next page       %s: due now\n", u)
		case why != "":
			fmt.Fprintf(b, "  next page       %s: held, %s\n", w.Next(sub.Backfill), why)
		}
	}
	return nil
}
