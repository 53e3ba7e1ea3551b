package sched

import "math"

// Placing the polls of a clear pattern.
//
// The density sqrt(λ(t)) (pattern.go) is the many-polls limit. With few
// polls a day and sharp edges (working hours that end at 17:00, a column
// on Tuesday mornings) the polls that make items least late sit
// elsewhere: with polls p_0 < p_1 < … the items of (p_{i-1}, p_i] wait
// ∫ λ(t)(p_i − t) dt for p_i, and moving p_i alone is best where
//
//	∫_{p_{i-1}}^{p_i} λ(t) dt = λ(p_i)·(p_{i+1} − p_i)
//
// (the items the poll finds balance those its move would leave waiting
// longer), or at an edge where λ falls: the last poll of a working day
// comes as it ends, not an hour into the night, which would leave the
// day's last items waiting until morning (Eckstein, Gal and Reiner,
// INFORMS Journal on Computing 2008, place the polls of a non-homogeneous
// Poisson source by such conditions). place plans the next placeK polls
// that sqrt(λ) would make (so the same number, the same share of the
// budget), moves each in turn to its best place between its neighbours,
// a few rounds (coordinate descent on the exact wait), and takes the
// first. The rates are the pattern's by hour: within an hour λ is
// constant, the wait convex in the place, and the best place in the hour
// is where the condition holds, or an end.

const (
	// placeK is how many polls ahead place plans; the poll after them
	// stays where sqrt(λ) puts it.
	placeK = 5
	// placeRounds is how often each planned poll is moved.
	placeRounds = 4
	// placeHours bounds the plan's span, hours: placeK+1 gaps of at most
	// the max interval (a day), and the hour begun.
	placeHours = (placeK+1)*24 + 2
)

// placer holds the relative rate by hour from the hour of the fetch on,
// and its integrals, for place. Hours are filled as far as the plan
// reaches: a few for a busy feed, days for a weekly column.
type placer struct {
	n         int                     // hours filled
	lam, g    [placeHours]float64     // rate and sqrt(λ)'s poll weight by hour
	cum, cumT [placeHours + 1]float64 // ∫λ, ∫λ(x)·x from the first hour's start
	pt        *pattern
	hour, day int // of hour n
}

// fill fills the hours up to hour i (at most placeHours), counting hours
// and days on rather than dividing for each.
func (pl *placer) fill(i int) {
	pt := pl.pt
	for ; pl.n <= i && pl.n < placeHours; pl.n++ {
		k := pl.n
		pl.lam[k] = pt.fh[pl.hour] * pt.fd[pl.day]
		pl.g[k] = pt.gh[pl.hour] * pt.gd[pl.day]
		a, b := float64(k)*3600, float64(k+1)*3600
		pl.cum[k+1] = pl.cum[k] + pl.lam[k]*3600
		pl.cumT[k+1] = pl.cumT[k] + pl.lam[k]*(b*b-a*a)/2
		if pl.hour++; pl.hour == 24 {
			pl.hour = 0
		}
		if pl.hour == pt.dayStart {
			pl.day = (pl.day + 1) % 7
		}
	}
}

// at returns ∫λ and ∫λ(x)·x from the first hour's start to x seconds
// after it.
func (pl *placer) at(x float64) (float64, float64) {
	i := min(max(int(x/3600), 0), pl.n-1)
	a := float64(i) * 3600
	return pl.cum[i] + pl.lam[i]*(x-a), pl.cumT[i] + pl.lam[i]*(x*x-a*a)/2
}

// wait is the items' wait for the poll at b after the poll at a:
// ∫_a^b λ(x)(b − x) dx.
func (pl *placer) wait(a, b float64) float64 {
	la, ta := pl.at(a)
	lb, tb := pl.at(b)
	return b*(lb-la) - (tb - ta)
}

// next is where the integral of the poll weight from x reaches base, at
// most hi later: integrate, on the filled hours.
func (pl *placer) next(x, base, hi float64) float64 {
	rem, end := base, x+hi
	for i := int(x / 3600); i < placeHours; i++ {
		pl.fill(i)
		e := math.Min(float64(i+1)*3600, end)
		if w := pl.g[i]; w*(e-x) >= rem {
			return x + rem/w
		} else {
			rem -= w * (e - x)
		}
		if x = e; x >= end {
			break
		}
	}
	return end
}

// best is the place in [lo, hi] for a poll between those at a and b where
// the items wait least. The wait's slope at p is ∫_a^p λ − λ(p)·(b − p):
// within an hour it grows (at 2λ), so the wait has its minima where the
// slope crosses 0 inside an hour, or where it jumps from below 0 to above
// at an hour's start (λ falls there), or at lo or hi; only those are
// compared.
func (pl *placer) best(a, b, lo, hi float64) float64 {
	f := func(p float64) float64 { return pl.wait(a, p) + pl.wait(p, b) }
	bp, bf := lo, f(lo)
	try := func(p float64) {
		if v := f(p); v < bf {
			bp, bf = p, v
		}
	}
	la, _ := pl.at(a)
	prev := -1.0 // the slope at the end of the hour before
	for i := min(int(lo/3600), pl.n-1); i < pl.n; i++ {
		s, e := math.Max(float64(i)*3600, lo), math.Min(float64(i+1)*3600, hi)
		if s >= hi {
			break
		}
		l := pl.lam[i]
		ls, _ := pl.at(s)
		d := ls - la - l*(b-s) // the slope at s
		if d >= 0 && prev < 0 && s > lo {
			try(s)
		}
		if d < 0 && l > 0 {
			if p := s - d/(2*l); p < e {
				try(p)
			}
		}
		prev = d + 2*l*(e-s)
	}
	if prev < 0 {
		try(hi)
	}
	return bp
}

// place returns the gap after t0 (Unix seconds) to the next poll of a
// feed with a clear pattern, whose polls sqrt(λ) spaces by base (the
// integral of the poll weight, integrate), at least lo and at most hi
// seconds apart.
func place(t0 int64, base, lo, hi float64, pt *pattern) float64 {
	h0 := floorDiv(t0, 3600) * 3600
	pl := placer{pt: pt, hour: hourOf(h0), day: dayOf(h0, pt.dayStart)}
	var q [placeK + 2]float64 // seconds after t0's hour began
	q[0] = float64(t0 - h0)
	for i := 1; i < len(q); i++ {
		q[i] = math.Max(pl.next(q[i-1], base, hi), q[i-1]+lo)
	}
	for range placeRounds {
		for i := 1; i <= placeK; i++ {
			a, b := q[i-1], q[i+1]
			l, h := math.Max(a+lo, b-hi), math.Min(b-lo, a+hi)
			if l > h {
				continue
			}
			q[i] = pl.best(a, b, l, h)
		}
	}
	return q[1] - q[0]
}
