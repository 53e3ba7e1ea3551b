package sub

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/internal/storage"
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

// clampInterval keeps a fixed polling interval within [5m, 24h] (seed 001
// §3.1); 0 means none.
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
	verb := "paused until " + ndjson.At(until).String() + ":"
	if until.IsZero() {
		verb = "resumed"
	} else if !until.After(cfg.Now()) {
		return fmt.Errorf("%w: pause until %s: that is not in the future", ErrInvalid, ndjson.At(until))
	}
	return edit(cfg, refs, verb, func(subs []ndjson.Subscription, i int) []ndjson.Subscription {
		subs[i].PausedUntil = ndjson.At(until)
		return subs
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
	return changeStates(cfg, refs, func(s ndjson.Subscription, fs *storage.FeedState) {
		d := nudge(cfg, s, fs, schedState(fs), p, now, rnd)
		if d.Kind == sched.FetchNow {
			fmt.Fprintf(cfg.Msg, "feed-sub: due now: %s\n", s.URL)
		} else {
			fmt.Fprintf(cfg.Msg, "feed-sub: %s: %s\n", s.URL, strings.SplitN(d.Explain(), "\n", 2)[0])
		}
		if !s.PausedUntil.IsZero() && now.Before(s.PausedUntil.Time) {
			fmt.Fprintf(cfg.Msg, "feed-sub: note: %s is paused until %s; feed-sub resume lifts the pause\n", s.URL, s.PausedUntil)
		}
	})
}

// nudge stores and logs the scheduler's decision for a manual nudge of the
// feed whose scheduler state is st.
func nudge(cfg Config, s ndjson.Subscription, fs *storage.FeedState, st sched.State, p sched.Params, now time.Time, rnd *rand.Rand) sched.Decision {
	st, d := sched.Next(st, sched.Outcome{Kind: sched.Nudged}, p, sched.OverridesOf(s), now, rnd)
	setSched(fs, st, d)
	sched.LogDecision(cfg.Log, s.FeedID, "", d)
	return d
}

// Enable enables the subscriptions refs name: a subscription disabled by
// hand is fetched again, and a feed the scheduler disabled for errors (or
// left backing off) starts again healthy, its posting history kept
// (sched.Enable), and is nudged as Refetch nudges: due now unless a
// Retry-After still runs. p are the scheduler's parameters.
func Enable(cfg Config, refs []string, p sched.Params) error {
	cfg.defaults()
	if err := SetDisabled(cfg, refs, false); err != nil {
		return err
	}
	now := cfg.Now()
	rnd := rand.New(rand.NewPCG(uint64(now.UnixNano()), 1))
	return changeStates(cfg, refs, func(s ndjson.Subscription, fs *storage.FeedState) {
		if fs.Sched == nil || fs.LastFetchAt.IsZero() {
			return
		}
		was := *fs.Sched
		d := nudge(cfg, s, fs, sched.Enable(was, now), p, now, rnd)
		fs.ConsecutiveFailures = 0
		if was.Lifecycle != sched.StateDisabled {
			return
		}
		when := "due now"
		if d.Kind != sched.FetchNow {
			when = strings.SplitN(d.Explain(), "\n", 2)[0]
		}
		fmt.Fprintf(cfg.Msg, "feed-sub: re-enabled %s (it was disabled: %s); %s\n", s.URL, was.DisabledReason, when)
	})
}

// changeStates applies change to the stored feed state of each
// subscription refs name, under the store's writer lock (feed-store's): a
// running feed-store is waited for.
func changeStates(cfg Config, refs []string, change func(ndjson.Subscription, *storage.FeedState)) error {
	cfg.defaults()
	subs, _, err := cfg.Store.Subscriptions()
	if err != nil {
		return err
	}
	var picked []ndjson.Subscription
	for _, ref := range refs {
		i, err := storage.FindSubscription(subs, ref)
		if err != nil {
			return err
		}
		picked = append(picked, subs[i])
	}
	if len(picked) == 0 {
		return fmt.Errorf("%w: name at least one subscription (feed id, id prefix or URL)", ErrInvalid)
	}
	unlock, err := cfg.Store.Lock(storage.StoreLock, true, func() {
		fmt.Fprintf(cfg.Msg, "feed-sub: waiting for the store lock: feed-store is writing\n")
	})
	if err != nil {
		return err
	}
	defer unlock()
	states, err := cfg.Store.States()
	if err != nil {
		return err
	}
	var changed []storage.FeedState
	for _, s := range picked {
		fs, ok := states.ByFeed[s.FeedID]
		if !ok {
			fs = storage.FeedState{FeedID: s.FeedID}
		}
		change(s, &fs)
		changed = append(changed, fs)
	}
	return states.Put(storage.Durable, changed...)
}

func schedState(fs *storage.FeedState) sched.State {
	if fs.Sched == nil {
		return sched.State{}
	}
	return *fs.Sched
}

// setSched is store.SetSched (which this package cannot import: the store
// tests import feed-sub's neighbours).
func setSched(fs *storage.FeedState, st sched.State, d sched.Decision) {
	fs.Sched, fs.Decision = &st, &d
	fs.NextFetchAt, fs.IntervalSec = st.NextAt, st.IntervalSec
}

// schedStatus is the STATUS cell of `feed-sub ls` for an enabled
// subscription: the scheduler's state, and why a feed is disabled.
func schedStatus(s ndjson.Subscription, fs storage.FeedState, now time.Time) string {
	if now.Before(s.PausedUntil.Time) {
		return "paused until " + fmtTime(s.PausedUntil.Time)
	}
	st := fs.Sched
	if st == nil {
		if fs.ConsecutiveFailures > 0 {
			return fmt.Sprintf("failing (%d): %s", fs.ConsecutiveFailures, errorCode(fs.LastError))
		}
		return "enabled"
	}
	switch st.Lifecycle {
	case sched.StateDisabled:
		probe := "not probed"
		if !st.NextAt.IsZero() {
			probe = "probe " + until(now, st.NextAt.Time)
		}
		return fmt.Sprintf("disabled: %s (%s)", st.DisabledReason, probe)
	case sched.StateBackoff:
		return fmt.Sprintf("failing (%d): %s", st.Failures, errorCode(fs.LastError))
	case sched.StatePaused:
		return fmt.Sprintf("paused (%s)", st.Reason)
	case sched.StateCoolingDown:
		return "enabled (cooling down)"
	case sched.StateHealthy, "":
		return "enabled"
	}
	return string(st.Lifecycle)
}

func fmtTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04Z") }
