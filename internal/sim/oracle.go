package sim

import (
	"math"
	"slices"
	"time"

	"github.com/feedpipe/feedpipe/internal/sched"
)

// The oracle-timed yardstick.
//
// The oracle knows each feed's rate and polls it at a constant interval.
// oracle-timed also knows when in the week the feed posts: its rate
// λ(t) = r·shape(t), r the feed's posts in the period a day (as the
// oracle's) and shape its true Shape. Over all feeds and hours, the
// item-weighted mean delay ∫λ/2n under a total of polls ∫n is smallest
// with a poll density n(t) = sqrt(λ(t))/s, one s for every feed
// (docs/scheduler.md, "The posting pattern"): the next poll comes when
// ∫ sqrt(λ) from the last one reaches s. s is set so that the polls of a
// week, walked without jitter, meet the budget. A feed without a shape
// counts as constant and is polled as the oracle polls it.

// timed is one feed's schedule under oracle-timed.
type timed struct {
	sq     [HoursOfWeek]float64 // sqrt(λ) by hour of the week, sqrt(items a day)
	lo, hi float64              // its clamps, seconds: the floors and min, the max
}

// gap is the time after t (Unix seconds) of the next poll at scale s,
// within the clamps.
func (o *timed) gap(t int64, s float64) float64 {
	u, rem, elapsed := float64(t), s, 0.0
	for elapsed < o.hi {
		w := o.sq[hourOfWeek(int64(math.Floor(u)))]
		end := (math.Floor(u/3600) + 1) * 3600
		span := end - u
		if w*span >= rem {
			return math.Min(math.Max(elapsed+rem/w, o.lo), o.hi)
		}
		rem -= w * span
		elapsed += span
		u = end
	}
	return o.hi
}

// perWeek counts the polls of a week at scale s, from the start of a
// week on, without jitter.
func (o *timed) perWeek(s float64) int {
	t0 := shapeWeek.Unix()
	t, n := float64(t0), 0
	for t < float64(t0+7*86400) {
		t += math.Max(o.gap(int64(t), s), 1)
		n++
	}
	return n
}

// oracleTimed sets up every feed's timed schedule and returns the scale
// that meets the budget (requests per feed and day).
func oracleTimed(w *Workload, feeds []*feedRun, p sched.Params, budget float64) float64 {
	def := sched.Defaults()
	lo, hi := p.Min, p.Max
	if lo <= 0 {
		lo = def.Min
	}
	if hi <= 0 {
		hi = def.Max
	}
	// The interval overrides Next takes are clamped to these.
	lo, hi = max(lo, sched.MinPollingInterval), min(hi, sched.MaxPollingInterval)
	s, e := w.Start.Unix(), w.End.Unix()
	for _, fr := range feeds {
		f := fr.f
		a, _ := slices.BinarySearch(f.Posts, s)
		b, _ := slices.BinarySearch(f.Posts, e)
		rate := float64(b-a) / w.Days()
		floor := max(lo, min(time.Duration(f.TTLMinutes)*time.Minute, hi), min(time.Duration(f.MaxAgeSec)*time.Second, hi))
		o := &timed{lo: floor.Seconds(), hi: hi.Seconds()}
		mean := 0.0
		for _, v := range f.Shape {
			mean += v / HoursOfWeek
		}
		for i := range o.sq {
			v := 1.0
			if mean > 0 {
				v = f.Shape[i] / mean
			}
			o.sq[i] = math.Sqrt(rate * v)
		}
		fr.timed = o
	}
	want := budget * float64(len(feeds)) * 7
	total := func(scale float64) float64 {
		n := 0
		for _, fr := range feeds {
			n += fr.timed.perWeek(scale)
		}
		return float64(n)
	}
	// total falls as the scale grows: bisect on its log.
	a, b := math.Log(1), math.Log(1e9)
	for b-a > 1e-4 {
		m := (a + b) / 2
		if total(math.Exp(m)) > want {
			a = m
		} else {
			b = m
		}
	}
	return math.Exp((a + b) / 2)
}
