package sched

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Lifecycle is a feed's scheduling state (docs/scheduler.md §2).
type Lifecycle string

// The lifecycle states.
const (
	// StateHealthy: the feed answers; it is polled at its policy's pace.
	StateHealthy Lifecycle = "healthy"
	// StateCoolingDown: the feed answered again after a failure, a
	// Retry-After pause or an open circuit. It is polled at its normal pace,
	// but its backoff step is kept until CoolDownSuccesses answers in a row,
	// so that a flapping feed does not restart its backoff from the bottom
	// each time it answers once.
	StateCoolingDown Lifecycle = "cooling_down"
	// StateBackoff: the last fetch failed; the next one waits an
	// exponentially growing, capped delay.
	StateBackoff Lifecycle = "backoff"
	// StatePaused: waiting out a Retry-After, an open circuit (error budget
	// spent) or a pause set by hand.
	StatePaused Lifecycle = "paused"
	// StateDisabled: a permanent error or DisableThreshold failures in a
	// row. Unless Params.NoProbe, it is still fetched once per max interval
	// and re-enabled when it answers.
	StateDisabled Lifecycle = "disabled"
)

// CoolDownSuccesses is how many answers in a row take a feed from
// CoolingDown back to Healthy and reset its backoff step.
const CoolDownSuccesses = 3

// PubWindow is N, how many publication times a State keeps.
const PubWindow = 20

// State is everything the scheduler remembers about one feed between two
// decisions. feed-store keeps it in the feed's state record (field
// "sched"); it is small (well under 2 KB of JSON) because it is written on
// every fetch. A zero State is a feed never scheduled. Next repairs any
// field a damaged file may hold, so decoding never needs to be trusted.
type State struct {
	// Lifecycle is the state after the last decision; "" before the first.
	Lifecycle Lifecycle `json:"state,omitempty"`
	// Reason is the reason of the last decision.
	Reason Reason `json:"reason,omitempty"`
	// IntervalSec is the policy's current interval in seconds, after clamps
	// and publisher floors, before jitter and skip windows.
	IntervalSec int `json:"interval_sec,omitempty"`
	// NextAt is when the feed is due next; null: never (disabled, not probed).
	NextAt ndjson.Time `json:"next_at,omitzero"`
	// DecidedAt is when the last decision was made.
	DecidedAt ndjson.Time `json:"decided_at,omitzero"`
	// FetchedAt is the time of the last fetch outcome, the clock of the
	// decayed counters below.
	FetchedAt ndjson.Time `json:"fetched_at,omitzero"`
	// RetryUntil is the end of the last Retry-After; no decision, not even
	// a manual nudge, schedules a fetch before it.
	RetryUntil ndjson.Time `json:"retry_until,omitzero"`

	// EWMASec is the EWMA of the inter-arrival times of Pub (alpha), in
	// seconds; meaningful when len(Pub) >= 2.
	EWMASec float64 `json:"ewma_sec,omitempty"`
	// Pub holds the last PubWindow publication times (first_seen where the
	// feed gave none or a future one), Unix seconds, ascending.
	Pub []int64 `json:"pub,omitempty"`

	// RateN and RateT are the adaptive policy's posting-rate evidence:
	// items seen and seconds watched, both decayed with RateHalfLife.
	// BurstN and BurstT are the same with BurstHalfLife, to notice bursts
	// and wake-ups within hours.
	RateN  float64 `json:"rate_n,omitempty"`
	RateT  float64 `json:"rate_t,omitempty"`
	BurstN float64 `json:"burst_n,omitempty"`
	BurstT float64 `json:"burst_t,omitempty"`
	// Hours and Days are decayed counts of items by UTC hour of day and by
	// weekday (Sunday = 0), with ProfileHalfLife: the adaptive policy's
	// hour-of-week profile as a product of the two, which learns in days
	// where 168 separate hours would take months.
	Hours [24]float32 `json:"hours,omitzero"`
	Days  [7]float32  `json:"days,omitzero"`
	// DayStart is the UTC hour the publisher's day starts at, which Days
	// are counted from, twelve hours from the middle of the day of a feed
	// with a clear daily pattern (pattern.go); 0, UTC midnight, for the
	// others. A day is named after the UTC date that holds most of it.
	DayStart int `json:"day_start,omitempty"`
	// Peak is the fastest the feed has posted in a burst lately, items a
	// day, decayed; with Window it caps the interval so that a burst does
	// not push items out of the feed unseen.
	Peak float64 `json:"peak,omitempty"`
	// Window is how many items the feed's document held last time.
	Window int `json:"window,omitempty"`
	// Withheld is how many of them the last answer that was read left
	// out (Outcome.Withheld): the next answer that shows them brings them
	// as new, and they are no arrivals.
	Withheld int `json:"withheld,omitempty"`
	// Runs are the last RunWindow runs of dated items (items published
	// less than 30 minutes apart), oldest first: the adaptive policy finds
	// a feed's daily slot in them (slot.go).
	Runs []Run `json:"runs,omitempty"`

	// Failures counts failed fetches in a row (Retry-After answers do not
	// count). Step is the backoff step. Successes counts answers in a row
	// while CoolingDown.
	Failures  int `json:"failures,omitempty"`
	Step      int `json:"backoff_step,omitempty"`
	Successes int `json:"successes,omitempty"`
	// ErrorsSpent is how much of the error budget failures have used; it
	// drains at ErrorBudgetPerDay. The circuit opens when it reaches
	// ErrorBudget.
	ErrorsSpent float64 `json:"errors_spent,omitempty"`
	// LastError is "class/code" of the last failure.
	LastError string `json:"last_error,omitempty"`

	// Hints are the publisher's, from the last parsed body.
	Hints Hints `json:"hints,omitzero"`

	// DisabledReason says why the scheduler disabled the feed: "permanent
	// error permanent/http_404" or "10 failures in a row, the last
	// transient/http_503".
	DisabledReason string      `json:"disabled_reason,omitempty"`
	DisabledAt     ndjson.Time `json:"disabled_at,omitzero"`
}

// Hints are a publisher's scheduling hints from the feed document.
type Hints struct {
	TTLMinutes int      `json:"ttl_minutes,omitempty"` // RSS <ttl>
	SkipHours  []int    `json:"skip_hours,omitempty"`  // RSS <skipHours>, GMT hours 0-23, sorted
	SkipDays   []string `json:"skip_days,omitempty"`   // RSS <skipDays>, canonical names, week order
}

// Interval is the current interval.
func (st State) Interval() time.Duration { return time.Duration(st.IntervalSec) * time.Second }

// Due reports whether the feed should be fetched at now.
func (st State) Due(now time.Time) bool {
	return !st.NextAt.IsZero() && !now.Before(st.NextAt.Time)
}

// Overdue is how long ago the feed became due (negative: not yet). feed-due
// orders due feeds by it, most overdue first.
func (st State) Overdue(now time.Time) time.Duration {
	if st.NextAt.IsZero() {
		return math.MinInt64
	}
	return now.Sub(st.NextAt.Time)
}

// Enable is the state after a person enables a feed the scheduler disabled
// (feed-sub enable): healthy, no failures, an empty error budget, due now.
// The posting history is kept.
func Enable(st State, now time.Time) State {
	st.Pub = slices.Clone(st.Pub)
	st.Runs = slices.Clone(st.Runs)
	st.Hints.SkipHours = slices.Clone(st.Hints.SkipHours)
	st.Hints.SkipDays = slices.Clone(st.Hints.SkipDays)
	st.Lifecycle = StateHealthy
	st.Reason = ReasonManual
	st.Failures, st.Step, st.Successes, st.ErrorsSpent = 0, 0, 0, 0
	st.DisabledReason, st.DisabledAt = "", ndjson.Time{}
	st.NextAt, st.DecidedAt = ndjson.At(now), ndjson.At(now)
	return st
}

// clean returns a copy of st that Next may change without touching the
// caller's slices, with every field a damaged or hand-edited record could
// hold brought into range.
func (st State) clean(p Params) State {
	switch st.Lifecycle {
	case "", StateHealthy, StateCoolingDown, StateBackoff, StatePaused, StateDisabled:
	default:
		st.Lifecycle = StateHealthy
	}
	switch {
	case st.IntervalSec <= 0:
		st.IntervalSec = int(min(max(p.Initial, p.Min), p.Max) / time.Second)
	case st.IntervalSec > int(p.Max/time.Second):
		st.IntervalSec = int(p.Max / time.Second)
	}
	// Pub is shared with the caller's State when it is sound, as it
	// nearly always is: observe replaces it rather than changing it.
	if !pubSound(st.Pub) {
		pub := make([]int64, 0, len(st.Pub))
		for _, t := range st.Pub {
			if t > minUnix && t < maxUnix {
				pub = append(pub, t)
			}
		}
		slices.Sort(pub)
		if len(pub) > PubWindow {
			pub = pub[len(pub)-PubWindow:]
		}
		st.Pub = pub
	}
	if !runsSound(st.Runs) {
		st.Runs = nil // rebuilt by the next items
	}
	for _, f := range []*float64{&st.EWMASec, &st.RateN, &st.RateT, &st.BurstN, &st.BurstT, &st.Peak, &st.ErrorsSpent} {
		if !(*f >= 0 && *f < 1e12) { // also catches NaN
			*f = 0
		}
	}
	for i := range st.Hours {
		if !(st.Hours[i] >= 0 && st.Hours[i] < 1e9) {
			st.Hours[i] = 0
		}
	}
	for i := range st.Days {
		if !(st.Days[i] >= 0 && st.Days[i] < 1e9) {
			st.Days[i] = 0
		}
	}
	if st.DayStart < 0 || st.DayStart > 23 {
		st.DayStart = 0
	}
	st.ErrorsSpent = min(st.ErrorsSpent, p.ErrorBudget)
	st.Failures = min(max(st.Failures, 0), 1<<20)
	st.Step = min(max(st.Step, 0), 64)
	st.Successes = min(max(st.Successes, 0), 1<<20)
	st.Window = min(max(st.Window, 0), 1<<20)
	st.Withheld = min(max(st.Withheld, 0), 1<<20)
	if !hintsSound(st.Hints) {
		st.Hints = cleanHints(st.Hints.TTLMinutes, st.Hints.SkipHours, st.Hints.SkipDays)
	}
	return st
}

// pubSound reports whether publication times are sorted, in range and
// at most PubWindow.
func pubSound(pub []int64) bool {
	if len(pub) > PubWindow {
		return false
	}
	for i, t := range pub {
		if t <= minUnix || t >= maxUnix || (i > 0 && t < pub[i-1]) {
			return false
		}
	}
	return true
}

// hintsSound reports whether hints are as cleanHints writes them.
func hintsSound(h Hints) bool {
	if h.TTLMinutes < 0 || h.TTLMinutes > 525600 {
		return false
	}
	for i, x := range h.SkipHours {
		if x < 0 || x > 23 || (i > 0 && x <= h.SkipHours[i-1]) {
			return false
		}
	}
	prev := -1
	for _, d := range h.SkipDays {
		wd, ok := dayNames[strings.ToLower(d)]
		if !ok || d != wd.String() || int(wd) <= prev {
			return false
		}
		prev = int(wd)
	}
	return true
}

// Unix seconds of years 1 and 9999: the range a record can hold.
const (
	minUnix = -62135596800
	maxUnix = 253402300799
)

// cleanHints normalises publisher hints: ttl in [0, a year], hours 0-23
// (24 read as 0), sorted and unique, day names canonical in week order,
// unknown names dropped.
func cleanHints(ttl int, hours []int, days []string) Hints {
	h := Hints{TTLMinutes: min(max(ttl, 0), 525600)}
	hm := hourMask(hours)
	for i := range 24 {
		if hm&(1<<i) != 0 {
			h.SkipHours = append(h.SkipHours, i)
		}
	}
	dm := dayMask(days)
	for i := range 7 {
		if dm&(1<<i) != 0 {
			h.SkipDays = append(h.SkipDays, time.Weekday(i).String())
		}
	}
	return h
}
