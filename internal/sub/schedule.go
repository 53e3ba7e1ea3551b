package sub

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/plural"
	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/internal/stats"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Overrides are the scheduler settings `feed-sub set` changes; a nil field
// is left as it is.
type Overrides struct {
	Interval *time.Duration // fixed polling interval, 0 to clear; clamped to [5m, 24h]
	Min      *time.Duration // the feed's shortest interval, 0 to clear
	Max      *time.Duration // its longest, 0 to clear
	Cron     *string        // a cron expression (UTC), "" to clear
}

// SetOverrides changes the scheduler settings of the subscriptions refs
// name: Set with only these.
func SetOverrides(cfg Config, refs []string, o Overrides) error {
	return Set(cfg, refs, Changes{Overrides: o})
}

// clampInterval keeps a fixed polling interval within [5m, 24h]
// (docs/design.md#rules-every-policy-keeps); 0 means none.
func clampInterval(iv time.Duration, note func(string)) (time.Duration, error) {
	switch {
	case iv < 0:
		return 0, fmt.Errorf("%w: interval %s is negative", ErrInvalid, iv)
	case iv > 0 && iv < MinInterval:
		note(fmt.Sprintf("interval %s raised to the minimum, %s", iv, MinInterval))
		return MinInterval, nil
	case iv > MaxInterval:
		note(fmt.Sprintf("interval %s lowered to the maximum, %s", iv, MaxInterval))
		return MaxInterval, nil
	}
	return iv, nil
}

// Pause holds the subscriptions refs name until the time until (zero:
// resume now). feed-due skips a paused feed; the scheduler keeps its next
// decisions at or after the end of the pause.
func Pause(cfg Config, refs []string, until time.Time) error {
	cfg.defaults()
	v := verbs{done: "paused until " + ndjson.At(until).String() + ":", same: "%s is paused until then already"}
	if until.IsZero() {
		v = verbs{done: "resumed", same: "%s is not paused"}
	} else if !until.After(cfg.Now()) {
		return fmt.Errorf("%w: pause until %s: that is not in the future", ErrInvalid, ndjson.At(until))
	}
	now := cfg.Now()
	return edit(cfg, refs, v, func(s *ndjson.Subscription) editResult {
		// A pause whose time has passed is none: resumed already.
		if s.PausedUntil.Equal(until) || until.IsZero() && !s.PausedUntil.After(now) {
			return unchanged
		}
		s.PausedUntil = ndjson.At(until)
		return changed
	})
}

// Refetch makes the subscriptions refs name due now: the scheduler's
// manual nudge (reason manual), which only a running Retry-After holds
// back. p are the scheduler's parameters. Each decision is stored and
// logged as feed-store logs its own (sched.LogDecision).
func Refetch(cfg Config, refs []string, p sched.Params) error {
	cfg.defaults()
	now := cfg.Now()
	rnd := rand.New(rand.NewPCG(uint64(now.UnixNano()), 1))
	// What it says waits until the change is saved: "due now" is not
	// said of a change a failure lost.
	var r report
	err := changeStates(cfg, refs, func(s ndjson.Subscription, fs *catalog.FeedState) bool {
		d := nudge(cfg, s, fs, fs.SchedState(), p, now, rnd)
		if d.Kind == sched.FetchNow {
			r.feed(true, "due now: %s", s.URL)
		} else {
			r.feed(false, "%s: %s", s.URL, strings.SplitN(d.Explain(), "\n", 2)[0])
		}
		if !s.PausedUntil.IsZero() && now.Before(s.PausedUntil.Time) {
			r.note("note: %s is paused until %s; feed-sub resume lifts the pause", s.URL, s.PausedUntil)
		}
		return true
	})
	if err == nil {
		r.write(cfg, func(due, held int) string {
			s := "made " + plural.Count(due, "feed", "feeds") + " due now"
			if held > 0 {
				s += fmt.Sprintf("; %d held back by a Retry-After from their server", held)
			}
			return s
		})
	}
	return err
}

// nudge stores and logs the scheduler's decision for a manual nudge of the
// feed whose scheduler state is st.
func nudge(cfg Config, s ndjson.Subscription, fs *catalog.FeedState, st sched.State, p sched.Params, now time.Time, rnd *rand.Rand) sched.Decision {
	st, d := sched.Next(st, sched.Outcome{Kind: sched.Nudged}, p, sched.OverridesOf(s), now, rnd)
	fs.SetSched(st, d)
	level := slog.LevelInfo
	if cfg.Bulk {
		level = slog.LevelDebug
	}
	sched.LogDecision(cfg.Log, level, s.FeedID, "", d)
	return d
}

// Enable enables the subscriptions refs name: a subscription disabled by
// hand is fetched again, and a feed the scheduler disabled for errors, or
// left failing or paused by its error budget, starts again healthy, its
// posting history kept (sched.Enable). Both are nudged as Refetch nudges:
// due now unless a Retry-After still runs. A feed enabled and healthy (or
// cooling down, or paused by hand) is left as it is, and said to be: it
// has nothing to enable, and refetch is there to make it due now. p are
// the scheduler's parameters.
func Enable(cfg Config, refs []string, p sched.Params) error {
	cfg.defaults()
	wasDisabled, err := enableSubscriptions(cfg, refs)
	if err != nil {
		return err
	}
	now := cfg.Now()
	rnd := rand.New(rand.NewPCG(uint64(now.UnixNano()), 1))
	// What it says waits until the change is saved: "due now" is not
	// said of a change a failure lost.
	var r report
	err = changeStates(cfg, refs, func(s ndjson.Subscription, fs *catalog.FeedState) bool {
		byHand := wasDisabled[s.FeedID]
		decided := fs.Sched != nil && !fs.LastFetchAt.IsZero()
		if !decided || !needsEnable(*fs.Sched) {
			switch {
			case byHand && !decided:
				r.feed(true, "enabled %s", s.URL) // never fetched: due at once
				return false
			case byHand: // nudged below: back in service, it is fetched now
			case now.Before(s.PausedUntil.Time):
				r.feed(false, "%s is enabled already; it is paused until %s: feed-sub resume lifts the pause", s.URL, s.PausedUntil)
				return false
			default:
				r.feed(false, "%s is enabled already; nothing changed (feed-sub refetch makes it due now)", s.URL)
				return false
			}
		}
		was, lastError := *fs.Sched, fs.LastError
		d := nudge(cfg, s, fs, sched.Enable(was, now), p, now, rnd)
		fs.ConsecutiveFailures = 0
		when := "due now"
		if d.Kind != sched.FetchNow {
			when = strings.SplitN(d.Explain(), "\n", 2)[0]
		}
		switch {
		case was.Lifecycle == sched.StateDisabled:
			r.feed(true, "re-enabled %s (it was disabled: %s); %s", s.URL, was.DisabledReason, when)
		case was.Lifecycle == sched.StateBackoff:
			r.feed(true, "enabled %s again (it was failing: %d in a row, the last %s); %s", s.URL, was.Failures, stats.ErrorCode(lastError), when)
		case was.Lifecycle == sched.StatePaused:
			r.feed(true, "enabled %s again (the scheduler had paused it: %s); %s", s.URL, was.Reason, when)
		default:
			r.feed(true, "enabled %s; %s", s.URL, when)
		}
		return true
	})
	if err == nil {
		r.write(cfg, counted("enabled", "enabled already"))
	}
	return err
}

// needsEnable says whether enable has something to undo in the scheduler
// state st: a feed disabled for errors, failing, or paused by its error
// budget or a Retry-After. Healthy and cooling down (ls shows both as
// enabled) and a pause by hand (resume lifts it) are not.
func needsEnable(st sched.State) bool {
	switch st.Lifecycle {
	case sched.StateDisabled, sched.StateBackoff:
		return true
	case sched.StatePaused:
		return st.Reason != sched.ReasonPaused
	}
	return false
}

// enableSubscriptions clears the disabled flag of the subscriptions refs
// name, in one atomic rewrite, and says which feeds had it.
func enableSubscriptions(cfg Config, refs []string) (wasDisabled map[string]bool, err error) {
	wasDisabled = map[string]bool{}
	err = edit(cfg, refs, verbs{}, func(s *ndjson.Subscription) editResult {
		if !s.Disabled {
			return unchanged
		}
		wasDisabled[s.FeedID] = true
		s.Disabled = false
		return changed
	})
	return wasDisabled, err
}

// changeStates applies change to the stored feed state of each
// subscription refs name, under the store's writer lock (feed-store's): a
// running feed-store is waited for. Only the states change says it
// changed are written.
func changeStates(cfg Config, refs []string, change func(ndjson.Subscription, *catalog.FeedState) (changed bool)) error {
	cfg.defaults()
	cat, subs, indexes, done, err := cfg.pickInCatalog(refs)
	if err != nil {
		return err
	}
	defer done()
	ctx := context.Background()
	picked := make([]ndjson.Subscription, len(indexes))
	for k, i := range indexes {
		picked[k] = subs[i]
	}
	unlock, err := cfg.Store.Lock(storedir.StoreLock, true, func() {
		fmt.Fprintf(cfg.Msg, "feed-sub: waiting for the store lock: feed-store is writing\n")
	})
	if err != nil {
		return err
	}
	defer unlock()
	return cat.Update(ctx, func(t *catalog.Tx) error {
		for _, s := range picked {
			fs, _, err := t.State(s.FeedID)
			if err != nil {
				return err
			}
			if change(s, &fs) {
				if err := t.PutStates(fs); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
