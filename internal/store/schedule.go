package store

import (
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// budgetState is the adaptive policy's budget feedback between runs, in
// the catalog (catalog.MetaBudget): the factor the request budget is
// multiplied by, what earlier days spent over it, and what was spent since
// the day it was last corrected.
type budgetState struct {
	sched.BudgetLoop
	Since   ndjson.Time `json:"since"`
	Fetches int         `json:"fetches"`
}

// NewRand is the random source of a run's jitter, seeded from the clock.
func NewRand(now time.Time) *rand.Rand {
	n := uint64(now.UnixNano())
	return rand.New(rand.NewPCG(n, n^0x9e3779b97f4a7c15))
}

// DecisionRecord is d as a decision record for feed feedID after fetch
// fetchID. It copies field by field (a JSON round trip did the same at a
// tenth of feed-store's CPU in a cycle of 304s); a test checks the copy
// against that round trip on every field.
func DecisionRecord(feedID, fetchID string, d sched.Decision) *ndjson.Decision {
	in := d.Inputs
	return &ndjson.Decision{
		Header: ndjson.Head(ndjson.TypeDecision), FeedID: feedID, FetchID: fetchID,
		Decision: string(d.Kind), Reason: string(d.Reason), At: d.At, NextAt: d.NextAt, Until: d.Until,
		State: string(d.State), Event: string(d.Event), DisabledReason: d.DisabledReason,
		Inputs: ndjson.DecisionInputs{
			Policy: in.Policy, Override: in.Override,
			Outcome: string(in.Outcome), HTTPStatus: in.HTTPStatus, NotModified: in.NotModified, Truncated: in.Truncated,
			ErrorClass: in.ErrorClass, ErrorCode: in.ErrorCode, NewEntries: in.NewEntries, Items: in.Items,
			IntervalBeforeSec: in.IntervalBeforeSec, IntervalAfterSec: in.IntervalAfterSec, MinSec: in.MinSec, MaxSec: in.MaxSec,
			EWMASecs: in.EWMASecs, RatePerDay: in.RatePerDay, Scale: in.Scale, BaseSec: in.BaseSec,
			ProfileFactor: in.ProfileFactor, TailCapSec: in.TailCapSec, WindowCapSec: in.WindowCapSec,
			PatternGain: in.PatternGain, PatternHours: in.PatternHours, PatternDays: in.PatternDays, DayStart: in.DayStart, PollWeight: in.PollWeight,
			Slot: in.Slot, CronNextAt: in.CronNextAt, CronError: in.CronError,
			TTLSec: in.TTLSec, MaxAgeSec: in.MaxAgeSec, FloorSec: in.FloorSec, RetryAfterSecs: in.RetryAfterSecs,
			// Always lists, never null: a consumer reads them without a check.
			SkipHours: append([]int{}, in.SkipHours...), SkipDays: append([]string{}, in.SkipDays...),
			SkipMovedFrom: in.SkipMovedFrom, SkipIgnored: in.SkipIgnored,
			BackoffStep: in.BackoffStep, BackoffSec: in.BackoffSec, JitterSec: in.JitterSec,
			ConsecutiveFailures: in.ConsecutiveFailures, ErrorBudget: in.ErrorBudget, ErrorBudgetSize: in.ErrorBudgetSize,
			Probe: in.Probe,
		},
	}
}

// outcome is what the fetch record f, with the published times of the
// entries stored new from it, tells the scheduler.
func outcome(f *ndjson.Fetch, newEntries int, published []time.Time) sched.Outcome {
	o := sched.Outcome{
		Kind:          sched.Fetched,
		At:            f.FetchedAt.Time,
		Status:        f.HTTPStatus,
		NotModified:   f.NotModified,
		Unchanged:     f.Unchanged,
		Truncated:     f.Truncated,
		RetryAfterSec: f.RetryAfterSec,
		NewEntries:    newEntries,
		Published:     published,
		MaxAgeSec:     maxAge(f.ResponseHeaders),
	}
	if f.Dedup != nil && f.Dedup.New > o.NewEntries {
		o.NewEntries = f.Dedup.New
	}
	parsed := f.Parse != nil && f.Parse.Error == ""
	if e := f.Error; e != nil {
		switch {
		case e.Code == "body_too_large" && parsed:
			o.Truncated = true // the part that came parsed: not a failure
		default:
			// The fetch record's class, as it is: one class per outcome
			// everywhere. (A refused private address is no failure of
			// the feed: sched tells it by its code.)
			o.ErrorClass, o.ErrorCode = e.Class, e.Code
		}
	}
	if parsed {
		o.Parsed = true
		o.Items = f.Parse.Items
		if f.Due.ItemLimit > 0 { // a first or stale fetch keeps the newest items only
			o.Withheld = max(f.Parse.Items-f.Parse.Entries, 0)
		}
		o.TTLMinutes, o.SkipHours, o.SkipDays = f.Parse.TTLMinutes, f.Parse.SkipHours, f.Parse.SkipDays
	}
	return o
}

// maxAge is a response's freshness lifetime in seconds: Cache-Control
// max-age (s-maxage is for shared caches), else Expires minus Date; 0 when
// it has none, or no-cache/no-store.
func maxAge(h map[string]string) int {
	if cc := header(h, "Cache-Control"); cc != "" {
		for _, d := range strings.Split(cc, ",") {
			name, val, _ := strings.Cut(strings.TrimSpace(d), "=")
			switch strings.ToLower(name) {
			case "no-cache", "no-store":
				return 0
			case "max-age":
				n, err := strconv.Atoi(strings.Trim(val, `"`))
				if err == nil && n > 0 {
					return n
				}
				return 0
			}
		}
	}
	exp, date := header(h, "Expires"), header(h, "Date")
	if exp == "" || date == "" {
		return 0
	}
	e, err1 := time.Parse(time.RFC1123, exp)
	d, err2 := time.Parse(time.RFC1123, date)
	if err1 != nil || err2 != nil || !e.After(d) {
		return 0
	}
	return int(min(e.Sub(d), 365*24*time.Hour) / time.Second)
}

// scheduling is what the committer keeps for the scheduler during a run.
type scheduling struct {
	// pub holds the publication times of the entries stored new since the
	// feed's last fetch record, by feed id.
	pub    map[string][]time.Time
	budget *budgetState // the adaptive policy's budget feedback
}

// schedDefaults fills in the scheduler's part of cfg.
func schedDefaults(cfg Config) Config {
	if cfg.Interval > 0 {
		cfg.Sched.Policy = sched.Policy{Kind: sched.PolicyFixed, Every: cfg.Interval}
	}
	if cfg.Rand == nil {
		cfg.Rand = NewRand(cfg.Now())
	}
	return cfg
}

// startScheduling prepares the run's scheduling: the adaptive scale.
func (c *committer) startScheduling() error {
	c.sch = &scheduling{pub: map[string][]time.Time{}}
	return c.scale(c.cfg.Now())
}

// published notes the publication time of an entry stored new.
func (s *scheduling) published(e *ndjson.Entry) {
	s.pub[e.FeedID] = append(s.pub[e.FeedID], e.Published.Time)
}

// forget drops what was noted for a feed whose fetch record is not used.
func (s *scheduling) forget(feedID string) { delete(s.pub, feedID) }

// scale sets the adaptive policy's scale for the run: computed from every
// enabled feed's demand, at the request budget corrected by the last days'
// spend; and once a day it corrects that factor. The demands come from the
// catalog's projection of every feed's state (catalog.Demands), in the
// subscription list's order: reading them is most of a run's start-up at
// 100,000 feeds (0.4 s), so a scale computed less than scaleMaxAge ago, for
// the same subscription list, parameters and budget factor, with fewer than
// a tenth of the feeds fetched since, is taken from the catalog instead
// (scaleMemo). The scale moves with the feeds' rates, which change by
// half in days, and with the feeds fetched: a few minutes change it by
// little, and every decision says which scale it used.
func (c *committer) scale(now time.Time) error {
	p := c.cfg.Sched
	if p.Policy.Kind != "" && p.Policy.Kind != sched.PolicyAdaptive {
		return nil
	}
	b := c.loadBudget(now)
	subs, err := c.cat.Checkpoint(c.ctx, catalog.TapSubscriptions)
	if err != nil {
		return err
	}
	params := paramsKey(p)
	memo, fresh := c.loadScaleMemo(now, b, subs, params)
	feeds := memo.Feeds
	var ds []sched.Demand
	if !fresh {
		if ds, err = c.demands(now); err != nil {
			return err
		}
		feeds = len(ds)
	}
	if feeds == 0 {
		return nil
	}
	budget := p.BudgetPerFeedDay() * float64(feeds)
	if elapsed := now.Sub(b.Since.Time); elapsed >= 24*time.Hour {
		spent := float64(b.Fetches) * 86400 / elapsed.Seconds()
		b.BudgetLoop = b.Day(spent, budget)
		b.Since, b.Fetches = ndjson.At(now), 0
	}
	c.sch.budget = &b
	if fresh && memo.Factor == b.Factor {
		c.cfg.Sched.Scale = memo.Scale
		c.cfg.Log.Debug("scheduler scale", "scale", memo.Scale, "feeds", feeds, "budget_per_day", budget, "factor", b.Factor, "computed_at", memo.At)
		return nil
	}
	if ds == nil {
		if ds, err = c.demands(now); err != nil {
			return err
		}
	}
	c.cfg.Sched.Scale = sched.ScaleFor(ds, b.Factor*budget)
	c.cfg.Log.Debug("scheduler scale", "scale", c.cfg.Sched.Scale, "feeds", len(ds), "budget_per_day", budget, "factor", b.Factor)
	memo = scaleMemo{Scale: c.cfg.Sched.Scale, Feeds: len(ds), At: ndjson.At(now), Factor: b.Factor, Params: params,
		Subscriptions: subs, BudgetSince: b.Since, Fetches: b.Fetches}
	if err := c.cat.SetMeta(c.ctx, catalog.MetaScale, memo); err != nil {
		c.cfg.Log.Warn("cannot keep the scheduler's scale; the next run computes it again", "err", err)
	}
	return nil
}

// demands are every enabled feed's demand at now, in the list's order.
func (c *committer) demands(now time.Time) ([]sched.Demand, error) {
	var ds []sched.Demand
	demand := sched.DemandFunc(c.cfg.Sched, now)
	err := c.cat.Demands(c.ctx, func(o *sched.Overrides, in *sched.DemandInputs) {
		ds = append(ds, demand(in, o))
	})
	return ds, err
}

// scaleMaxAge is how long a computed scale serves the runs after it.
const scaleMaxAge = 10 * time.Minute

// scaleMemo is the adaptive scale as last computed (catalog.MetaScale),
// and what it was computed from.
type scaleMemo struct {
	Scale  float64     `json:"scale"`
	Feeds  int         `json:"feeds"` // enabled subscriptions
	At     ndjson.Time `json:"at"`
	Factor float64     `json:"factor"` // the budget loop's
	Params string      `json:"params"` // paramsKey
	// Subscriptions is the subscription log's checkpoint: any change of
	// the list moves it.
	Subscriptions catalog.Checkpoint `json:"subscriptions"`
	// BudgetSince and Fetches are the budget's day and its fetches then.
	BudgetSince ndjson.Time `json:"budget_since"`
	Fetches     int         `json:"fetches"`
}

// loadScaleMemo returns the scale memo, and whether it serves this run.
func (c *committer) loadScaleMemo(now time.Time, b budgetState, subs catalog.Checkpoint, params string) (scaleMemo, bool) {
	var m scaleMemo
	ok, err := c.cat.Meta(c.ctx, catalog.MetaScale, &m)
	if err != nil {
		c.cfg.Log.Warn("cannot read the scheduler's scale; computing it", "err", err)
		return m, false
	}
	age := now.Sub(m.At.Time)
	fresh := ok && m.Feeds > 0 && m.Scale > 0 && !math.IsInf(m.Scale, 0) && age >= 0 && age < scaleMaxAge &&
		m.Params == params && m.Subscriptions == subs && m.BudgetSince.Equal(b.Since.Time) && b.Fetches >= m.Fetches &&
		b.Fetches-m.Fetches <= m.Feeds/10
	return m, fresh
}

// paramsKey names the scheduler's parameters that a scale was computed
// for (the scale itself left out).
func paramsKey(p sched.Params) string {
	p.Scale = 0
	return fmt.Sprintf("%+v", p)
}

func (c *committer) loadBudget(now time.Time) budgetState {
	b := budgetState{BudgetLoop: sched.BudgetLoop{Factor: 1}, Since: ndjson.At(now)}
	var got budgetState
	ok, err := c.cat.Meta(c.ctx, catalog.MetaBudget, &got)
	switch {
	case err != nil:
		c.cfg.Log.Warn("cannot read the scheduler's budget; starting again", "err", err)
		return b
	case !ok:
		return b
	case !(got.Factor > 0) || math.IsInf(got.Factor, 0) || got.Since.IsZero() || got.Since.After(now) || got.Fetches < 0:
		c.cfg.Log.Warn("the scheduler's budget is damaged; starting again")
		return b
	}
	return got
}

// saveBudget counts the run's fetches towards the day's spend.
func (c *committer) saveBudget(fetches int) error {
	if c.sch.budget == nil || fetches == 0 {
		return nil
	}
	c.sch.budget.Fetches += fetches
	return c.cat.SetMeta(c.ctx, catalog.MetaBudget, c.sch.budget)
}

// schedule runs the scheduler on the fetch f of the feed whose state is fs
// and records the result in fs. It returns the records to write: the
// decision, and a feed_disabled or feed_reenabled event.
func (c *committer) schedule(fs *catalog.FeedState, f *ndjson.Fetch) (recs []any, err error) {
	feedID := fs.FeedID
	o, err := c.overrides(feedID)
	if err != nil {
		return nil, err
	}
	out := outcome(f, fs.NewEntriesLastFetch, c.sch.pub[feedID])
	delete(c.sch.pub, feedID)
	before := fs.SchedState()
	st, d := sched.Next(before, out, c.cfg.Sched, o, c.cfg.Now(), c.cfg.Rand)
	fs.SetSched(st, d)

	recs = append(recs, DecisionRecord(feedID, f.FetchID, d))
	sched.LogDecision(c.cfg.Log, slog.LevelDebug, feedID, f.FetchID, d)

	switch d.Event {
	case sched.EventDisabled, sched.EventReenabled:
		ev := &ndjson.FeedEvent{Header: ndjson.Head(string(d.Event)), FeedID: feedID, FetchID: f.FetchID,
			URL: f.Due.URL, At: d.At, NextAt: d.NextAt}
		if ev.URL == "" { // rare: the URL comes with the fetch
			sub, _, err := c.cat.Subscription(c.ctx, feedID)
			if err != nil {
				return nil, err
			}
			ev.URL = sub.URL
		}
		if d.Event == sched.EventDisabled {
			ev.DisabledReason, ev.Error = d.DisabledReason, f.Error
			c.cfg.Log.Warn("feed disabled", "feed_id", feedID, "fetch_id", f.FetchID, "reason", d.DisabledReason, "next_probe", d.NextAt.String())
		} else {
			// Why it had been out of service: what a reader of the event
			// wants to know came right.
			ev.DisabledReason = before.DisabledReason
			c.cfg.Log.Info("feed re-enabled: a probe answered", "feed_id", feedID, "fetch_id", f.FetchID, "disabled_reason", before.DisabledReason)
		}
		recs = append(recs, ev)
	}
	return recs, nil
}
