// Package due is feed-due: it decides which subscriptions are due for a
// fetch now and writes a due record for each.
package due

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/internal/storage"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Item limits on a first or stale fetch (seed 001 §4.2): only the most
// recent entries of a feed never seen, or not seen for a long time, are
// taken, so a subscription does not flood its consumers with old news.
const (
	FirstFetchItemLimit = 20
	StaleAfter          = 15 * 24 * time.Hour
)

// Config is everything feed-due touches.
type Config struct {
	Out   *ndjson.Writer
	Log   *slog.Logger
	Store *storage.Store
	Now   time.Time // the moment to decide for
	All   bool      // every enabled subscription, due or not
	Feeds []string  // these subscriptions (ids, id prefixes or URLs), due or not
	// Sched are the scheduler's parameters, for the decision on a feed
	// never fetched (and for Explain).
	Sched sched.Params
}

// Run writes a due record for every enabled subscription whose
// next_fetch_at (from the state feed-store wrote) has passed, or that was
// never fetched, most overdue first.
func Run(cfg Config) error {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	subs, bad, err := cfg.Store.Subscriptions()
	if err != nil {
		return err
	}
	if bad > 0 {
		cfg.Log.Warn("skipped malformed lines in the subscription list", "lines", bad, "file", cfg.Store.Path(storage.SubscriptionsFile))
	}
	states, err := cfg.Store.States()
	if err != nil {
		return err
	}
	forced := map[int]bool{}
	for _, ref := range cfg.Feeds {
		i, err := storage.FindSubscription(subs, ref)
		if err != nil {
			return err
		}
		forced[i] = true
	}

	due := make([]ndjson.Due, 0, len(subs)) // no regrowing 100,000 large structs; pages untouched cost nothing
	for i, sub := range subs {
		st, fetched := states.ByFeed[sub.FeedID]
		fetched = fetched && !st.LastFetchAt.IsZero()
		d := ndjson.Due{
			Header:     ndjson.Head(ndjson.TypeDue),
			FeedID:     sub.FeedID,
			URL:        sub.URL,
			SourceType: cmp.Or(sub.SourceType, ndjson.SourceAuto),
			Name:       sub.Name,
			Labels:     nonNil(sub.Labels),
			Validators: validators(st),
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
		if st.Sched != nil && cfg.Now.Before(st.Sched.RetryUntil.Time) && (forced[i] || cfg.All) {
			// The server asked for this much quiet: --all and --feed make a
			// feed due before its schedule says, not before its server.
			cfg.Log.Info("held back: the server's Retry-After runs", "feed_id", sub.FeedID, "until", st.Sched.RetryUntil)
			continue
		}
		switch {
		case forced[i]:
			if sub.Disabled {
				cfg.Log.Info("fetching a disabled subscription because it was asked for by name", "feed_id", sub.FeedID)
			}
			d.Reason, d.ScheduledAt = ndjson.ReasonForced, ndjson.At(cfg.Now)
		case len(cfg.Feeds) > 0 || sub.Disabled:
			continue
		case pausedByHand(sub, cfg.Now):
			if cfg.All {
				d.Reason, d.ScheduledAt = ndjson.ReasonForced, ndjson.At(cfg.Now)
			} else {
				continue
			}
		case st.Sched != nil && st.Sched.Due(cfg.Now) && st.Sched.Reason == sched.ReasonManual:
			d.Reason, d.ScheduledAt = ndjson.ReasonManual, st.Sched.NextAt
		case !fetched:
			d.Reason, d.ScheduledAt = ndjson.ReasonNew, sub.CreatedAt
		case st.Sched != nil && st.Sched.Due(cfg.Now):
			// A feed the scheduler disabled for errors is due too: its
			// probes are how it comes back.
			d.Reason, d.ScheduledAt = ndjson.ReasonScheduled, st.Sched.NextAt
		case st.Sched == nil && !cfg.Now.Before(st.NextFetchAt.Time):
			d.Reason, d.ScheduledAt = ndjson.ReasonScheduled, st.NextFetchAt
		case cfg.All:
			d.Reason, d.ScheduledAt = ndjson.ReasonForced, ndjson.At(cfg.Now)
		default:
			continue
		}
		if d.ScheduledAt.IsZero() {
			d.ScheduledAt = ndjson.At(cfg.Now)
		}
		if !fetched || st.LastSuccessAt.IsZero() || cfg.Now.Sub(st.LastSuccessAt.Time) > StaleAfter {
			d.ItemLimit = FirstFetchItemLimit
		}
		due = append(due, d)
	}
	// Sorted by pointer: a Due is large, and moving 100,000 of them about
	// took longer than all the rest (feed ids are unique: the order is
	// total, stable or not).
	order := make([]*ndjson.Due, len(due))
	for i := range due {
		order[i] = &due[i]
	}
	slices.SortFunc(order, func(a, b *ndjson.Due) int {
		return cmp.Or(a.ScheduledAt.Compare(b.ScheduledAt.Time), cmp.Compare(a.FeedID, b.FeedID))
	})
	for _, d := range order {
		if err := cfg.Out.Write(d); err != nil {
			return fmt.Errorf("write stdout: %w", err)
		}
	}
	if err := cfg.Out.Flush(); err != nil {
		return fmt.Errorf("write stdout: %w", err)
	}
	cfg.Log.Debug("due", "feeds", len(due), "subscriptions", len(subs))
	return nil
}

// pausedByHand reports whether feed-sub pause holds the feed at now.
func pausedByHand(sub ndjson.Subscription, now time.Time) bool {
	return now.Before(sub.PausedUntil.Time)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// validators are the validators a feed's next fetch sends: none after a
// body that did not parse. feed-store keeps only those of bodies read, but
// a store written before it did may hold a failed body's, and a 304 to
// them would skip the body a raised limit could read now.
func validators(st storage.FeedState) ndjson.Validators {
	if st.LastError != nil && st.LastError.Class == ndjson.ClassParse {
		return ndjson.Validators{}
	}
	return st.Validators
}
