package sim

import (
	"math"
	"slices"
	"time"
)

// Publishers that follow their own clock.
//
// A newsroom posts in its working hours, a weekly column on Tuesday
// mornings, a podcast at 6:00 every weekday: their rate is no constant but
// a function of the hour of the week in the publisher's time zone, λ(t).
// The generator makes such feeds (the kinds diurnal, weekly, scheduled and,
// for comparison, poisson), and gives every feed it makes its true λ(t) as
// a Shape, which the oracle-timed yardstick polls by.

// HoursOfWeek is the length of a Shape: the hours of a week.
const HoursOfWeek = 7 * 24

// A mix is the kinds of a generated workload: kinds[i] is drawn when the
// feed's draw x in [0, 1) is under upto[i] (and over the one before).
type mix struct {
	kinds []string
	upto  []float64
}

// kind is the kind of the feed whose draw is x.
func (m mix) kind(x float64) string {
	for i, u := range m.upto {
		if x < u {
			return m.kinds[i]
		}
	}
	return m.kinds[len(m.kinds)-1]
}

// MixNames are the mixes GenConfig.Mix and feed-sim --mix take.
var MixNames = []string{"classic", "mixed", "patterned", "poisson"}

// mixes by name ("" is classic). The classic bounds are those the
// generator has always drawn with, so that its workloads stay the same.
var mixes = map[string]mix{
	"": {
		kinds: []string{"regular", "bursty", "dormant", "dead", "batch", "sparse"},
		upto:  []float64{0.55, 0.67, 0.75, 0.85, 0.93, 1},
	},
	// A quarter of the feeds diurnal or weekly, a few scheduled and a few
	// at a constant rate; the classic kinds in their proportions in the
	// rest.
	"mixed": {
		kinds: []string{"regular", "bursty", "dormant", "dead", "batch", "sparse", "poisson", "diurnal", "weekly", "scheduled"},
		upto:  []float64{0.30, 0.39, 0.45, 0.53, 0.59, 0.65, 0.70, 0.85, 0.95, 1},
	},
	"patterned": {kinds: []string{"diurnal", "weekly"}, upto: []float64{0.6, 1}},
	"poisson":   {kinds: []string{"poisson"}, upto: []float64{1}},
}

// mixOf is the mix named, classic for a name it does not know (Check
// rejects those first).
func mixOf(name string) mix {
	if m, ok := mixes[name]; ok {
		return m
	}
	return mixes[""]
}

// zones are the publishers' UTC offsets, hours, with their weights: most
// feeds come from the Americas and Europe. No daylight saving time: a
// publisher's clock is one offset for the whole workload.
var zones = map[int]float64{-8: 10, -7: 5, -5: 20, -3: 5, 0: 15, 1: 20, 2: 5, 5: 5, 8: 5, 9: 5, 10: 5}

// patterned makes the posts of a feed of one of the kinds that follow the
// publisher's clock, on [from, to), and its shape. c carries the quiet
// hours and days of a feed that declares skipHours or skipDays: it posts
// little in them, as the classic kinds do.
//
//	diurnal    posts in working hours (8-14 hours from 6-10 local), 3-10%
//	           outside them, fewer at weekends (×0.15-0.8); 4 a day (median)
//	weekly     posts on some weekdays (Monday to Friday, or one or two
//	           days) in a window of 2-9 hours from 7-11 local, 1-5% outside
//	           it; 1.5 items an active day (median)
//	scheduled  1-3 items at 1-3 fixed times of day (local), every day,
//	           on weekdays or on one day a week; a run is up to 20 minutes
//	           late
//	poisson    a constant rate (median 2 a day, σ 1.4, at most 400)
func (g gen) patterned(kind string, c cycle, from, to time.Time) ([]int64, []float64) {
	off := float64(g.pick(zones) * 3600)
	quiet := func(t float64) float64 {
		u := time.Unix(int64(t), 0).UTC()
		if c.quietHours&(1<<u.Hour()) != 0 || c.quietDays&(1<<u.Weekday()) != 0 {
			return 0.05
		}
		return 1
	}
	// local returns the publisher's hour of day (fractional) and weekday.
	local := func(t float64) (float64, time.Weekday) {
		u := time.Unix(int64(t+off), 0).UTC()
		return float64(u.Hour()) + float64(u.Minute())/60, u.Weekday()
	}
	in := func(h, a, l float64) bool { return math.Mod(h-a+24, 24) < l }
	switch kind {
	case "diurnal":
		a, l := float64(6+g.rnd.IntN(5)), float64(8+g.rnd.IntN(7))
		q := g.uniform(0.03, 0.1) // share of the posts outside working hours
		level := q / (1 - q) * l / (24 - l)
		weekend := g.uniform(0.15, 0.8)
		rate := min(g.lognormal(4, 1), 200)
		fn := func(t float64) float64 {
			h, d := local(t)
			v := level
			if in(h, a, l) {
				v = 1
			}
			if d == time.Saturday || d == time.Sunday {
				v *= weekend
			}
			return v * quiet(t)
		}
		return g.nhpp(rate, fn, from, to), shapeOf(fn)
	case "weekly":
		var days uint8
		switch x := g.rnd.Float64(); {
		case x < 0.6:
			days = 0b0111110 // Monday to Friday
		case x < 0.85:
			days = 1 << (1 + g.rnd.IntN(5))
		default:
			days = 1<<(1+g.rnd.IntN(5)) | 1<<g.rnd.IntN(7)
		}
		n := 0
		for d := range 7 {
			if days&(1<<d) != 0 {
				n++
			}
		}
		a, l := float64(7+g.rnd.IntN(5)), float64(2+g.rnd.IntN(8))
		q := g.uniform(0.01, 0.05)
		active := float64(n) * l
		level := q / (1 - q) * active / (HoursOfWeek - active)
		rate := min(g.lognormal(1.5, 0.8), 30) * float64(n) / 7
		fn := func(t float64) float64 {
			h, d := local(t)
			v := level
			if days&(1<<d) != 0 && in(h, a, l) {
				v = 1
			}
			return v * quiet(t)
		}
		return g.nhpp(rate, fn, from, to), shapeOf(fn)
	case "scheduled":
		var times []float64 // seconds after local midnight
		for range 1 + g.rnd.IntN(3) {
			times = append(times, float64((5+g.rnd.IntN(17))*3600+15*60*g.rnd.IntN(4)))
		}
		slices.Sort(times)
		times = slices.Compact(times)
		var days uint8
		switch x := g.rnd.Float64(); {
		case x < 0.45:
			days = 0b1111111
		case x < 0.85:
			days = 0b0111110
		default:
			days = 1 << (1 + g.rnd.IntN(5))
		}
		items := 1 + g.rnd.IntN(3)
		shape := make([]float64, HoursOfWeek)
		var posts []int64
		day := float64(from.Unix()) + off
		day -= math.Mod(day, 86400) // local midnight, as a local Unix time
		for ; day-off < float64(to.Unix()); day += 86400 {
			wd := time.Unix(int64(day), 0).UTC().Weekday()
			if days&(1<<wd) == 0 {
				continue
			}
			for _, tod := range times {
				at := day - off + tod + math.Min(g.rnd.ExpFloat64()*180, 1200)
				if at < float64(from.Unix()) || at >= float64(to.Unix()) || quiet(at) < 1 {
					continue
				}
				for range items {
					posts = append(posts, int64(at)+int64(g.rnd.IntN(60)))
				}
			}
		}
		// The shape: the runs' hours of the week, in UTC.
		for d := range 7 {
			if days&(1<<d) == 0 {
				continue
			}
			for _, tod := range times {
				t := float64(shapeWeek.Unix()) + float64(d)*86400 + tod - off
				if quiet(t) < 1 {
					continue
				}
				shape[hourOfWeek(int64(t))] += float64(items)
			}
		}
		return posts, shape
	default: // poisson
		rate := min(g.lognormal(2, 1.4), 400)
		return g.nhpp(rate, quiet, from, to), shapeOf(quiet)
	}
}

// nhpp draws the times of an inhomogeneous Poisson process on [from, to)
// whose rate is mean·fn(t)/(fn's mean over a week) items a day, by
// thinning.
func (g gen) nhpp(mean float64, fn func(t float64) float64, from, to time.Time) []int64 {
	var peak, sum float64
	week := float64(shapeWeek.Unix())
	for i := range HoursOfWeek * 12 { // every 5 minutes of a week
		v := fn(week + 300*float64(i) + 150)
		sum += v
		peak = math.Max(peak, v)
	}
	if mean <= 0 || peak <= 0 || !to.After(from) {
		return nil
	}
	scale := mean / (sum / (HoursOfWeek * 12)) / 86400 // fn → items a second
	var out []int64
	t, end := float64(from.Unix()), float64(to.Unix())
	for {
		t += g.rnd.ExpFloat64() / (peak * scale)
		if t >= end {
			return out
		}
		if g.rnd.Float64()*peak < fn(t) {
			out = append(out, int64(t))
		}
	}
}

// shapeWeek is a week that starts on a Sunday at 00:00 UTC; the shapes
// are weekly, so any such week gives the same one.
var shapeWeek = time.Date(2026, 5, 31, 0, 0, 0, 0, time.UTC)

// hourOfWeek is the index of Unix time t in a Shape: the weekday (Sunday
// = 0) times 24 plus the hour, UTC.
func hourOfWeek(t int64) int {
	h := t / 3600
	if t < 0 && t%3600 != 0 {
		h--
	}
	// 1970-01-01 was a Thursday: hour 0 is hour 4·24 of its week.
	return int(((h+4*24)%HoursOfWeek + HoursOfWeek) % HoursOfWeek)
}

// shapeOf is the shape of a rate that follows fn, a function of the time
// that repeats every week: fn's mean over each hour of the week (12
// samples), not yet normalised.
func shapeOf(fn func(t float64) float64) []float64 {
	s := make([]float64, HoursOfWeek)
	week := float64(shapeWeek.Unix())
	for i := range HoursOfWeek {
		for k := range 12 {
			s[i] += fn(week+3600*float64(i)+300*float64(k)+150) / 12
		}
	}
	return s
}

// normShape scales s to a mean of 1, in place; a shape without any weight
// becomes nil (a constant rate).
func normShape(s []float64) []float64 {
	var sum float64
	for _, v := range s {
		sum += v
	}
	if len(s) != HoursOfWeek || !(sum > 0) {
		return nil
	}
	for i := range s {
		// Three significant digits are plenty for a yardstick, and keep
		// a written trace short.
		s[i] = roundSig(s[i]*HoursOfWeek/sum, 3)
	}
	return s
}

func roundSig(x float64, digits int) float64 {
	if x == 0 {
		return 0
	}
	p := math.Pow(10, float64(digits)-math.Ceil(math.Log10(math.Abs(x))))
	return math.Round(x*p) / p
}
