// Package sched decides when each feed is fetched next, as a pure function
// of the feed's state, the outcome of its last fetch, the parameters, the
// time and a random source.
//
// Next is the whole scheduler: no I/O, no clock, no global state. feed-store
// calls it after every fetch and keeps the State it returns; feed-due fetches
// the feeds whose State.NextAt has passed; the simulator (internal/sim)
// replays posting histories through it. docs/scheduler.md describes the
// policies, the state model and the decision record.
package sched

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Next returns the feed's new state and the decision for out, the latest
// thing that happened to it, at now. rnd draws the jitter; nil means none
// (tests, goldens). st is not changed: the returned State shares nothing
// with it.
func Next(st State, out Outcome, p Params, ov Overrides, now time.Time, rnd *rand.Rand) (State, Decision) {
	p = p.withDefaults()
	r := &run{p: p, ov: ov, now: now, rnd: rnd}
	r.st = st.clean(p)
	r.t0 = out.At
	if r.t0.IsZero() || out.Kind == NeverFetched || out.Kind == Nudged {
		r.t0 = now
	}
	if r.now.IsZero() {
		r.now = r.t0
	}
	r.clamps()
	r.d = Decision{
		At: ndjson.At(r.now),
		Inputs: Inputs{
			Policy:            p.Policy.String(),
			Outcome:           out.Kind,
			IntervalBeforeSec: r.st.IntervalSec,
		},
	}
	if r.d.Inputs.Outcome == "" {
		r.d.Inputs.Outcome = Fetched
	}
	switch out.Kind {
	case NeverFetched:
		r.newFeed()
	case Nudged:
		r.manual()
	default:
		r.fetched(out)
		r.holdPaused()
	}
	r.finish()
	return r.st, r.d
}

// run is one call of Next.
type run struct {
	p   Params
	ov  Overrides
	now time.Time
	t0  time.Time // the fetch time: floors and intervals count from it
	rnd *rand.Rand
	st  State
	d   Decision

	lo, hi    time.Duration // the clamps in force
	floor     time.Duration // ttl and max-age, capped at hi
	notBefore time.Time     // end of Retry-After
	skip      skip
	override  string
	slotAt    time.Time // the adaptive policy's daily slot poll; zero: none
}

func (r *run) in() *Inputs { return &r.d.Inputs }

// clamps sets the interval clamps: the global ones, narrowed (never
// widened) by the feed's own.
func (r *run) clamps() {
	r.lo, r.hi = r.p.Min, r.p.Max
	if m := r.ov.Min; m > 0 {
		r.lo = min(max(m, r.p.Min), r.p.Max)
		r.override = "min " + fmtDur(m)
	}
	if m := r.ov.Max; m > 0 {
		r.hi = min(max(m, r.p.Min), r.p.Max)
		r.override = joinOverride(r.override, "max "+fmtDur(m))
	}
	r.hi = max(r.hi, r.lo)
}

func joinOverride(a, b string) string {
	if a == "" {
		return b
	}
	return a + ", " + b
}

// newFeed: a feed never fetched is fetched at once.
func (r *run) newFeed() {
	r.st.Lifecycle = StateHealthy
	r.st.IntervalSec = int(min(max(r.p.Initial, r.lo), r.hi) / time.Second)
	r.d.Kind, r.d.Reason = FetchNow, ReasonNewFeed
	r.setNext(r.now)
	r.held()
}

// manual: a nudge fetches now, except inside a Retry-After, which only the
// publisher can shorten.
func (r *run) manual() {
	r.d.Kind, r.d.Reason = FetchNow, ReasonManual
	r.setNext(r.now)
	r.held()
}

// held turns a FetchNow into a pause when a Retry-After is still running or
// (for a new feed) the feed is paused by hand.
func (r *run) held() {
	r.skip = skip{hourMask(r.st.Hints.SkipHours), dayMask(r.st.Hints.SkipDays)}
	if ru := r.st.RetryUntil.Time; ru.After(r.now) {
		r.in().RetryAfterSecs = int(math.Ceil(ru.Sub(r.now).Seconds()))
		r.pause(ReasonRetryAfter, ru)
		return
	}
	if r.d.Reason == ReasonNewFeed && r.ov.PausedUntil.After(r.now) {
		r.st.Lifecycle = StatePaused
		r.override = joinOverride(r.override, "paused")
		r.pause(ReasonPaused, r.ov.PausedUntil)
	}
}

// holdPaused keeps a fetch's decision out of a pause set by hand. An
// answer's is a Pause already (success); this holds a backoff, a
// Retry-After, an open circuit or a probe to the pause's end too, keeping
// its kind, state and reason. (A manual nudge is not held: feed-due skips
// a paused feed, and feed-sub refetch says so.)
func (r *run) holdPaused() {
	pu := r.ov.PausedUntil
	if r.d.NextAt.IsZero() || !pu.After(r.d.NextAt.Time) {
		return
	}
	r.override = joinOverride(r.override, "paused")
	r.setNext(r.settle(pu, 0))
	if !r.d.Until.IsZero() {
		r.d.Until = r.d.NextAt
	}
}

// fetched handles the outcome of a fetch.
func (r *run) fetched(o Outcome) {
	st, p, in := &r.st, r.p, r.in()
	class := o.class()
	in.HTTPStatus, in.NotModified, in.ErrorClass, in.ErrorCode = o.Status, o.NotModified, class, o.ErrorCode
	in.Items = o.Items
	prev := st.FetchedAt.Time
	if o.Parsed {
		st.Hints = cleanHints(o.TTLMinutes, o.SkipHours, o.SkipDays)
	}
	if o.Items > 0 {
		st.Window = min(o.Items, 1<<20)
	}
	if !prev.IsZero() && r.t0.After(prev) {
		st.ErrorsSpent = max(0, st.ErrorsSpent-p.ErrorBudgetPerDay*r.t0.Sub(prev).Hours()/24)
	}
	failed := o.failed()
	newCount := 0
	if !failed {
		newCount = r.observe(o, prev, true, st.Withheld)
		if o.Parsed { // a document was read: what it left out, if anything
			st.Withheld = min(max(o.Withheld, 0), 1<<20)
		}
	} else {
		r.observe(Outcome{}, prev, false, 0)
	}
	in.NewEntries = newCount
	if prev.IsZero() || r.t0.After(prev) {
		st.FetchedAt = ndjson.At(r.t0)
	}
	r.floors(o)

	switch {
	case failed && o.refused():
		r.refused()
	case failed && st.Lifecycle == StateDisabled: // a failed probe
		r.failed(o, class)
		reason := st.DisabledReason
		if o.permanent() {
			reason = "permanent error " + errText(class, o)
		}
		r.disable(reason)
	case failed && o.permanent():
		r.failed(o, class)
		r.disable("permanent error " + errText(class, o))
	case failed && r.notBefore.After(r.t0) && (class == ClassRateLimited || o.Status == 429 || o.Status == 503):
		// (A Retry-After date already past is no Retry-After: backoff.)
		st.LastError = errText(class, o)
		st.Lifecycle = StatePaused
		at := r.notBefore
		if f := r.t0.Add(r.floor); f.After(at) {
			at = f // the publisher's ttl is a wish too; the later one keeps both
		}
		r.pause(ReasonRetryAfter, at)
	case failed:
		r.failed(o, class)
		if t := p.DisableThreshold; t > 0 && st.Failures >= t {
			r.disable(fmt.Sprintf("%d failures in a row, the last %s", st.Failures, st.LastError))
			return
		}
		r.backoff(class)
	default:
		r.success(o, newCount, prev)
	}
}

// refused: this machine's own rule refused the fetch (a private address
// without --allow-private). The publisher was never asked, so nothing
// about the feed changes: no failure is counted, no backoff step taken, no
// error budget spent, and the feed keeps its state. It is tried again
// after its interval, so that a run with --allow-private finds it soon
// and goes on as if the refusals had not been (a disabled feed: at its
// next probe).
func (r *run) refused() {
	st := &r.st
	if st.Lifecycle == StateDisabled {
		r.disable(st.DisabledReason)
		return
	}
	iv := max(st.Interval(), r.floor)
	r.in().BackoffSec = int(iv / time.Second)
	gap := r.jitter(iv, max(r.floor, r.lo), r.hi)
	r.d.Kind, r.d.Reason = Backoff, ReasonRefused
	r.setNext(r.settle(r.t0.Add(gap), gap))
	r.d.Until = r.d.NextAt
}

// failed counts a failure.
func (r *run) failed(o Outcome, class string) {
	st := &r.st
	st.Failures++
	st.Step = min(st.Step+1, 64)
	st.Successes = 0
	st.ErrorsSpent = min(st.ErrorsSpent+1, r.p.ErrorBudget)
	st.LastError = errText(class, o)
}

func errText(class string, o Outcome) string {
	s := class
	if o.ErrorCode != "" {
		s += "/" + o.ErrorCode
	} else if o.Status != 0 {
		s += fmt.Sprintf("/http_%d", o.Status)
	}
	return s
}

// floors sets the publisher's floors and the Retry-After end.
func (r *run) floors(o Outcome) {
	st, in := &r.st, r.in()
	ttl := min(time.Duration(st.Hints.TTLMinutes)*time.Minute, r.hi)
	maxAge := min(time.Duration(min(max(o.MaxAgeSec, 0), 1<<30))*time.Second, r.hi)
	r.floor = max(ttl, maxAge)
	in.TTLSec, in.MaxAgeSec, in.FloorSec = int(ttl/time.Second), int(maxAge/time.Second), int(r.floor/time.Second)

	var nb time.Time
	if ra := o.RetryAfterSec; ra > 0 {
		nb = r.t0.Add(min(time.Duration(min(ra, 1<<30))*time.Second, r.p.MaxRetryAfter))
	}
	if u := o.RetryUntil; u.After(r.t0) {
		nb = later(nb, earlier(u, r.t0.Add(r.p.MaxRetryAfter)))
	}
	nb = later(nb, st.RetryUntil.Time) // an earlier Retry-After still running
	if nb.After(r.t0) {
		r.notBefore = nb
		st.RetryUntil = ndjson.At(ceilSecond(nb))
		in.RetryAfterSecs = int(math.Ceil(nb.Sub(r.t0).Seconds()))
	} else {
		st.RetryUntil = ndjson.Time{}
	}
	r.skip = skip{hourMask(st.Hints.SkipHours), dayMask(st.Hints.SkipDays)}
}

// disable takes the feed out of service, or keeps it out after a failed
// probe. Unless NoProbe, it is fetched again once per max interval.
func (r *run) disable(reason string) {
	st := &r.st
	if st.Lifecycle != StateDisabled {
		r.d.Event = EventDisabled
		st.DisabledAt = ndjson.At(r.t0)
	}
	st.Lifecycle = StateDisabled
	st.DisabledReason = reason
	st.Successes = 0
	if r.p.NoProbe {
		r.d.Kind, r.d.Reason = Pause, ReasonDisabled
		r.setNext(time.Time{})
		return
	}
	r.in().Probe = true
	gap := r.jitter(r.hi, max(r.floor, r.lo), r.hi)
	r.pause(ReasonDisabled, r.t0.Add(gap))
}

// backoff schedules the retry of a failed fetch: the interval times
// base^step, capped at BackoffCap (or at the interval, when that is
// longer), with jitter, above the floors; under the seed policy, its own
// rule (seedBackoff). When the failure spent the last of the error budget,
// the circuit opens instead: a pause until the budget holds a token again.
func (r *run) backoff(class string) {
	st, p, in := &r.st, r.p, r.in()
	// A feed on its own interval or cron is not on the policy's cadence:
	// it backs off in steps under every policy.
	seedRule := p.Policy.Kind == PolicySeed && r.ov.Interval <= 0 && r.ov.Cron == ""
	var delay time.Duration
	if seedRule {
		delay = r.seedBackoff()
	} else {
		iv := st.Interval()
		capd := max(p.BackoffCap, iv)
		delay = time.Duration(math.Min(float64(iv)*math.Pow(p.BackoffBase, float64(st.Step)), float64(capd)))
	}
	in.BackoffSec = int(delay / time.Second)
	if st.ErrorsSpent >= p.ErrorBudget {
		wait := max(delay, time.Duration(float64(24*time.Hour)/p.ErrorBudgetPerDay))
		if st.Lifecycle != StatePaused || st.Reason != ReasonBudgetExceeded {
			r.d.Event = EventCircuitOpen
		}
		st.Lifecycle = StatePaused
		// Jitter only lengthens an open circuit, so that it is never shorter
		// than the budget's refill.
		gap := r.jitter(wait, max(wait, r.floor), time.Duration(float64(wait)*(1+max(p.Jitter, 0))))
		r.pause(ReasonBudgetExceeded, r.t0.Add(gap))
		return
	}
	st.Lifecycle = StateBackoff
	reason := ReasonHTTPError
	if class == ClassParse {
		reason = ReasonParseError
	}
	var gap time.Duration
	if seedRule { // jittered as after an answer (the rule ends every branch alike)
		gap = r.jitter(delay, max(r.floor, r.lo), r.hi)
	} else {
		gap = r.jitter(delay, r.floor, time.Duration(float64(delay)*(1+max(p.Jitter, 0))))
	}
	r.d.Kind, r.d.Reason = Backoff, reason
	r.setNext(r.settle(r.t0.Add(gap), gap))
	r.d.Until = r.d.NextAt
}

// seedBackoff is the seed policy's error branch (docs/scheduler.md §3):
// the stored interval itself becomes I = min(I·base, cap) (so an interval
// longer than the cap comes down to it), kept within the clamps, then
// blended with the EWMA and raised to the floors as after an answer. It
// returns the new interval, before jitter. The rule names only 429/503
// without Retry-After; every other failure that is not permanent (5xx,
// network, blocked, parse errors) gets the same cautious backoff.
func (r *run) seedBackoff() time.Duration {
	st, p := &r.st, r.p
	iv := math.Min(float64(st.Interval())*p.BackoffBase, float64(p.BackoffCap))
	iv = math.Min(math.Max(iv, float64(r.lo)), float64(r.hi))
	iv, _, _ = r.blend(iv)
	d := max(time.Duration(iv), r.floor)
	st.IntervalSec = int(d / time.Second)
	return d
}

// success schedules the next fetch of a feed that answered.
func (r *run) success(o Outcome, newCount int, prev time.Time) {
	st, p := &r.st, r.p
	if st.Lifecycle == StateDisabled {
		r.d.Event = EventReenabled
		st.DisabledReason, st.DisabledAt = "", ndjson.Time{}
		st.ErrorsSpent = 0
	}
	st.Failures, st.LastError = 0, ""
	recovering := st.Lifecycle == StateBackoff || st.Lifecycle == StateDisabled || st.Lifecycle == StateCoolingDown ||
		(st.Lifecycle == StatePaused && st.Reason != ReasonPaused)
	if recovering {
		st.Successes++
		st.Lifecycle = StateCoolingDown
		if st.Successes >= CoolDownSuccesses {
			st.Lifecycle, st.Step, st.Successes = StateHealthy, 0, 0
		}
	} else {
		st.Lifecycle, st.Step, st.Successes = StateHealthy, 0, 0
	}

	if r.ov.Cron != "" {
		r.cron()
	} else {
		var iv time.Duration
		var reason Reason
		switch {
		case r.ov.Interval > 0:
			iv, reason = min(max(r.ov.Interval, MinPollingInterval), MaxPollingInterval), ReasonFixed
			r.override = joinOverride(r.override, "interval "+fmtDur(iv))
		case p.Policy.Kind == PolicyFixed:
			iv, reason = p.Policy.Every, ReasonFixed
		case p.Policy.Kind == PolicySeed:
			iv, reason = r.seed(o, newCount)
		default:
			iv, reason = r.adaptive(newCount, prev)
		}
		if o.Truncated { // a body cut at the size cap asks for a longer interval
			iv = max(iv, time.Duration(float64(st.Interval())*p.Up))
			r.in().Truncated = true
		}
		iv = max(min(max(iv, r.lo), r.hi), r.floor)
		st.IntervalSec = int(iv / time.Second)
		r.d.Kind, r.d.Reason = Defer, reason
		if !r.slotAt.IsZero() {
			r.setNext(r.settle(r.slotPoll(), 0))
		} else {
			gap := r.jitter(iv, max(r.floor, r.lo), r.hi)
			r.setNext(r.settle(r.t0.Add(gap), gap))
		}
	}
	if pu := r.ov.PausedUntil; pu.After(r.d.NextAt.Time) {
		st.Lifecycle = StatePaused
		r.override = joinOverride(r.override, "paused")
		r.pause(ReasonPaused, pu)
	}
}

// seed is the seed policy (docs/scheduler.md §3): ×b_up on 304 or no new entries, ×b_down on new
// entries, then the blend with the EWMA of inter-arrival times.
func (r *run) seed(o Outcome, newCount int) (time.Duration, Reason) {
	st, p := &r.st, r.p
	iv := float64(st.Interval())
	var reason Reason
	switch {
	case o.NotModified:
		iv, reason = iv*p.Up, ReasonNotModified
	case newCount > 0:
		iv, reason = iv*p.Down, ReasonNewEntries
	default:
		iv, reason = iv*p.Up, ReasonNoNewEntries
	}
	iv = math.Min(math.Max(iv, float64(r.lo)), float64(r.hi))
	if blended, target, ok := r.blend(iv); ok {
		if math.Abs(target-iv) <= 0.1*iv {
			reason = ReasonEWMAStable
		}
		iv = blended
	}
	return time.Duration(iv), reason
}

// blend is the seed policy's EWMA step: with two publication times or more,
// I = clamp(λ·I* + (1-λ)·I, min, max), I* the EWMA of the feed's gaps
// within the clamps. ok is false, and iv unchanged, with fewer.
func (r *run) blend(iv float64) (blended, target float64, ok bool) {
	if len(r.st.Pub) < 2 {
		return iv, 0, false
	}
	lo, hi, l := float64(r.lo), float64(r.hi), r.p.Lambda
	target = math.Min(math.Max(r.st.EWMASec*float64(time.Second), lo), hi)
	return math.Min(math.Max(l*target+(1-l)*iv, lo), hi), target, true
}

// cron schedules at the first fire time of the feed's cron expression that
// keeps the floors, the min interval, Retry-After and the skip windows.
func (r *run) cron() {
	st, in := &r.st, r.in()
	r.override = joinOverride(r.override, "cron "+r.ov.Cron)
	r.d.Kind, r.d.Reason = Defer, ReasonCron
	sch, err := ParseCron(r.ov.Cron)
	if err != nil {
		// An unusable expression must not lose the feed: it falls back to
		// the max interval, and the decision says why.
		in.CronError = err.Error()
		iv := max(r.hi, r.floor)
		st.IntervalSec = int(iv / time.Second)
		r.setNext(r.settle(r.t0.Add(iv), 0))
		return
	}
	from := later(r.t0.Add(max(r.floor, r.lo)), r.notBefore).Add(-time.Second)
	// The first fire time outside the skip windows. The windows repeat
	// every week, so a search is bounded by eight days of fire times (and
	// a count, for expressions that fire every minute): an expression
	// whose fire times all fall in the windows keeps its first one, which
	// settle then moves out of the window. Unbounded, an @daily inside
	// skipHours 0 searched 1,000 days on every decision.
	t := sch.Next(from)
	first, horizon := t, from.Add(8*24*time.Hour)
	for n := 0; !t.IsZero() && !r.skip.empty() && !r.skip.total() && r.skip.in(t); n++ {
		if n >= cronSearchMax || t.After(horizon) {
			t = first
			break
		}
		t = sch.Next(t)
	}
	if t.IsZero() {
		in.CronError = "no fire time ahead"
		t = r.t0.Add(max(r.hi, r.floor))
	}
	in.CronNextAt = fmtTime(t)
	st.IntervalSec = int(min(max(t.Sub(r.t0), r.lo), r.hi) / time.Second)
	r.setNext(r.settle(t, 0))
}

// cronSearchMax bounds how many fire times cron tries to find one outside
// the skip windows.
const cronSearchMax = 600

// jitter draws the gap from iv·[1-j, 1+j] cut to [lo, hi], and records how
// far the draw moved it. Without a random source it is iv cut to [lo, hi].
func (r *run) jitter(iv, lo, hi time.Duration) time.Duration {
	if hi < lo {
		hi = lo
	}
	j := max(r.p.Jitter, 0)
	if r.rnd == nil || j == 0 {
		return min(max(iv, lo), hi)
	}
	a := max(time.Duration(float64(iv)*(1-j)), lo)
	b := min(time.Duration(float64(iv)*(1+j)), hi)
	if b < a {
		b = a
	}
	g := a + time.Duration(r.rnd.Float64()*float64(b-a))
	r.in().JitterSec = int((g - iv).Round(time.Second) / time.Second)
	return g
}

// slotPoll is the time of the daily slot's poll: not before the floors and
// the min interval, and with jitter that only moves it later, and by
// little, so that the feeds of one slot do not all come at once but none
// comes before its items.
func (r *run) slotPoll() time.Time {
	t := later(r.slotAt, r.t0.Add(max(r.floor, r.lo)))
	room := min(time.Duration(float64(t.Sub(r.t0))*max(r.p.Jitter, 0)), slotMargin*time.Second)
	if r.rnd != nil && room > 0 {
		j := time.Duration(r.rnd.Float64() * float64(room))
		r.in().JitterSec = int(j.Round(time.Second) / time.Second)
		t = t.Add(j)
	}
	return t
}

// settle makes t a valid next_at: not before Retry-After, out of the skip
// windows, on a whole second. A time moved out of a window is spread over
// the first minutes of the allowed hour, so that all the feeds that wait
// out the same window do not arrive at once.
func (r *run) settle(t time.Time, gap time.Duration) time.Time {
	// Whole seconds first: rounding up after the move could carry a time
	// just before a window into it.
	t = ceilSecond(later(t, r.notBefore))
	if !r.skip.empty() {
		if r.skip.total() {
			r.in().SkipIgnored = true
		} else if moved, ok := r.skip.out(t); ok {
			r.in().SkipMovedFrom = ndjson.At(t)
			if room := min(time.Duration(float64(gap)*max(r.p.Jitter, 0)), 15*time.Minute); room > 0 && r.rnd != nil {
				moved = moved.Add(time.Duration(r.rnd.Float64() * float64(room)))
			}
			t = moved
		}
	}
	return ceilSecond(t)
}

// pause ends the decision with a Pause until at (zero: no end).
func (r *run) pause(reason Reason, at time.Time) {
	r.d.Kind, r.d.Reason = Pause, reason
	if !at.IsZero() {
		at = r.settle(at, 0)
	}
	r.setNext(at)
	r.d.Until = r.d.NextAt
}

func (r *run) setNext(t time.Time) {
	if t.IsZero() {
		r.d.NextAt = ndjson.Time{}
		return
	}
	r.d.NextAt = ndjson.At(t)
}

// finish copies the decision into the state and the state into the
// decision's inputs.
func (r *run) finish() {
	st, in, p := &r.st, r.in(), r.p
	st.NextAt = r.d.NextAt
	st.DecidedAt = ndjson.At(r.now)
	st.Reason = r.d.Reason
	if st.Lifecycle == "" {
		st.Lifecycle = StateHealthy
	}
	r.d.State = st.Lifecycle
	if st.Lifecycle == StateDisabled {
		r.d.DisabledReason = st.DisabledReason
	}
	in.Override = r.override
	in.IntervalAfterSec = st.IntervalSec
	in.MinSec, in.MaxSec = int(r.lo/time.Second), int(r.hi/time.Second)
	if len(st.Pub) >= 2 {
		in.EWMASecs = math.Round(st.EWMASec)
	}
	in.SkipHours, in.SkipDays = st.Hints.SkipHours, st.Hints.SkipDays
	in.BackoffStep = st.Step
	in.ConsecutiveFailures = st.Failures
	in.ErrorBudget = math.Round((p.ErrorBudget-st.ErrorsSpent)*100) / 100
	in.ErrorBudgetSize = p.ErrorBudget
}

func ceilSecond(t time.Time) time.Time {
	c := t.Truncate(time.Second)
	if c.Before(t) {
		c = c.Add(time.Second)
	}
	return c
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
