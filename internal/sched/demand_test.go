package sched

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// demandBefore is State.Demand as it was before DemandInputs, kept to pin
// the projection to it: feed-store's budget scale must not change by a
// bit because it is computed from the snapshot's index.
func demandBefore(st State, p Params, ov Overrides, now time.Time) Demand {
	p = p.withDefaults()
	st = st.clean(p)
	r := &run{p: p, ov: ov}
	r.clamps()
	lo := max(r.lo, min(time.Duration(st.Hints.TTLMinutes)*time.Minute, r.hi))
	fixed := func(iv time.Duration) Demand {
		iv = min(max(iv, lo), r.hi)
		return Demand{Fixed: true, PerDay: secsPerDay / iv.Seconds(), Min: iv, Max: iv}
	}
	switch {
	case st.FetchedAt.IsZero():
		return Demand{Fixed: true}
	case st.Lifecycle == StateDisabled:
		if p.NoProbe {
			return Demand{Fixed: true}
		}
		return fixed(r.hi)
	case ov.Cron != "":
		sch, err := ParseCron(ov.Cron)
		if err != nil {
			return fixed(r.hi)
		}
		n, t := 0, now
		for ; n < 2000; n++ {
			if t = sch.Next(t); t.IsZero() || t.Sub(now) > 7*24*time.Hour {
				break
			}
		}
		return Demand{Fixed: true, PerDay: math.Min(float64(n)/7, secsPerDay/lo.Seconds())}
	case ov.Interval > 0:
		return fixed(min(max(ov.Interval, MinPollingInterval), MaxPollingInterval))
	case p.Policy.Kind == PolicyFixed:
		return fixed(p.Policy.Every)
	case p.Policy.Kind == PolicySeed:
		return fixed(st.Interval())
	}
	if _, _, slot := dailySlot(st.Runs, st.Window); slot && r.hi >= 24*time.Hour {
		return Demand{Fixed: true, PerDay: 1, Min: lo, Max: r.hi}
	}
	dt := 0.0
	if now.After(st.FetchedAt.Time) {
		dt = now.Sub(st.FetchedAt.Time).Seconds()
	}
	rate := st.rateAt(p, now)
	hi := min(r.hi, max(lo, time.Duration(math.Min(st.windowCap(p, rate, dt), r.hi.Seconds())*float64(time.Second))))
	return Demand{Rate: rate, Min: lo, Max: hi, Tail: time.Duration(p.tailInterval() * float64(time.Second))}
}

func sameDemand(a, b Demand) bool {
	return math.Float64bits(a.Rate) == math.Float64bits(b.Rate) && a.Min == b.Min && a.Max == b.Max &&
		a.Fixed == b.Fixed && math.Float64bits(a.PerDay) == math.Float64bits(b.PerDay) && a.Tail == b.Tail
}

// TestDemandInputs checks that the demand computed from a state's
// DemandInputs is bit for bit the one computed from the whole state, for
// states the scheduler makes, damaged ones, and every kind of parameters
// and overrides.
func TestDemandInputs(t *testing.T) {
	damaged := []string{
		`{}`,
		`{"state":"disabled","interval_sec":-5,"pub":[3,2,1],"rate_n":-1,"hours":[1e30]}`,
		`{"state":"backoff","backoff_step":1000000,"errors_spent":1e11,"next_at":"9999-12-31T23:59:59Z"}`,
		`{"state":"x","fetched_at":"2026-06-01T00:00:00.123456789Z","pub":[-62135596800,253402300799],"hints":{"ttl_minutes":99999999,"skip_hours":[-1,24,99],"skip_days":["Someday"]}}`,
		`{"state":"paused","retry_until":"2026-06-01T05:00:00Z","fetched_at":"2030-01-01T00:00:00Z","window":-3,"peak":1e300}`,
		`{"state":"healthy","fetched_at":"0001-01-01T00:00:01Z","rate_n":1e13,"rate_t":5,"burst_n":3,"burst_t":-2,"window":99999999,"interval_sec":99999999}`,
		`{"state":"disabled","fetched_at":"2026-05-31T23:00:00Z","hints":{"ttl_minutes":-4}}`,
		`{"state":"healthy","fetched_at":"2026-05-31T23:00:00Z","peak":5e6,"window":2000000}`,
		`{"fetched_at":"2026-05-31T00:00:00Z","interval_sec":-5,"rate_n":1e12}`,
		`{"fetched_at":"2026-05-31T00:00:00Z","interval_sec":99999999,"burst_n":1e300}`,
		`{"fetched_at":"9999-12-31T23:59:59.999999999Z","rate_n":2,"rate_t":86400,"peak":40,"window":10,"hints":{"ttl_minutes":30,"skip_hours":[3,3]}}`,
	}
	checked := 0
	for seed := range uint64(100) {
		w := newWorld(seed)
		var states []State
		for _, s := range damaged {
			var st State
			if err := json.Unmarshal([]byte(s), &st); err != nil {
				t.Fatal(err)
			}
			states = append(states, st)
		}
		// A feed's life under the scheduler, every state on the way.
		st, _ := Next(State{}, Outcome{Kind: NeverFetched}, w.p, w.ov, t0, nil)
		now := t0
		rnd := rand.New(rand.NewPCG(seed, 7))
		for range 40 {
			now = now.Add(time.Duration(w.rnd.IntN(8*3600)) * time.Second)
			st, _ = Next(st, w.outcome(now), w.p, w.ov, now, rnd)
			states = append(states, st)
		}
		for i, st := range states {
			for _, at := range []time.Time{now, now.Add(-48 * time.Hour), now.Add(time.Duration(w.rnd.IntN(30*86400)) * time.Second)} {
				want := demandBefore(st, w.p, w.ov, at)
				if got := st.Demand(w.p, w.ov, at); !sameDemand(got, want) {
					t.Fatalf("seed %d state %d at %s: Demand %+v, before %+v (state %+v)", seed, i, at, got, want, st)
				}
				// Through a JSON round trip, as the states are stored.
				b, err := json.Marshal(st.DemandInputs())
				if err != nil {
					t.Fatal(err)
				}
				var in DemandInputs
				if err := json.Unmarshal(b, &in); err != nil {
					t.Fatal(err)
				}
				if got := in.Demand(w.p, w.ov, at); !sameDemand(got, want) {
					t.Fatalf("seed %d state %d: from stored inputs %+v, want %+v", seed, i, got, want)
				}
				if got := DemandFunc(w.p, at)(&in, &w.ov); !sameDemand(got, want) {
					t.Fatalf("seed %d state %d: DemandFunc %+v, want %+v", seed, i, got, want)
				}
				checked++
			}
		}
	}
	t.Logf("%d demands compared", checked)
}

func TestMinMaxAsMath(t *testing.T) {
	vals := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, -2.5, math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
		math.MaxFloat64, -math.MaxFloat64, math.Inf(1), math.Inf(-1), math.NaN(), math.Float64frombits(0x7ff8dead00000000),
		-math.NaN(), 3600, 86400}
	for _, x := range vals {
		for _, y := range vals {
			if got, want := math.Float64bits(fmax(x, y)), math.Float64bits(math.Max(x, y)); got != want {
				t.Errorf("fmax(%v, %v) = %#x, math.Max %#x", x, y, got, want)
			}
			if got, want := math.Float64bits(fmin(x, y)), math.Float64bits(math.Min(x, y)); got != want {
				t.Errorf("fmin(%v, %v) = %#x, math.Min %#x", x, y, got, want)
			}
		}
	}
}

// scaleForBefore is ScaleFor as it was with math.Min and math.Max.
func scaleForBefore(ds []Demand, budgetPerDay float64) float64 {
	type feed struct{ sq, lo, hi, tail float64 }
	var fixed float64
	feeds := make([]feed, 0, len(ds))
	var lo, hi float64 = math.Inf(1), 0
	for _, d := range ds {
		switch {
		case d.Fixed:
			fixed += d.PerDay
		case d.Min <= 0 || d.Max <= 0:
		case d.Rate <= 0:
			fixed += secsPerDay / d.Max.Seconds()
		default:
			f := feed{math.Sqrt(d.Rate), d.Min.Seconds(), d.Max.Seconds(), d.Tail.Seconds()}
			feeds = append(feeds, f)
			lo = math.Min(lo, f.lo*f.sq)
			hi = math.Max(hi, f.hi*f.sq)
		}
	}
	if len(feeds) == 0 {
		return DefaultScale
	}
	total := func(s float64) float64 {
		sum := fixed
		for _, f := range feeds {
			sum += secsPerDay / math.Min(math.Max(tail(s/f.sq, f.tail), f.lo), f.hi)
		}
		return sum
	}
	lo = math.Max(lo, 1e-6)
	if total(lo) <= budgetPerDay {
		return lo
	}
	if total(hi) >= budgetPerDay {
		return hi
	}
	a, b := math.Log(lo), math.Log(hi)
	for b-a > 1e-6 {
		m := (a + b) / 2
		if total(math.Exp(m)) > budgetPerDay {
			a = m
		} else {
			b = m
		}
	}
	return math.Exp((a + b) / 2)
}

// TestScaleForAsBefore pins ScaleFor, bit for bit, to the one before
// fmin and fmax, on demands as the scheduler makes them and odd ones.
func TestScaleForAsBefore(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	for round := range 200 {
		n := 1 + rnd.IntN(400)
		ds := make([]Demand, n)
		for i := range ds {
			d := Demand{Rate: math.Exp(rnd.Float64()*16 - 8), Min: time.Duration(1+rnd.IntN(7200)) * time.Second}
			d.Max = d.Min + time.Duration(rnd.IntN(86400))*time.Second
			if rnd.IntN(2) == 0 {
				d.Tail = time.Hour
			}
			switch rnd.IntN(12) {
			case 0:
				d = Demand{Fixed: true, PerDay: rnd.Float64() * 100}
			case 1:
				d.Rate = 0
			case 2:
				d.Rate = math.NaN()
			case 3:
				d.Rate = math.MaxFloat64 // not +Inf: ScaleFor's bisection never ends on it (nor did it before)
			case 4:
				d.Min = 0
			case 5:
				d.Max = d.Min
			}
			ds[i] = d
		}
		budget := float64(n) * []float64{0.1, 1, 24, 100, 1e6}[round%5]
		if got, want := ScaleFor(ds, budget), scaleForBefore(ds, budget); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("round %d: ScaleFor %v, before %v", round, got, want)
		}
	}
}
