package sched

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// The posting pattern.
//
// Publishers keep hours: a newsroom posts in its working day, a column on
// Tuesday mornings, a podcast at 6:00 on weekdays. The state's profile
// (Hours and Days, decayed item counts by hour of the day and by day of
// the week; their product is the rate by hour of the week) says when.
//
// A feed whose rate varies over the week as λ(t) = r·f(t), f of mean 1,
// polled with a density n(t), finds an item ∫λ/2n late on average (Sia,
// Cho and Cho, "Efficient Monitoring Algorithm for Fast News Alerts",
// IEEE TKDE 2007). Over all feeds and hours, under a total of polls ∫n,
// this is least for n(t) = sqrt(λ(t))/s, one s for every feed: the
// square-root rule of Scale, applied in time as well as across feeds
// (a Lagrange multiplier away). A feed then gets E[sqrt f] of the polls
// a constant rate r would get, and finds its items in (E[sqrt f])² of
// the delay of evenly spaced polls: the pattern's gain.
//
// Every feed's profile has long nudged its polls that way, each factor's
// weights normalised to a mean of 1 and smoothed so much that noise
// cannot mislead it (profileFloor, profilePrior): that stays as it is for
// a feed without a clear pattern. For the others, the rates are the counts
// shrunk towards flat by as much of their spread as noise explains
// (empirical Bayes, shrink), noise counted as a Poisson stream's times how
// much the feed's items cluster (dispersion), so that a bursty feed's
// bursts are not taken for habits. A pattern is clear when its gain is at
// most patternGain; its polls then follow sqrt(f) without normalising, so
// that the feed spends E[sqrt f] of its share of the budget and the rest
// goes to the other feeds, as the rule has it (the budget loop, which
// corrects Scale's model by what the days really cost, hands it on).
//
// A publisher's day is not the UTC day: a newsroom in Sydney works from
// 23:00 to 08:00 UTC, and its weekdays counted from UTC midnight would cut
// each of its days in two. Entries carry their times in UTC (pkg/ndjson),
// without the publisher's offset, so the state learns the publisher's day
// from the pattern: its days start twelve hours from the middle of its
// working day (DayStart), once the hours alone make a clear pattern.

const (
	// patternGain is the gain at which a pattern is clear: polls placed
	// by it would find items in at most this share of the mean delay of
	// evenly spaced polls. With the counts shrunk as shrink does,
	// constant-rate feeds promise 0.97 or more (300 of them at feed-sim's
	// rates, 28 days), and bursts count as what they are (dispersion).
	patternGain = 0.85
	// patternHoursSpan and patternDaysSpan are how long a feed must have
	// been watched (its first answer's history included) before its hours,
	// and its days, can make a clear pattern: a first answer's 20 items
	// of one afternoon say nothing of the week.
	patternHoursSpan = 3 * secsPerDay
	patternDaysSpan  = 14 * secsPerDay
	// dayGather is the least resultant length (0 to 1) of the items'
	// hours, as angles on the clock, for them to make one day: a feed
	// posting at 07:00 and at 19:00 has two.
	dayGather = 0.4
	// dayQuiet is how many hours round a publisher's day start must be
	// its night, holding at most dayQuietShare of its items: a feed that
	// posts around the clock, if at fixed hours, has no day to start.
	dayQuiet      = 8
	dayQuietShare = 0.1
	// dayStartMove is how far, in hours, the start must have moved before
	// a feed's day start follows it: noise does not make it wander, and an
	// hour of daylight saving time does not move the days' counts.
	dayStartMove = 3
	// maxDispersion bounds dispersion.
	maxDispersion = 50
)

// pattern is what a feed's profile says about when it posts.
type pattern struct {
	ok    bool    // the profile holds enough items to use (profileMinItems)
	clear bool    // a clear pattern: polls follow it
	gain  float64 // (E[sqrt f])² of the clear rates; 1 when not counted
	// fh and fd are the relative rates by UTC hour and by the publisher's
	// day (counted from dayStart), each of mean 1; gh and gd the poll
	// weights.
	fh, gh   [24]float64
	fd, gd   [7]float64
	dayStart int
	// hoursSeen and daysSeen: the feed has been watched long enough for
	// its hours, its days, to count (patternHoursSpan, patternDaysSpan).
	hoursSeen, daysSeen bool
}

// pattern reads the state's profile.
func (st *State) pattern(p Params) pattern {
	var pt pattern
	var sh, sd float64
	for _, v := range st.Hours {
		sh += float64(v)
	}
	for _, v := range st.Days {
		sd += float64(v)
	}
	if sh < profileMinItems || sd < profileMinItems {
		return pt
	}
	pt.ok, pt.dayStart = true, st.DayStart
	// Every feed's rates, as the profile has always had them.
	rates(st.Hours[:], pt.fh[:], sh, profileFloor, profilePrior)
	rates(st.Days[:], pt.fd[:], sd, profileFloor, profilePrior)
	// The clear ones, from the dimensions watched long enough.
	span, noise := st.watched(p), st.dispersion(p)
	fh, fd := pt.fh, pt.fd
	hours, days := span >= patternHoursSpan, span >= patternDaysSpan
	pt.hoursSeen, pt.daysSeen = hours, days
	pt.gain = 1
	if hours {
		shrink(st.Hours[:], fh[:], sh, noise)
		m := meanSqrt(fh[:])
		pt.gain *= m * m
	}
	if days {
		shrink(st.Days[:], fd[:], sd, noise)
		m := meanSqrt(fd[:])
		pt.gain *= m * m
	}
	if pt.gain <= patternGain {
		pt.clear, pt.fh, pt.fd = true, fh, fd
	}
	weigh(pt.fh[:], pt.gh[:], !(pt.clear && hours))
	weigh(pt.fd[:], pt.gd[:], !(pt.clear && days))
	return pt
}

// rates sets f to counts smoothed, relative to their mean: each bin gets
// a pseudo-count of floor times the mean count, and at least prior.
func rates(counts []float32, f []float64, total, floor, prior float64) {
	mean := total / float64(len(counts))
	k := math.Max(floor*mean, prior)
	for i, c := range counts {
		f[i] = (float64(c) + k) / (mean + k)
	}
}

// weigh sets g to sqrt(f), normalised to a mean of 1 if norm.
func weigh(f, g []float64, norm bool) {
	var gs float64
	for i, v := range f {
		g[i] = math.Sqrt(v)
		gs += g[i]
	}
	if !norm {
		return
	}
	gm := gs / float64(len(f))
	for i := range g {
		g[i] /= gm
	}
}

// shrink sets f to the counts' rates relative to their mean, shrunk towards
// 1 by the share of their spread that noise explains (empirical Bayes):
// with a variance of the true rates across bins S and a noise variance N
// (noise times the mean count: a Poisson count's variance is its mean),
// the best estimate of a bin's rate is b·mean + (1-b)·count, b = N/(N+S).
// Counts of a feed without a pattern spread as noise does and come out
// flat, whatever their number.
func shrink(counts []float32, f []float64, total, noise float64) {
	n := float64(len(counts))
	m := total / n
	var v float64
	for _, c := range counts {
		d := float64(c) - m
		v += d * d
	}
	v /= n - 1
	nv := noise * m
	b := nv / (nv + math.Max(v-nv, 0))
	for i, c := range counts {
		f[i] = b + (1-b)*float64(c)/m
	}
}

// dispersion is how much more the counts of the feed's profile vary than
// a Poisson stream's at its rate would, at least 1. Items come in runs
// (less than runGap apart): a count of items that come in runs of k varies
// as E[k²]/E[k] times its mean, so a burst of 20 items is about one
// sighting of when the feed posts, not twenty. Its last runs give
// E[k²]/E[k]; a Poisson stream's runs have it at 2μ-1, μ = exp(rate·runGap)
// their mean length (geometric).
func (st *State) dispersion(p Params) float64 {
	var k, k2 float64
	for _, r := range st.Runs {
		n := float64(r.items())
		k, k2 = k+n, k2+n*n
	}
	if k == 0 {
		return 1
	}
	long, _ := st.rates(p.rateConsts(), 0)
	mu := math.Exp(math.Min(long*runGap/secsPerDay, 20))
	return math.Min(math.Max(k2/k/(2*mu-1), 1), maxDispersion)
}

func meanSqrt(f []float64) float64 {
	var s float64
	for _, v := range f {
		s += math.Sqrt(v)
	}
	return s / float64(len(f))
}

// watched is how long the feed has been watched, seconds, its first
// answer's history included, as far as the decayed time of the rate
// estimate tells (+Inf beyond: it saturates at its time constant).
func (st *State) watched(p Params) float64 {
	tau := p.RateHalfLife.Seconds() / math.Ln2
	if st.RateT >= tau {
		return math.Inf(1)
	}
	return -tau * math.Log1p(-st.RateT/tau)
}

// dayOf is the publisher's day (Sunday = 0) of Unix time t, for a day
// that starts at UTC hour start. A day is named after the UTC date that
// holds most of it: one that starts at 22:00 is the next date's.
func dayOf(t int64, start int) int {
	return int(floorMod(floorDiv(t-int64(signedHour(start))*3600, 86400)+4, 7)) // 1970-01-01 was a Thursday
}

// signedHour is a day start as hours from its date's midnight, -12 to 11.
func signedHour(start int) int {
	if start >= 12 {
		return start - 24
	}
	return start
}

// moveDayStart sets the hour the publisher's day starts at, from the hours
// profile: twelve hours from the middle of its day (the circular mean of
// its items' hours, which noise moves little), once the hours alone make
// a clear pattern, one day of it (the items' hours gather round their mean,
// a resultant of dayGather or more) with a night (the dayQuiet hours round
// the start hold at most dayQuietShare of the items), and the start has
// moved dayStartMove hours or more. The days' counts move with it.
func (st *State) moveDayStart(p Params) {
	var sh, c, s float64
	for h, v := range st.Hours {
		a := 2 * math.Pi * (float64(h) + 0.5) / 24
		sh += float64(v)
		c += float64(v) * math.Cos(a)
		s += float64(v) * math.Sin(a)
	}
	if sh < profileMinItems || st.watched(p) < patternHoursSpan || math.Hypot(c, s) < dayGather*sh {
		return
	}
	var fh [24]float64
	shrink(st.Hours[:], fh[:], sh, st.dispersion(p))
	if m := meanSqrt(fh[:]); m*m > patternGain {
		return
	}
	middle := math.Atan2(s, c) * 24 / (2 * math.Pi) // the hour, -12 to 12, of the items' mean
	start := int(math.Round(middle+12)+24) % 24     // twelve hours from it
	var night float64
	for i := range dayQuiet {
		night += float64(st.Hours[(start-dayQuiet/2+i+24)%24])
	}
	if night > dayQuietShare*sh {
		return
	}
	if d := (start - st.DayStart + 24) % 24; min(d, 24-d) < dayStartMove {
		return
	}
	// A day of the new start holds parts of two old days: as much of each
	// as the hours profile says a day's items spread over those hours.
	share := func(from, n int) float32 { // of the items, in n hours from UTC hour from
		var x float64
		for i := range n {
			x += float64(st.Hours[(from+i+48)%24])
		}
		return float32(x / sh)
	}
	old := st.Days
	switch shift := signedHour(start) - signedHour(st.DayStart); {
	case shift > 0: // later: the first shift hours of the next old day join it
		phi := share(st.DayStart, shift)
		for d := range 7 {
			st.Days[d] = old[d]*(1-phi) + old[(d+1)%7]*phi
		}
	case shift < 0: // earlier: the last -shift hours of the old day before
		psi := share(start, -shift)
		for d := range 7 {
			st.Days[d] = old[(d+6)%7]*psi + old[d]*(1-psi)
		}
	}
	st.DayStart = start
}

// explainPattern puts what a clear pattern says in the decision.
func (r *run) explainPattern(pt *pattern, now int64) {
	if !pt.clear {
		return
	}
	in := r.in()
	in.PatternGain = math.Round(pt.gain*100) / 100
	in.PatternHours = pt.hours()
	in.PatternDays = pt.days()
	in.DayStart = pt.dayStart
	in.PollWeight = math.Round(pt.gh[hourOf(now)]*pt.gd[dayOf(now, pt.dayStart)]*100) / 100
}

// hours are the UTC hours in which the feed posts more than on average,
// as ranges: "08-12,14-17"; "" before its hours count.
func (pt *pattern) hours() string {
	if !pt.hoursSeen {
		return ""
	}
	var in [24]bool
	for h, v := range pt.fh {
		in[h] = v > 1
	}
	return spans(in[:], func(i int) string { return fmt.Sprintf("%02d", i) })
}

// days are the publisher's days on which the feed posts at least half its
// average: "Mon-Fri", "Tue,Thu"; "" before its days count.
func (pt *pattern) days() string {
	if !pt.daysSeen {
		return ""
	}
	var in [7]bool
	for d, v := range pt.fd {
		in[d] = v >= 0.5
	}
	return spans(in[:], func(i int) string { return time.Weekday(i).String()[:3] })
}

// spans writes the true runs of in, which wraps around, as "a-b,c": runs
// that cross the end start where they begin.
func spans(in []bool, name func(int) string) string {
	n := len(in)
	first := -1 // a position after a false one, where a run can start
	for i := range n {
		if !in[(i+n-1)%n] {
			first = i
			break
		}
	}
	if first < 0 {
		return name(0) + "-" + name(n-1)
	}
	var parts []string
	for k := 0; k < n; {
		i := (first + k) % n
		if !in[i] {
			k++
			continue
		}
		j := k
		for j+1 < n && in[(first+j+1)%n] {
			j++
		}
		if j > k {
			parts = append(parts, name(i)+"-"+name((first+j)%n))
		} else {
			parts = append(parts, name(i))
		}
		k = j + 1
	}
	return strings.Join(parts, ",")
}

// Pattern is what a feed's posting pattern says, for people (feed-due
// --explain) and the simulator.
type Pattern struct {
	// Known: the profile holds enough items to be used at all; Clear: a
	// clear pattern, which places the polls (pattern.go).
	Known, Clear bool
	// Gain is the share of the mean delay of evenly spaced polls that
	// polls placed by the pattern would give (1: no pattern).
	Gain float64
	// Hours are the UTC hours that hold most items ("08-12,14-17"), Days
	// the publisher's days that do ("Mon-Fri"), each day starting at
	// DayStart UTC; empty unless Known.
	Hours, Days string
	DayStart    int
}

// Pattern is the feed's posting pattern as its state has it.
func (st State) Pattern(p Params) Pattern {
	p = p.withDefaults()
	st = st.clean(p)
	pt := st.pattern(p)
	if !pt.ok {
		return Pattern{Gain: 1}
	}
	return Pattern{Known: true, Clear: pt.clear, Gain: pt.gain, Hours: pt.hours(), Days: pt.days(), DayStart: pt.dayStart}
}
