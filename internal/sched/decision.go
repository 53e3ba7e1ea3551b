package sched

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Kind is what a decision asks for (docs/scheduler.md §2).
type Kind string

// The decision kinds.
const (
	FetchNow Kind = "fetch_now" // fetch at once: a new feed or a manual nudge
	Defer    Kind = "defer"     // fetch at NextAt, the normal case
	Backoff  Kind = "backoff"   // the fetch failed: retry at Until
	Pause    Kind = "pause"     // do not fetch before Until (null Until: until enabled by hand)
)

// Reason says why (docs/scheduler.md §2).
type Reason string

// The reasons. The first seven are the decision record's from the start.
const (
	ReasonNewFeed        Reason = "new_feed"        // never fetched
	ReasonRetryAfter     Reason = "retry_after"     // 429/503 with Retry-After: paused exactly that long
	ReasonHTTPError      Reason = "http_error"      // a failed fetch (status, network, blocked): backoff
	ReasonParseError     Reason = "parse_error"     // a body that did not parse: backoff
	ReasonBudgetExceeded Reason = "budget_exceeded" // error budget spent: circuit open, paused
	ReasonEWMAStable     Reason = "ewma_stable"     // seed: the interval sits at the observed cadence
	ReasonManual         Reason = "manual"          // a nudge (feed-sub refetch), or enabled by hand

	ReasonNewEntries   Reason = "new_entries"    // seed: new entries, interval ×b_down
	ReasonNotModified  Reason = "not_modified"   // seed: 304, interval ×b_up
	ReasonNoNewEntries Reason = "no_new_entries" // seed: 2xx without new entries, interval ×b_up
	ReasonPostingRate  Reason = "posting_rate"   // adaptive: interval from the estimated posting rate
	ReasonDailySlot    Reason = "daily_slot"     // adaptive: just after the time of day the feed's items appear
	ReasonFixed        Reason = "fixed"          // a fixed interval: policy fixed:D or the feed's polling_interval
	ReasonCron         Reason = "cron"           // the feed's cron expression
	ReasonPaused       Reason = "paused"         // paused by hand until a time
	ReasonDisabled     Reason = "disabled"       // disabled for errors (probed, or not, per Params.NoProbe)

	// ReasonRefused: this machine refused the feed's address (a private
	// one, without --allow-private); tried again after the interval.
	ReasonRefused Reason = "address_refused"
)

// Event marks a decision that changes whether the feed is in service;
// feed-store turns it into an event record.
type Event string

// The events.
const (
	EventDisabled    Event = "feed_disabled"  // the scheduler disabled the feed: emit feed_disabled
	EventReenabled   Event = "feed_reenabled" // a probe answered: the feed is back in service
	EventCircuitOpen Event = "circuit_open"   // the error budget is spent: paused
)

// Decision is the scheduler's answer for one feed: what to do, why, when,
// and every input it used, so that feed-store can write it as a "decision"
// record and feed-due --explain can print it (Explain).
type Decision struct {
	Kind   Kind        `json:"decision"`
	Reason Reason      `json:"reason"`
	At     ndjson.Time `json:"at"`      // when it was decided
	NextAt ndjson.Time `json:"next_at"` // when the feed is due; null: never (disabled, not probed)
	// Until is the end of a Backoff or Pause (equal to NextAt, or null for
	// a pause without end); null for FetchNow and Defer.
	Until ndjson.Time `json:"until"`
	State Lifecycle   `json:"state"`           // the lifecycle state after the decision
	Event Event       `json:"event,omitempty"` // set when the feed left or re-entered service
	// DisabledReason repeats State.DisabledReason when the feed is disabled.
	DisabledReason string `json:"disabled_reason,omitempty"`
	Inputs         Inputs `json:"inputs"`
}

// Inputs are the values a decision used. Durations are whole seconds.
type Inputs struct {
	Policy   string `json:"policy"`             // adaptive, seed or fixed:D
	Override string `json:"override,omitempty"` // the feed's override that applied: "interval 1h", "cron 0 * * * *", "paused", "min 10m"

	Outcome     OutcomeKind `json:"outcome"`
	HTTPStatus  int         `json:"http_status,omitempty"`
	NotModified bool        `json:"not_modified,omitempty"`
	Truncated   bool        `json:"truncated,omitempty"` // the body was cut at the size cap: the interval is at least ×b_up
	ErrorClass  string      `json:"error_class,omitempty"`
	ErrorCode   string      `json:"error_code,omitempty"`
	NewEntries  int         `json:"new_entries"`
	Items       int         `json:"items,omitempty"`

	IntervalBeforeSec int `json:"interval_before_sec"`
	IntervalAfterSec  int `json:"interval_after_sec"`
	MinSec            int `json:"min_sec"` // the clamps in force
	MaxSec            int `json:"max_sec"`

	// EWMASecs is the EWMA of inter-arrival times (the record's ewma_secs);
	// 0 without two publication times.
	EWMASecs float64 `json:"ewma_secs"`
	// RatePerDay is the estimated posting rate, items a day; Scale the
	// adaptive scale; BaseSec the interval s/sqrt(rate); ProfileFactor
	// how much the hour-of-week profile stretched (>1) or shortened (<1)
	// it; TailCapSec the gap the tail rule shortened it to (a gap
	// longer than the budget's fixed interval); WindowCapSec the cap that
	// keeps a poll from missing items pushed out of the feed's window.
	RatePerDay    float64 `json:"rate_per_day,omitempty"`
	Scale         float64 `json:"scale,omitempty"`
	BaseSec       int     `json:"base_sec,omitempty"`
	ProfileFactor float64 `json:"profile_factor,omitempty"`
	TailCapSec    int     `json:"tail_cap_sec,omitempty"`
	WindowCapSec  int     `json:"window_cap_sec,omitempty"`
	// What a clear posting pattern said (pattern.go), when the adaptive
	// policy decided by it: PatternGain the share of the mean delay of
	// evenly spaced polls that polls placed by it promise; PatternHours
	// the UTC hours in which the feed posts above its average rate
	// ("08-12,14-17"; empty until it has been watched for 3 days);
	// PatternDays the publisher's days on which it posts at least half
	// its average ("Mon-Fri"; empty until 14 days), each day starting at
	// DayStart UTC (0: midnight); PollWeight the rate of polls at the
	// fetch, relative to evenly spaced polls at the feed's rate.
	PatternGain  float64 `json:"pattern_gain,omitempty"`
	PatternHours string  `json:"pattern_hours,omitempty"`
	PatternDays  string  `json:"pattern_days,omitempty"`
	DayStart     int     `json:"day_start,omitempty"`
	PollWeight   float64 `json:"poll_weight,omitempty"`
	// Slot is the time of day, "15:04" UTC, at which the feed's items
	// have appeared on its last days, when the adaptive policy polls
	// just after it.
	Slot       string `json:"slot,omitempty"`
	CronNextAt string `json:"cron_next_at,omitempty"`
	CronError  string `json:"cron_error,omitempty"`

	// Publisher floors: ttl and max-age (capped at the max interval), the
	// floor they set, and Retry-After (the record's retry_after_secs).
	TTLSec         int `json:"ttl_sec,omitempty"`
	MaxAgeSec      int `json:"max_age_sec,omitempty"`
	FloorSec       int `json:"floor_sec,omitempty"`
	RetryAfterSecs int `json:"retry_after_secs,omitempty"`

	// Skip windows: the declared ones, where they moved next_at from, or
	// that they were ignored because they cover every hour.
	SkipHours     []int       `json:"skip_hours,omitempty"`
	SkipDays      []string    `json:"skip_days,omitempty"`
	SkipMovedFrom ndjson.Time `json:"skip_moved_from,omitzero"`
	SkipIgnored   bool        `json:"skip_ignored,omitempty"`

	BackoffStep         int     `json:"backoff_step"`
	BackoffSec          int     `json:"backoff_sec,omitempty"`
	JitterSec           int     `json:"jitter_sec"`
	ConsecutiveFailures int     `json:"consecutive_failures"`
	ErrorBudget         float64 `json:"error_budget"` // tokens left of ErrorBudgetSize
	ErrorBudgetSize     float64 `json:"error_budget_size"`
	Probe               bool    `json:"probe,omitempty"` // a disabled feed's next fetch is a probe
}

// Explain says in a few lines of words what the decision is and why, for
// logs: its times counted from when it was made.
func (d Decision) Explain() string { return d.ExplainAt(d.At.Time) }

// ExplainAt is Explain with its times counted from now, as feed-due
// --explain, which also says the next fetch from now, prints it: one time,
// one countdown.
func (d Decision) ExplainAt(now time.Time) string {
	in := d.Inputs
	var b strings.Builder
	at, next := d.At.Time, d.NextAt.Time
	when := func(t time.Time) string {
		if t.Before(now) {
			return fmt.Sprintf("%s (%s ago)", fmtTime(t), fmtDur(now.Sub(t)))
		}
		return fmt.Sprintf("%s (in %s)", fmtTime(t), fmtDur(t.Sub(now)))
	}
	switch d.Kind {
	case FetchNow:
		if d.Reason == ReasonNewFeed {
			b.WriteString("Fetch now: a new feed, never fetched.")
		} else {
			b.WriteString("Fetch now: asked for by hand.")
		}
	case Defer:
		fmt.Fprintf(&b, "Next fetch %s.", when(next))
	case Backoff:
		delay := fmtDur(time.Duration(in.BackoffSec) * time.Second)
		if d.Reason == ReasonRefused {
			fmt.Fprintf(&b, "Tried again %s: this machine refused the feed's address (%s), a private one: feed-sub set FEED --allow-private permits it. Not the feed's failure: none counted, no error budget spent.",
				when(next), failure(in))
			break
		}
		if in.Policy == string(PolicySeed) && !strings.Contains(in.Override, "interval ") && !strings.Contains(in.Override, "cron ") {
			fmt.Fprintf(&b, "Backing off until %s: %s; failure %d in a row; policy seed: interval ×backoff base, capped, then as after an answer: %s.",
				when(next), failure(in), in.ConsecutiveFailures, delay)
		} else {
			fmt.Fprintf(&b, "Backing off until %s: %s; failure %d in a row, backoff step %d (%s).",
				when(next), failure(in), in.ConsecutiveFailures, in.BackoffStep, delay)
		}
	case Pause:
		switch d.Reason {
		case ReasonRetryAfter:
			if in.Outcome == Nudged || in.Outcome == NeverFetched {
				fmt.Fprintf(&b, "Paused until %s: a Retry-After from the server is still running, and only the server can shorten it.", when(next))
			} else {
				fmt.Fprintf(&b, "Paused until %s: the server said Retry-After %s (%s), honoured exactly.",
					when(next), fmtDur(time.Duration(in.RetryAfterSecs)*time.Second), failure(in))
			}
		case ReasonBudgetExceeded:
			fmt.Fprintf(&b, "Paused until %s: the error budget is spent (%s; %d failures in a row), so the circuit is open.",
				when(next), failure(in), in.ConsecutiveFailures)
		case ReasonDisabled:
			fmt.Fprintf(&b, "Disabled: %s.", d.DisabledReason)
			if next.IsZero() {
				b.WriteString(" Not probed; feed-sub enable puts it back.")
			} else {
				fmt.Fprintf(&b, " Probed once per max interval; next probe %s, and it is re-enabled if it answers.", when(next))
			}
		case ReasonPaused:
			fmt.Fprintf(&b, "Paused by hand until %s.", when(next))
		default:
			fmt.Fprintf(&b, "Paused until %s.", when(next))
		}
	}
	if d.Event == EventReenabled {
		b.WriteString(" The probe answered: the feed is enabled again.")
	}
	if line := cadence(d); line != "" {
		b.WriteString("\n" + line)
	}
	if line := patternLine(d); line != "" {
		b.WriteString("\n" + line)
	}
	var adj []string
	if in.TTLSec > 0 {
		adj = append(adj, fmt.Sprintf("ttl %s is a floor", fmtDur(sec(in.TTLSec))))
	}
	if in.MaxAgeSec > 0 {
		adj = append(adj, fmt.Sprintf("max-age %s is a floor", fmtDur(sec(in.MaxAgeSec))))
	}
	if in.RetryAfterSecs > 0 && d.Reason != ReasonRetryAfter {
		adj = append(adj, fmt.Sprintf("Retry-After %s is a floor", fmtDur(sec(in.RetryAfterSecs))))
	}
	if in.Truncated {
		adj = append(adj, "the body was cut at the size cap, so the interval is at least ×b_up")
	}
	// A daily slot's poll time is not the interval's: the caps on the
	// interval do not apply to it.
	if in.TailCapSec > 0 && in.WindowCapSec == 0 && d.Reason != ReasonDailySlot {
		what := "shortened"
		if in.PatternGain > 0 { // the average gap, which the pattern then spreads
			what = "the average shortened"
		}
		adj = append(adj, fmt.Sprintf("%s to %s so that few items wait much longer than a fixed policy at the same request budget would make them", what, fmtDur(sec(in.TailCapSec))))
	}
	if in.WindowCapSec > 0 && d.Reason != ReasonDailySlot {
		// Items is what this fetch's document held: none on a 304, whose
		// window is the last document's.
		window := "window"
		if in.Items > 0 {
			window = fmt.Sprintf("%d-item window", in.Items)
		}
		adj = append(adj, fmt.Sprintf("capped at %s so that no item leaves the feed's %s unseen", fmtDur(sec(in.WindowCapSec)), window))
	}
	if !in.SkipMovedFrom.IsZero() {
		adj = append(adj, fmt.Sprintf("%s moved it from %s to %s", skipText(in), fmtClock(in.SkipMovedFrom.Time, at), fmtClock(next, at)))
	} else if in.SkipIgnored {
		adj = append(adj, skipText(in)+" cover every hour and are ignored")
	}
	if in.JitterSec != 0 {
		adj = append(adj, fmt.Sprintf("jitter %s", fmtSigned(sec(in.JitterSec))))
	}
	if len(adj) > 0 {
		b.WriteString("\nAlso: " + strings.Join(adj, "; ") + ".")
	}
	fmt.Fprintf(&b, "\nState %s; %d failures in a row; error budget %s of %s.",
		strings.ReplaceAll(string(d.State), "_", " "), in.ConsecutiveFailures, fmtNum(in.ErrorBudget), fmtNum(in.ErrorBudgetSize))
	return b.String()
}

// cadence is the line about the policy's interval.
func cadence(d Decision) string {
	in := d.Inputs
	before, after := sec(in.IntervalBeforeSec), sec(in.IntervalAfterSec)
	switch d.Reason {
	case ReasonPostingRate:
		s := fmt.Sprintf("The feed posts about %s a day; policy adaptive at scale %s gives %s on average",
			fmtRate(in.RatePerDay), fmtNum(in.Scale), fmtDur(sec(in.BaseSec)))
		if f := in.ProfileFactor; f > 0 && math.Abs(f-1) > 0.05 {
			s += fmt.Sprintf(", ×%s for the coming hours of the week", fmtNum(f))
		}
		return s + fmt.Sprintf(": interval %s.", fmtDur(after))
	case ReasonDailySlot:
		return fmt.Sprintf("The feed's items have appeared by %s UTC on each of its last days with items; policy adaptive polls once a day, just after that.", in.Slot)
	case ReasonNewEntries, ReasonNotModified, ReasonNoNewEntries, ReasonEWMAStable:
		what := map[Reason]string{
			ReasonNewEntries:   fmt.Sprintf("%d new entries: ×b_down", in.NewEntries),
			ReasonNotModified:  "304 Not Modified: ×b_up",
			ReasonNoNewEntries: "no new entries: ×b_up",
			ReasonEWMAStable:   "the interval sits at the feed's cadence",
		}[d.Reason]
		s := fmt.Sprintf("Policy seed: %s, interval %s → %s", what, fmtDur(before), fmtDur(after))
		if in.EWMASecs > 0 {
			s += fmt.Sprintf(" (blended with the EWMA of gaps between posts, %s)", fmtDur(sec(int(in.EWMASecs))))
		}
		return s + "."
	case ReasonFixed:
		return fmt.Sprintf("Fixed interval %s (%s).", fmtDur(after), firstNonEmpty(in.Override, "policy "+in.Policy))
	case ReasonCron:
		if in.CronError != "" {
			return "The cron expression is unusable (" + in.CronError + ")."
		}
		return fmt.Sprintf("Cron %s fires next at %s.", cronOf(in.Override), in.CronNextAt)
	}
	return ""
}

// patternLine is the line about a clear posting pattern.
func patternLine(d Decision) string {
	in := d.Inputs
	if in.PatternGain <= 0 {
		return ""
	}
	s := fmt.Sprintf("Pattern: posts mostly at %s UTC", in.PatternHours)
	if in.PatternDays != "" && in.PatternDays != "Sun-Sat" {
		s += ", " + in.PatternDays
		if in.DayStart != 0 {
			s += fmt.Sprintf(" (its days start at %02d:00 UTC)", in.DayStart)
		}
	}
	if d.Reason != ReasonPostingRate {
		return s + "."
	}
	return s + fmt.Sprintf("; polls follow it: ×%s of their average rate now, for ×%s of the delay of evenly spaced polls.",
		fmtNum(in.PollWeight), fmtNum(in.PatternGain))
}

// cronOf is the cron expression in an Override list ("min 10m, cron 0 3
// * * *"): the other overrides are said elsewhere.
func cronOf(override string) string {
	for part := range strings.SplitSeq(override, ", ") {
		if expr, ok := strings.CutPrefix(part, "cron "); ok {
			return expr
		}
	}
	return override
}

func failure(in Inputs) string {
	s := in.ErrorClass
	if in.ErrorCode != "" {
		s += "/" + in.ErrorCode
	}
	if in.HTTPStatus != 0 {
		s = fmt.Sprintf("HTTP %d, %s", in.HTTPStatus, s)
	}
	return s
}

func skipText(in Inputs) string {
	var parts []string
	if len(in.SkipHours) > 0 {
		parts = append(parts, "skipHours "+ranges(in.SkipHours))
	}
	if len(in.SkipDays) > 0 {
		parts = append(parts, "skipDays "+strings.Join(in.SkipDays, ","))
	}
	return strings.Join(parts, " and ")
}

// ranges writes 1,2,3,7 as 1-3,7.
func ranges(hs []int) string {
	var out []string
	for i := 0; i < len(hs); {
		j := i
		for j+1 < len(hs) && hs[j+1] == hs[j]+1 {
			j++
		}
		if j > i {
			out = append(out, fmt.Sprintf("%d-%d", hs[i], hs[j]))
		} else {
			out = append(out, fmt.Sprint(hs[i]))
		}
		i = j + 1
	}
	return strings.Join(out, ",")
}

func sec(n int) time.Duration { return time.Duration(n) * time.Second }

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// fmtTime writes a time to the minute, or the second when it has seconds.
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	t = t.UTC()
	if t.Second() == 0 {
		return t.Format("2006-01-02T15:04Z")
	}
	return t.Format("2006-01-02T15:04:05Z")
}

// fmtClock writes t as a time of day when it is on the same day as ref.
func fmtClock(t, ref time.Time) string {
	t, ref = t.UTC(), ref.UTC()
	if t.YearDay() == ref.YearDay() && t.Year() == ref.Year() {
		return t.Format("15:04")
	}
	return t.Format("Mon 15:04")
}

// fmtDur writes a duration the way people say it: 45s, 42m, 1h10m, 2d3h.
// DurationText says a duration as Explain says it: 45s, 48m52s, 3h20m,
// 5d, to the second.
func DurationText(d time.Duration) string { return fmtDur(d) }

func fmtDur(d time.Duration) string {
	neg := d < 0
	if neg {
		d = -d
	}
	d = d.Round(time.Second)
	var s string
	switch {
	case d < time.Minute:
		s = fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		m, sec := int(d/time.Minute), int(d%time.Minute/time.Second)
		s = fmt.Sprintf("%dm", m)
		if sec != 0 {
			s += fmt.Sprintf("%ds", sec)
		}
	case d < 48*time.Hour:
		h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
		s = fmt.Sprintf("%dh", h)
		if m != 0 {
			s += fmt.Sprintf("%dm", m)
		}
	default:
		days, h := int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour)
		s = fmt.Sprintf("%dd", days)
		if h != 0 {
			s += fmt.Sprintf("%dh", h)
		}
	}
	if neg {
		return "-" + s
	}
	return s
}

func fmtSigned(d time.Duration) string {
	if d >= 0 {
		return "+" + fmtDur(d)
	}
	return fmtDur(d)
}

// fmtNum writes a number with at most three significant digits.
func fmtNum(f float64) string { return fmt.Sprintf("%.3g", f) }

// RateText writes a posting rate, items a day, in words as Explain does:
// "3 times a day", "once a day", "0.2 times a day".
func RateText(r float64) string { return fmtRate(r) + " a day" }

// fmtRate writes a posting rate in words: "3 times", "once", "0.2 times".
func fmtRate(r float64) string {
	switch {
	case r >= 0.95 && r < 1.05:
		return "once"
	case r >= 10:
		return fmt.Sprintf("%.0f times", r)
	default:
		return fmt.Sprintf("%.2g times", r)
	}
}
