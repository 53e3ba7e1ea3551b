package sched

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"
)

// world draws random parameters, overrides and outcomes for the property
// and fuzz tests. Everything comes from one seeded source, so a failure
// names the seed that reproduces it.
type world struct {
	rnd *rand.Rand
	p   Params
	ov  Overrides
	// habit, when set, holds the UTC hours the feed posts in: its items
	// make a clear pattern, and its polls follow it.
	habit []int
}

func newWorld(seed uint64) *world {
	w := &world{rnd: rand.New(rand.NewPCG(seed, 99))}
	r := w.rnd
	w.p = Defaults()
	switch r.IntN(4) {
	case 0:
		w.p.Policy = Policy{Kind: PolicySeed}
	case 1:
		w.p.Policy = Policy{Kind: PolicyFixed, Every: time.Duration(1+r.IntN(180)) * time.Minute}
	}
	switch r.IntN(3) {
	case 0:
		w.p.Jitter = -1
	case 1:
		w.p.Jitter = 0.5
	}
	if r.IntN(3) == 0 {
		w.p.Min = time.Duration(60+r.IntN(3600)) * time.Second
		w.p.Max = w.p.Min + time.Duration(r.IntN(3*86400))*time.Second
	}
	w.p.Scale = []float64{0, 500, 7200, 50000}[r.IntN(4)]
	w.p.NoProbe = r.IntN(4) == 0
	w.p.NoProfile = r.IntN(4) == 0
	if r.IntN(3) == 0 {
		w.p.DisableThreshold = 1 + r.IntN(12)
	}
	if r.IntN(3) == 0 {
		w.p.ErrorBudget = float64(1 + r.IntN(10))
	}
	switch r.IntN(8) {
	case 0:
		w.ov.Interval = time.Duration(r.IntN(48*60)) * time.Minute
	case 1:
		w.ov.Min = time.Duration(r.IntN(6*3600)) * time.Second
		w.ov.Max = time.Duration(r.IntN(48*3600)) * time.Second
	case 2:
		w.ov.Cron = []string{"*/20 * * * *", "0 * * * *", "30 6 * * 1-5", "@daily", "bad cron"}[r.IntN(5)]
	case 3:
		w.ov.PausedUntil = t0.Add(time.Duration(r.IntN(5*86400)) * time.Second)
	}
	if r.IntN(3) == 0 {
		first := r.IntN(24)
		for k := range 1 + r.IntN(6) {
			w.habit = append(w.habit, (first+k)%24)
		}
	}
	return w
}

// outcome draws what happens to the feed at at.
func (w *world) outcome(at time.Time) Outcome {
	r := w.rnd
	o := Outcome{At: at}
	switch k := r.IntN(20); {
	case k == 0:
		return Outcome{Kind: Nudged}
	case k < 8:
		o.Status = 200
		o.Items = r.IntN(60)
		o.NewEntries = r.IntN(6)
		for range r.IntN(o.NewEntries + 1) {
			switch r.IntN(5) {
			case 0:
				o.Published = append(o.Published, time.Time{})
			case 1:
				o.Published = append(o.Published, at.Add(time.Duration(r.IntN(1e6))*time.Second)) // future
			case 2, 3:
				if w.habit != nil { // in one of its hours, today or on one of the last 30 days
					day := at.Truncate(24 * time.Hour).Add(-time.Duration(r.IntN(30)) * 24 * time.Hour)
					o.Published = append(o.Published, day.Add(time.Duration(w.habit[r.IntN(len(w.habit))])*time.Hour+time.Duration(r.IntN(3600))*time.Second))
					break
				}
				fallthrough
			default:
				o.Published = append(o.Published, at.Add(-time.Duration(r.IntN(1e7))*time.Second))
			}
		}
		if r.IntN(2) == 0 {
			o.Parsed = true
			if r.IntN(3) == 0 {
				o.TTLMinutes = []int{0, 5, 60, 240, 1440, 5000}[r.IntN(6)]
			}
			if r.IntN(4) == 0 {
				for h := range 25 {
					if r.IntN(3) == 0 {
						o.SkipHours = append(o.SkipHours, h)
					}
				}
			}
			if r.IntN(5) == 0 {
				o.SkipDays = []string{"Saturday", "sunday", "Mon", "Tuesday", "Wed", "thursday", "Fri", "Noday"}[:r.IntN(9)]
			}
		}
		o.Truncated = r.IntN(20) == 0
	case k < 11:
		o.Status, o.NotModified = 304, true
	case k < 13:
		o.Status, o.ErrorClass = []int{429, 503}[r.IntN(2)], ClassRateLimited
		if r.IntN(2) == 0 {
			o.RetryAfterSec = r.IntN(20000)
		} else {
			o.RetryUntil = at.Add(time.Duration(r.IntN(20000)-100) * time.Second)
		}
	case k < 17:
		o.Status, o.ErrorClass, o.ErrorCode = []int{0, 500, 502, 503, 403}[r.IntN(5)], ClassTransient, "x"
	case k < 18:
		o.Status, o.ErrorClass = []int{404, 410}[r.IntN(2)], ClassPermanent
	default:
		o.Status, o.ErrorClass, o.ErrorCode = 200, ClassParse, []string{"parse_failed", "not_a_feed"}[r.IntN(2)]
	}
	if r.IntN(4) == 0 {
		o.MaxAgeSec = r.IntN(200000)
	}
	return o
}

// check asserts the scheduler's promises for one decision: the next fetch
// is never before the fetch, inside the publisher's ttl or max-age, before
// a Retry-After, or in a skip window; a deferred interval is within the
// clamps; the new state is small and survives JSON.
func check(t *testing.T, tag string, before State, out Outcome, p Params, ov Overrides, now time.Time, st State, d Decision) {
	t.Helper()
	checkEncoding(t, tag, st)
	checkDecision(t, tag, before, out, p, ov, now, st, d)
}

// checkEncoding asserts that the state survives JSON and is small. It is
// most of check's cost: FuzzNext runs it once per input, not per step.
func checkEncoding(t *testing.T, tag string, st State) {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatalf("%s: state does not encode: %v", tag, err)
	}
	if len(b) > 2048 {
		t.Fatalf("%s: state is %d bytes", tag, len(b))
	}
	var back State
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("%s: state does not decode: %v", tag, err)
	}
}

// checkDecision is check without the encoding.
func checkDecision(t *testing.T, tag string, before State, out Outcome, p Params, ov Overrides, now time.Time, st State, d Decision) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf(tag+": "+format+"\noutcome %+v\ndecision %+v\nbefore %+v", append(args, out, d, before)...)
	}
	p = p.withDefaults()
	if !d.NextAt.Equal(st.NextAt.Time) || d.State != st.Lifecycle {
		fail("decision and state disagree")
	}
	next := d.NextAt.Time
	// A feed paused by hand until T is not scheduled before T, whatever
	// the decision; but a manual nudge, which feed-due holds to the pause.
	if pu := ov.PausedUntil; pu.After(now) && out.Kind != Nudged && !next.IsZero() && next.Before(pu) {
		fail("%s %s at %s, inside the pause until %s", d.Kind, d.Reason, next, pu)
	}
	if out.Kind == Nudged || out.Kind == NeverFetched {
		if d.Kind == FetchNow && !next.Equal(now) {
			fail("fetch now at %s", next)
		}
		if ru := before.RetryUntil.Time; ru.After(now) && next.Before(ru) {
			fail("a nudge went before Retry-After %s", ru)
		}
		return
	}
	if d.Kind == FetchNow {
		fail("a fetch decided fetch now")
	}
	if next.IsZero() {
		if !(d.State == StateDisabled && p.NoProbe) {
			fail("no next fetch for a feed that is not disabled for good")
		}
		return
	}
	at := out.At
	if next.Before(at) {
		fail("next %s before the fetch", next)
	}
	lo, hi := p.Min, p.Max
	if ov.Min > 0 {
		lo = min(max(ov.Min, p.Min), p.Max)
	}
	if ov.Max > 0 {
		hi = min(max(ov.Max, p.Min), p.Max)
	}
	hi = max(hi, lo)
	hints := before.clean(p).Hints
	if out.Parsed {
		hints = cleanHints(out.TTLMinutes, out.SkipHours, out.SkipDays)
	}
	floor := max(min(time.Duration(hints.TTLMinutes)*time.Minute, hi), min(time.Duration(max(out.MaxAgeSec, 0))*time.Second, hi))
	if next.Before(at.Add(floor)) {
		fail("next %s inside the floor %s", next, floor)
	}
	if out.RetryAfterSec > 0 && next.Before(at.Add(min(time.Duration(out.RetryAfterSec)*time.Second, p.MaxRetryAfter))) {
		fail("next %s before Retry-After %ds", next, out.RetryAfterSec)
	}
	if u := out.RetryUntil; u.After(at) && next.Before(earlier(u, at.Add(p.MaxRetryAfter))) {
		fail("next %s before Retry-After %s", next, u)
	}
	if ru := before.RetryUntil.Time; ru.After(at) && next.Before(ru) {
		fail("next %s before the running Retry-After %s", next, ru)
	}
	if InSkipWindow(hints, next) {
		fail("next %s in a skip window %v %v", next, hints.SkipHours, hints.SkipDays)
	}
	if d.Kind == Defer {
		iv := time.Duration(st.IntervalSec) * time.Second
		if iv < lo.Truncate(time.Second) || iv > hi {
			fail("interval %s outside [%s, %s]", iv, lo, hi)
		}
		if gap := next.Sub(at); gap < lo-time.Second && ov.Cron == "" {
			fail("gap %s under the min %s", gap, lo)
		}
	}
	if t := p.DisableThreshold; t > 0 && st.Failures >= t && st.Lifecycle != StateDisabled {
		fail("%d failures and not disabled", st.Failures)
	}
	if d.Event == EventDisabled && st.Lifecycle != StateDisabled {
		fail("feed_disabled without the disabled state")
	}
}

// TestProperties runs random feeds through Next and checks every decision.
func TestProperties(t *testing.T) {
	n := 120
	if testing.Short() {
		n = 30
	}
	patterned := 0 // decisions placed by a clear pattern
	for seed := range uint64(n) {
		w := newWorld(seed)
		rnd := rand.New(rand.NewPCG(seed, 7))
		st, d := Next(State{}, Outcome{Kind: NeverFetched}, w.p, w.ov, t0, rnd)
		now := t0
		for i := range 120 {
			// Mostly fetch when told; sometimes early (a nudge, another
			// process), sometimes late (a stalled loop).
			switch {
			case !d.NextAt.IsZero() && w.rnd.IntN(5) > 0:
				now = later(d.NextAt.Time, now).Add(time.Duration(w.rnd.IntN(120)) * time.Second)
			default:
				now = now.Add(time.Duration(w.rnd.IntN(6*3600)) * time.Second)
			}
			out := w.outcome(now)
			before := st
			st, d = Next(st, out, w.p, w.ov, now, rnd)
			check(t, "seed "+itoa(seed)+" step "+itoa(uint64(i)), before, out, w.p, w.ov, now, st, d)
			if d.Inputs.PatternGain > 0 {
				patterned++
			}
		}
	}
	if patterned == 0 {
		t.Error("no decision placed by a clear pattern: the promises were not checked for them")
	}
	t.Logf("%d decisions placed by a clear pattern", patterned)
}

func itoa(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// FuzzState feeds Next states decoded from arbitrary bytes, as feed-store
// reads them from disk: nothing may panic, and the promises hold.
func FuzzState(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"state":"disabled","interval_sec":-5,"pub":[3,2,1],"rate_n":-1,"hours":[1e30]}`,
		`{"state":"backoff","backoff_step":1000000,"errors_spent":1e11,"next_at":"9999-12-31T23:59:59Z"}`,
		`{"state":"x","pub":[-62135596800,253402300799],"hints":{"ttl_minutes":99999999,"skip_hours":[-1,24,99],"skip_days":["Someday"]}}`,
		`{"state":"paused","retry_until":"2026-06-01T05:00:00Z","fetched_at":"2030-01-01T00:00:00Z","window":-3,"peak":1e300}`,
	} {
		f.Add([]byte(s), uint64(1))
	}
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		var st State
		if json.Unmarshal(data, &st) != nil {
			return
		}
		w := newWorld(seed)
		now := t0.Add(time.Duration(seed%1000) * time.Hour)
		for i := range 4 {
			out := w.outcome(now)
			before := st
			var d Decision
			st, d = Next(st, out, w.p, w.ov, now, rand.New(rand.NewPCG(seed, 1)))
			check(t, "fuzz step "+itoa(uint64(i)), before, out, w.p, w.ov, now, st, d)
			now = now.Add(time.Hour)
		}
		_ = st.Demand(w.p, w.ov, now)
		_ = st.RatePerDay(w.p, now)
	})
}

// FuzzNext drives Next with outcomes drawn from the fuzzer's seed and a
// schedule of times from its bytes.
func FuzzNext(f *testing.F) {
	f.Add(uint64(1), []byte{0, 10, 200, 255})
	f.Add(uint64(42), []byte("a long run of bytes that sets the times of the fetches"))
	f.Fuzz(func(t *testing.T, seed uint64, steps []byte) {
		// Long inputs find nothing short ones do not, and make minimizing
		// slow.
		steps = steps[:min(len(steps), 64)]
		w := newWorld(seed)
		st, d := Next(State{}, Outcome{Kind: NeverFetched}, w.p, w.ov, t0, nil)
		now := t0
		// One random source for the input, reseeded per step: a new
		// generator per step costs more than the Next it serves.
		pcg := rand.NewPCG(seed, 0)
		rnd := rand.New(pcg)
		for i, b := range steps {
			now = now.Add(time.Duration(b) * time.Duration(b) * time.Second)
			out := w.outcome(now)
			before := st
			pcg.Seed(seed, uint64(i))
			st, d = Next(st, out, w.p, w.ov, now, rnd)
			checkDecision(t, "fuzz step "+itoa(uint64(i)), before, out, w.p, w.ov, now, st, d)
		}
		// The encoding and the words, once per input: they do not depend
		// on the path, and per step they were most of the time.
		checkEncoding(t, "fuzz", st)
		_ = d.Explain()
	})
}
