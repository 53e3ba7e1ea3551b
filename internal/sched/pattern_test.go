package sched

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// posts draws the publication times of a Poisson stream of perDay items a
// day on [from, to) that posts only where in(t) holds (its rate there is
// higher, so that perDay is its mean over the week).
func posts(rnd *rand.Rand, perDay float64, in func(time.Time) bool, from, to time.Time) []time.Time {
	share := 0
	for h := range 7 * 24 {
		if in(from.Add(time.Duration(h) * time.Hour)) {
			share++
		}
	}
	if share == 0 {
		return nil
	}
	rate := perDay / 86400 * 168 / float64(share)
	var out []time.Time
	for t := from; ; {
		t = t.Add(time.Duration(rnd.ExpFloat64() / rate * float64(time.Second)))
		if !t.Before(to) {
			return out
		}
		if in(t) {
			out = append(out, t)
		}
	}
}

// hoursUTC is a habit of posting in UTC hours [a, b), wrapping at
// midnight, on the weekdays given (nil: every day).
func hoursUTC(a, b int, days ...time.Weekday) func(time.Time) bool {
	return func(t time.Time) bool {
		h := t.UTC().Hour()
		in := a <= h && h < b
		if a > b {
			in = h >= a || h < b
		}
		return in && (days == nil || slices.Contains(days, t.UTC().Weekday()))
	}
}

func always(time.Time) bool { return true }

var weekdays = []time.Weekday{time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday}

// follow polls a feed whose items are published at pubs (ascending) from
// from to to, as feed-store would: each poll brings the items published
// since the last one (the first, the newest window of them). It returns
// the state and the decisions.
func follow(p Params, pubs []time.Time, window int, from, to time.Time) (State, []Decision) {
	st, d := Next(State{}, Outcome{Kind: NeverFetched}, p, Overrides{}, from, nil)
	ds := []Decision{d}
	seen, _ := slices.BinarySearchFunc(pubs, from, func(a, b time.Time) int { return a.Compare(b) })
	seen = max(0, seen-window)
	at := from
	for at.Before(to) {
		n, _ := slices.BinarySearchFunc(pubs, at.Add(time.Nanosecond), func(a, b time.Time) int { return a.Compare(b) })
		out := Outcome{At: at, Status: 200, Items: window, Parsed: true}
		if n > seen {
			out.Published = slices.Clone(pubs[max(seen, n-window):n])
			out.NewEntries = len(out.Published)
			seen = n
		} else {
			out.Status, out.NotModified = 304, true
		}
		st, d = Next(st, out, p, Overrides{}, at, nil)
		ds = append(ds, d)
		at = d.NextAt.Time
	}
	return st, ds
}

// shrink leaves counts that spread no more than a Poisson stream's flat,
// however many, and a real pattern sharp.
func TestShrink(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 3))
	gainOf := func(counts []float32, noise float64) float64 {
		var total float64
		for _, c := range counts {
			total += float64(c)
		}
		f := make([]float64, len(counts))
		shrink(counts, f, total, noise)
		var mean float64
		for _, v := range f {
			mean += v / float64(len(f))
		}
		if math.Abs(mean-1) > 1e-9 {
			t.Fatalf("rates of mean %v", mean)
		}
		m := meanSqrt(f)
		return m * m
	}
	poisson := func(mean float64, n int) []float32 {
		c := make([]float32, n)
		for i := range c {
			// a Poisson count, by counting exponential gaps in one unit
			for s := rnd.ExpFloat64(); s < mean; s += rnd.ExpFloat64() {
				c[i]++
			}
		}
		return c
	}
	tests := []struct {
		name     string
		counts   []float32
		noise    float64
		min, max float64 // the gain's bounds
	}{
		{"flat", slices.Repeat([]float32{5}, 24), 1, 1, 1},
		{"Poisson, few", poisson(1, 24), 1, 0.95, 1},
		{"Poisson, many", poisson(40, 24), 1, 0.98, 1},
		{"working hours", append(slices.Repeat([]float32{0.5}, 14), slices.Repeat([]float32{12}, 10)...), 1, 0.6, 0.82},
		{"one hour", append(slices.Repeat([]float32{0}, 23), 48), 1, 0, 0.15},
		{"one burst, counted as one", append(slices.Repeat([]float32{0.5}, 23), 20), 20, 1, 1},
		{"weekdays", []float32{1, 30, 28, 31, 29, 30, 2}, 1, 0.7, 0.9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if g := gainOf(tt.counts, tt.noise); g < tt.min-1e-9 || g > tt.max+1e-9 {
				t.Errorf("gain %.3f, want %.2f-%.2f", g, tt.min, tt.max)
			}
		})
	}
}

// dispersion: a feed whose items come one at a time, or in the runs a
// Poisson stream of its rate makes, has none; one whose runs are bursts
// has as much as its bursts are long.
func TestDispersion(t *testing.T) {
	p := Defaults()
	run := func(at int64, n int64) Run { return Run{at, at + 60*(n-1), n} }
	tests := []struct {
		name     string
		rate     float64 // items a day
		runs     []Run
		min, max float64
	}{
		{"no runs", 2, nil, 1, 1},
		{"single items", 2, []Run{run(0, 1), run(9e4, 1), run(2e5, 1), run(3e5, 1)}, 1, 1},
		{"a busy stream's runs", 200, []Run{run(0, 60), run(9e4, 70), run(2e5, 50), run(3e5, 65)}, 1, 1.1},
		{"bursts", 2, []Run{run(0, 20), run(9e4, 1), run(2e5, 1), run(3e5, 25)}, 15, 25},
		{"bounded", 0.1, []Run{run(0, 1<<20)}, maxDispersion, maxDispersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A rate estimate of rate a day, watched for long.
			st := State{Runs: tt.runs, RateT: 1e9, RateN: tt.rate * 1e9 / 86400}
			if d := st.dispersion(p); d < tt.min || d > tt.max {
				t.Errorf("dispersion %.2f, want %.2f-%.2f", d, tt.min, tt.max)
			}
		})
	}
}

func TestDayOf(t *testing.T) {
	for _, tt := range []struct {
		at    time.Time
		start int
		want  time.Weekday
	}{
		{time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC), 0, time.Monday},
		{time.Date(2026, 6, 1, 3, 59, 0, 0, time.UTC), 4, time.Sunday}, // before the day starts: the day before
		{time.Date(2026, 6, 1, 4, 0, 0, 0, time.UTC), 4, time.Monday},
		{time.Date(2026, 6, 7, 23, 0, 0, 0, time.UTC), 23, time.Monday}, // a day from 23:00 is the next date's
		{time.Date(2026, 6, 7, 22, 59, 0, 0, time.UTC), 23, time.Sunday},
		{time.Date(2026, 6, 1, 11, 59, 0, 0, time.UTC), 12, time.Monday},
		{time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC), 12, time.Tuesday},
		{time.Date(1969, 12, 31, 12, 0, 0, 0, time.UTC), 0, time.Wednesday},
		{time.Date(1970, 1, 1, 2, 0, 0, 0, time.UTC), 5, time.Wednesday},
	} {
		if got := time.Weekday(dayOf(tt.at.Unix(), tt.start)); got != tt.want {
			t.Errorf("%s from %02d:00: %s, want %s", tt.at, tt.start, got, tt.want)
		}
	}
}

// A publisher's day starts in its night: Sydney's newsroom, 23:00 to
// 08:00 UTC on its weekdays, gets days that hold each of its working days
// whole, named as in Sydney, and its weekend is two days without items. A feed that posts at
// every hour, or one without a clear day, keeps UTC days.
func TestDayStart(t *testing.T) {
	p := Defaults()
	from, to := t0.Add(-60*24*time.Hour), t0
	// Sydney is UTC+10: its Monday 09:00-18:00 is Sunday 23:00 to Monday
	// 08:00 UTC.
	sydney := func(t time.Time) bool {
		l := t.UTC().Add(10 * time.Hour)
		return l.Hour() >= 9 && l.Hour() < 18 && l.Weekday() != time.Saturday && l.Weekday() != time.Sunday
	}
	tests := []struct {
		name  string
		in    func(time.Time) bool
		start []int // acceptable day starts: its night
		days  string
	}{
		{"Sydney", sydney, []int{13, 14, 15, 16, 17, 18, 19}, "Mon-Fri"},
		{"London", hoursUTC(8, 17, weekdays...), []int{18, 19, 20, 21, 22, 23, 0, 1, 2, 3, 4, 5, 6}, "Mon-Fri"},
		{"around the clock", always, []int{0}, "Sun-Sat"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pubs := posts(rand.New(rand.NewPCG(5, 5)), 6, tt.in, from, to)
			st, _ := follow(p, pubs, 400, to.Add(-time.Minute), to.Add(time.Hour))
			pt := st.Pattern(p)
			if !slices.Contains(tt.start, st.DayStart) || pt.Days != tt.days {
				t.Errorf("days start at %02d:00 UTC, days %q; want one of %v, %q (pattern %+v)", st.DayStart, pt.Days, tt.start, tt.days, pt)
			}
		})
	}
}

// moveDayStart moves the days' counts with the start: what the first hours
// of a day held is the day before's now, and no item is lost.
func TestMoveDayStartKeepsCounts(t *testing.T) {
	var st State
	// Items at 23:00-06:59 UTC, their middle at 03:00: the day starts
	// twelve hours later, at 15:00, in the quiet 07:00-22:00.
	for h := range 24 {
		if h >= 23 || h < 7 {
			st.Hours[h] = 10
		}
	}
	st.Days = [7]float32{0, 20, 20, 20, 20, 0, 0} // by UTC day: Monday to Thursday
	st.RateT = 1e9
	before := st.Days
	st.moveDayStart(Defaults())
	if st.DayStart < 11 || st.DayStart > 19 {
		t.Fatalf("day start %d", st.DayStart)
	}
	var a, b float32
	for d := range 7 {
		a, b = a+before[d], b+st.Days[d]
	}
	if math.Abs(float64(a-b)) > 1e-3 {
		t.Errorf("days %v → %v: %v items became %v", before, st.Days, a, b)
	}
	// A day from 15:00 is named after the next date, which holds most of
	// it: Monday's items after midnight stay Monday's, its items at 23:00
	// (one in eight) are Tuesday's now.
	if st.Days[0] > 1 || st.Days[1] < 16 || st.Days[1] > 19 || st.Days[5] < 1 || st.Days[5] > 4 {
		t.Errorf("days %v, want Monday's items on Monday but for an eighth on Tuesday", st.Days)
	}
	// Once moved, it stays.
	d := st.DayStart
	st.moveDayStart(Defaults())
	if st.DayStart != d {
		t.Errorf("day start moved again, %d → %d", d, st.DayStart)
	}

	// A start that moves past midnight: from 18:00 to about 01:00 UTC, for
	// a feed posting 06:00-19:59 UTC, Monday to Friday. Its days as counted
	// from 18:00 hold each weekday's last two hours on the next day, and
	// Saturday's day holds Friday's; counted from 01:00, Saturday and
	// Sunday hold no more than an hour or two of the days beside them.
	st = State{DayStart: 18, RateT: 1e9}
	for h := 6; h < 20; h++ {
		st.Hours[h] = 30
	}
	st.Days = [7]float32{0, 360, 420, 420, 420, 420, 60}
	st.moveDayStart(Defaults())
	if st.DayStart != 0 && st.DayStart != 1 {
		t.Fatalf("day start %d, want 0 or 1", st.DayStart)
	}
	for wd, n := range st.Days {
		if weekend := wd == 0 || wd == 6; weekend && n > 75 || !weekend && n < 300 {
			t.Errorf("days %v: %s holds %.0f", st.Days, time.Weekday(wd), n)
			break
		}
	}
}

func TestSpans(t *testing.T) {
	hours := func(hs ...int) []bool {
		in := make([]bool, 24)
		for _, h := range hs {
			in[h] = true
		}
		return in
	}
	name := func(i int) string { return fmt.Sprintf("%02d", i) }
	for _, tt := range []struct {
		in   []bool
		want string
	}{
		{hours(8, 9, 10, 11, 12, 14, 15, 16, 17), "08-12,14-17"},
		{hours(22, 23, 0, 1, 2, 3), "22-03"},
		{hours(5), "05"},
		{hours(0, 23), "23-00"},
		{hours(), ""},
		{hours(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23), "00-23"},
	} {
		if got := spans(tt.in, name); got != tt.want {
			t.Errorf("%v: %q, want %q", tt.in, got, tt.want)
		}
	}
	days := []bool{false, true, true, true, true, true, false}
	if got := spans(days, func(i int) string { return time.Weekday(i).String()[:3] }); got != "Mon-Fri" {
		t.Errorf("weekdays: %q", got)
	}
}

// A feed without a clear pattern keeps the profile as it was, and its
// decisions say nothing of a pattern: a constant-rate feed, however many
// items it has shown, and a feed watched for too short a time.
func TestNoClearPattern(t *testing.T) {
	p := Defaults()
	from := t0.Add(-50 * 24 * time.Hour)
	for _, tt := range []struct {
		name  string
		pubs  []time.Time
		known bool
	}{
		{"constant rate", posts(rand.New(rand.NewPCG(1, 2)), 20, always, from, t0.Add(7*24*time.Hour)), true},
		{"two days of working hours", posts(rand.New(rand.NewPCG(1, 3)), 20, hoursUTC(9, 17), t0.Add(-2*24*time.Hour), t0.Add(24*time.Hour)), true},
		{"a handful of items", posts(rand.New(rand.NewPCG(1, 4)), 0.3, hoursUTC(9, 11), from, t0.Add(24*time.Hour)), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, ds := follow(p, tt.pubs, 100, t0, t0.Add(24*time.Hour))
			pt := st.Pattern(p)
			if pt.Clear || pt.Known != tt.known || st.DayStart != 0 {
				t.Errorf("pattern %+v, day start %d", pt, st.DayStart)
			}
			for _, d := range ds {
				if in := d.Inputs; in.PatternGain != 0 || in.PatternHours != "" || in.PollWeight != 0 || strings.Contains(d.Explain(), "Pattern") {
					t.Fatalf("a decision with a pattern: %+v", in)
				}
			}
		})
	}
}

// A feed that shows its history on the first fetch (a feed of 100 items,
// or the archive a store fills in) is polled by its pattern from the
// first decision: a publisher of working hours, Monday to Friday.
func TestHistoryTeachesAtOnce(t *testing.T) {
	p := noJitter()
	pubs := posts(rand.New(rand.NewPCG(2, 2)), 6, hoursUTC(8, 17, weekdays...), t0.Add(-30*24*time.Hour), t0)
	if len(pubs) < 150 {
		t.Fatalf("%d posts", len(pubs))
	}
	st := started(p, Overrides{})
	out := Outcome{At: t0.Add(time.Hour), Status: 200, Items: 200, Parsed: true, Published: pubs[len(pubs)-150:], NewEntries: 150}
	st, d := Next(st, out, p, Overrides{}, out.At, nil)
	pt := st.Pattern(p)
	if !pt.Clear || pt.Hours != "08-16" || pt.Days != "Mon-Fri" || d.Inputs.PatternGain == 0 || d.Inputs.PatternHours != "08-16" {
		t.Errorf("pattern %+v; decision %+v", pt, d.Inputs)
	}
	// Monday 01:00 is in its night: polls come several times less often
	// than in its hours.
	at := func(h int) float64 {
		pt := st.pattern(p.withDefaults())
		u := t0.Add(time.Duration(h) * time.Hour).Unix()
		return pt.gh[hourOf(u)] * pt.gd[dayOf(u, pt.dayStart)]
	}
	if night, day := at(1), at(10); day < 2.5*night || d.Inputs.PollWeight != math.Round(night*100)/100 {
		t.Errorf("poll weights %.2f at 01:00, %.2f at 10:00; decision %+v", night, day, d.Inputs)
	}
	for _, want := range []string{"Pattern: posts mostly at 08-16 UTC, Mon-Fri", "polls follow it"} {
		if !strings.Contains(d.Explain(), want) {
			t.Errorf("Explain lacks %q:\n%s", want, d.Explain())
		}
	}
}

// A clear pattern puts the polls where the items are: a working-hours
// feed is polled several times as often in its hours as at night, and
// spends fewer polls than the same feed posting around the clock, as the
// square-root rule asks (E[sqrt f] of them).
func TestPollsFollowPattern(t *testing.T) {
	p := Defaults()
	from, to := t0.Add(-40*24*time.Hour), t0.Add(14*24*time.Hour)
	count := func(in func(time.Time) bool) (day, night, total int) {
		pubs := posts(rand.New(rand.NewPCG(4, 4)), 8, in, from, to)
		_, ds := follow(p, pubs, 300, t0, to)
		for _, d := range ds[1:] {
			h := d.At.Time.Hour()
			if h >= 9 && h < 17 {
				day++
			} else {
				night++
			}
		}
		return day, night, len(ds)
	}
	day, night, total := count(hoursUTC(9, 17))
	_, _, flat := count(always)
	// Per hour, day polls over night polls; the square-root rule says
	// sqrt of the ratio of the rates, here far above 2.
	if r := float64(day) / 8 / (float64(night) / 16); r < 2 {
		t.Errorf("%d polls in 8 day hours, %d in 16 night hours: ×%.1f an hour", day, night, r)
	}
	if float64(total) > 0.9*float64(flat) {
		t.Errorf("%d polls with a pattern, %d without", total, flat)
	}
}

// A changed habit is followed within weeks: a feed that moves its posts
// from the morning to the evening is polled more in the evening than in
// the morning five weeks later.
func TestHabitChange(t *testing.T) {
	p := Defaults()
	rnd := rand.New(rand.NewPCG(6, 6))
	change := t0
	pubs := append(posts(rnd, 6, hoursUTC(7, 11), change.Add(-90*24*time.Hour), change), posts(rnd, 6, hoursUTC(19, 23), change, change.Add(60*24*time.Hour))...)
	weight := func(st State, hour int) float64 {
		pt := st.pattern(p.withDefaults())
		return pt.gh[hour]
	}
	st, _ := follow(p, pubs, 300, change.Add(-time.Hour), change)
	if w7, w21 := weight(st, 8), weight(st, 21); w7 < 3*w21 {
		t.Fatalf("before the change: weights %.2f at 08:00, %.2f at 21:00", w7, w21)
	}
	for _, tt := range []struct {
		weeks int
		more  bool // the evening weighs more than the morning
	}{{1, false}, {5, true}, {8, true}} {
		st, _ := follow(p, pubs, 300, change.Add(-time.Hour), change.Add(time.Duration(tt.weeks)*7*24*time.Hour))
		w7, w21 := weight(st, 8), weight(st, 21)
		if (w21 > w7) != tt.more {
			t.Errorf("%d weeks after the change: weights %.2f at 08:00, %.2f at 21:00", tt.weeks, w7, w21)
		}
	}
}
