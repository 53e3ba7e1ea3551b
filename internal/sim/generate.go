package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// GenConfig says what workload Generate makes.
type GenConfig struct {
	Seed  uint64
	Feeds int       // default 1000
	Days  int       // measured days, default 30
	Start time.Time // default 2026-06-01T00:00:00Z
	// Plain leaves out publisher floors (ttl, max-age) and outages, so
	// that every delay is the policy's doing: the workload on which
	// policies compare most directly.
	Plain bool
	// NoFloors leaves out ttl and max-age only: the mix the issue lists
	// (rates, cycles, kinds, outages), without the floors that set a
	// delay no policy can shorten.
	NoFloors bool
	// Mix is the share of each kind of feed (Mixes): "" or "classic"
	// for the kinds below; "mixed" adds publishers that follow their
	// own clock (a quarter diurnal or weekly); "patterned" is diurnal
	// and weekly publishers alone; "poisson" constant-rate ones alone.
	Mix string
}

// Limits of a generated workload. Its memory grows with its feeds and its
// days (with History): a few GB at MaxFeedDays. Its times must fit in
// EarliestTime-LatestTime, so that a trace written from it loads: a feed's
// oldest post (a dead feed's) is up to Lookback before the start, and the
// last outage (a feed gone for good, 30 days) ends within Tail after the end.
const (
	MaxFeeds    = 100_000
	MaxFeedDays = 10_000_000 // feeds × (days + History)
	Lookback    = 900 * 24 * time.Hour
	Tail        = 31 * 24 * time.Hour
)

func (cfg GenConfig) withDefaults() GenConfig {
	if cfg.Feeds <= 0 {
		cfg.Feeds = 1000
	}
	if cfg.Days <= 0 {
		cfg.Days = 30
	}
	if cfg.Start.IsZero() {
		cfg.Start = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	}
	if cfg.Mix == "classic" {
		cfg.Mix = ""
	}
	return cfg
}

// Check rejects a workload too large to simulate, or whose times
// overflow, naming feed-sim's flags.
func (cfg GenConfig) Check() error {
	cfg = cfg.withDefaults()
	historyDays := int(History / (24 * time.Hour))
	if _, ok := mixes[cfg.Mix]; !ok {
		return fmt.Errorf("--mix %q: want %s", cfg.Mix, strings.Join(MixNames, ", "))
	}
	switch {
	case cfg.Feeds > MaxFeeds:
		return fmt.Errorf("--feeds %d: at most %d", cfg.Feeds, MaxFeeds)
	case cfg.Days > MaxDays:
		return fmt.Errorf("--days %d: at most %d (10 years)", cfg.Days, MaxDays)
	case cfg.Feeds*(cfg.Days+historyDays) > MaxFeedDays:
		return fmt.Errorf("--feeds %d × (--days %d + %d days of history): at most %d feed-days, which take a few GB of memory",
			cfg.Feeds, cfg.Days, historyDays, MaxFeedDays)
	case cfg.Start.Add(-Lookback).Before(EarliestTime):
		return fmt.Errorf("--start %s: at least %s, as the oldest posts are %.0f days earlier",
			cfg.Start.Format(time.RFC3339), EarliestTime.Add(Lookback).Format(time.DateOnly), Lookback.Hours()/24)
	case cfg.Start.AddDate(0, 0, cfg.Days).After(LatestTime.Add(-Tail)):
		return fmt.Errorf("--start %s and --days %d: the period must end by %s, as outages last up to %.0f days longer",
			cfg.Start.Format(time.RFC3339), cfg.Days, LatestTime.Add(-Tail).Format(time.DateOnly), Tail.Hours()/24)
	}
	return nil
}

// History is how much posting history before the start Generate makes,
// enough for a feed's window and for dormant and dead feeds' old items.
const History = 60 * 24 * time.Hour

// Generate makes a synthetic workload. Each feed draws from its own random
// stream (seed, feed number), so a feed is the same whatever the number of
// feeds. The mix, in shares of feeds:
//
//	regular 55%  Poisson, rate lognormal (median 2 items a day, sigma 1.4),
//	             a daily cycle (peak around 14h UTC) and a weekly one
//	bursty  12%  a low base rate, and every 3 days or so a burst of 5-30 items in 1-6 hours
//	dormant  8%  posts, falls silent before the start, wakes up during it
//	dead    10%  last post 2 months to 2 years before the start
//	batch    8%  2-12 items at once, once a day at a fixed hour (some weekdays only)
//	sparse   7%  0.05-0.5 items a day, daytime
//
// Publisher hints and server behaviour are drawn independently: windows
// of 10-100 items, ETags on 70%, ttl on 8% (5m-12h, mostly 1h),
// Cache-Control max-age on 25% (1m-1h),
// skipHours on 4% and skipDays on 2% (with few posts in those windows),
// items without dates on 4%, and outages on 12%: 503 with and without
// Retry-After, 500s, 429 with Retry-After, a 404 for a day or more, a
// flapping 502, and a few feeds gone (410) for good.
//
// GenConfig.Mix picks other shares and the kinds that follow their
// publisher's clock, diurnal, weekly and scheduled, and constant-rate
// poisson feeds (pattern.go). Every feed gets its true Shape, what the
// oracle-timed yardstick knows.
func Generate(cfg GenConfig) *Workload {
	cfg = cfg.withDefaults()
	w := &Workload{Start: cfg.Start.UTC(), End: cfg.Start.UTC().Add(time.Duration(cfg.Days) * 24 * time.Hour)}
	for i := range cfg.Feeds {
		rnd := rand.New(rand.NewPCG(cfg.Seed, uint64(i)+0x9e3779b97f4a7c15))
		f := genFeed(rnd, mixOf(cfg.Mix), fmt.Sprintf("g%04d", i), w.Start, w.End)
		f.Shape = normShape(f.Shape)
		if cfg.Plain || cfg.NoFloors {
			f.TTLMinutes, f.MaxAgeSec = 0, 0
		}
		if cfg.Plain {
			f.Outages = nil
		}
		w.Feeds = append(w.Feeds, f)
	}
	w.normalize()
	return w
}

type gen struct {
	rnd        *rand.Rand
	start, end time.Time
}

func (g gen) uniform(a, b float64) float64 { return a + (b-a)*g.rnd.Float64() }

func (g gen) lognormal(median, sigma float64) float64 {
	return median * math.Exp(sigma*g.rnd.NormFloat64())
}

func (g gen) pick(weights map[int]float64) int {
	keys := make([]int, 0, len(weights))
	var total float64
	for k, w := range weights {
		keys = append(keys, k)
		total += w
	}
	slices.Sort(keys)
	x := g.rnd.Float64() * total
	for _, k := range keys {
		if x -= weights[k]; x < 0 {
			return k
		}
	}
	return keys[len(keys)-1]
}

// cycle is a daily and weekly modulation of a rate, mean about 1.
type cycle struct {
	amp, peak  float64 // daily: 1 + amp·cos(2π(h-peak)/24)
	weekend    float64 // weekend factor before normalising
	quietHours uint32  // hours with few posts (skipHours)
	quietDays  uint8
}

func (c cycle) at(t float64) float64 {
	u := time.Unix(int64(t), 0).UTC()
	h := float64(u.Hour()) + float64(u.Minute())/60
	f := 1 + c.amp*math.Cos(2*math.Pi*(h-c.peak)/24)
	wd := u.Weekday()
	norm := 7 / (5 + 2*c.weekend)
	if wd == time.Saturday || wd == time.Sunday {
		f *= c.weekend * norm
	} else {
		f *= norm
	}
	if c.quietHours&(1<<u.Hour()) != 0 || c.quietDays&(1<<wd) != 0 {
		f *= 0.05
	}
	return f
}

// poisson draws the times of an inhomogeneous Poisson process with rate
// base·c.at(t) items a day on [from, to), by thinning.
func (g gen) poisson(base float64, c cycle, from, to time.Time) []int64 {
	if base <= 0 || !to.After(from) {
		return nil
	}
	peak := base * (1 + c.amp) * 7 / (5 + 2*c.weekend) * math.Max(1, c.weekend) / 86400
	var out []int64
	t, end := float64(from.Unix()), float64(to.Unix())
	for {
		t += g.rnd.ExpFloat64() / peak
		if t >= end {
			return out
		}
		if g.rnd.Float64()*peak < base*c.at(t)/86400 {
			out = append(out, int64(t))
		}
	}
}

func genFeed(rnd *rand.Rand, mix mix, id string, start, end time.Time) *Feed {
	g := gen{rnd: rnd, start: start, end: end}
	f := &Feed{ID: id}
	hist := start.Add(-History)
	c := cycle{amp: g.uniform(0.2, 0.9), peak: math.Mod(14+4*rnd.NormFloat64()+48, 24), weekend: g.uniform(0.3, 1)}

	// Hints first: a feed that declares quiet hours posts little in them.
	if rnd.Float64() < 0.04 {
		first, n := rnd.IntN(24), 3+rnd.IntN(6)
		for k := range n {
			h := (first + k) % 24
			f.SkipHours = append(f.SkipHours, h)
			c.quietHours |= 1 << h
		}
		slices.Sort(f.SkipHours)
	}
	if rnd.Float64() < 0.02 {
		f.SkipDays = []string{"Saturday", "Sunday"}
		c.quietDays = 1<<time.Saturday | 1<<time.Sunday
	}

	switch kind := mix.kind(rnd.Float64()); kind {
	case "regular":
		f.Kind = kind
		f.Posts = g.poisson(min(g.lognormal(2, 1.4), 400), c, hist, end)
		f.Shape = shapeOf(c.at)
	case "bursty":
		f.Kind = kind
		base := min(g.lognormal(1, 1), 20)
		f.Posts = g.poisson(base, c, hist, end)
		for t := hist.Add(time.Duration(rnd.ExpFloat64() * 3 * 24 * float64(time.Hour))); t.Before(end); t = t.Add(time.Duration(rnd.ExpFloat64() * 3 * 24 * float64(time.Hour))) {
			dur := time.Duration(g.uniform(1, 6) * float64(time.Hour))
			items := g.uniform(5, 30)
			f.Posts = append(f.Posts, g.poisson(items/(dur.Hours()/24), cycle{weekend: 1}, t, t.Add(dur))...)
		}
		// Bursts start at any time: on average they add a constant rate
		// (17.5 items every 3 days) to the base's cycle.
		f.Shape = shapeOf(func(t float64) float64 { return base*c.at(t) + 17.5/3 })
	case "dormant":
		f.Kind = kind
		silent := start.Add(-time.Duration(g.uniform(10, 50) * 24 * float64(time.Hour)))
		wake := start.Add(time.Duration(g.uniform(0.1, 0.8) * float64(end.Sub(start))))
		f.Posts = g.poisson(min(g.lognormal(1, 1), 20), c, hist.Add(-90*24*time.Hour), silent)
		f.Posts = append(f.Posts, g.poisson(min(g.lognormal(3, 1), 50), c, wake, end)...)
		f.Shape = shapeOf(c.at)
	case "dead":
		f.Kind = kind
		last := start.Add(-time.Duration(g.uniform(60, 700) * 24 * float64(time.Hour)))
		f.Posts = g.poisson(g.uniform(0.1, 2), c, last.Add(-200*24*time.Hour), last)
		f.Shape = shapeOf(c.at)
	case "batch":
		f.Kind = kind
		hour, k := rnd.IntN(24), 2+rnd.IntN(11)
		weekdays := rnd.Float64() < 0.4
		f.Shape = make([]float64, HoursOfWeek)
		for d := range 7 {
			wd := time.Weekday(d)
			if (weekdays && (wd == time.Saturday || wd == time.Sunday)) || c.quietHours&(1<<hour) != 0 || c.quietDays&(1<<wd) != 0 {
				continue
			}
			f.Shape[d*24+hour] = 1
		}
		for d := hist.Truncate(24 * time.Hour); d.Before(end); d = d.Add(24 * time.Hour) {
			at := d.Add(time.Duration(hour)*time.Hour + time.Duration(rnd.IntN(600))*time.Second)
			if at.Before(hist) || !at.Before(end) || (weekdays && (at.Weekday() == time.Saturday || at.Weekday() == time.Sunday)) {
				continue
			}
			if c.quietHours&(1<<at.Hour()) != 0 || c.quietDays&(1<<at.Weekday()) != 0 {
				continue
			}
			for range k {
				f.Posts = append(f.Posts, at.Unix()+int64(rnd.IntN(60)))
			}
		}
	case "sparse":
		f.Kind = kind
		c.amp = 0.9
		f.Posts = g.poisson(g.uniform(0.05, 0.5), c, hist.Add(-120*24*time.Hour), end)
		f.Shape = shapeOf(c.at)
	default:
		// The kinds of the other mixes, whose posting follows the
		// publisher's own clock (pattern.go).
		f.Kind = kind
		f.Posts, f.Shape = g.patterned(kind, c, hist, end)
	}
	slices.Sort(f.Posts)

	f.Window = g.pick(map[int]float64{10: 15, 15: 10, 20: 35, 25: 10, 30: 10, 50: 15, 100: 5})
	f.ETag = rnd.Float64() < 0.7
	f.Bytes = int(min(g.lognormal(30000, 0.8)*float64(f.Window)/20, 5e6))
	// ttl: about 3% of the RSS files in the parser corpora declare one,
	// 60 minutes most often; feeds in use more often than test files.
	if rnd.Float64() < 0.08 {
		f.TTLMinutes = []int{5, 15, 30, 60, 60, 60, 60, 120, 240, 720}[rnd.IntN(10)]
	}
	// Cache-Control max-age: CDNs and static hosts send a few minutes,
	// some an hour.
	if rnd.Float64() < 0.25 {
		f.MaxAgeSec = []int{60, 300, 300, 600, 600, 900, 1800, 3600}[rnd.IntN(8)]
	}
	f.NoDates = rnd.Float64() < 0.04
	if rnd.Float64() < 0.12 {
		for range 1 + rnd.IntN(3) {
			f.Outages = append(f.Outages, g.outage())
		}
	}
	if rnd.Float64() < 0.01 {
		from := start.Add(time.Duration(g.uniform(0.2, 0.8) * float64(end.Sub(start))))
		f.Outages = append(f.Outages, Outage{From: from, To: end.Add(30 * 24 * time.Hour), Status: 410})
	}
	return f
}

// outage draws one server failure inside the measured period.
func (g gen) outage() Outage {
	from := g.start.Add(time.Duration(g.rnd.Float64() * float64(g.end.Sub(g.start))))
	hours := func(a, b float64) time.Duration { return time.Duration(g.uniform(a, b) * float64(time.Hour)) }
	switch x := g.rnd.Float64(); {
	case x < 0.25:
		return Outage{From: from, To: from.Add(hours(0.2, 6)), Status: 503, RetryAfterSec: 600 * (1 + g.rnd.IntN(12))}
	case x < 0.35:
		d := hours(0.5, 4)
		return Outage{From: from, To: from.Add(d), Status: 503, RetryAfterAt: from.Add(d).Truncate(time.Second)}
	case x < 0.55:
		return Outage{From: from, To: from.Add(hours(0.5, 12)), Status: 503}
	case x < 0.7:
		return Outage{From: from, To: from.Add(hours(0.2, 3)), Status: 500}
	case x < 0.82:
		return Outage{From: from, To: from.Add(hours(1, 3)), Status: 429, RetryAfterSec: 300 * (1 + g.rnd.IntN(12))}
	case x < 0.9:
		return Outage{From: from, To: from.Add(hours(24, 72)), Status: 404}
	default:
		return Outage{From: from, To: from.Add(hours(24, 96)), Status: 502, FailRatio: 0.5}
	}
}
