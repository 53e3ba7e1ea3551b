package stats

import (
	"fmt"
	"regexp"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/plural"
	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// The states of a feed's Status, one word each: feed-stats's STATE column
// and the label of sources_total.
const (
	// StateEnabled: the feed answers (or has not been fetched yet) and is
	// polled at its policy's pace; cooling down after failures too.
	StateEnabled = "enabled"
	// StateFailing: its fetches fail: backing off, or its circuit open
	// (the error budget spent).
	StateFailing = "failing"
	// StateRefused: this machine refused its address, a loopback or
	// private one, without asking the publisher: no failure of the feed
	// (the scheduler counts none), but nothing is fetched until the feed
	// (feed-sub set --allow-private) or every feed
	// (FEEDPIPE_ALLOW_PRIVATE=1) is allowed such addresses; it is due at
	// once then (feed-due).
	StateRefused = "refused"
	// StatePaused: paused by hand (feed-sub pause), or for a Retry-After
	// that still runs.
	StatePaused = "paused"
	// StateDisabled: disabled by hand (feed-sub disable), or by the
	// scheduler for a permanent error or too many failures.
	StateDisabled = "disabled"
)

// RefusedText is the status of a feed whose address this machine refused;
// RefusedHint says what allows it, once for all such feeds (feed-sub ls
// says it below its table).
const (
	RefusedText = "refused: a private address"
	RefusedHint = "a loopback, private or link-local address, which feedpipe refuses unless allowed: " +
		"feed-sub set FEED --allow-private allows one feed, FEEDPIPE_ALLOW_PRIVATE=1 every feed; " +
		"either makes it due at once (no feed-sub refetch needed)"
)

// Status is a feed's status at a time, as every command shows it: feed-sub
// ls, feed-stats, the metrics, feed-due --explain. StatusOf computes it;
// no command works it out for itself.
type Status struct {
	State string // StateEnabled, StateFailing, StateRefused, StatePaused or StateDisabled
	// Text says it for people, the STATUS column of feed-sub ls:
	// "enabled (cooling down)", "failing (2): http_503", "paused for a
	// Retry-After until 2026-11-26 10:30Z", "disabled: permanent error
	// http_404 (probe in 23h)".
	Text string
	// Next is when feed-due lists the feed next (a time past: due now);
	// Listed is false when it does not by itself: disabled by hand, or by
	// the scheduler without probes.
	Next   time.Time
	Listed bool
	// IntervalSec is the feed's polling interval while it is polled on
	// one (enabled); 0 when it is not (failing, paused, disabled): Next
	// says when.
	IntervalSec int
}

// StatusOf is the status at now of the subscription s, whose state
// feed-store keeps as fs. The scheduler's state decides, where there is
// one, with the subscription's own settings first: disabled or paused by
// hand. A pause or a Retry-After whose time has passed is over: the feed
// is what it was, due now.
func StatusOf(s ndjson.Subscription, fs catalog.FeedState, now time.Time) Status {
	st := Status{}
	st.Next, st.Listed = nextFetch(s, fs, now)
	sc := fs.Sched
	failing := func(n int) {
		st.State, st.Text = StateFailing, fmt.Sprintf("failing (%d): %s", n, ErrorCode(fs.LastError))
	}
	switch {
	case s.Disabled:
		st.State, st.Text = StateDisabled, "disabled by hand"
	case now.Before(s.PausedUntil.Time):
		st.State, st.Text = StatePaused, "paused until "+fmtTime(s.PausedUntil.Time)
	case sc == nil: // never decided: never fetched, or a state from before the scheduler
		if fs.ConsecutiveFailures > 0 {
			failing(fs.ConsecutiveFailures)
		} else {
			st.State, st.Text, st.IntervalSec = StateEnabled, "enabled", fs.IntervalSec
		}
	case sc.Lifecycle == sched.StateDisabled:
		probe := "not probed"
		if !sc.NextAt.IsZero() {
			probe = "probe " + Until(now, sc.NextAt.Time)
		}
		st.State, st.Text = StateDisabled, fmt.Sprintf("disabled: %s (%s)", errorClass.ReplaceAllString(sc.DisabledReason, ""), probe)
	case sc.Reason == sched.ReasonRefused:
		st.State, st.Text = StateRefused, RefusedText
	case sc.Lifecycle == sched.StateBackoff:
		failing(sc.Failures)
	case sc.Lifecycle == sched.StatePaused && sc.Reason == sched.ReasonBudgetExceeded:
		failing(sc.Failures)
		if sc.NextAt.After(now) {
			st.Text += ", circuit open"
		}
	case sc.Lifecycle == sched.StatePaused && sc.NextAt.After(now) && sc.Reason == sched.ReasonRetryAfter:
		st.State, st.Text = StatePaused, "paused for a Retry-After until "+fmtTime(sc.NextAt.Time)
	case sc.Lifecycle == sched.StatePaused && sc.NextAt.After(now) && sc.Reason != sched.ReasonPaused:
		st.State, st.Text = StatePaused, fmt.Sprintf("paused (%s) until %s", sc.Reason, fmtTime(sc.NextAt.Time))
	case sc.Failures > 0:
		// A pause that is over, after failures: it fails still until it
		// answers.
		failing(sc.Failures)
	case sc.Lifecycle == sched.StatePaused && sc.Reason == sched.ReasonRetryAfter:
		st.State, st.Text, st.IntervalSec = StateEnabled, "enabled (Retry-After over)", sc.IntervalSec
	case sc.Lifecycle == sched.StateCoolingDown:
		st.State, st.Text, st.IntervalSec = StateEnabled, "enabled (cooling down)", sc.IntervalSec
	default: // healthy, or a pause by hand that is over
		st.State, st.Text, st.IntervalSec = StateEnabled, "enabled", sc.IntervalSec
	}
	if n := len(fs.Warnings); n > 0 && st.State == StateEnabled {
		// Read, but repaired or cut short: healthy is not the word.
		st.Text += ", " + plural.Count(n, "parse warning", "parse warnings")
	}
	return st
}

// nextFetch is when feed-due lists the feed next (a time past is now); ok
// is false when it does not by itself: disabled by hand, or disabled for
// errors and not probed.
func nextFetch(s ndjson.Subscription, fs catalog.FeedState, now time.Time) (at time.Time, ok bool) {
	if s.Disabled {
		return time.Time{}, false
	}
	at, ok = s.CreatedAt.Time, true // never fetched: due at once
	if !fs.LastFetchAt.IsZero() || fs.Sched != nil {
		at = fs.NextFetchAt.Time
		ok = fs.Sched == nil || !fs.Sched.NextAt.IsZero()
	}
	if s.PausedUntil.After(now) && s.PausedUntil.After(fs.NextFetchAt.Time) {
		at, ok = s.PausedUntil.Time, true // feed-due skips it until then
	}
	return at, ok
}

// errorClass is the class before an error's code in the scheduler's
// reasons ("permanent error permanent/http_404"): the status says the
// code, which says the class (and "permanent" once).
var errorClass = regexp.MustCompile(`\b(transient|permanent|rate_limited|blocked|parse)/`)

// ErrorCode is the code of a feed's last error, "?" when it has none.
func ErrorCode(e *ndjson.Error) string {
	if e == nil {
		return "?"
	}
	return e.Code
}

func fmtTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04Z") }

// Ago says how long before now t was, as every command does: "5m ago".
func Ago(now, t time.Time) string { return human(now.Sub(t)) + " ago" }

// Until says how long after now t is: "in 3h", or "now" for a time past.
func Until(now, t time.Time) string {
	if !t.After(now) {
		return "now"
	}
	return "in " + human(t.Sub(now))
}

// human renders a duration the way a person says it: 45s, 12m, 3h, 2d.
func human(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	default:
		return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	}
}
