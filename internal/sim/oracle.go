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

// The oracle-opt yardstick.
//
// The square-root density is the many-polls limit. With few polls a day
// and sharp edges (a window of working hours, a column on Tuesday
// mornings) the delay-optimal polls are placed otherwise: with polls
// p_1 < … < p_N in a week, the items of (p_{i-1}, p_i] wait
// ∫ λ(t)(p_i − t) dt, and moving p_i alone is best where
// ∫_{p_{i-1}}^{p_i} λ = λ(p_i)·(p_{i+1} − p_i): the items waiting for the
// poll balance those its move would make wait longer (the derivative of
// the wait by p_i; docs/scheduler.md §3). oracle-opt starts
// from oracle-timed's week of polls (the same number per feed, so the
// same budget) and moves each poll to its best place between its
// neighbours, within the floors and the max interval, until no move
// gains: coordinate descent on the exact mean delay. It polls without
// jitter, at the schedule's times.

// optWeek is the length of the week, seconds.
const optWeek = 7 * 86400

// opt is one feed's week of polls under oracle-opt.
type opt struct {
	lam    [2 * HoursOfWeek]float64   // λ by hour, items a second, two weeks
	cum    [2*HoursOfWeek + 1]float64 // ∫λ from the week's start to each hour
	cumT   [2*HoursOfWeek + 1]float64 // ∫λ(t)·t
	polls  []float64                  // seconds into the week, ascending
	lo, hi float64                    // clamps, seconds
}

// newOpt makes the schedule of a feed whose oracle-timed week is o at
// scale s.
func newOpt(o *timed, s float64) *opt {
	x := &opt{lo: o.lo, hi: o.hi}
	for h := range x.lam {
		v := o.sq[h%HoursOfWeek]
		x.lam[h] = v * v / 86400
		a, b := float64(h)*3600, float64(h+1)*3600
		x.cum[h+1] = x.cum[h] + x.lam[h]*3600
		x.cumT[h+1] = x.cumT[h] + x.lam[h]*(b*b-a*a)/2
	}
	t0 := shapeWeek.Unix()
	for t := 0.0; t < optWeek; t += math.Max(o.gap(t0+int64(t), s), 1) {
		x.polls = append(x.polls, t)
	}
	// The week wraps: its last poll keeps the floor from the first.
	if n := len(x.polls); n > 1 && x.polls[n-1] > optWeek-x.lo {
		x.polls = x.polls[:n-1]
	}
	x.descend()
	return x
}

// integrals returns ∫λ and ∫λ(t)·t from the start of the two weeks to t,
// 0 <= t <= 2 weeks.
func (x *opt) integrals(t float64) (float64, float64) {
	h := min(int(t/3600), 2*HoursOfWeek-1)
	a := float64(h) * 3600
	return x.cum[h] + x.lam[h]*(t-a), x.cumT[h] + x.lam[h]*(t*t-a*a)/2
}

// cost is the items' total wait of the polls at a and b (a < b, b − a at
// most a week): ∫_a^b λ(t)(b − t) dt.
func (x *opt) cost(a, b float64) float64 {
	k := math.Floor(a / optWeek)
	a, b = a-k*optWeek, b-k*optWeek
	la, ta := x.integrals(a)
	lb, tb := x.integrals(b)
	return b*(lb-la) - (tb - ta)
}

// best returns the place in [lo, hi] for a poll between polls at a and
// b where the wait of both gaps is least. Within an hour λ is constant
// and the wait convex in the place, so the best is an hour's stationary
// point or an end.
func (x *opt) best(a, b, lo, hi float64) float64 {
	// Within the two weeks the integrals span: a in the first.
	k := math.Floor(a/optWeek) * optWeek
	a, b, lo, hi = a-k, b-k, lo-k, hi-k
	f := func(p float64) float64 { return x.cost(a, p) + x.cost(p, b) }
	bp, bf := lo, f(lo)
	try := func(p float64) {
		if p < lo || p > hi {
			return
		}
		if v := f(p); v < bf {
			bp, bf = p, v
		}
	}
	try(hi)
	la, _ := x.integrals(a)
	for s := math.Floor(lo/3600) * 3600; s < hi; s += 3600 {
		try(s)
		// f'(p) = ∫_a^p λ − λ_h·(b − p) = 0 in the hour [s, s+3600).
		l := x.lam[min(int(s/3600), 2*HoursOfWeek-1)]
		if l <= 0 {
			continue
		}
		ls, _ := x.integrals(s)
		try((b+s)/2 - (ls-la)/(2*l))
	}
	return bp + k
}

// descend moves each poll to its best place between its neighbours until
// the week's wait no longer falls.
func (x *opt) descend() {
	n := len(x.polls)
	if n < 2 {
		return
	}
	p := x.polls
	for range 50 {
		moved := 0.0
		for i := range n {
			a, b := 0.0, 0.0
			if i == 0 {
				a = p[n-1] - optWeek
			} else {
				a = p[i-1]
			}
			if i == n-1 {
				b = p[0] + optWeek
			} else {
				b = p[i+1]
			}
			lo, hi := math.Max(a+x.lo, b-x.hi), math.Min(b-x.lo, a+x.hi)
			if lo > hi {
				continue
			}
			q := x.best(a, b, lo, hi)
			moved = math.Max(moved, math.Abs(q-p[i]))
			p[i] = q
		}
		if moved < 30 {
			break
		}
	}
	for i := range p {
		p[i] = math.Mod(math.Mod(p[i], optWeek)+optWeek, optWeek)
	}
	slices.Sort(p)
}

// gap is the time after t (Unix seconds) of the schedule's next poll at
// least the floor later, at most the max interval.
func (x *opt) gap(t int64) float64 {
	u := math.Mod(float64(t-shapeWeek.Unix()), optWeek)
	if u < 0 {
		u += optWeek
	}
	// A poll a few seconds late (times are whole seconds) still takes
	// the next poll of the schedule, if a little more than the floor away.
	want := u + x.lo - 60
	for _, w := range []float64{0, optWeek, 2 * optWeek} {
		for _, q := range x.polls {
			if q+w >= want {
				return math.Min(math.Max(q+w-u, x.lo), x.hi)
			}
		}
	}
	return x.hi
}

// weekWait is the expected wait of the schedule's week, item-seconds.
func (x *opt) weekWait() float64 {
	n := len(x.polls)
	var s float64
	for i := range n {
		a := x.polls[(i+n-1)%n]
		if i == 0 {
			a -= optWeek
		}
		s += x.cost(a, x.polls[i])
	}
	return s
}
