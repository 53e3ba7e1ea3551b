package sched

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC) // a Monday

func noJitter() Params {
	p := Defaults()
	p.Jitter = -1
	return p
}

func seedParams() Params {
	p := noJitter()
	p.Policy = Policy{Kind: PolicySeed}
	return p
}

// started is a feed fetched once at t0 with the given state changes.
func started(p Params, ov Overrides) State {
	st, _ := Next(State{}, Outcome{Kind: NeverFetched}, p, ov, t0, nil)
	return st
}

func secs(d Decision) float64 { return d.NextAt.Sub(d.At.Time).Seconds() }

// The seed policy's rules, one line each (docs/scheduler.md §3).
func TestSeedRules(t *testing.T) {
	p := seedParams()
	tests := []struct {
		name    string
		out     Outcome
		before  int
		want    int
		reason  Reason
		pubs    []int64
		wantMin float64
	}{
		{name: "304 ×b_up", out: Outcome{Status: 304, NotModified: true}, before: 1000, want: 1250, reason: ReasonNotModified},
		{name: "new entries ×b_down", out: Outcome{Status: 200, NewEntries: 1}, before: 1000, want: 750, reason: ReasonNewEntries},
		{name: "no new entries ×b_up", out: Outcome{Status: 200}, before: 1000, want: 1250, reason: ReasonNoNewEntries},
		{name: "×b_up stops at the max", out: Outcome{Status: 304, NotModified: true}, before: 80000, want: 86400, reason: ReasonNotModified},
		{name: "×b_down stops at the min", out: Outcome{Status: 200, NewEntries: 1}, before: 350, want: 300, reason: ReasonNewEntries},
		// EWMA of 3600s gaps blended with lambda 0.5: 0.5·3600 + 0.5·1250.
		{name: "EWMA blend", out: Outcome{Status: 304, NotModified: true}, before: 1000, want: 2425, reason: ReasonNotModified,
			pubs: []int64{t0.Unix() - 7200, t0.Unix() - 3600, t0.Unix()}},
		// The EWMA target within 10% of the interval: the cadence is settled.
		{name: "EWMA stable", out: Outcome{Status: 304, NotModified: true}, before: 2900, want: 3612, reason: ReasonEWMAStable,
			pubs: []int64{t0.Unix() - 7200, t0.Unix() - 3600, t0.Unix()}},
		{name: "ttl is a floor", out: Outcome{Status: 200, NewEntries: 1, Parsed: true, TTLMinutes: 60}, before: 1000, want: 3600, reason: ReasonNewEntries},
		{name: "max-age is a floor", out: Outcome{Status: 304, NotModified: true, MaxAgeSec: 7200}, before: 1000, want: 7200, reason: ReasonNotModified},
		// a body cut at the size cap increases the interval,
		// here against ×b_down.
		{name: "truncated body at least ×b_up", out: Outcome{Status: 200, NewEntries: 1, Truncated: true}, before: 1000, want: 1250, reason: ReasonNewEntries},
		{name: "a ttl above the max is capped at it", out: Outcome{Status: 200, Parsed: true, TTLMinutes: 3000}, before: 1000, want: 86400, reason: ReasonNoNewEntries},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := started(p, Overrides{})
			st.IntervalSec = tt.before
			st.Pub = tt.pubs
			st.EWMASec = ewma(tt.pubs, p.Alpha)
			out := tt.out
			out.At = t0.Add(time.Minute)
			got, d := Next(st, out, p, Overrides{}, out.At, nil)
			if got.IntervalSec != tt.want || d.Reason != tt.reason || d.Kind != Defer {
				t.Errorf("interval %d reason %s kind %s; want %d %s defer", got.IntervalSec, d.Reason, d.Kind, tt.want, tt.reason)
			}
			if s := secs(d); math.Abs(s-float64(tt.want)) > 1 {
				t.Errorf("next_at in %.0fs, want %d", s, tt.want)
			}
		})
	}
}

// Retry-After is honoured exactly, in seconds or as a date, with jitter
// on, and a manual nudge cannot shorten it.
func TestRetryAfterExact(t *testing.T) {
	p := Defaults()
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, out := range []Outcome{
		{Status: 429, ErrorClass: ClassRateLimited, RetryAfterSec: 600},
		{Status: 503, RetryAfterSec: 600}, // class derived from the status
		{Status: 503, ErrorClass: ClassRateLimited, RetryUntil: t0.Add(time.Minute + 600*time.Second)},
	} {
		st := started(p, Overrides{})
		out.At = t0.Add(time.Minute)
		st2, d := Next(st, out, p, Overrides{}, out.At, rnd)
		if d.Kind != Pause || d.Reason != ReasonRetryAfter || secs(d) != 600 || !d.Until.Equal(d.NextAt.Time) {
			t.Errorf("%+v: got %s %s in %.0fs, want a pause of exactly 600s", out, d.Kind, d.Reason, secs(d))
		}
		if st2.Failures != 0 || st2.ErrorsSpent != 0 {
			t.Errorf("a Retry-After counted as a failure: %d failures, %g spent", st2.Failures, st2.ErrorsSpent)
		}
		_, d = Next(st2, Outcome{Kind: Nudged}, p, Overrides{}, out.At.Add(5*time.Minute), rnd)
		if d.Kind != Pause || d.NextAt.Sub(out.At) != 600*time.Second {
			t.Errorf("a nudge inside Retry-After: %s at %s", d.Kind, d.NextAt)
		}
	}
}

// Backoff on failures. The adaptive (and fixed) policies count steps:
// delay = min(I·base^step, max(cap, I)), the interval kept for when the
// feed answers. The seed policy follows its rule as written: the
// interval itself becomes min(I·base, cap), then the EWMA blend and the
// floors apply as after an answer.
func TestBackoffAndCap(t *testing.T) {
	fail := func(p Params, st State, n int) (State, []float64) {
		t.Helper()
		at := t0
		var got []float64
		for range n {
			at = at.Add(time.Minute)
			var d Decision
			st, d = Next(st, Outcome{At: at, Status: 503, ErrorClass: ClassTransient}, p, Overrides{}, at, nil)
			if d.Kind != Backoff || d.Reason != ReasonHTTPError || d.State != StateBackoff {
				t.Fatalf("got %s %s %s", d.Kind, d.Reason, d.State)
			}
			got = append(got, secs(d))
		}
		return st, got
	}
	t.Run("adaptive steps", func(t *testing.T) {
		p := noJitter()
		p.ErrorBudget = 100
		st := started(p, Overrides{})
		st.IntervalSec = 900
		st, got := fail(p, st, 5)
		if want := []float64{1800, 3600, 3600, 3600, 3600}; !slices.Equal(got, want) {
			t.Errorf("backoff delays %v, want %v", got, want)
		}
		if st.IntervalSec != 900 {
			t.Errorf("interval %ds after the failures, want 900 kept", st.IntervalSec)
		}
		// A feed polled less often than the cap backs off at its own interval.
		st = started(p, Overrides{})
		st.IntervalSec = 6 * 3600
		_, d := Next(st, Outcome{At: t0, Status: 500}, p, Overrides{}, t0, nil)
		if secs(d) != 6*3600 {
			t.Errorf("backoff of a 6h feed: %.0fs", secs(d))
		}
	})
	t.Run("seed as written", func(t *testing.T) {
		p := seedParams()
		p.ErrorBudget = 100
		st := started(p, Overrides{})
		st.IntervalSec = 900
		st, got := fail(p, st, 4)
		if want := []float64{1800, 3600, 3600, 3600}; !slices.Equal(got, want) || st.IntervalSec != 3600 {
			t.Errorf("delays %v, interval %ds; want %v and 3600 stored", got, st.IntervalSec, want)
		}
		// The grown interval is the one the next answer starts from: a 304
		// stretches it by b_up.
		at := t0.Add(time.Hour)
		st, d := Next(st, Outcome{At: at, Status: 304, NotModified: true}, p, Overrides{}, at, nil)
		if st.IntervalSec != 4500 || d.Reason != ReasonNotModified {
			t.Errorf("a 304 after the failures: interval %ds %s, want 4500 (3600·1.25)", st.IntervalSec, d.Reason)
		}
		// An interval longer than the cap comes down to it.
		st = started(p, Overrides{})
		st.IntervalSec = 6 * 3600
		st, d = Next(st, Outcome{At: t0, Status: 500}, p, Overrides{}, t0, nil)
		if secs(d) != 3600 || st.IntervalSec != 3600 {
			t.Errorf("a 6h feed's failure: in %.0fs, interval %ds; want the cap, 3600", secs(d), st.IntervalSec)
		}
		// Then the EWMA blend (gaps of 2h: 0.5·7200 + 0.5·1800) and the
		// ttl floor, as after an answer.
		st = started(p, Overrides{})
		st.IntervalSec = 900
		st.Pub = []int64{t0.Unix() - 4*3600, t0.Unix() - 2*3600, t0.Unix()}
		st.EWMASec = ewma(st.Pub, p.Alpha)
		_, d = Next(st, Outcome{At: t0, Status: 0, ErrorClass: ClassTransient, ErrorCode: "timeout"}, p, Overrides{}, t0, nil)
		if secs(d) != 4500 {
			t.Errorf("blended backoff in %.0fs, want 4500", secs(d))
		}
		st.Hints = Hints{TTLMinutes: 120}
		_, d = Next(st, Outcome{At: t0, Status: 200, ErrorClass: ClassParse, ErrorCode: "parse_failed"}, p, Overrides{}, t0, nil)
		if secs(d) != 7200 || d.Reason != ReasonParseError {
			t.Errorf("backoff under a 2h ttl in %.0fs (%s), want 7200", secs(d), d.Reason)
		}
	})
}

func TestDisable(t *testing.T) {
	p := noJitter()
	p.ErrorBudget = 100
	t.Run("threshold", func(t *testing.T) {
		st := started(p, Overrides{})
		var d Decision
		for i := range 10 {
			at := t0.Add(time.Duration(i+1) * time.Hour)
			st, d = Next(st, Outcome{At: at, ErrorClass: ClassTransient, ErrorCode: "timeout"}, p, Overrides{}, at, nil)
			if i < 9 && d.State == StateDisabled {
				t.Fatalf("disabled after %d failures", i+1)
			}
		}
		if d.State != StateDisabled || d.Event != EventDisabled || d.Kind != Pause || d.Reason != ReasonDisabled || !strings.Contains(d.DisabledReason, "10 failures") {
			t.Errorf("after 10 failures: %+v", d)
		}
		if secs(d) != 86400 {
			t.Errorf("probe in %.0fs, want the max interval", secs(d))
		}
	})
	t.Run("permanent", func(t *testing.T) {
		for _, out := range []Outcome{{Status: 404}, {Status: 410, ErrorClass: ClassPermanent}, {Status: 200, ErrorClass: ClassParse, ErrorCode: "not_a_feed"}} {
			out.At = t0.Add(time.Minute)
			_, d := Next(started(p, Overrides{}), out, p, Overrides{}, out.At, nil)
			if d.State != StateDisabled || d.Event != EventDisabled {
				t.Errorf("%+v: %s %s", out, d.State, d.Event)
			}
		}
	})
	t.Run("no probe", func(t *testing.T) {
		q := p
		q.NoProbe = true
		st, d := Next(started(q, Overrides{}), Outcome{At: t0, Status: 404}, q, Overrides{}, t0, nil)
		if !d.NextAt.IsZero() || !st.NextAt.IsZero() || st.Due(t0.Add(365*24*time.Hour)) {
			t.Errorf("a disabled feed without probes is due at %s", d.NextAt)
		}
	})
	t.Run("probe re-enables", func(t *testing.T) {
		st, _ := Next(started(p, Overrides{}), Outcome{At: t0, Status: 404}, p, Overrides{}, t0, nil)
		at := t0.Add(24 * time.Hour)
		st, d := Next(st, Outcome{At: at, Status: 500}, p, Overrides{}, at, nil)
		if d.State != StateDisabled || d.Event != "" {
			t.Errorf("failed probe: %s %s", d.State, d.Event)
		}
		at = at.Add(24 * time.Hour)
		st, d = Next(st, Outcome{At: at, Status: 200, NewEntries: 1}, p, Overrides{}, at, nil)
		if d.State != StateCoolingDown || d.Event != EventReenabled || st.DisabledReason != "" || d.Kind != Defer {
			t.Errorf("answered probe: %s %s %q", d.State, d.Event, st.DisabledReason)
		}
	})
	t.Run("enable by hand", func(t *testing.T) {
		st, _ := Next(started(p, Overrides{}), Outcome{At: t0, Status: 404}, p, Overrides{}, t0, nil)
		st = Enable(st, t0.Add(time.Hour))
		if st.Lifecycle != StateHealthy || st.Failures != 0 || !st.Due(t0.Add(time.Hour)) {
			t.Errorf("after Enable: %+v", st)
		}
	})
}

func TestCircuit(t *testing.T) {
	p := noJitter()
	st := started(p, Overrides{})
	at := t0
	var d Decision
	opened := false
	for i := range 20 {
		at = at.Add(30 * time.Minute)
		out := Outcome{At: at, Status: 502}
		if i%2 == 1 {
			out = Outcome{At: at, Status: 304, NotModified: true}
		}
		st, d = Next(st, out, p, Overrides{}, at, nil)
		if d.Reason == ReasonBudgetExceeded {
			opened = true
			if d.Kind != Pause || d.State != StatePaused || secs(d) < 86400/p.ErrorBudgetPerDay {
				t.Errorf("open circuit: %s %s for %.0fs", d.Kind, d.State, secs(d))
			}
			break
		}
	}
	if !opened {
		t.Errorf("a feed failing every other fetch never opened its circuit; budget left %g", p.ErrorBudget-st.ErrorsSpent)
	}
}

func TestOverrides(t *testing.T) {
	p := noJitter()
	out := Outcome{At: t0.Add(time.Minute), Status: 200, NewEntries: 1}
	t.Run("fixed interval clamped to 5m", func(t *testing.T) {
		ov := Overrides{Interval: time.Minute}
		_, d := Next(started(p, ov), out, p, ov, out.At, nil)
		if secs(d) != 300 || d.Reason != ReasonFixed {
			t.Errorf("%.0fs %s", secs(d), d.Reason)
		}
	})
	t.Run("fixed interval clamped to 24h", func(t *testing.T) {
		ov := Overrides{Interval: 48 * time.Hour}
		_, d := Next(started(p, ov), out, p, ov, out.At, nil)
		if secs(d) != 86400 {
			t.Errorf("%.0fs", secs(d))
		}
	})
	t.Run("min and max narrow", func(t *testing.T) {
		ov := Overrides{Min: 2 * time.Hour}
		_, d := Next(started(p, ov), out, p, ov, out.At, nil)
		if secs(d) < 7200 || d.Inputs.MinSec != 7200 {
			t.Errorf("%.0fs, min %d", secs(d), d.Inputs.MinSec)
		}
		ov = Overrides{Max: 10 * time.Minute, Min: time.Second}
		_, d = Next(started(p, ov), Outcome{At: out.At, Status: 304, NotModified: true}, p, ov, out.At, nil)
		if secs(d) > 600 || d.Inputs.MinSec != 300 {
			t.Errorf("%.0fs, min %d (a per-feed min never widens the global one)", secs(d), d.Inputs.MinSec)
		}
	})
	t.Run("cron", func(t *testing.T) {
		ov := Overrides{Cron: "30 */2 * * *"}
		_, d := Next(started(p, ov), out, p, ov, out.At, nil)
		if want := t0.Add(30 * time.Minute); !d.NextAt.Equal(want) || d.Reason != ReasonCron {
			t.Errorf("next %s %s, want %s", d.NextAt, d.Reason, want)
		}
	})
	t.Run("paused", func(t *testing.T) {
		ov := Overrides{PausedUntil: t0.Add(72 * time.Hour)}
		st, d := Next(started(p, ov), out, p, ov, out.At, nil)
		if d.Kind != Pause || d.Reason != ReasonPaused || !d.NextAt.Equal(ov.PausedUntil) || st.Lifecycle != StatePaused {
			t.Errorf("%s %s until %s", d.Kind, d.Reason, d.NextAt)
		}
		at := ov.PausedUntil.Add(time.Minute)
		_, d = Next(st, Outcome{At: at, Status: 304, NotModified: true}, p, Overrides{}, at, nil)
		if d.State != StateHealthy || d.Kind != Defer {
			t.Errorf("after the pause: %s %s", d.State, d.Kind)
		}
	})
}

// A pause set by hand holds every decision on a fetch to its end, not
// only an answer's: a backoff, a Retry-After, an open circuit and a probe
// keep their kind, reason and state, at the pause's end. A Retry-After
// longer than the pause still wins.
func TestPausedHoldsFailures(t *testing.T) {
	p := noJitter()
	pu := t0.Add(72 * time.Hour)
	ov := Overrides{PausedUntil: pu}
	at := t0.Add(time.Minute)
	for _, tc := range []struct {
		name   string
		st     func(State) State
		out    Outcome
		kind   Kind
		reason Reason
		state  Lifecycle
		next   time.Time
	}{
		{"backoff", nil, Outcome{Status: 503, ErrorClass: ClassTransient}, Backoff, ReasonHTTPError, StateBackoff, pu},
		{"retry-after", nil, Outcome{Status: 429, ErrorClass: ClassRateLimited, RetryAfterSec: 600}, Pause, ReasonRetryAfter, StatePaused, pu},
		{"retry-after past the pause", nil, Outcome{Status: 429, ErrorClass: ClassRateLimited, RetryAfterSec: 4 * 86400}, Pause, ReasonRetryAfter, StatePaused, at.Add(4 * 24 * time.Hour)},
		{"circuit", func(st State) State { st.ErrorsSpent = p.ErrorBudget; return st }, Outcome{Status: 502, ErrorClass: ClassTransient}, Pause, ReasonBudgetExceeded, StatePaused, pu},
		{"disabled, probed", nil, Outcome{Status: 404, ErrorClass: ClassPermanent}, Pause, ReasonDisabled, StateDisabled, pu},
		{"an answer", nil, Outcome{Status: 304, NotModified: true}, Pause, ReasonPaused, StatePaused, pu},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := started(p, ov)
			if tc.st != nil {
				st = tc.st(st)
			}
			out := tc.out
			out.At = at
			got, d := Next(st, out, p, ov, at, nil)
			if d.Kind != tc.kind || d.Reason != tc.reason || got.Lifecycle != tc.state || !d.NextAt.Equal(tc.next) {
				t.Errorf("%s %s, state %s, until %s; want %s %s, %s, %s", d.Kind, d.Reason, got.Lifecycle, d.NextAt, tc.kind, tc.reason, tc.state, tc.next)
			}
			if !d.Until.Equal(d.NextAt.Time) || strings.Contains(d.Inputs.Override, "paused") != tc.next.Equal(pu) {
				t.Errorf("until %s, override %q", d.Until, d.Inputs.Override)
			}
		})
	}
}

func TestParseCron(t *testing.T) {
	for _, ok := range []string{"*/20 * * * *", "0 * * * *", "@hourly", "@every 90m", "0 8 * * 1-5"} {
		if _, err := ParseCron(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "61 * * * *", "TZ=Europe/Paris 0 * * * *", "CRON_TZ=UTC", "0 0 30 2 *", "* * *", "@yearly-ish"} {
		if _, err := ParseCron(bad); !errors.Is(err, ErrBadCron) {
			t.Errorf("%q: %v, want ErrBadCron", bad, err)
		}
	}
}

func TestSkipWindows(t *testing.T) {
	s := skip{hourMask([]int{1, 2, 3, 24}), dayMask([]string{"Sat", "sunday", "nonsense"})}
	if s.hours != 1|1<<1|1<<2|1<<3 || s.days != 1<<time.Saturday|1<<time.Sunday {
		t.Fatalf("masks %b %b", s.hours, s.days)
	}
	for _, tt := range []struct{ at, want time.Time }{
		{t0.Add(30 * time.Minute), t0.Add(4 * time.Hour)},                          // Monday 00:30, hour 0 (24) skipped
		{t0.Add(5 * time.Hour), t0.Add(5 * time.Hour)},                             // allowed
		{t0.Add(5*24*time.Hour + time.Hour), t0.Add(7*24*time.Hour + 4*time.Hour)}, // Saturday to Monday 04:00
	} {
		if got, _ := s.out(tt.at); !got.Equal(tt.want) {
			t.Errorf("out(%s) = %s, want %s", tt.at, got, tt.want)
		}
	}
	if !(skip{hours: allHours}).total() || !(skip{days: allDays}).total() || s.total() {
		t.Error("total")
	}
	if InSkipWindow(Hints{SkipHours: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}}, t0) {
		t.Error("windows covering every hour are ignored, so nothing is in them")
	}
}

// The adaptive policy polls at s/sqrt(rate): four times the rate, half
// the interval.
func TestAdaptiveSqrt(t *testing.T) {
	p := noJitter()
	p.Scale = 6000
	p.NoProfile = true
	interval := func(gap time.Duration) float64 {
		var pubs []time.Time
		for i := range 20 {
			pubs = append(pubs, t0.Add(-time.Duration(i)*gap))
		}
		st := started(p, Overrides{})
		out := Outcome{At: t0.Add(time.Second), Status: 200, NewEntries: 20, Published: pubs, Items: 100}
		_, d := Next(st, out, p, Overrides{}, out.At, nil)
		return float64(d.Inputs.IntervalAfterSec)
	}
	slow, fast := interval(4*time.Hour), interval(time.Hour)
	if r := slow / fast; math.Abs(r-2) > 0.1 {
		t.Errorf("intervals %.0fs and %.0fs for rates 6 and 24 a day: ratio %.2f, want 2", slow, fast, r)
	}
	if want := 6000 / math.Sqrt(24) * jitterBias(0); math.Abs(fast-want)/want > 0.1 {
		t.Errorf("interval %.0fs for 24 a day, want about %.0fs", fast, want)
	}
}

func TestScale(t *testing.T) {
	p := Defaults()
	rates := []float64{0, 0.5, 2, 10, 50}
	for _, budget := range []float64{20, 60, 120, 400} {
		s := Scale(rates, budget, p)
		var total float64
		for _, r := range rates {
			iv := p.Max.Seconds()
			if r > 0 {
				iv = math.Min(math.Max(s/math.Sqrt(r), p.Min.Seconds()), p.Max.Seconds())
			}
			total += 86400 / iv
		}
		if math.Abs(total-budget)/budget > 0.001 {
			t.Errorf("budget %g: scale %g gives %g requests a day", budget, s, total)
		}
	}
	// Out of reach: every feed at the max (5 a day) or the min.
	if s := Scale(rates, 1, p); 86400/math.Min(s/math.Sqrt(50), 86400) > 1.001 {
		t.Errorf("a tiny budget: scale %g", s)
	}
	if s := Scale(rates, 1e6, p); s/math.Sqrt(0.5) > 300.001 {
		t.Errorf("a huge budget: scale %g", s)
	}
	if s := Scale(nil, 100, p); s != DefaultScale {
		t.Errorf("no feeds: %g", s)
	}
}

func TestBudgetLoopDay(t *testing.T) {
	cases := []struct {
		name          string
		in            BudgetLoop
		spent, budget float64
		want          BudgetLoop
	}{
		{"on budget", BudgetLoop{Factor: 1}, 100, 100, BudgetLoop{Factor: 1}},
		// Owes 0.8 of a day, asks the next for the least, 0.75.
		{"overspent", BudgetLoop{Factor: 1}, 200, 100, BudgetLoop{Factor: math.Sqrt(0.75 / 2), Over: 0.8}},
		{"underspent", BudgetLoop{Factor: 1}, 90, 100, BudgetLoop{Factor: math.Sqrt(1.08 / 0.9), Over: -0.08}},
		{"making up", BudgetLoop{Factor: 1, Over: 0.1}, 100, 100, BudgetLoop{Factor: math.Sqrt(0.92), Over: 0.08}},
		// Idle days: at most a quarter of a day is owed back.
		{"idle days", BudgetLoop{Factor: 1}, 10, 100, BudgetLoop{Factor: 2, Over: -0.25}},
		{"idle, then busy", BudgetLoop{Factor: 2, Over: -0.25}, 100, 100, BudgetLoop{Factor: 2, Over: -0.2}},
		{"no data", BudgetLoop{Factor: math.NaN(), Over: math.Inf(1)}, 0, 100, BudgetLoop{Factor: 1}},
		{"zero factor reads as 1", BudgetLoop{}, 100, 100, BudgetLoop{Factor: 1}},
		{"clamped", BudgetLoop{Factor: 0.6}, 1e6, 100, BudgetLoop{Factor: 0.5, Over: 0.8 * (1e4 - 1)}},
	}
	for _, c := range cases {
		got := c.in.Day(c.spent, c.budget)
		if math.Abs(got.Factor-c.want.Factor) > 1e-12 || math.Abs(got.Over-c.want.Over) > 1e-9 {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

// TestBudgetLoopAverage closes the loop over a plant whose model is 15% off
// and whose days swing by a fifth: the average spend meets the budget.
func TestBudgetLoopAverage(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	const budget, days = 1000.0, 60
	b := BudgetLoop{Factor: 1}
	var total float64
	for d := range days {
		spent := b.Factor * budget * 1.15 * (0.8 + 0.4*rnd.Float64())
		if d >= 5 {
			total += spent
		}
		b = b.Day(spent, budget)
	}
	if avg := total / (days - 5); math.Abs(avg/budget-1) > 0.01 {
		t.Errorf("average spend %.1f a day against a budget of %g", avg, budget)
	}
}

func TestParamsFromEnv(t *testing.T) {
	env := func(kv ...string) func(string) (string, bool) {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	p, err := ParamsFromEnv(env("SCHED_MIN_INTERVAL_SEC", "600", "SCHED_MAX_INTERVAL_SEC", "7200", "SCHED_JITTER_RATIO", "0",
		"NEWSFED_DISABLE_THRESHOLD", "3", "FEEDPIPE_SCHED_POLICY", "fixed:30m", "FEEDPIPE_SCHED_PROBE_DISABLED", "false"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Min != 10*time.Minute || p.Max != 2*time.Hour || p.Jitter >= 0 || p.DisableThreshold != 3 || p.Policy.String() != "fixed:30m" || !p.NoProbe {
		t.Errorf("%+v", p)
	}
	// The FEEDPIPE name wins over the older alias.
	p, _ = ParamsFromEnv(env("SCHED_MIN_INTERVAL_SEC", "600", "FEEDPIPE_SCHED_MIN_INTERVAL_SEC", "900"))
	if p.Min != 15*time.Minute {
		t.Errorf("min %s", p.Min)
	}
	p, _ = ParamsFromEnv(env("NEWSFED_DISABLE_THRESHOLD", "0"))
	if p.DisableThreshold >= 0 {
		t.Errorf("threshold 0 should mean never: %d", p.DisableThreshold)
	}
	for _, bad := range [][]string{
		{"SCHED_MIN_INTERVAL_SEC", "5m"},
		{"SCHED_MAX_INTERVAL_SEC", "-1"},
		{"SCHED_JITTER_RATIO", "0.9"},
		{"FEEDPIPE_SCHED_POLICY", "sometimes"},
		{"FEEDPIPE_SCHED_PROBE_DISABLED", "perhaps"},
		{"FEEDPIPE_SCHED_DOWN_FACTOR", "0"},
		{"SCHED_MIN_INTERVAL_SEC", "7200", "SCHED_MAX_INTERVAL_SEC", "3600"},
	} {
		_, err := ParamsFromEnv(env(bad...))
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "sched: ") {
			t.Errorf("%v: %v", bad, err)
		}
	}
}

func TestParsePolicy(t *testing.T) {
	for in, want := range map[string]string{"": "adaptive", "Seed": "seed", "fixed:15m": "fixed:15m", "fixed:90m": "fixed:1h30m"} {
		p, err := ParsePolicy(in)
		if err != nil || p.String() != want {
			t.Errorf("%q: %v %v", in, p, err)
		}
	}
	for _, bad := range []string{"fixed", "fixed:0s", "fixed:x", "oracle"} {
		if _, err := ParsePolicy(bad); !errors.Is(err, ErrBadPolicy) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestExplain(t *testing.T) {
	p := noJitter()
	p.Scale = 6000
	st := started(p, Overrides{})
	out := Outcome{At: t0.Add(30 * time.Minute), Status: 200, NewEntries: 3, Parsed: true, TTLMinutes: 60, SkipHours: []int{1, 2, 3},
		Published: []time.Time{t0.Add(-16 * time.Hour), t0.Add(-8 * time.Hour), t0}}
	_, d := Next(st, out, p, Overrides{}, out.At, nil)
	e := d.Explain()
	for _, want := range []string{"Next fetch 2026-06-01T04:00Z", "posts about", "ttl 1h is a floor", "skipHours 1-3 moved it from", "to 04:00", "State healthy"} {
		if !strings.Contains(e, want) {
			t.Errorf("Explain lacks %q:\n%s", want, e)
		}
	}
}

// A State a long-lived feed writes stays well under 2 KB and survives a
// round trip through JSON.
func TestStateSmall(t *testing.T) {
	p := Defaults()
	rnd := rand.New(rand.NewPCG(1, 1))
	st := started(p, Overrides{})
	at := t0
	for i := range 2000 {
		at = at.Add(time.Duration(rnd.IntN(7200)) * time.Second)
		out := Outcome{At: at, Status: 200, NewEntries: 1, Published: []time.Time{at.Add(-time.Minute)}, Items: 50, Parsed: true,
			TTLMinutes: 30, SkipHours: []int{1, 2, 3, 4, 5, 6}, SkipDays: []string{"Saturday", "Sunday"}}
		if i%17 == 0 {
			out = Outcome{At: at, Status: 503, ErrorClass: ClassTransient, ErrorCode: "http_503"}
		}
		st, _ = Next(st, out, p, Overrides{}, at, rnd)
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 2048 {
		t.Errorf("state is %d bytes: %s", len(b), b)
	}
	var back State
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	b2, _ := json.Marshal(back)
	if string(b) != string(b2) {
		t.Errorf("round trip changed the state:\n%s\n%s", b, b2)
	}
}

// Next must not change the caller's State, whose slices it could share.
func TestNextLeavesInputAlone(t *testing.T) {
	p := Defaults()
	st := started(p, Overrides{})
	st.Pub = make([]int64, 3, 40)
	st.Pub[0], st.Pub[1], st.Pub[2] = t0.Unix()-300, t0.Unix()-200, t0.Unix()-100
	st.Hints = Hints{SkipHours: []int{3}}
	before, _ := json.Marshal(st)
	backing := st.Pub[:cap(st.Pub)]
	Next(st, Outcome{At: t0, Status: 200, NewEntries: 2, Parsed: true, SkipHours: []int{5}}, p, Overrides{}, t0, nil)
	after, _ := json.Marshal(st)
	if string(before) != string(after) || backing[3] != 0 {
		t.Errorf("Next changed its input:\n%s\n%s", before, after)
	}
}

// The cron sentence names the expression alone, whatever other overrides
// the feed has.
func TestExplainCronWithOverrides(t *testing.T) {
	for _, ov := range []string{"cron 0 3 * * *", "min 10m, cron 0 3 * * *", "min 10m, max 12h, cron 0 3 * * *, paused"} {
		d := Decision{Kind: Defer, Reason: ReasonCron, Inputs: Inputs{Override: ov, CronNextAt: "2026-06-02T03:00Z"}}
		if want := "Cron 0 3 * * * fires next at 2026-06-02T03:00Z."; !strings.Contains(d.Explain(), want) {
			t.Errorf("%q: %q lacks %q", ov, d.Explain(), want)
		}
	}
}

// TestUndatedFeeds: the shared corpus's feeds whose items carry no dates
// (their item counts; the first fetch keeps 20, item_limit), then nothing
// but 304s for three days. The first answer is the feed's history, at no
// known time: no burst, no rate, no window cap, no EWMA; and the 304s say
// the feed is quiet. (miniflux's rdf_UTF8.xml was estimated at 12134 items
// a day and polled every 5 minutes; two-item feeds at 142 a day.)
func TestUndatedFeeds(t *testing.T) {
	for _, tc := range []struct {
		file  string
		items int
	}{
		{"miniflux/internal/reader/parser/testdata/rdf_UTF8.xml", 60},
		{"rome/rome-modules/src/test/resources/xml/v/v2.xml", 17},
		{"rome/rome-modules/src/test/resources/xml/ep/ep1_v1b.xml", 15},
		{"rome/rome-modules/src/test/resources/xml/ep/ep1_v1a.xml", 14},
		{"rome/rome-modules/src/test/resources/xml/rss-playlist.xml", 13},
		{"rome/rome-modules/src/test/resources/test1.xml", 10},
		{"feedjira/spec/sample_feeds/Permalinks.xml", 4},
		{"rome/rome/src/test/data/rss_0.91U.xml", 2},
		{"jsonfeed/test/examples/v1.1/simple.json", 2},
		{"simplepie/tests/data/feed_rss-2.0.xml", 1},
	} {
		for _, p := range []Params{noJitter(), seedParams()} {
			t.Run(fmt.Sprintf("%s %s", tc.file, p.Policy), func(t *testing.T) {
				shown := min(tc.items, 20)
				st, _ := Next(State{}, Outcome{Kind: NeverFetched}, p, Overrides{}, t0, nil)
				at := t0.Add(5 * time.Second)
				st, d := Next(st, Outcome{At: at, Status: 200, NewEntries: shown, Items: tc.items, Withheld: tc.items - shown, Parsed: true}, p, Overrides{}, at, nil)
				prior := priorRate(p.withDefaults())
				if r := st.RatePerDay(p, at); r > prior*1.001 || len(st.Pub) != 0 || st.Peak != 0 {
					t.Fatalf("first answer: rate %.4g a day (prior %.4g), %d publication times, peak %.3g: %s",
						r, prior, len(st.Pub), st.Peak, d.Explain())
				}
				// Adaptive: the prior's interval, I0, or the window's cap at
				// the prior rate for a window of one item; seed: its
				// new-entries step, I0·b_down, and no EWMA to blend with.
				least := time.Duration(float64(p.withDefaults().Initial) * 0.99)
				least = min(least, time.Duration(windowFill*float64(tc.items)/prior*secsPerDay)*time.Second)
				if p.Policy.Kind == PolicySeed {
					least = time.Duration(float64(p.withDefaults().Initial) * p.withDefaults().Down)
				}
				if iv := st.Interval(); iv < least || st.EWMASec != 0 {
					t.Fatalf("first answer: interval %s (want at least %s), EWMA %gs: %s", iv, least, st.EWMASec, d.Explain())
				}
				rate, iv := st.RatePerDay(p, at), st.Interval()
				for at = d.NextAt.Time; at.Before(t0.Add(72 * time.Hour)); at = d.NextAt.Time {
					st, d = Next(st, Outcome{At: at, Status: 304, NotModified: true}, p, Overrides{}, at, nil)
					r := st.RatePerDay(p, at)
					if r > rate || st.Interval() < iv {
						t.Fatalf("%s: a 304 raised the rate %.3g -> %.3g a day or shortened the interval %s -> %s: %s", at, rate, r, iv, st.Interval(), d.Explain())
					}
					rate, iv = r, st.Interval()
					if at.After(t0.Add(24*time.Hour)) && r >= 0.25 {
						t.Fatalf("%s: a day of 304s, and still %.3g items a day: %s", at, r, d.Explain())
					}
				}
			})
		}
	}
}

// TestRefused: a fetch this machine refused (a private address without
// --allow-private; class blocked, or permanent in records written before)
// is no failure of the feed: whatever the feed's state, it keeps it, with
// no failure counted, no backoff step, no error budget spent, and it is
// tried again after its interval. (It was classed transient here and
// spent the budget: after the first real answer such feeds stayed
// "cooling down" with 4 of 5 of their budget spent.)
func TestRefused(t *testing.T) {
	p := noJitter()
	failing := started(p, Overrides{})
	for range 2 {
		failing, _ = Next(failing, Outcome{At: t0, Status: 503, ErrorClass: ClassTransient, ErrorCode: "http_503"}, p, Overrides{}, t0, nil)
	}
	cooling, _ := Next(failing, Outcome{At: t0, Status: 200}, p, Overrides{}, t0, nil)
	disabled, _ := Next(started(p, Overrides{}), Outcome{At: t0, Status: 404, ErrorClass: ClassPermanent, ErrorCode: "http_404"}, p, Overrides{}, t0, nil)
	for _, tc := range []struct {
		name       string
		st         State
		wantReason Reason
	}{
		{"new feed", started(p, Overrides{}), ReasonRefused},
		{"backoff", failing, ReasonRefused},
		{"cooling down", cooling, ReasonRefused},
		{"disabled: at its next probe", disabled, ReasonDisabled},
	} {
		for _, class := range []string{ClassBlocked, ClassPermanent} {
			t.Run(tc.name+" "+class, func(t *testing.T) {
				at := t0.Add(time.Minute) // the budget drains by 0.0035 a minute
				before := tc.st
				st, d := Next(before, Outcome{At: at, ErrorClass: class, ErrorCode: CodeAddressRefused}, p, Overrides{}, at, nil)
				spent := math.Max(before.ErrorsSpent-p.withDefaults().ErrorBudgetPerDay/(24*60), 0)
				if st.Lifecycle != before.Lifecycle || st.Failures != before.Failures || st.Step != before.Step || st.Successes != before.Successes ||
					math.Abs(st.ErrorsSpent-spent) > 1e-9 || d.Event != "" || d.Reason != tc.wantReason || d.Inputs.ErrorClass != class {
					t.Fatalf("state %s -> %s, failures %d -> %d, step %d -> %d, budget spent %.4f -> %.4f, event %q, reason %s, class %s:\n%s",
						before.Lifecycle, st.Lifecycle, before.Failures, st.Failures, before.Step, st.Step, before.ErrorsSpent, st.ErrorsSpent,
						d.Event, d.Reason, d.Inputs.ErrorClass, d.Explain())
				}
				if want := at.Add(before.Interval()); tc.wantReason == ReasonRefused && !d.NextAt.Equal(want) {
					t.Errorf("next %s, want %s: after the interval", d.NextAt, want)
				}
			})
		}
	}
}
