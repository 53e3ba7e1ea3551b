package stats

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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

// Family is one metric of the store's figures with its samples: the one
// list feed-stats --prometheus and --metrics-file write as text and
// feed-serve's /metrics serves (Families).
type Family struct {
	Name, Help string
	Type       string // counter, gauge or histogram
	Label      string // the name of its samples' one label; "" for none
	Samples    []Sample
	Hist       *Histogram // a histogram's counts, over DurationBounds
}

// Sample is a value of a Family, under its label's value.
type Sample struct {
	Label string
	Value float64
}

// DurationBounds are the upper bounds, in seconds, of the fetch duration
// histogram's buckets.
func DurationBounds() []float64 { return slices.Clone(durationBounds) }

// Families are the store's figures: the names of the totals, fetch
// outcomes and loop heartbeat that docs/design.md#metrics lists, from the
// totals t, the fetch duration histogram h and the loop's heartbeat in t.
func Families(t Totals, h *Histogram) []Family {
	one := func(name, typ, help string, v float64) Family {
		return Family{Name: name, Type: typ, Help: help, Samples: []Sample{{Value: v}}}
	}
	c := t.Counts
	errs := Family{Name: "feedpipe_fetch_errors_total", Type: "counter", Help: "Failed fetches, by error code.", Label: "code"}
	for _, code := range sortedKeys(c.ErrorCodes) {
		errs.Samples = append(errs.Samples, Sample{code, float64(c.ErrorCodes[code])})
	}
	out := []Family{
		{Name: "sources_total", Type: "gauge", Label: "state",
			Help: "Subscriptions, by state: enabled (in service; failing, refused and paused ones too), failing, refused (a private address not allowed), paused, disabled (by hand or by the scheduler).",
			Samples: []Sample{{"enabled", float64(t.Enabled)}, {"disabled", float64(t.Disabled)}, {"failing", float64(t.Failing)}, {"refused", float64(t.Refused)},
				{"paused", float64(t.Paused)}}},
		one("sources_fetched_total", "counter", "Fetches that succeeded (200 or 304).", float64(c.OK+c.NotModified)),
		one("sources_failed_total", "counter", "Fetches that failed.", float64(c.Errors)),
		one("items_discovered_total", "counter", "Entries stored for the first time.", float64(c.NewEntries)),
		one("feedpipe_items_updated_total", "counter", "New versions of stored entries.", float64(c.Updated)),
		{Name: "feedpipe_fetches_total", Type: "counter", Help: "Fetches, by result.", Label: "result",
			Samples: []Sample{{"ok", float64(c.OK)}, {"not_modified", float64(c.NotModified)}, {"error", float64(c.Errors)}}},
		errs,
		one("feedpipe_fetches_refused_total", "counter", "Fetches this machine refused to make: a private address of a feed not allowed one (no fetch, no failure).", float64(t.Refusals)),
		one("feedpipe_bytes_in_total", "counter", "Body bytes received, decoded.", float64(c.BytesIn)),
		one("feedpipe_bytes_saved_total", "counter", "Body bytes that conditional GET (304) spared.", float64(c.BytesSaved)),
		{Name: "fetch_duration_seconds", Type: "histogram", Help: "How long fetches took, body included.", Hist: h},
	}
	out = append(out, mediaFamilies(t.Media)...)
	hb := t.Heartbeat
	if hb == nil {
		return out
	}
	last := hb.Last
	out = append(out,
		one("feedpipe_cycles_total", "counter", "Cycles feed-loop ran (the heartbeat).", float64(hb.Cycles)),
		one("feedpipe_last_cycle_start_timestamp_seconds", "gauge", "When the last cycle started.", unixSeconds(last.Start.Time)),
		one("feedpipe_last_cycle_end_timestamp_seconds", "gauge", "When the last cycle ended.", unixSeconds(last.End.Time)),
		one("feedpipe_last_cycle_status", "gauge", "The last cycle's exit status: 0 all good, 1 some feeds failed, 2 a setup error, 130 or 143 stopped by a signal.", float64(last.Status)))
	completed := Family{Name: "feedpipe_last_completed_cycle_end_timestamp_seconds", Type: "gauge",
		Help: "When the last cycle that ran to its end (status 0 or 1) ended: alert when it is old."}
	if !hb.Completed.IsZero() {
		completed.Samples = []Sample{{Value: unixSeconds(hb.Completed.Time)}}
	}
	counts := Family{Name: "feedpipe_last_cycle_count", Type: "gauge", Label: "name",
		Help: "feed-store's counts of the last cycle, by name (feeds, not_modified, same_body, errors, new, updated, bytes_saved)."}
	for _, name := range countNames(last.Counts) {
		counts.Samples = append(counts.Samples, Sample{name, float64(last.Counts[name])})
	}
	return append(out, completed, counts)
}

// mediaFamilies are the figures of feed-media's queue (README, "Media"):
// what is stored and its bytes, what was refused or failed and why, and
// what waits.
func mediaFamilies(m catalog.MediaFigures) []Family {
	files := Family{Name: "feedpipe_media_files", Type: "gauge", Label: "state",
		Help: "Files the entries of feeds with media ask for, by state: queued (to download, or to try again), stored, refused (it breaks the feed's settings or the rules), failed (it cannot be had). A file two entries ask for counts twice."}
	for _, state := range []string{catalog.MediaQueued, catalog.MediaStored, catalog.MediaRefused, catalog.MediaFailed} {
		files.Samples = append(files.Samples, Sample{state, float64(m.Files[state])})
	}
	byReason := func(name, help string, reasons map[string]int) Family {
		f := Family{Name: name, Type: "gauge", Label: "reason", Help: help}
		for _, r := range sortedKeys(reasons) {
			f.Samples = append(f.Samples, Sample{r, float64(reasons[r])})
		}
		return f
	}
	one := func(name, help string, v float64) Family {
		return Family{Name: name, Type: "gauge", Help: help, Samples: []Sample{{Value: v}}}
	}
	return []Family{files,
		byReason("feedpipe_media_refused_files", "Files refused, never tried again, by reason: too_large, wrong_type, no_type, robots_disallowed, or the code of a private address not allowed (no request made).", m.Refused),
		byReason("feedpipe_media_failed_files", "Files given up, by the reason of their last try: http_404, timeout, ... (a failure for now is tried again up to feed-media run --max-attempts).", m.Failed),
		one("feedpipe_media_queued_due", "Queued files whose try is due: the downloads feed-media run has yet to start (alert when it stays high: nothing drains the queue, or the day's budget or the disk floor holds it).", float64(m.Due)),
		one("feedpipe_media_stored_files", "Files in the store's media/, each once: entries that share a file share its copy.", float64(m.StoredFiles)),
		one("feedpipe_media_stored_bytes", "Bytes of the files in the store's media/, each once.", float64(m.StoredBytes)),
	}
}

// WriteMetrics writes the store's figures (Families) in the Prometheus
// text format.
func WriteMetrics(w io.Writer, t Totals, h *Histogram) error {
	var b strings.Builder
	for _, f := range Families(t, h) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", f.Name, f.Help, f.Name, f.Type)
		for _, s := range f.Samples {
			b.WriteString(f.Name)
			if f.Label != "" {
				fmt.Fprintf(&b, "{%s=%q}", f.Label, s.Label)
			}
			b.WriteString(" " + strconv.FormatFloat(s.Value, 'f', -1, 64) + "\n")
		}
		if h := f.Hist; h != nil {
			var cum uint64
			for i, bound := range durationBounds {
				if i < len(h.Counts) {
					cum += h.Counts[i]
				}
				fmt.Fprintf(&b, "%s_bucket{le=%q} %d\n", f.Name, strconv.FormatFloat(bound, 'f', -1, 64), cum)
			}
			fmt.Fprintf(&b, "%s_bucket{le=\"+Inf\"} %d\n%s_sum %g\n%s_count %d\n", f.Name, h.Count, f.Name, h.Sum, f.Name, h.Count)
		}
	}
	_, err := io.WriteString(w, b.String())
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
func unixSeconds(t time.Time) float64 { return float64(t.UnixMicro()) / 1e6 }

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
