package serve

import (
	"cmp"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/internal/stats"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// The figures of /metrics: those the stages write for node_exporter
// (stats.Families: the names of docs/design.md#metrics), the same numbers
// from the same catalog; and what only a server that watches the store
// sees: outcomes and response sizes of the fetches in fetches/, the
// decisions in decisions/, the feeds by scheduler state, the overdue
// ones, those whose error budget is spent, and the freshness objective
// (docs/design.md#freshness). The figures are computed at most every
// Config.MetricsEvery; a scrape between gets the last ones.

// sizeBuckets are the upper bounds of the response size histogram, bytes.
var sizeBuckets = []float64{1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20}

// DecisionsDir is the store's decisions tap (docs/store.md), when
// feed-store writes it.
const DecisionsDir = "decisions"

type metrics struct {
	s *Server
	// sync makes the figures before each scrape that finds them stale
	// (tests).
	sync bool

	// refreshing is held while the figures are made; mu guards them.
	refreshing sync.Mutex
	failed     bool
	mu         sync.Mutex
	at         time.Time // when the figures were computed
	gen        uint64    // the catalog's changes they saw (changeTracker)
	took       time.Duration
	totals     stats.Totals
	hist       stats.Histogram
	feeds      feedFigures
	fetches    tapCounts
	decided    map[string]float64 // decisions/ by reason
	decFile    string
	decOff     int64
	// perFeedCounts are each feed's counts (--per-feed-metrics).
	perFeedCounts map[string]catalog.FeedCounts

	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// feedFigures are what one pass over the feeds finds.
type feedFigures struct {
	bySched       map[string]int // scheduler lifecycle, "none" before the first decision
	byLastReason  map[string]int
	overdue       int
	budgetOpen    int
	onTime, late  int // freshness: polled within twice their interval, or not
	perFeedIntv   map[string][2]float64
	perFeedLabels map[string][2]string // name, host
}

// tapCounts are the fetch records of fetches/ counted since the server
// started reading them (from the store's oldest day file).
type tapCounts struct {
	file     string
	off      int64
	outcomes map[string]float64
	// hourly are the outcomes by the hour of the fetch (Unix seconds):
	// the web page's charts over time.
	hourly  map[int64]map[string]float64
	sizes   []uint64 // per sizeBuckets, then +Inf
	sizeSum float64
	sizeN   uint64
}

func newMetrics(s *Server) (*metrics, *prometheus.Registry, error) {
	m := &metrics{s: s, decided: map[string]float64{},
		fetches: tapCounts{outcomes: map[string]float64{}, hourly: map[int64]map[string]float64{}, sizes: make([]uint64, len(sizeBuckets)+1)},
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "feedpipe_http_requests_total",
			Help: "Requests feed-serve answered, by route and status code."}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "feedpipe_http_request_duration_seconds",
			Help: "How long feed-serve took to answer, by route.", Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5}}, []string{"route"}),
	}
	reg := prometheus.NewRegistry()
	waiting := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "feedpipe_http_reads_waiting",
		Help: "Requests waiting in line to read the catalog (feed-serve --max-reads run at once)."},
		func() float64 { return float64(s.reads.waiting.Load()) })
	for _, c := range []prometheus.Collector{m, m.requests, m.latency, waiting, collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		if err := reg.Register(c); err != nil {
			return nil, nil, err
		}
	}
	return m, reg, nil
}

// request counts an answered request under its route's pattern (never
// its path: ids would make a series each).
func (m *metrics) request(r *http.Request, code int, took time.Duration) {
	route := r.Pattern
	if route == "" || route == "/" {
		route = "other"
	}
	m.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
	m.latency.WithLabelValues(route).Observe(took.Seconds())
}

// serveMetrics is GET /metrics, in the Prometheus text format (or the
// format the scraper's Accept asks for). An answer is kept a second: any
// number of scrapers cost one gathering a second.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	key := "/metrics\x00" + r.Header.Get("Accept")
	now := time.Now()
	keep := !s.cfg.NoCache && !s.metrics.sync
	if e := s.cache.get(key, &s.changes, now, time.Second); e != nil && keep {
		s.replay(w, r, e)
		return
	}
	plain := r.Clone(r.Context())
	plain.Header.Del("Accept-Encoding")
	rec := &bufferedWriter{header: http.Header{}}
	promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{ErrorLog: promLog{s}, ErrorHandling: promhttp.ContinueOnError, DisableCompression: true}).ServeHTTP(rec, plain)
	if rec.status != http.StatusOK {
		rec.flushTo(w)
		return
	}
	e := &cached{timed: true, at: now, header: http.Header{"Content-Type": {rec.header.Get("Content-Type")}, "Cache-Control": {"no-store"}}, body: rec.body.Bytes()}
	e.etag = etagOf(e.body)
	if keep {
		s.cache.put(key, e)
	}
	s.replay(w, r, e)
}

type promLog struct{ s *Server }

func (l promLog) Println(v ...any) {
	l.s.cfg.Log.Warn("metrics", "err", v)
}

var (
	descOutcomes    = prometheus.NewDesc("feedpipe_fetch_outcomes_total", "Fetch records in fetches/, by outcome: ok (a new body), not_modified (304), same_body (200 with the body of the last fetch), or the error class (transient, permanent, rate_limited, blocked, parse).", []string{"outcome"}, nil)
	descSizes       = prometheus.NewDesc("feedpipe_response_size_bytes", "Sizes of the bodies received (decoded), of the fetch records in fetches/.", nil, nil)
	descDecisions   = prometheus.NewDesc("feedpipe_decisions_total", "Scheduler decisions in decisions/, by reason.", []string{"reason"}, nil)
	descLastReason  = prometheus.NewDesc("feedpipe_feeds_last_decision", "Feeds by the reason of their last scheduler decision.", []string{"reason"}, nil)
	descSched       = prometheus.NewDesc("feedpipe_feeds_scheduler_state", "Feeds by scheduler state: healthy, cooling_down, backoff, paused, disabled; none before the first decision.", []string{"state"}, nil)
	descOverdue     = prometheus.NewDesc("feedpipe_feeds_overdue", "Feeds due for more than a minute and not fetched yet: the backlog.", nil, nil)
	descBudget      = prometheus.NewDesc("feedpipe_feeds_budget_open", "Feeds whose error budget is spent: their circuit is open.", nil, nil)
	descFresh       = prometheus.NewDesc("feedpipe_freshness_feeds", "Feeds polled on an interval, by whether their last fetch is within twice their interval (on_time) or not (late).", []string{"polled"}, nil)
	descFreshRatio  = prometheus.NewDesc("feedpipe_freshness_ratio", "The share of feeds polled within twice their interval (objective: 95% or more, docs/design.md#freshness).", nil, nil)
	descFeedIntv    = prometheus.NewDesc("feedpipe_feed_interval_seconds", "The interval the scheduler chose, per feed (--per-feed-metrics).", perFeed, nil)
	descFeedEWMA    = prometheus.NewDesc("feedpipe_feed_ewma_seconds", "The EWMA of the feed's posting interval, per feed (--per-feed-metrics).", perFeed, nil)
	descFeedNew     = prometheus.NewDesc("feedpipe_feed_new_entries_total", "Entries stored for the first time, per feed (--per-feed-metrics).", perFeed, nil)
	descFeedErrors  = prometheus.NewDesc("feedpipe_feed_fetch_errors_total", "Failed fetches, per feed and error code (--per-feed-metrics).", append(perFeed, "code"), nil)
	descScrapeError = prometheus.NewDesc("feedpipe_metrics_error", "1 when the figures could not be computed from the store (the log says why).", nil, nil)
)

// perFeed are the labels of the series per feed: its id, name (or title)
// and host.
var perFeed = []string{"feed_id", "name", "host"}

// Describe sends nothing: the collector's series depend on the store
// (an unchecked collector).
func (m *metrics) Describe(chan<- *prometheus.Desc) {}

// fresh makes the figures again when they are stale: the first time
// before the scrape answers, later in the background while scrapes get
// the figures there are (a store of 100,000 feeds takes a while, and no
// scrape should wait for it).
func (m *metrics) fresh() {
	now := m.s.cfg.Now()
	gen := m.s.changes.look(m.s.ctx)
	m.mu.Lock()
	stale, first := m.stale(now, gen), m.at.IsZero()
	m.mu.Unlock()
	switch {
	case !stale:
	case first || m.sync:
		m.refreshing.Lock()
		m.update(now)
		m.refreshing.Unlock()
	case m.refreshing.TryLock():
		m.s.wg.Add(1)
		go func() {
			defer m.s.wg.Done()
			defer m.refreshing.Unlock()
			m.update(now)
		}()
	}
}

// metricsQuietEvery is how often the figures are made again while the
// catalog is unchanged: some depend on the time (overdue feeds, the
// freshness SLO).
const metricsQuietEvery = time.Minute

// stale reports whether the figures are to be made again at now, the
// catalog's changes at gen: MetricsEvery after the last, or 20 times
// what the last took when that is longer (one pass over a store of
// 100,000 feeds takes 1.7 s of CPU: its figures cost a twentieth of a
// CPU at most), and only after a change (or metricsQuietEvery).
func (m *metrics) stale(now time.Time, gen uint64) bool {
	if m.at.IsZero() {
		return true
	}
	age := now.Sub(m.at)
	if m.sync {
		return age >= m.s.cfg.MetricsEvery
	}
	return age >= max(m.s.cfg.MetricsEvery, 20*m.took) && (gen != m.gen || age >= metricsQuietEvery)
}

// update computes the figures, holding refreshing.
func (m *metrics) update(now time.Time) {
	gen := m.s.changes.look(m.s.ctx)
	m.mu.Lock()
	done := !m.stale(now, gen) // made meanwhile
	m.mu.Unlock()
	if done {
		return
	}
	start := time.Now()
	err := m.refresh(now)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failed = err != nil
	if err != nil {
		m.s.cfg.Log.Warn("metrics: cannot compute the figures", "err", err)
		return
	}
	m.at, m.gen, m.took = now, gen, time.Since(start)
}

// Collect sends the figures.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	m.fresh()
	m.mu.Lock()
	defer m.mu.Unlock()
	failed := 0.0
	if m.failed {
		failed = 1
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge(descScrapeError, failed)
	// The lines the stages write (feed-stats --prometheus), from the one
	// list of them.
	for _, f := range stats.Families(m.totals, &m.hist) {
		var labels []string
		if f.Label != "" {
			labels = []string{f.Label}
		}
		d := prometheus.NewDesc(f.Name, f.Help, labels, nil)
		if f.Hist != nil {
			ch <- prometheus.MustNewConstHistogram(d, f.Hist.Count, f.Hist.Sum, cumulative(stats.DurationBounds(), f.Hist.Counts))
			continue
		}
		kind := prometheus.GaugeValue
		if f.Type == "counter" {
			kind = prometheus.CounterValue
		}
		for _, v := range f.Samples {
			if f.Label != "" {
				ch <- prometheus.MustNewConstMetric(d, kind, v.Value, v.Label)
			} else {
				ch <- prometheus.MustNewConstMetric(d, kind, v.Value)
			}
		}
	}
	for _, o := range sortedKeys(m.fetches.outcomes) {
		counter(descOutcomes, m.fetches.outcomes[o], o)
	}
	ch <- prometheus.MustNewConstHistogram(descSizes, m.fetches.sizeN, m.fetches.sizeSum, cumulative(sizeBuckets, m.fetches.sizes))
	for _, r := range sortedKeys(m.decided) {
		counter(descDecisions, m.decided[r], r)
	}
	f := m.feeds
	for _, r := range sortedKeys(f.byLastReason) {
		gauge(descLastReason, float64(f.byLastReason[r]), r)
	}
	for _, st := range sortedKeys(f.bySched) {
		gauge(descSched, float64(f.bySched[st]), st)
	}
	gauge(descOverdue, float64(f.overdue))
	gauge(descBudget, float64(f.budgetOpen))
	gauge(descFresh, float64(f.onTime), "on_time")
	gauge(descFresh, float64(f.late), "late")
	ratio := 1.0
	if n := f.onTime + f.late; n > 0 {
		ratio = float64(f.onTime) / float64(n)
	}
	gauge(descFreshRatio, ratio)
	for _, id := range sortedKeys(f.perFeedIntv) {
		v, l := f.perFeedIntv[id], f.perFeedLabels[id]
		gauge(descFeedIntv, v[0], id, l[0], l[1])
		gauge(descFeedEWMA, v[1], id, l[0], l[1])
	}
	for _, id := range sortedKeys(m.perFeedCounts) {
		c, l := m.perFeedCounts[id], f.perFeedLabels[id]
		counter(descFeedNew, float64(c.NewEntries), id, l[0], l[1])
		for _, code := range sortedKeys(c.ErrorCodes) {
			counter(descFeedErrors, float64(c.ErrorCodes[code]), id, l[0], l[1], code)
		}
	}
}

// cumulative turns per-bucket counts into the cumulative counts of each
// upper bound.
func cumulative(bounds []float64, counts []uint64) map[float64]uint64 {
	out := make(map[float64]uint64, len(bounds))
	var n uint64
	for i, b := range bounds {
		if i < len(counts) {
			n += counts[i]
		}
		out[b] = n
	}
	return out
}

// refresh computes the figures again: the totals as the stages compute
// them, one pass over the feeds, and the taps past where the last
// refresh stopped. It holds refreshing; it takes mu only to swap the new
// figures in.
func (m *metrics) refresh(now time.Time) error {
	ctx := m.s.ctx
	cat := m.s.cat
	t, err := stats.NewTotals(ctx, cat, now)
	if err != nil {
		return err
	}
	hist := *stats.LoadHistogram(ctx, cat)
	if len(hist.Counts) != len(stats.DurationBounds())+1 {
		hist.Counts = make([]uint64, len(stats.DurationBounds())+1)
	}
	perFeed := m.s.cfg.PerFeedMetrics
	f := feedFigures{bySched: map[string]int{}, byLastReason: map[string]int{}}
	var perFeedCounts map[string]catalog.FeedCounts
	if perFeed {
		f.perFeedIntv, f.perFeedLabels, perFeedCounts = map[string][2]float64{}, map[string][2]string{}, map[string]catalog.FeedCounts{}
	}
	// One pass: the totals as stats.Compute makes them, and the rest.
	err = cat.Feeds(ctx, catalog.FeedFilter{}, func(feed *catalog.Feed) error {
		fs := &feed.State
		st := t.Add(feed, now)
		lifecycle := "none"
		if sc := fs.Sched; sc != nil && sc.Lifecycle != "" {
			lifecycle = string(sc.Lifecycle)
			if sc.Lifecycle == sched.StatePaused && sc.Reason == sched.ReasonBudgetExceeded && sc.NextAt.After(now) {
				f.budgetOpen++
			}
		}
		if feed.Sub.Disabled {
			lifecycle = "disabled"
		}
		f.bySched[lifecycle]++
		if fs.Decision != nil && fs.Decision.Reason != "" {
			f.byLastReason[string(fs.Decision.Reason)]++
		}
		if st.Listed && now.Sub(st.Next) > time.Minute && st.State != stats.StateDisabled {
			f.overdue++
		}
		if st.State == stats.StateEnabled && st.IntervalSec > 0 && !fs.LastFetchAt.IsZero() {
			if now.Sub(fs.LastFetchAt.Time) <= 2*time.Duration(st.IntervalSec)*time.Second {
				f.onTime++
			} else {
				f.late++
			}
		}
		if perFeed {
			id, host := feed.Sub.FeedID, ""
			if u, err := url.Parse(feed.Sub.URL); err == nil {
				host = u.Hostname()
			}
			f.perFeedLabels[id] = [2]string{cmp.Or(feed.Sub.Name, fs.Title), host}
			f.perFeedIntv[id] = [2]float64{float64(fs.SchedState().IntervalSec), fs.SchedState().EWMASec}
			perFeedCounts[id] = fs.Counts
		}
		return nil
	})
	if err != nil {
		return err
	}
	m.mu.Lock()
	taps := m.fetches.clone()
	decided, decFile, decOff := maps.Clone(m.decided), m.decFile, m.decOff
	m.mu.Unlock()
	if err := m.followTaps(&taps, decided, &decFile, &decOff); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.totals, m.hist, m.feeds, m.perFeedCounts = t, hist, f, perFeedCounts
	m.fetches, m.decided, m.decFile, m.decOff = taps, decided, decFile, decOff
	return nil
}

// outcomeOf is a fetch record's outcome: ok (a new body), not_modified,
// same_body, or its error's class ("error" without one).
func outcomeOf(f *ndjson.Fetch) string {
	switch {
	case f.Error != nil && f.Error.Class != "":
		return f.Error.Class
	case f.Error != nil:
		return "error"
	case f.NotModified:
		return "not_modified"
	case f.Unchanged:
		return "same_body"
	}
	return "ok"
}

func (c tapCounts) clone() tapCounts {
	c.outcomes = maps.Clone(c.outcomes)
	c.hourly = maps.Clone(c.hourly)
	for h, m := range c.hourly {
		c.hourly[h] = maps.Clone(m)
	}
	c.sizes = slices.Clone(c.sizes)
	return c
}

// followTaps counts the fetch records and decisions written past the
// positions it is given, and moves them on.
func (m *metrics) followTaps(c *tapCounts, decided map[string]float64, decFile *string, decOff *int64) error {
	st := m.s.cfg.Store
	var err error
	c.file, c.off, err = st.FollowLogs(storedir.DirFetches, c.file, c.off, func(_ string, _, _ int64, l ndjson.Line) error {
		var f ndjson.Fetch
		if l.Type != ndjson.TypeFetch || l.Decode(&f) != nil {
			return nil
		}
		o := outcomeOf(&f)
		c.outcomes[o]++
		hour := f.FetchedAt.Truncate(time.Hour).Unix()
		if c.hourly[hour] == nil {
			c.hourly[hour] = map[string]float64{}
		}
		c.hourly[hour][o]++
		if f.BodyRef != nil && !f.NotModified {
			i, _ := slices.BinarySearch(sizeBuckets, float64(f.ContentLength))
			c.sizes[i]++
			c.sizeSum += float64(f.ContentLength)
			c.sizeN++
		}
		return nil
	})
	if err != nil {
		return err
	}
	*decFile, *decOff, err = st.FollowLogs(DecisionsDir, *decFile, *decOff, func(_ string, _, _ int64, l ndjson.Line) error {
		var d ndjson.Decision
		if l.Type == ndjson.TypeDecision && l.Decode(&d) == nil && d.Reason != "" {
			decided[d.Reason]++
		}
		return nil
	})
	return err
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
