package sched

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// The adaptive policy.
//
// Polling a feed that posts r items a day every I seconds costs 86400/I
// requests a day and finds an item I/2 after it appeared, on average. Over
// many feeds, the item-weighted mean delay Σ r·I/2 under a fixed total of
// requests Σ 1/I is smallest when I ∝ 1/sqrt(r) (a Lagrange multiplier
// away). So interval = clamp(s/sqrt(r), min, max), with s one number for all
// feeds, chosen by the caller (Scale) to meet a request budget. The same
// argument within one feed, whose rate varies over the week, gives a poll
// rate ∝ sqrt(r(t)): the next poll comes when the integral of
// sqrt(r(t))/s since the last one reaches 1.

const (
	secsPerDay = 86400.0
	// priorWeight is the evidence, in items, of the prior rate, which is
	// the one that gives a feed without history the interval I0 at the
	// default scale. It is small so that a day of watching outweighs it.
	priorWeight = 0.1
	// profileFloor is the share of a bin's average count added to every
	// bin, so that an hour without items so far still gets polled, just
	// less: no hour is ever more than about 1/sqrt(profileFloor) slower.
	profileFloor = 0.15
	// profilePrior is the least pseudo-count added to every bin, so that a
	// young profile (20 items in 24 bins) stays close to flat.
	profilePrior = 2.0
	// profileMinItems is the decayed item count below which the profile
	// is not used: a handful of items says nothing about the week.
	profileMinItems = 8
	// windowFill is the share of the feed's window that a poll should find
	// new at most, at the rate expected now or the recent peak rate:
	// Poisson arrivals with mean W/2 rarely exceed W.
	windowFill = 0.5
	// peakHalfLife is how long a burst is remembered: bursty feeds burst
	// again, and a week covers the habits of the generator's bursty feeds.
	peakHalfLife = 7 * 24 * time.Hour
	// overflowFactor raises a peak rate measured from a poll that found
	// the whole window new: more items came than the window could show.
	overflowFactor = 1.5
	// tailWeight (k) is the price of the tail rule (tail): a gap g longer
	// than the budget's fixed interval L becomes sqrt(g² - k·L²), and L
	// when that is shorter than L.
	tailWeight = 2.0
)

// observe updates the publication times, the EWMA, the rate evidence and
// the profile with a fetch's new entries, and decays them for the time
// since the previous fetch. It returns the number of new entries.
//
// An item's time is its publication time, or, for an item without one (or
// with one in the future), when it was first seen (docs/scheduler.md §3). First
// seen says when an item arrived only across fetches: the items of one
// answer without dates arrived at some time since the previous fetch, and
// are spread evenly over it, so that they make no burst. Undated items
// that were in the feed's document before (a first answer's: the feed's
// history; or those a limited answer left out, withheld) arrived at no
// known time: they are no arrivals at all, however many there are.
func (r *run) observe(o Outcome, prev time.Time, answered bool, withheld int) int {
	st, p := &r.st, r.p
	t0 := r.t0.Unix()
	n := min(max(o.NewEntries, len(o.Published), 0), 100000)
	first := st.RateT == 0 && st.RateN == 0
	// pubs are the times of the new items that arrived: the dated ones in
	// the order given, then the undated ones spread since the previous
	// fetch, unless they are the feed's history. dated are the
	// publisher's times alone, ascending.
	var pubs []int64
	for i := 0; i < n && i < len(o.Published); i++ {
		if pt := o.Published[i]; !pt.IsZero() && !pt.After(r.t0) {
			pubs = append(pubs, max(pt.Unix(), minUnix+1))
		}
	}
	dated := slices.Clone(pubs)
	slices.Sort(dated)
	if undated := int64(n - len(pubs)); undated > 0 && !first && withheld == 0 && !prev.IsZero() {
		from, span := prev.Unix(), max(t0-prev.Unix(), 0)
		for k := int64(1); k <= undated; k++ {
			pubs = append(pubs, from+span*k/undated)
		}
	}
	if n > 0 {
		// Runs need the publisher's times: a fetch time would find the
		// schedule's own slot. Items a limited answer left out are older
		// than it, not backdated.
		if withheld == 0 && r.backdated(dated, prev) {
			st.Runs = nil
		} else {
			st.Runs = addRuns(st.Runs, dated)
		}
	}
	if len(pubs) > 0 {
		// A new slice: the old one may be the caller's.
		all := make([]int64, 0, len(st.Pub)+len(pubs))
		all = append(append(all, st.Pub...), pubs...)
		slices.Sort(all)
		if len(all) > PubWindow {
			all = slices.Clone(all[len(all)-PubWindow:])
		}
		st.Pub = all
		st.EWMASec = ewma(st.Pub, p.Alpha)
	}

	tau := p.RateHalfLife.Seconds() / math.Ln2
	tauB := p.BurstHalfLife.Seconds() / math.Ln2
	tauP := p.ProfileHalfLife.Seconds() / math.Ln2
	if !prev.IsZero() {
		// The profile ages with time whatever the fetches bring.
		kp := float32(math.Exp(-math.Max(float64(t0-prev.Unix()), 0) / tauP))
		for i := range st.Hours {
			st.Hours[i] *= kp
		}
		for i := range st.Days {
			st.Days[i] *= kp
		}
	}
	switch {
	case first && len(pubs) > 0:
		// The first answer with dated items shows the feed's recent
		// history: watch it from its oldest item on, which is then the
		// start, not an arrival. (Time before it, failing or empty, saw
		// nothing.)
		oldest := slices.Min(pubs)
		span := math.Max(float64(t0-oldest), 1)
		st.RateT = tau * -math.Expm1(-span/tau)
		st.BurstT = tauB * -math.Expm1(-span/tauB)
		skipped := false
		for _, pt := range pubs {
			if pt == oldest && !skipped {
				skipped = true
				continue
			}
			age := float64(t0 - pt)
			st.RateN += math.Exp(-age / tau)
			st.BurstN += math.Exp(-age / tauB)
		}
	case first:
		// An answer without dated items, empty or not: watching starts
		// now, so that the time no item comes counts against its rate. A
		// failure before any answer starts nothing: it showed no history.
		if answered {
			st.RateT, st.BurstT = 1, 1
		}
	default:
		dt := math.Max(float64(t0-prev.Unix()), 0)
		k, kb := math.Exp(-dt/tau), math.Exp(-dt/tauB)
		st.RateN, st.RateT = st.RateN*k, st.RateT*k+tau*-math.Expm1(-dt/tau)
		st.BurstN, st.BurstT = st.BurstN*kb, st.BurstT*kb+tauB*-math.Expm1(-dt/tauB)
		for _, pt := range pubs {
			if withheld > 0 && pt < prev.Unix() {
				continue // left out by the last answer: history, not an arrival
			}
			age := math.Max(float64(t0-pt), 0)
			st.RateN += math.Exp(-age / tau)
			st.BurstN += math.Exp(-age / tauB)
		}
	}
	// The peak rate: how fast the feed has posted in a burst lately,
	// from the publication times of the items one poll found. Items
	// published closer together than the min interval count as one batch,
	// which no polling could split. Only dates tell a burst: undated items
	// are spread over the time since the previous fetch.
	if !prev.IsZero() {
		st.Peak = st.peakAt(p, math.Max(float64(t0-prev.Unix()), 0))
	}
	if len(dated) >= 3 {
		span := float64(dated[len(dated)-1] - dated[0])
		if span >= r.lo.Seconds() {
			rate := float64(len(dated)-1) / span * secsPerDay
			if st.Window > 0 && n >= st.Window { // the window overflowed: it was faster
				rate *= overflowFactor
			}
			// A burst is remembered from when it was, not from when a poll
			// found it: a first answer full of items from years ago says
			// nothing of the coming week.
			age := math.Max(float64(t0-dated[len(dated)-1]), 0)
			st.Peak = math.Max(st.Peak, rate*math.Exp(-age*math.Ln2/peakHalfLife.Seconds()))
		}
	}
	// The hours first: they may move the publisher's day start, which the
	// days are counted from.
	for _, pt := range pubs {
		st.Hours[hourOf(pt)] += float32(math.Exp(-math.Max(float64(t0-pt), 0) / tauP))
	}
	if len(pubs) > 0 {
		st.moveDayStart(p)
	}
	for _, pt := range pubs {
		st.Days[dayOf(pt, st.DayStart)] += float32(math.Exp(-math.Max(float64(t0-pt), 0) / tauP))
	}
	return n
}

// ewma is the seed policy's EWMA of the gaps between sorted times
// (docs/scheduler.md §3).
func ewma(ts []int64, alpha float64) float64 {
	if len(ts) < 2 {
		return 0
	}
	e := float64(ts[1] - ts[0])
	for i := 2; i < len(ts); i++ {
		e = alpha*float64(ts[i]-ts[i-1]) + (1-alpha)*e
	}
	return e
}

// hourOf returns the UTC hour of Unix time t.
func hourOf(t int64) int { return int(floorMod(floorDiv(t, 3600), 24)) }

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

// windowCap is the longest interval, seconds, that keeps a poll from
// finding more than WindowFill of the feed's window new, at rate (items a
// day) or the peak rate dt seconds after the last fetch, whichever is
// higher. +Inf without a window.
func (st *State) windowCap(p Params, rate, dt float64) float64 {
	r := fmax(rate, st.peakAt(p, dt))
	if st.Window <= 0 || r <= 0 {
		return math.Inf(1)
	}
	return windowFill * float64(st.Window) / r * secsPerDay
}

// peakAt is the peak rate, items a day, decayed for dt more seconds.
func (st *State) peakAt(p Params, dt float64) float64 {
	if dt <= 0 {
		return st.Peak
	}
	return st.Peak * math.Exp(-dt*math.Ln2/peakHalfLife.Seconds())
}

// priorRate is the rate, items a day, that gives interval I0 at the
// default scale. It does not follow Params.Scale: the scale is computed
// from the rates, and a prior that moved with it would feed back.
func priorRate(p Params) float64 {
	i0 := min(max(p.Initial, p.Min), p.Max).Seconds()
	return math.Pow(DefaultScale/i0, 2)
}

// rateConsts are what the rate estimates take from the parameters alone:
// the time constants and the prior rate, worked out once for many feeds.
type rateConsts struct{ tau, tauB, prior float64 }

func (p Params) rateConsts() rateConsts {
	return rateConsts{tau: p.RateHalfLife.Seconds() / math.Ln2, tauB: p.BurstHalfLife.Seconds() / math.Ln2, prior: priorRate(p)}
}

// rates returns the long-term and the burst rate estimates, items a day,
// dt seconds after the state's last fetch.
func (st *State) rates(c rateConsts, dt float64) (long, burst float64) {
	tau, tauB := c.tau, c.tauB
	n, t, bn, bt := st.RateN, st.RateT, st.BurstN, st.BurstT
	if dt > 0 {
		k, kb := math.Exp(-dt/tau), math.Exp(-dt/tauB)
		n, t = n*k, t*k+tau*-math.Expm1(-dt/tau)
		bn, bt = bn*kb, bt*kb+tauB*-math.Expm1(-dt/tauB)
	}
	// Gamma-Poisson: the prior is priorWeight items at the prior rate.
	prior := c.prior
	long = (priorWeight + n) / (priorWeight/prior + t/secsPerDay)
	// The burst estimate gets a pseudo-exposure of one time constant and
	// no prior, so that it only exceeds the long one for a real burst.
	burst = bn / ((bt + tauB) / secsPerDay)
	return long, burst
}

// RatePerDay is the adaptive policy's posting-rate estimate, items a day,
// at time at: the long-term estimate, or the short-term one while a burst
// or a wake-up makes it higher.
func (st State) RatePerDay(p Params, at time.Time) float64 {
	p = p.withDefaults()
	st = st.clean(p)
	return st.rateAt(p, at)
}

func (st *State) rateAt(p Params, at time.Time) float64 {
	return st.rateAtWith(p.rateConsts(), at)
}

func (st *State) rateAtWith(c rateConsts, at time.Time) float64 {
	dt := 0.0
	if !st.FetchedAt.IsZero() && at.After(st.FetchedAt.Time) {
		dt = at.Sub(st.FetchedAt.Time).Seconds()
	}
	long, burst := st.rates(c, dt)
	return fmax(long, burst)
}

// adaptive returns the adaptive policy's interval.
func (r *run) adaptive(newCount int, prev time.Time) (time.Duration, Reason) {
	st, p, in := &r.st, r.p, r.in()
	s := p.scale()
	rate := st.rateAt(p, r.t0)
	in.RatePerDay = math.Round(rate*1000) / 1000
	in.Scale = math.Round(s)
	hi := r.hi.Seconds()
	base := hi
	if rate > 0 {
		// Jitter spreads gaps evenly around the interval, which makes more
		// requests than the interval (E[1/gap] > 1/E[gap]); stretching the
		// interval by that much keeps the spend at the budget Scale met.
		base = math.Min(s/math.Sqrt(rate)*jitterBias(p.Jitter), hi)
	}
	in.BaseSec = int(base)
	gap := base
	pt := st.pattern(p)
	ok := pt.ok && !p.NoProfile
	now := r.t0.Unix()
	if ok && pt.clear {
		// A clear pattern: the tail rule shortens the feed's average gap,
		// and the pattern spreads it over the week. Its long gaps fall in
		// hours without items, which no item waits through.
		if t := tail(base, p.tailInterval()); t < base {
			base = t
			in.TailCapSec = int(t)
		}
		gap = integrate(now, base, hi, &pt)
		in.ProfileFactor = math.Round(gap/base*100) / 100
		r.explainPattern(&pt, now)
	} else {
		if ok {
			gap = integrate(now, base, hi, &pt)
			in.ProfileFactor = math.Round(gap/base*100) / 100
		}
		// The tail rule: no gap much longer than a fixed policy's at the
		// same budget (1h at 24 a feed and day), unless the feed posts too
		// little for it to matter (tail, tailInterval).
		if t := tail(gap, p.tailInterval()); t < gap {
			gap = t
			in.TailCapSec = int(t)
		}
	}
	// A feed shows only its last Window items: keep the expected number of
	// new items per poll well inside it, at the rate expected now, and at
	// the feed's recent peak rate.
	if w := float64(st.Window); w > 0 {
		perSec := rate / secsPerDay
		if ok {
			perSec *= pt.fh[hourOf(now)] * pt.fd[dayOf(now, pt.dayStart)]
		}
		if c := st.windowCap(p, perSec*secsPerDay, 0); c < gap {
			gap = c
			in.WindowCapSec = int(math.Max(c, r.lo.Seconds()))
		}
	}
	if tod, spread, ok := dailySlot(st.Runs, st.Window); ok {
		// Today's run may be in already: the next poll is for the next.
		// A poll that came as the run was being written comes back for
		// the rest of it.
		last := st.Runs[len(st.Runs)-1].last()
		next := nextSlot(max(now, last+secsPerDayInt/2), tod, spread)
		if newCount > 0 && now-last < slotMargin {
			next = now + int64(r.lo.Seconds())
		}
		// A poll of the slot that found nothing: the run is late today, or
		// skips the day. The rate rule goes on polling until the slot's
		// lateness window has passed; a late run is found as any item is.
		late := newCount == 0 && floorMod(now-slotPoll(tod, spread), secsPerDayInt) < slotLate
		// A max interval shorter than a day (the feed's own, say) keeps
		// the rate rule.
		if (!late || float64(next-now) < gap) && next-now <= int64(r.hi.Seconds()) {
			r.slotAt = time.Unix(next, 0).UTC()
			in.Slot = fmt.Sprintf("%02d:%02d", tod/3600, tod/60%60)
			return time.Duration(gap * float64(time.Second)), ReasonDailySlot
		}
	}
	return time.Duration(gap * float64(time.Second)), ReasonPostingRate
}

// tailInterval is L of the tail rule, seconds: the interval at which a
// fixed policy spends the request budget (86400/BudgetPerFeedDay, 1h at
// the default 24), but not under 1h, the interval readers customarily
// use: with a larger budget the rule would take from the busy feeds what
// makes their median delay.
func (p Params) tailInterval() float64 { return math.Max(secsPerDay/p.BudgetPerFeedDay(), 3600) }

// tail returns gap (seconds) shortened by the tail rule, L being the
// budget's fixed interval. 1/sqrt minimises the mean delay by stretching
// slow feeds' intervals well past L, and the items of those feeds are
// then the delays beyond L: the p95. Minimising the mean plus a price on
// the items found later than L instead (Lagrange again: a feed polled
// every g > L finds a share 1-L/g of its items later than L) gives
// g² = g0² - c above L and L at the kink: gaps just above L come down to
// it, which costs little, and the long gaps of feeds posting a few items a
// week hardly move, since shortening them would buy little. c = k·L²,
// k = tailWeight.
func tail(gap, l float64) float64 {
	if !(l > 0) || gap <= l {
		return gap
	}
	g2 := gap*gap - tailWeight*l*l
	if g2 <= l*l {
		return l
	}
	return math.Sqrt(g2)
}

// jitterBias is E[1/x] for x uniform on [1-j, 1+j]: how many more requests
// jittered gaps make than the interval itself.
func jitterBias(j float64) float64 {
	if j <= 0 {
		return 1
	}
	return math.Log((1+j)/(1-j)) / (2 * j)
}

// integrate returns the time after t0 (Unix seconds) at which the integral
// of the pattern's poll weight g(hour, day) reaches base, at most hi
// seconds.
func integrate(t0 int64, base, hi float64, pt *pattern) float64 {
	u := float64(t0)
	rem, elapsed := base, 0.0
	for elapsed < hi {
		t := int64(math.Floor(u))
		w := pt.gh[hourOf(t)] * pt.gd[dayOf(t, pt.dayStart)]
		end := (math.Floor(u/3600) + 1) * 3600
		span := end - u
		if w*span >= rem {
			return math.Min(elapsed+rem/w, hi)
		}
		rem -= w * span
		elapsed += span
		u = end
	}
	return hi
}

// Demand is one feed's share of the request budget, as Scale sees it.
type Demand struct {
	Rate     float64       // estimated items a day
	Min, Max time.Duration // the feed's clamps, its publisher floors included
	// Fixed: the feed's requests do not depend on the scale (a fixed
	// interval, a cron, a disabled feed's probes); PerDay says how many.
	Fixed  bool
	PerDay float64
	// Tail is the budget's fixed interval of the tail rule; 0: no rule.
	Tail time.Duration
}

// Demand is the feed's share of the request budget at time now, for
// ScaleFor.
func (st State) Demand(p Params, ov Overrides, now time.Time) Demand {
	return st.DemandInputs().Demand(p, ov, now)
}

// DemandInputs is what Demand reads of a State, as it is stored: a fixed
// size projection (no pointers) that can be kept for every feed. feed-store
// computes the budget scale from every feed's demand at the start of each
// run, and the catalog keeps these beside each feed's state (feed_state.
// demand) so that it does not have to decode every feed's state for it.
// Demand is computed from them alone, so the two ways cannot disagree; a
// field Demand comes to need must be added here (and to the catalog's
// fixed-size encoding of it).
type DemandInputs struct {
	Disabled    bool // Lifecycle == StateDisabled
	IntervalSec int
	// FetchedAt as Unix seconds and nanoseconds; FetchedZero for the zero
	// time.
	FetchedSec  int64
	FetchedNsec int64
	FetchedZero bool
	RateN       float64
	RateT       float64
	BurstN      float64
	BurstT      float64
	Peak        float64
	Window      int
	TTLMinutes  int
	// Slot: the feed has a daily slot (dailySlot of State.Runs).
	Slot bool
}

// DemandInputs is the projection of st that Demand reads, before any
// repair (Demand repairs it as Next would).
func (st State) DemandInputs() DemandInputs {
	in := DemandInputs{
		Disabled:    st.Lifecycle == StateDisabled,
		IntervalSec: st.IntervalSec,
		FetchedZero: st.FetchedAt.IsZero(),
		RateN:       st.RateN, RateT: st.RateT, BurstN: st.BurstN, BurstT: st.BurstT, Peak: st.Peak,
		Window:     st.Window,
		TTLMinutes: st.Hints.TTLMinutes,
	}
	_, _, in.Slot = dailySlot(st.Runs, st.Window)
	if !in.FetchedZero {
		in.FetchedSec, in.FetchedNsec = st.FetchedAt.Unix(), int64(st.FetchedAt.Nanosecond())
	}
	return in
}

// state is the State these inputs stand for, repaired as clean repairs a
// whole one (the fields Demand does not read are zero).
func (in DemandInputs) state(p Params) State {
	var st State
	if in.Disabled {
		st.Lifecycle = StateDisabled
	}
	st.IntervalSec = in.IntervalSec
	switch {
	case st.IntervalSec <= 0:
		st.IntervalSec = int(min(max(p.Initial, p.Min), p.Max) / time.Second)
	case st.IntervalSec > int(p.Max/time.Second):
		st.IntervalSec = int(p.Max / time.Second)
	}
	if !in.FetchedZero {
		st.FetchedAt = ndjson.Time{Time: time.Unix(in.FetchedSec, in.FetchedNsec).UTC()}
	}
	sound := func(f float64) float64 {
		if !(f >= 0 && f < 1e12) { // also catches NaN
			return 0
		}
		return f
	}
	st.RateN, st.RateT, st.BurstN, st.BurstT, st.Peak = sound(in.RateN), sound(in.RateT), sound(in.BurstN), sound(in.BurstT), sound(in.Peak)
	st.Window = min(max(in.Window, 0), 1<<20)
	// clean keeps sound hints as they are and rebuilds others, clamping
	// the ttl either way; sound hints have it in range already.
	st.Hints.TTLMinutes = min(max(in.TTLMinutes, 0), 525600)
	return st
}

// Demand is the demand of a feed whose state has these inputs.
func (in DemandInputs) Demand(p Params, ov Overrides, now time.Time) Demand {
	return in.demand(newDemandConsts(p), &ov, now)
}

// DemandFunc is DemandInputs.Demand for many feeds at the same time and
// parameters (feed-store's budget scale, at every start): what depends on
// the parameters alone is worked out once, not per feed.
func DemandFunc(p Params, now time.Time) func(in *DemandInputs, ov *Overrides) Demand {
	k := newDemandConsts(p)
	return func(in *DemandInputs, ov *Overrides) Demand { return in.demand(k, ov, now) }
}

// demandConsts are what Demand takes from the parameters alone.
type demandConsts struct {
	p    Params // with defaults
	rc   rateConsts
	tail time.Duration
}

func newDemandConsts(p Params) *demandConsts {
	p = p.withDefaults()
	return &demandConsts{p: p, rc: p.rateConsts(), tail: time.Duration(p.tailInterval() * float64(time.Second))}
}

func (in *DemandInputs) demand(k *demandConsts, ov *Overrides, now time.Time) Demand {
	p := &k.p
	st := in.state(*p)
	// The clamps, as run.clamps sets them.
	lo, hi := p.Min, p.Max
	if m := ov.Min; m > 0 {
		lo = min(max(m, p.Min), p.Max)
	}
	if m := ov.Max; m > 0 {
		hi = min(max(m, p.Min), p.Max)
	}
	hi = max(hi, lo)
	lo = max(lo, min(time.Duration(st.Hints.TTLMinutes)*time.Minute, hi))
	fixed := func(iv time.Duration) Demand {
		iv = min(max(iv, lo), hi)
		return Demand{Fixed: true, PerDay: secsPerDay / iv.Seconds(), Min: iv, Max: iv}
	}
	switch {
	case st.FetchedAt.IsZero():
		// Never fetched: one fetch now, and nothing known to scale by.
		return Demand{Fixed: true}
	case st.Lifecycle == StateDisabled:
		if p.NoProbe {
			return Demand{Fixed: true}
		}
		return fixed(hi)
	case ov.Cron != "":
		sch, err := ParseCron(ov.Cron)
		if err != nil {
			return fixed(hi)
		}
		n, t := 0, now
		for ; n < 2000; n++ {
			if t = sch.Next(t); t.IsZero() || t.Sub(now) > 7*24*time.Hour {
				break
			}
		}
		return Demand{Fixed: true, PerDay: fmin(float64(n)/7, secsPerDay/lo.Seconds())}
	case ov.Interval > 0:
		return fixed(min(max(ov.Interval, MinPollingInterval), MaxPollingInterval))
	case p.Policy.Kind == PolicyFixed:
		return fixed(p.Policy.Every)
	case p.Policy.Kind == PolicySeed:
		return fixed(st.Interval())
	case in.Slot && hi >= 24*time.Hour:
		// One poll a day at its slot (more on a day it is late or
		// skips: BudgetLoop corrects for those).
		return Demand{Fixed: true, PerDay: 1, Min: lo, Max: hi}
	}
	dt := 0.0
	if now.After(st.FetchedAt.Time) {
		dt = now.Sub(st.FetchedAt.Time).Seconds()
	}
	rate := st.rateAtWith(k.rc, now)
	hi = min(hi, max(lo, time.Duration(fmin(st.windowCap(*p, rate, dt), hi.Seconds())*float64(time.Second))))
	return Demand{Rate: rate, Min: lo, Max: hi, Tail: k.tail}
}

// BudgetLoop is the state of the loop that makes the adaptive policy's
// spend meet its request budget, carried from one day to the next.
// Scale's model of a feed's requests leaves out backoffs, jitter cut at
// floors and clamps, the hour-of-week profile against the clamps, caps that
// change between runs, and the days a feed posts more or less than its
// rate; the loop corrects the budget given to Scale by what the days
// really cost.
type BudgetLoop struct {
	// Factor multiplies the budget given to Scale; 0 reads as 1.
	Factor float64 `json:"factor"`
	// Over is what the days so far spent over the budget (under, if
	// negative) and the next days have yet to make up, in days' budgets.
	Over float64 `json:"over,omitempty"`
}

// budgetKeep is the share of a day's overspend still owed a day later:
// a small feed list's spend swings by a sixth from day to day with its
// feeds' news, and making up for it over the next days keeps the average
// at the budget (a loop that only corrects the last day leaves its
// average 1% over on the 6-feed trace).
const budgetKeep = 0.8

// Day returns the loop after a day that cost spentPerDay requests against
// budgetPerDay; call it once a day. The factor moves halfway (in ratio) to
// the correction the next day asks for, which is the budget less what is
// owed, within a quarter of it; it stays in [0.5, 2]. Days under the
// budget are made up for a quarter of a day's budget at most: days the
// store did not run, or feeds that cannot spend their share, should not
// buy days of overspending later.
func (b BudgetLoop) Day(spentPerDay, budgetPerDay float64) BudgetLoop {
	if !(b.Factor > 0) || math.IsInf(b.Factor, 0) {
		b.Factor = 1
	}
	if math.IsNaN(b.Over) || math.IsInf(b.Over, 0) {
		b.Over = 0
	}
	if spentPerDay > 0 && budgetPerDay > 0 {
		spent := spentPerDay / budgetPerDay
		b.Over = max(budgetKeep*(b.Over+spent-1), -0.25)
		target := math.Min(math.Max(1-b.Over, 0.75), 1.25)
		b.Factor *= math.Sqrt(target / spent)
	}
	b.Factor = math.Min(math.Max(b.Factor, 0.5), 2)
	return b
}

// Scale returns the adaptive scale s at which feeds posting rates[i] items
// a day, polled every clamp(s/sqrt(rate), Min, Max), make budgetPerDay
// requests a day in all. feed-store computes it once per run from every
// feed's RatePerDay; with no budget set, use p.BudgetPerFeedDay()·len(rates),
// the requests of a fixed 1h interval.
func Scale(rates []float64, budgetPerDay float64, p Params) float64 {
	p = p.withDefaults()
	ds := make([]Demand, len(rates))
	for i, r := range rates {
		ds[i] = Demand{Rate: r, Min: p.Min, Max: p.Max}
	}
	return ScaleFor(ds, budgetPerDay)
}

// ScaleFor is Scale with each feed's own clamps and fixed loads (Demand).
// When the budget cannot be met it returns the scale nearest to it: every
// feed at its Min when the budget is larger than that, at its Max when it
// is smaller.
func ScaleFor(ds []Demand, budgetPerDay float64) float64 {
	type feed struct{ sq, lo, hi, tail float64 } // sqrt(rate), clamps and tail in seconds
	var fixed float64
	feeds := make([]feed, 0, len(ds))
	var lo, hi float64 = math.Inf(1), 0 // the scales where every feed hits Min, Max
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
			sum += secsPerDay / fmin(fmax(tail(s/f.sq, f.tail), f.lo), f.hi)
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
	// total is non-increasing in s: bisect on log s, to a relative 1e-6.
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
