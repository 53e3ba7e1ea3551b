package serve

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/stats"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// TestMetrics: /metrics is the Prometheus text format; it has every line
// the stages write for node_exporter, the same figures; and what the
// server adds: outcomes, sizes, scheduler states, freshness, requests.
func TestMetrics(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.PerFeedMetrics = true })
	// A cycle of feed-loop's: the heartbeat's lines.
	start := t0.Add(30 * time.Second)
	if _, err := stats.RecordCycle(context.Background(), w.cat, stats.Cycle{Start: ndjson.At(start), End: ndjson.At(start.Add(3 * time.Second)),
		Status: 1, Counts: map[string]int64{"feeds": 3, "new": 7}}); err != nil {
		t.Fatal(err)
	}
	w.get("/feeds") // a request to count
	r := w.get("/metrics")
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
		t.Fatalf("%d %v", r.status, r.header)
	}
	families := parseMetrics(t, r.body)
	written := w.servesTheTextfile(families, t0.Add(time.Minute))
	for _, name := range []string{"feedpipe_cycles_total", "feedpipe_last_cycle_count", "feedpipe_last_completed_cycle_end_timestamp_seconds", "sources_total",
		"feedpipe_media_files", "feedpipe_media_stored_bytes"} {
		if written[name] == nil {
			t.Errorf("the textfile has no %s", name)
		}
	}
	value := func(name string, labels ...string) float64 {
		t.Helper()
		return sampleValue(t, families, name, labels...)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"sources_total", []string{"state", "enabled"}, 3},
		{"sources_fetched_total", nil, 3},
		{"feedpipe_fetch_outcomes_total", []string{"outcome", "ok"}, 3},
		{"feedpipe_response_size_bytes", nil, 3},
		{"feedpipe_feeds_scheduler_state", []string{"state", "healthy"}, 3},
		{"feedpipe_feeds_overdue", nil, 0},
		{"feedpipe_feeds_budget_open", nil, 0},
		{"feedpipe_freshness_ratio", nil, 1},
		{"feedpipe_freshness_feeds", []string{"polled", "on_time"}, 3},
		{"feedpipe_http_requests_total", []string{"route", "GET /feeds", "code", "200"}, 1},
		{"feedpipe_feed_new_entries_total", []string{"feed_id", w.ids["youtube_atom.xml"]}, value("feedpipe_feed_new_entries_total", "feed_id", w.ids["youtube_atom.xml"])},
	} {
		if got := value(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if value("items_discovered_total") < 10 || value("feedpipe_feed_new_entries_total", "feed_id", w.ids["youtube_atom.xml"]) < 1 {
		t.Errorf("entries: %v", value("items_discovered_total"))
	}
	if families["process_resident_memory_bytes"] == nil || families["go_goroutines"] == nil {
		t.Errorf("no process or Go metrics")
	}
	// Two hours later, nothing fetched: every feed is overdue and late.
	w.s.cfg.Now = func() time.Time { return t0.Add(48 * time.Hour) }
	families = parseMetrics(t, w.get("/metrics").body)
	if value("feedpipe_feeds_overdue") != 3 || value("feedpipe_freshness_ratio") != 0 {
		t.Errorf("later: overdue %v, freshness %v", value("feedpipe_feeds_overdue"), value("feedpipe_freshness_ratio"))
	}
}

// TestMetricsInTheBackground: a scrape of stale figures gets them at once
// and has them made again in the background, for the next.
func TestMetricsInTheBackground(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.MetricsEvery = time.Hour })
	w.s.metrics.sync = false
	now := t0.Add(time.Minute)
	w.s.cfg.Now = func() time.Time { return now }
	if !strings.Contains(string(w.get("/metrics").body), "feedpipe_feeds_overdue 0") {
		t.Fatal("the first scrape")
	}
	now = t0.Add(48 * time.Hour)
	// Stale, while new figures are being made (as a long refresh would
	// hold it): the scrape does not wait, it has the old figures.
	w.s.metrics.refreshing.Lock()
	if !strings.Contains(string(w.get("/metrics").body), "feedpipe_feeds_overdue 0") {
		t.Fatal("a stale scrape has new figures")
	}
	w.s.metrics.refreshing.Unlock()
	// The next starts them in the background.
	for i := 0; ; i++ {
		if strings.Contains(string(w.get("/metrics").body), "feedpipe_feeds_overdue 3") {
			break
		}
		if i > 200 {
			t.Fatal("the new figures never came")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The figures are made again MetricsEvery after the last, or twenty times
// what the last took, and only after a change of the catalog, or a
// minute.
func TestMetricsStale(t *testing.T) {
	s := &Server{cfg: Config{MetricsEvery: 15 * time.Second}}
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		after time.Duration
		took  time.Duration
		gen   uint64 // the catalog's now; the figures saw 7
		want  bool
	}{
		{"within MetricsEvery, changed", 10 * time.Second, time.Millisecond, 8, false},
		{"past it, changed", 16 * time.Second, time.Millisecond, 8, true},
		{"past it, unchanged", 16 * time.Second, time.Millisecond, 7, false},
		{"a minute on, unchanged", 61 * time.Second, time.Millisecond, 7, true},
		{"a slow pass, changed", 16 * time.Second, 2 * time.Second, 8, false},
		{"20 times a slow pass, changed", 41 * time.Second, 2 * time.Second, 8, true},
	} {
		m := &metrics{s: s, at: at, gen: 7, took: tc.took}
		if got := m.stale(at.Add(tc.after), tc.gen); got != tc.want {
			t.Errorf("%s: stale %v, want %v", tc.name, got, tc.want)
		}
	}
	if m := (&metrics{s: s}); !m.stale(at, 0) {
		t.Error("never made: not stale")
	}
}

// parseMetrics reads an answer of /metrics: the Prometheus text format.
func parseMetrics(t testing.TB, body []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("not the text format: %v\n%s", err, body)
	}
	return families
}

// servesTheTextfile checks that the families scraped have every family
// and sample of the textfile the stages write (stats.WriteMetrics),
// computed at now from the same store, with its help, type, labels and
// value (the client writes numbers its own way); it returns the
// textfile's families.
func (w *world) servesTheTextfile(families map[string]*dto.MetricFamily, now time.Time) map[string]*dto.MetricFamily {
	t := w.t
	t.Helper()
	tot, err := stats.Compute(context.Background(), w.cat, now)
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := stats.WriteMetrics(&text, tot, stats.LoadHistogram(context.Background(), w.cat)); err != nil {
		t.Fatal(err)
	}
	written := parseMetrics(t, text.Bytes())
	for name, wf := range written {
		sf := families[name]
		if sf == nil {
			if len(wf.Metric) > 0 {
				t.Errorf("%s is not served", name)
			}
			continue
		}
		if sf.GetHelp() != wf.GetHelp() || sf.GetType() != wf.GetType() {
			t.Errorf("%s: served as %s %q, written as %s %q", name, sf.GetType(), sf.GetHelp(), wf.GetType(), wf.GetHelp())
		}
		for _, wm := range wf.Metric {
			if !slices.ContainsFunc(sf.Metric, func(sm *dto.Metric) bool { return sameSample(sm, wm) }) {
				t.Errorf("%s: the textfile's sample %v is not served", name, wm)
			}
		}
	}
	return written
}

// sampleValue is the value of the sample of the family name with the
// labels given (name, value, ...): a histogram's count.
func sampleValue(t testing.TB, families map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	mf := families[name]
	if mf == nil {
		t.Fatalf("no %s", name)
	}
metrics:
	for _, m := range mf.Metric {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, lp := range m.Label {
				if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue metrics
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	t.Fatalf("no %s%v", name, labels)
	return 0
}

// sameSample reports whether two samples have the same labels and value.
func sameSample(a, b *dto.Metric) bool {
	if len(a.Label) != len(b.Label) {
		return false
	}
	for i := range a.Label {
		if a.Label[i].GetName() != b.Label[i].GetName() || a.Label[i].GetValue() != b.Label[i].GetValue() {
			return false
		}
	}
	switch {
	case a.Counter != nil && b.Counter != nil:
		return a.Counter.GetValue() == b.Counter.GetValue()
	case a.Gauge != nil && b.Gauge != nil:
		return a.Gauge.GetValue() == b.Gauge.GetValue()
	case a.Histogram != nil && b.Histogram != nil:
		return a.Histogram.GetSampleCount() == b.Histogram.GetSampleCount() && a.Histogram.GetSampleSum() == b.Histogram.GetSampleSum()
	}
	return false
}

// TestMediaMetrics: /metrics counts the files of feed-media's queue from
// the catalog, as the textfile does: stored (files and bytes on disk,
// each file once), refused and failed by reason, queued and due.
func TestMediaMetrics(t *testing.T) {
	w := newWorld(t)
	ep, _, _, _ := w.podcast(t)
	pic := w.mixedMedia(t)
	notes := len("<html><script>alert(1)</script>notes</html>")
	// A file queued and not yet tried: due at once.
	if n, err := w.cat.QueueMedia(context.Background(), []catalog.MediaWant{{FeedID: w.ids["mixed.xml"], EntryUID: "later",
		URL: w.feeds.URL + "/later.mp3", Kind: ndjson.MediaEnclosure}}, t0.Add(3*time.Hour)); err != nil || n != 1 {
		t.Fatal(n, err)
	}
	families := parseMetrics(t, w.get("/metrics").body)
	w.servesTheTextfile(families, t0.Add(3*time.Hour))
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		// The podcast's episode and notes, the mixed feed's image and
		// the same episode.
		{"feedpipe_media_files", []string{"state", "stored"}, 4},
		{"feedpipe_media_files", []string{"state", "refused"}, 2},
		{"feedpipe_media_files", []string{"state", "failed"}, 1},
		{"feedpipe_media_files", []string{"state", "queued"}, 1},
		{"feedpipe_media_refused_files", []string{"reason", "wrong_type"}, 1},
		{"feedpipe_media_refused_files", []string{"reason", "too_large"}, 1},
		{"feedpipe_media_failed_files", []string{"reason", "http_404"}, 1},
		{"feedpipe_media_queued_due", nil, 1},
		// The episode is stored once.
		{"feedpipe_media_stored_files", nil, 3},
		{"feedpipe_media_stored_bytes", nil, float64(len(ep) + notes + len(pic))},
	} {
		if got := sampleValue(t, families, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}
