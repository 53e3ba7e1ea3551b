package stats

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
)

// durationBounds are the upper bounds, in seconds, of the fetch duration
// histogram's buckets.
var durationBounds = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// Histogram counts fetch durations, for fetch_duration_seconds. It adds up
// across runs: feed-store keeps it in the store.
type Histogram struct {
	Counts []uint64 `json:"counts"` // per bucket of durationBounds, then +Inf
	Sum    float64  `json:"sum"`
	Count  uint64   `json:"count"`
}

// Observe counts one duration in seconds.
func (h *Histogram) Observe(secs float64) {
	if len(h.Counts) != len(durationBounds)+1 {
		h.Counts = make([]uint64, len(durationBounds)+1)
	}
	i, _ := slices.BinarySearch(durationBounds, secs)
	h.Counts[i]++
	h.Sum += secs
	h.Count++
}

// LoadHistogram reads the store's fetch duration histogram; an absent or
// unreadable one starts empty.
func LoadHistogram(ctx context.Context, cat *catalog.Catalog) *Histogram {
	h := &Histogram{}
	if ok, err := cat.Meta(ctx, catalog.MetaHistogram, h); !ok || err != nil || len(h.Counts) != len(durationBounds)+1 {
		*h = Histogram{}
	}
	return h
}

// SaveHistogram writes it back.
func SaveHistogram(ctx context.Context, cat *catalog.Catalog, h *Histogram) error {
	return cat.SetMeta(ctx, catalog.MetaHistogram, h)
}

// WriteMetrics writes the store's figures in the Prometheus text format:
// the names and totals of docs/design.md#metrics.
func WriteMetrics(w io.Writer, t Totals, h *Histogram) error {
	var err error
	p := func(format string, args ...any) {
		if err == nil {
			_, err = fmt.Fprintf(w, format, args...)
		}
	}
	metric := func(name, typ, help string) {
		p("# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	metric("sources_total", "gauge", "Subscriptions, by state: enabled (in service; failing and paused ones too), failing, paused, disabled (by hand or by the scheduler).")
	p("sources_total{state=\"enabled\"} %d\nsources_total{state=\"disabled\"} %d\nsources_total{state=\"failing\"} %d\nsources_total{state=\"paused\"} %d\n",
		t.Enabled, t.Disabled, t.Failing, t.Paused)
	metric("sources_fetched_total", "counter", "Fetches that succeeded (200 or 304).")
	p("sources_fetched_total %d\n", t.Counts.OK+t.Counts.NotModified)
	metric("sources_failed_total", "counter", "Fetches that failed.")
	p("sources_failed_total %d\n", t.Counts.Errors)
	metric("items_discovered_total", "counter", "Entries stored for the first time.")
	p("items_discovered_total %d\n", t.Counts.NewEntries)
	metric("feedpipe_items_updated_total", "counter", "New versions of stored entries.")
	p("feedpipe_items_updated_total %d\n", t.Counts.Updated)
	metric("feedpipe_fetches_total", "counter", "Fetches, by result.")
	p("feedpipe_fetches_total{result=\"ok\"} %d\nfeedpipe_fetches_total{result=\"not_modified\"} %d\nfeedpipe_fetches_total{result=\"error\"} %d\n",
		t.Counts.OK, t.Counts.NotModified, t.Counts.Errors)
	metric("feedpipe_fetch_errors_total", "counter", "Failed fetches, by error code.")
	for _, code := range sortedKeys(t.Counts.ErrorCodes) {
		p("feedpipe_fetch_errors_total{code=%q} %d\n", code, t.Counts.ErrorCodes[code])
	}
	metric("feedpipe_bytes_in_total", "counter", "Body bytes received, decoded.")
	p("feedpipe_bytes_in_total %d\n", t.Counts.BytesIn)
	metric("feedpipe_bytes_saved_total", "counter", "Body bytes that conditional GET (304) spared.")
	p("feedpipe_bytes_saved_total %d\n", t.Counts.BytesSaved)
	metric("fetch_duration_seconds", "histogram", "How long fetches took, body included.")
	var cum uint64
	for i, bound := range durationBounds {
		if i < len(h.Counts) {
			cum += h.Counts[i]
		}
		p("fetch_duration_seconds_bucket{le=%q} %d\n", strconv.FormatFloat(bound, 'f', -1, 64), cum)
	}
	p("fetch_duration_seconds_bucket{le=\"+Inf\"} %d\nfetch_duration_seconds_sum %g\nfetch_duration_seconds_count %d\n", h.Count, h.Sum, h.Count)
	if hb := t.Heartbeat; hb != nil {
		c := hb.Last
		metric("feedpipe_cycles_total", "counter", "Cycles feed-loop ran (the heartbeat, seed 004 §7).")
		p("feedpipe_cycles_total %d\n", hb.Cycles)
		metric("feedpipe_last_cycle_start_timestamp_seconds", "gauge", "When the last cycle started.")
		p("feedpipe_last_cycle_start_timestamp_seconds %s\n", unixSeconds(c.Start.Time))
		metric("feedpipe_last_cycle_end_timestamp_seconds", "gauge", "When the last cycle ended.")
		p("feedpipe_last_cycle_end_timestamp_seconds %s\n", unixSeconds(c.End.Time))
		metric("feedpipe_last_cycle_status", "gauge", "The last cycle's exit status: 0 all good, 1 some feeds failed, 2 a setup error, 130 or 143 stopped by a signal.")
		p("feedpipe_last_cycle_status %d\n", c.Status)
		metric("feedpipe_last_completed_cycle_end_timestamp_seconds", "gauge", "When the last cycle that ran to its end (status 0 or 1) ended: alert when it is old.")
		if !hb.Completed.IsZero() {
			p("feedpipe_last_completed_cycle_end_timestamp_seconds %s\n", unixSeconds(hb.Completed.Time))
		}
		metric("feedpipe_last_cycle_count", "gauge", "feed-store's counts of the last cycle, by name (feeds, not_modified, same_body, errors, new, updated, bytes_saved).")
		for _, name := range countNames(c.Counts) {
			p("feedpipe_last_cycle_count{name=%q} %d\n", name, c.Counts[name])
		}
	}
	return err
}

// WriteMetricsFile writes the metrics to path atomically, as node_exporter's
// textfile collector needs: it must never read a half-written file.
func WriteMetricsFile(path string, t Totals, h *Histogram) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".metrics-*")
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := WriteMetrics(tmp, t, h); err != nil {
		tmp.Close()
		return fmt.Errorf("metrics: %w", err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("metrics: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}

// unixSeconds is t as Prometheus writes times: Unix seconds, with the
// fraction.
func unixSeconds(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMicro())/1e6, 'f', -1, 64)
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
