package sim

import (
	"container/heap"
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/sched"
)

// Drain is how long polling goes on after the measured period, so that
// posts near its end are found and their delays counted, as they would be.
// Requests in it are not counted.
const Drain = 3 * 24 * time.Hour

// ScaleEvery is how often the simulated feed-store recomputes the adaptive
// scale from every feed's rate estimate.
const ScaleEvery = time.Hour

// Response sizes of answers without a feed body.
const (
	bytesNotModified = 300
	bytesError       = 500
)

// Result is what one policy did on a workload.
type Result struct {
	Policy string `json:"policy"`
	// Budget is the request budget the policy was given, per feed and
	// day; 0 for policies that take none.
	Budget float64 `json:"budget_per_feed_day"`
	Feeds  int     `json:"feeds"`
	Days   float64 `json:"days"`

	Requests           int     `json:"requests"`
	RequestsPerFeedDay float64 `json:"requests_per_feed_day"`
	Bytes              int64   `json:"bytes"`
	BytesPerFeedDay    float64 `json:"bytes_per_feed_day"`

	// Items are the posts of the measured period; Found those some poll
	// saw. Delays (minutes, item-weighted) are over the found ones.
	Items     int     `json:"items"`
	Found     int     `json:"found"`
	DelayMean float64 `json:"delay_mean_min"`
	DelayP50  float64 `json:"delay_p50_min"`
	DelayP95  float64 `json:"delay_p95_min"`
	DelayP99  float64 `json:"delay_p99_min"`
	// Missed: pushed out of the window before any poll saw them. Unseen:
	// still not seen when the simulation ended (a feed left disabled).
	Missed         int     `json:"missed"`
	MissedFraction float64 `json:"missed_fraction"`
	Unseen         int     `json:"unseen"`

	// Politeness violations: polls inside the ttl, the max-age or the
	// Retry-After of the previous answer, or inside a skip window, once
	// the hints were known.
	Violations           int `json:"violations"`
	ViolationsTTL        int `json:"violations_ttl"`
	ViolationsMaxAge     int `json:"violations_max_age"`
	ViolationsRetryAfter int `json:"violations_retry_after"`
	ViolationsSkip       int `json:"violations_skip"`

	Disabled  int `json:"disabled"`  // feed_disabled events
	Reenabled int `json:"reenabled"` // feeds re-enabled by a probe

	// ByKind breaks the figures down by the generator's feed kinds (and
	// "ttl", "outage" for feeds with those), when the trace has kinds.
	ByKind []KindResult `json:"by_kind,omitempty"`
}

// KindResult is a Result's figures for one kind of feed.
type KindResult struct {
	Kind               string  `json:"kind"`
	Feeds              int     `json:"feeds"`
	Items              int     `json:"items"`
	RequestsPerFeedDay float64 `json:"requests_per_feed_day"`
	DelayMean          float64 `json:"delay_mean_min"`
	DelayP50           float64 `json:"delay_p50_min"`
	DelayP95           float64 `json:"delay_p95_min"`
	Missed             int     `json:"missed"`
}

// Policy is one policy to simulate, as named on the command line:
// "seed", "adaptive", "fixed:15m", "oracle", optionally with a budget
// after "@": a number of requests per feed and day, or another policy's
// spend with an optional factor ("adaptive@fixed:1h", "adaptive@0.4*fixed:15m").
type Policy struct {
	Name   string  // as given
	Base   string  // seed, adaptive, fixed:D, oracle
	Budget float64 // requests per feed-day; 0 = see Of, or none
	Of     string  // the policy whose spend is the budget
	Factor float64 // × Of's spend
}

// ParsePolicy reads a policy as the command line names it.
func ParsePolicy(s string) (Policy, error) {
	p := Policy{Name: s, Base: s, Factor: 1}
	if base, b, ok := strings.Cut(s, "@"); ok {
		p.Base = base
		if n, err := strconv.ParseFloat(b, 64); err == nil {
			if !(n > 0) || math.IsInf(n, 0) {
				return Policy{}, fmt.Errorf("sim: policy %q: the budget must be a number above 0", s)
			}
			p.Budget = n
		} else {
			if f, rest, ok := strings.Cut(b, "*"); ok {
				n, err := strconv.ParseFloat(f, 64)
				if err != nil || !(n > 0) || math.IsInf(n, 0) {
					return Policy{}, fmt.Errorf("sim: policy %q: want FACTOR*POLICY after @, such as 0.4*fixed:15m", s)
				}
				p.Factor, b = n, rest
			}
			if _, err := ParsePolicy(b); err != nil || strings.Contains(b, "@") {
				return Policy{}, fmt.Errorf("sim: policy %q: %q is not a policy without a budget", s, b)
			}
			p.Of = b
		}
	}
	if !p.oracle() {
		if _, err := sched.ParsePolicy(p.Base); err != nil || p.Base == "" {
			return Policy{}, fmt.Errorf("sim: policy %q: want seed, adaptive, fixed:DURATION, oracle, oracle-timed or oracle-opt", s)
		}
	}
	if (p.Budget > 0 || p.Of != "") && !p.budgeted() {
		return Policy{}, fmt.Errorf("sim: policy %q: only adaptive and the oracles take a budget", s)
	}
	return p, nil
}

// oracle reports whether the policy is a yardstick, not the scheduler's.
func (p Policy) oracle() bool {
	return p.Base == "oracle" || p.Base == "oracle-timed" || p.Base == "oracle-opt"
}

// budgeted reports whether the policy spends a request budget.
func (p Policy) budgeted() bool { return p.Base == "adaptive" || p.oracle() }

// feedRun is one feed in one simulation.
type feedRun struct {
	f    *Feed
	st   sched.State
	ov   sched.Overrides
	next time.Time

	seen       int // posts[:seen] were seen or missed
	servedEnd  int // how many posts the last body (200 or 304) covered; -1 before
	hintsKnown bool
	lastPoll   time.Time
	lastMaxAge time.Duration
	retryUntil time.Time
	polls      int
	requests   int
	delays     []float64
	missed     int
	timed      *timed // oracle-timed's schedule
	opt        *opt   // oracle-opt's
}

// Simulate runs one policy over w. budget is the policy's request budget
// per feed and day (adaptive, oracle; 0: as fixed 1h). log, when not nil,
// gets every decision for the feed with id show.
func Simulate(ctx context.Context, w *Workload, pol Policy, p sched.Params, budget float64, seed uint64, show string, log io.Writer) (Result, error) {
	res := Result{Policy: pol.Name, Feeds: len(w.Feeds), Days: w.Days()}
	if pol.budgeted() {
		if budget <= 0 {
			budget = p.BudgetPerFeedDay()
		}
		res.Budget = budget
		p.Budget = budget // as feed-store's: the tail rule reads it
	}
	if !pol.oracle() {
		sp, err := sched.ParsePolicy(pol.Base)
		if err != nil {
			return res, err
		}
		p.Policy = sp
	}
	h := fnv.New64a()
	h.Write([]byte(pol.Name))
	rnd := rand.New(rand.NewPCG(seed, h.Sum64()))

	start, end := w.Start, w.End
	stop := end.Add(Drain)
	feeds := make([]*feedRun, len(w.Feeds))
	q := &queue{}
	for i, f := range w.Feeds {
		fr := &feedRun{f: f, servedEnd: -1}
		feeds[i] = fr
	}
	var timedScale float64
	switch pol.Base {
	case "oracle":
		oracle(w, feeds, p, budget)
	case "oracle-timed":
		timedScale = oracleTimed(w, feeds, p, budget)
	case "oracle-opt":
		// Polls at the schedule's times: jitter would move them off it.
		p.Jitter = -1 // none (0 is the default)
		s := oracleTimed(w, feeds, p, budget)
		for _, fr := range feeds {
			fr.opt, fr.timed = newOpt(fr.timed, s), nil
		}
	}
	adaptive := pol.Base == "adaptive"
	nextScale := start
	// As feed-store would: requests per hour, to correct the budget once a
	// day by what the last day really cost (sched.BudgetLoop).
	perHour := make([]int, int(stop.Sub(start)/time.Hour)+2)
	loop := sched.BudgetLoop{Factor: 1}
	rescale := func(at time.Time) {
		if h := int(at.Sub(start) / time.Hour); h >= 24 && at.Sub(start)%(24*time.Hour) == 0 {
			spent := 0
			for _, n := range perHour[h-24 : h] {
				spent += n
			}
			loop = loop.Day(float64(spent), budget*float64(len(feeds)))
		}
		ds := make([]sched.Demand, len(feeds))
		for i, fr := range feeds {
			ds[i] = fr.st.Demand(p, fr.ov, at)
		}
		p.Scale = sched.ScaleFor(ds, loop.Factor*budget*float64(len(feeds)))
	}
	if adaptive {
		// feed-store recomputes the scale on every run, once a minute; the
		// first run after the first fetches is the one that matters most.
		rescale(start)
		nextScale = start.Add(time.Minute)
	}
	for i, fr := range feeds {
		var d sched.Decision
		fr.st, d = sched.Next(fr.st, sched.Outcome{Kind: sched.NeverFetched}, p, fr.ov, start, rnd)
		fr.next = d.NextAt.Time
		heap.Push(q, item{at: fr.next, ns: fr.next.UnixNano(), i: i})
	}

	var delays []float64
	for q.Len() > 0 {
		it := heap.Pop(q).(item)
		if !it.at.Before(stop) {
			break
		}
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		for adaptive && !nextScale.After(it.at) {
			rescale(nextScale)
			nextScale = nextScale.Truncate(ScaleEvery).Add(ScaleEvery)
		}
		fr := feeds[it.i]
		t := it.at
		out, bytes := fr.poll(t, p, &res, start, end, &delays)
		if fr.timed != nil {
			// The next poll after this one, as the true λ(t) places it.
			fr.ov.Interval = time.Duration(fr.timed.gap(t.Unix(), timedScale) * float64(time.Second))
		}
		if fr.opt != nil {
			fr.ov.Interval = time.Duration(fr.opt.gap(t.Unix()) * float64(time.Second))
		}
		perHour[int(t.Sub(start)/time.Hour)]++
		if t.Before(end) {
			res.Requests++
			res.Bytes += bytes
			fr.requests++
		}
		var d sched.Decision
		fr.st, d = sched.Next(fr.st, out, p, fr.ov, t, rnd)
		switch d.Event {
		case sched.EventDisabled:
			res.Disabled++
		case sched.EventReenabled:
			res.Reenabled++
		}
		if log != nil && fr.f.ID == show {
			fmt.Fprintf(log, "-- %s %s: status %d, %d new\n%s\n", pol.Name, t.UTC().Format(time.RFC3339), out.Status, out.NewEntries, d.Explain())
		}
		if d.NextAt.IsZero() {
			continue
		}
		next := d.NextAt.Time
		if !next.After(t) { // a fetch-now after a fetch: the loop's next minute
			next = t.Add(time.Minute)
		}
		fr.next = next
		heap.Push(q, item{at: next, ns: next.UnixNano(), i: it.i})
	}

	s, e := start.Unix(), end.Unix()
	for _, fr := range feeds {
		lo, _ := slices.BinarySearch(fr.f.Posts, s)
		hi, _ := slices.BinarySearch(fr.f.Posts, e)
		res.Items += hi - lo
		if fr.seen < hi {
			res.Unseen += hi - max(fr.seen, lo)
		}
	}
	res.Found = len(delays)
	days := float64(len(feeds)) * res.Days
	if days > 0 {
		res.RequestsPerFeedDay = float64(res.Requests) / days
		res.BytesPerFeedDay = float64(res.Bytes) / days
	}
	if res.Items > 0 {
		res.MissedFraction = float64(res.Missed) / float64(res.Items)
	}
	if len(delays) > 0 {
		sort.Float64s(delays)
		var sum float64
		for _, d := range delays {
			sum += d
		}
		res.DelayMean = sum / float64(len(delays)) / 60
		res.DelayP50 = quantile(delays, 0.50) / 60
		res.DelayP95 = quantile(delays, 0.95) / 60
		res.DelayP99 = quantile(delays, 0.99) / 60
	}
	res.Violations = res.ViolationsTTL + res.ViolationsMaxAge + res.ViolationsRetryAfter + res.ViolationsSkip
	res.ByKind = byKind(feeds, res.Days)
	return res, nil
}

// byKind groups the feeds' figures by kind, and adds the groups "ttl"
// (feeds with a ttl or max-age), "ttl>=2h" (a floor of 2 hours or more,
// longer than any policy's interval at the budget of fixed 1h), "outage"
// (feeds with outages), "no_dates" (feeds whose items carry no dates) and
// "plain" (feeds with neither, nor skip windows: where only the policy
// sets the delay).
func byKind(feeds []*feedRun, days float64) []KindResult {
	groups := map[string][]*feedRun{}
	var kinds []string
	add := func(k string, fr *feedRun) {
		if _, ok := groups[k]; !ok {
			kinds = append(kinds, k)
		}
		groups[k] = append(groups[k], fr)
	}
	for _, fr := range feeds {
		if fr.f.Kind == "" {
			continue
		}
		add(fr.f.Kind, fr)
		if fr.f.TTLMinutes > 0 || fr.f.MaxAgeSec > 0 {
			add("ttl", fr)
		}
		if fr.f.TTLMinutes >= 120 || fr.f.MaxAgeSec >= 7200 {
			add("ttl>=2h", fr)
		}
		if len(fr.f.Outages) > 0 {
			add("outage", fr)
		}
		if fr.f.NoDates {
			add("no_dates", fr)
		}
		if fr.f.TTLMinutes == 0 && fr.f.MaxAgeSec == 0 && len(fr.f.Outages) == 0 && len(fr.f.SkipHours) == 0 && len(fr.f.SkipDays) == 0 {
			add("plain", fr)
		}
	}
	slices.Sort(kinds)
	var out []KindResult
	for _, k := range kinds {
		kr := KindResult{Kind: k, Feeds: len(groups[k])}
		var ds []float64
		reqs := 0
		for _, fr := range groups[k] {
			ds = append(ds, fr.delays...)
			reqs += fr.requests
			kr.Missed += fr.missed
		}
		kr.Items = len(ds) + kr.Missed
		kr.RequestsPerFeedDay = float64(reqs) / (float64(kr.Feeds) * days)
		if len(ds) > 0 {
			sort.Float64s(ds)
			var sum float64
			for _, d := range ds {
				sum += d
			}
			kr.DelayMean, kr.DelayP50, kr.DelayP95 = sum/float64(len(ds))/60, quantile(ds, 0.5)/60, quantile(ds, 0.95)/60
		}
		out = append(out, kr)
	}
	return out
}

// quantile of sorted xs, by linear interpolation.
func quantile(xs []float64, q float64) float64 {
	pos := q * float64(len(xs)-1)
	i := int(pos)
	if i+1 >= len(xs) {
		return xs[len(xs)-1]
	}
	return xs[i] + (pos-float64(i))*(xs[i+1]-xs[i])
}

// poll is one request to the feed's server at t: it checks politeness,
// answers as the server would, records what the poll found, and returns the
// outcome feed-store would hand to the scheduler.
func (fr *feedRun) poll(t time.Time, p sched.Params, res *Result, start, end time.Time, delays *[]float64) (sched.Outcome, int64) {
	f := fr.f
	counted := t.Before(end)
	hints := sched.Hints{TTLMinutes: f.TTLMinutes, SkipHours: f.SkipHours, SkipDays: f.SkipDays}
	if counted && fr.polls > 0 {
		maxIv := p.Max
		if maxIv <= 0 {
			maxIv = sched.Defaults().Max
		}
		gap := t.Sub(fr.lastPoll)
		if fr.hintsKnown && f.TTLMinutes > 0 && gap < min(time.Duration(f.TTLMinutes)*time.Minute, maxIv) {
			res.ViolationsTTL++
		}
		if fr.lastMaxAge > 0 && gap < min(fr.lastMaxAge, maxIv) {
			res.ViolationsMaxAge++
		}
		if t.Before(fr.retryUntil) {
			res.ViolationsRetryAfter++
		}
		if fr.hintsKnown && sched.InSkipWindow(hints, t) {
			res.ViolationsSkip++
		}
	}
	fr.polls++
	fr.lastPoll = t
	fr.lastMaxAge = 0
	out := sched.Outcome{At: t}

	if o := fr.outage(t); o != nil {
		out.Status = o.Status
		switch {
		case o.RetryAfterSec > 0:
			out.RetryAfterSec = o.RetryAfterSec
			fr.retryUntil = t.Add(time.Duration(o.RetryAfterSec) * time.Second)
		case !o.RetryAfterAt.IsZero():
			out.RetryUntil = o.RetryAfterAt
			fr.retryUntil = o.RetryAfterAt
		}
		out.ErrorClass, out.ErrorCode = classify(o.Status, out.RetryAfterSec > 0 || !out.RetryUntil.IsZero()), fmt.Sprintf("http_%d", o.Status)
		return out, bytesError
	}

	posts := f.Posts
	n, _ := slices.BinarySearch(posts, t.Unix()+1) // posts at or before t
	first := max(0, n-f.Window)
	s, e := start.Unix(), end.Unix()
	measured := func(at int64) bool { return at >= s && at < e }
	if fr.seen < first {
		for _, at := range posts[fr.seen:first] {
			if measured(at) {
				res.Missed++
				fr.missed++
			}
		}
		fr.seen = first
	}
	out.Items = n - first
	out.MaxAgeSec = f.MaxAgeSec
	fr.lastMaxAge = time.Duration(f.MaxAgeSec) * time.Second
	var bytes int64
	switch {
	case f.ETag && n == fr.servedEnd:
		out.Status, out.NotModified = 304, true
		bytes = bytesNotModified
	default:
		out.Status = 200
		bytes = int64(f.Bytes)
		out.Unchanged = n == fr.servedEnd
		if !out.Unchanged {
			out.Parsed = true
			out.TTLMinutes, out.SkipHours, out.SkipDays = f.TTLMinutes, f.SkipHours, f.SkipDays
			fr.hintsKnown = true
		}
	}
	fr.servedEnd = n
	if fr.seen < n {
		fresh := posts[fr.seen:n]
		out.NewEntries = len(fresh)
		out.Published = make([]time.Time, len(fresh))
		for i, at := range fresh {
			if !f.NoDates {
				out.Published[i] = time.Unix(at, 0).UTC()
			}
			if measured(at) {
				*delays = append(*delays, float64(t.Unix()-at))
				fr.delays = append(fr.delays, float64(t.Unix()-at))
			}
		}
		fr.seen = n
	}
	return out, bytes
}

// outage returns the outage that makes the request at t fail, if any.
func (fr *feedRun) outage(t time.Time) *Outage {
	for i := range fr.f.Outages {
		o := &fr.f.Outages[i]
		if t.Before(o.From) || !t.Before(o.To) {
			continue
		}
		if o.FailRatio > 0 && o.FailRatio < 1 {
			// A flapping server: whether this request fails is a fixed
			// function of the feed and the time, the same for every policy.
			h := fnv.New64a()
			fmt.Fprintf(h, "%s/%d", fr.f.ID, t.Unix())
			if float64(h.Sum64()%10000)/10000 >= o.FailRatio {
				continue
			}
		}
		return o
	}
	return nil
}

// classify is feed-fetch's error class for a status (internal/httpx).
func classify(status int, retryAfter bool) string {
	switch {
	case status == 429, status == 503 && retryAfter:
		return sched.ClassRateLimited
	case status == 403:
		return sched.ClassBlocked
	case status == 408 || status >= 500:
		return sched.ClassTransient
	default:
		return sched.ClassPermanent
	}
}

// oracle gives every feed a fixed interval from its true rate (its posts
// in the measured period), 1/sqrt allocated at the budget: the yardstick
// for the adaptive policy, which has to estimate the rates.
func oracle(w *Workload, feeds []*feedRun, p sched.Params, budget float64) {
	p.Policy = sched.Policy{Kind: sched.PolicyAdaptive}
	def := sched.Defaults()
	lo, hi := p.Min, p.Max
	if lo <= 0 {
		lo = def.Min
	}
	if hi <= 0 {
		hi = def.Max
	}
	s, e := w.Start.Unix(), w.End.Unix()
	ds := make([]sched.Demand, len(feeds))
	for i, fr := range feeds {
		a, _ := slices.BinarySearch(fr.f.Posts, s)
		b, _ := slices.BinarySearch(fr.f.Posts, e)
		floor := max(lo, min(time.Duration(fr.f.TTLMinutes)*time.Minute, hi), min(time.Duration(fr.f.MaxAgeSec)*time.Second, hi))
		ds[i] = sched.Demand{Rate: float64(b-a) / w.Days(), Min: floor, Max: hi}
	}
	scale := sched.ScaleFor(ds, budget*float64(len(feeds)))
	for i, fr := range feeds {
		iv := hi
		if d := ds[i]; d.Rate > 0 {
			iv = time.Duration(math.Min(math.Max(scale/math.Sqrt(d.Rate), d.Min.Seconds()), d.Max.Seconds()) * float64(time.Second))
		}
		fr.ov.Interval = iv
	}
}

// item is a feed due at a time; queue orders them by time, then feed.
type item struct {
	at time.Time
	ns int64 // at, in Unix nanoseconds, for a cheap Less
	i  int
}

type queue []item

func (q queue) Len() int { return len(q) }
func (q queue) Less(a, b int) bool {
	if q[a].ns != q[b].ns {
		return q[a].ns < q[b].ns
	}
	return q[a].i < q[b].i
}
func (q queue) Swap(a, b int) { q[a], q[b] = q[b], q[a] }
func (q *queue) Push(x any)   { *q = append(*q, x.(item)) }
func (q *queue) Pop() any {
	old := *q
	it := old[len(old)-1]
	*q = old[:len(old)-1]
	return it
}
