package serve

import (
	"cmp"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/stats"
)

// The dashboards of docs/design.md#metrics on the web page, from the figures
// /metrics serves (metrics.go computes them once for both): success vs
// 304 vs error over time (the fetches of fetches/ by hour), the totals
// and bytes saved (stats.Totals), freshness and backlog, scheduler
// states; and, from one pass over the feeds, the top feeds by new entries
// and the hosts with the most errors.

// dashHours are the hours the outcome chart shows.
const dashHours = 48

// dashTop is how many rows a top list has.
const dashTop = 10

// dashData is the dashboard's.
type dashData struct {
	Outcomes                       template.HTML
	TopFeeds, TopCodes, TopHosts   template.HTML
	Sched, Decided                 template.HTML
	Totals                         stats.Totals
	SavedShare                     string // of the bytes a fetch would have brought
	Freshness                      string
	OnTime, Late, Overdue, Budget  int
	Fetches, OK, NotModified, Errs float64  // of fetches/ (the chart's)
	Bus                            *busView // the Redis bus, when the server has one
}

// snapshot is the figures of /metrics, made again first when stale.
func (m *metrics) snapshot() (stats.Totals, feedFigures, tapCounts, map[string]float64) {
	m.fresh()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.totals, m.feeds, m.fetches.clone(), maps.Clone(m.decided)
}

// webDashboard is GET /web/dashboard.
func (s *Server) webDashboard(w http.ResponseWriter, r *http.Request) {
	reader, ok := s.reader(w, r)
	if !ok {
		return
	}
	// The bus's status is read from Redis while the catalog is.
	var busRead chan *busView
	if s.bus != nil {
		busRead = make(chan *busView, 1)
		go func() { busRead <- s.busView(r.Context()) }()
	}
	now := s.cfg.Now()
	t, f, taps, decided := s.metrics.snapshot()
	d := dashData{Totals: t, OnTime: f.onTime, Late: f.late, Overdue: f.overdue, Budget: f.budgetOpen}
	if n := t.Counts.BytesIn + t.Counts.BytesSaved; n > 0 {
		d.SavedShare = fmt.Sprintf("%.0f%%", 100*float64(t.Counts.BytesSaved)/float64(n))
	}
	d.Freshness = "no feed polled on an interval yet"
	if n := f.onTime + f.late; n > 0 {
		d.Freshness = fmt.Sprintf("%.1f%%", 100*float64(f.onTime)/float64(n))
	}

	// Success vs 304 vs error, by hour: the last dashHours hours up to now
	// (or up to the last fetch, for a store that stopped fetching).
	end := now.Truncate(time.Hour)
	if len(taps.hourly) > 0 {
		last := slices.Max(sortedHours(taps.hourly))
		if t := time.Unix(last, 0); t.Before(end.Add(-dashHours * time.Hour)) {
			end = t
		}
	}
	ss := []series{{"success", "s-ok"}, {"304 not modified", "s-nm"}, {"error", "s-err"}}
	var bars []stackBar
	for h := end.Add(-(dashHours - 1) * time.Hour); !h.After(end); h = h.Add(time.Hour) {
		v := make([]float64, 3)
		for o, n := range taps.hourly[h.Unix()] {
			switch outcomeClass(o) {
			case "s-ok":
				v[0] += n
			case "s-nm":
				v[1] += n
			default:
				v[2] += n
			}
		}
		d.OK, d.NotModified, d.Errs = d.OK+v[0], d.NotModified+v[1], d.Errs+v[2]
		bars = append(bars, stackBar{At: h, Values: v})
	}
	d.Fetches = d.OK + d.NotModified + d.Errs
	d.Outcomes = stackedBars(bars, ss, "01-02 15h", fmt.Sprintf("fetches by hour, the last %d hours: success, 304 not modified, error", dashHours))

	var codes []bar
	for code, n := range t.Counts.ErrorCodes {
		codes = append(codes, bar{Label: code, Value: float64(n)})
	}
	d.TopCodes = hbars(top(codes), "s-err", "the error codes of the most failed fetches")

	// One pass over the feeds: new entries by feed, errors by host.
	var feeds []bar
	hosts := map[string]float64{}
	err := s.cat.Feeds(r.Context(), catalog.FeedFilter{}, func(fd *catalog.Feed) error {
		c, _ := stats.Attempted(fd.State.Counts) // a refused fetch is no failure of the feed's
		if c.NewEntries > 0 {
			feeds = append(feeds, bar{Label: cmp.Or(fd.Sub.Name, fd.State.Title, fd.Sub.URL), Href: pageURL(reader, "/web/feeds/"+fd.Sub.FeedID),
				Value: float64(c.NewEntries)})
		}
		if c.Errors > 0 {
			host := fd.Sub.URL
			if u, err := url.Parse(fd.Sub.URL); err == nil && u.Hostname() != "" {
				host = u.Hostname()
			}
			hosts[host] += float64(c.Errors)
		}
		return nil
	})
	if err != nil {
		s.webError(w, r, err)
		return
	}
	d.TopFeeds = hbars(top(feeds), "s-ok", "the feeds with the most new entries")
	var hostBars []bar
	for h, n := range hosts {
		hostBars = append(hostBars, bar{Label: h, Value: n})
	}
	d.TopHosts = hbars(top(hostBars), "s-err", "the hosts of the most failed fetches")
	var states []bar
	for st, n := range f.bySched {
		states = append(states, bar{Label: st, Value: float64(n)})
	}
	d.Sched = hbars(top(states), "s-nm", "feeds by scheduler state")
	var reasons []bar
	for rs, n := range decided {
		reasons = append(reasons, bar{Label: rs, Value: n})
	}
	d.Decided = hbars(top(reasons), "s-int", "the scheduler's decisions by reason")
	if busRead != nil {
		d.Bus = <-busRead
	}
	s.render(w, r, http.StatusOK, "dashboard", pageData{Title: "Dashboard", Nav: "dashboard", Reader: reader, Data: d})
}

// top sorts bars, largest first (then by label), and keeps dashTop.
func top(bars []bar) []bar {
	slices.SortFunc(bars, func(a, b bar) int {
		if c := cmp.Compare(b.Value, a.Value); c != 0 {
			return c
		}
		return cmp.Compare(a.Label, b.Label)
	})
	return bars[:min(len(bars), dashTop)]
}

func sortedHours(m map[int64]map[string]float64) []int64 {
	hours := make([]int64, 0, len(m))
	for h := range m {
		hours = append(hours, h)
	}
	slices.Sort(hours)
	return hours
}
