package stats

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Cycle is the summary of one cycle of the pipeline, as feed-loop ran it
// (the heartbeat of docs/design.md#heartbeat): when it started and ended, its exit status,
// and feed-store's counts of it.
type Cycle struct {
	Start  ndjson.Time `json:"start"`
	End    ndjson.Time `json:"end"`
	Status int         `json:"status"`
	// Stopped is set when a signal stopped the cycle early.
	Stopped bool             `json:"stopped"`
	Counts  map[string]int64 `json:"counts"`
}

// Heartbeat is what the store keeps of feed-loop's cycles: the last, when
// the last one that ran to its end ended, and how many there were.
type Heartbeat struct {
	Last Cycle `json:"last"`
	// Completed is the end of the last cycle whose pipeline ran to its
	// end (status 0, or 1: some feeds failed); what an alert on a loop
	// that stopped working watches.
	Completed ndjson.Time `json:"completed"`
	Cycles    int64       `json:"cycles"`
}

// Completed reports whether the cycle's pipeline ran to its end: exit
// status 0, or 1 (some feeds failed, each reported), and no signal.
func (c Cycle) Completed() bool { return (c.Status == 0 || c.Status == 1) && !c.Stopped }

// RecordCycle adds cycle c to the store's heartbeat.
func RecordCycle(ctx context.Context, cat *catalog.Catalog, c Cycle) (Heartbeat, error) {
	var h Heartbeat
	err := cat.Update(ctx, func(t *catalog.Tx) error {
		if _, err := t.Meta(catalog.MetaHeartbeat, &h); err != nil {
			return err
		}
		h.Last, h.Cycles = c, h.Cycles+1
		if h.Last.Counts == nil {
			h.Last.Counts = map[string]int64{}
		}
		if c.Completed() {
			h.Completed = c.End
		}
		return t.SetMeta(catalog.MetaHeartbeat, h)
	})
	return h, err
}

// LoadHeartbeat reads the store's heartbeat; nil when feed-loop never
// recorded a cycle (or the record cannot be read).
func LoadHeartbeat(ctx context.Context, cat *catalog.Catalog) *Heartbeat {
	var h Heartbeat
	if ok, err := cat.Meta(ctx, catalog.MetaHeartbeat, &h); !ok || err != nil {
		return nil
	}
	return &h
}

// ParseCounts reads feed-store's summary line (--summary-file), such as
// "feeds=3 not_modified=1 errors=0 new=12": a count per name.
func ParseCounts(line string) (map[string]int64, error) {
	counts := map[string]int64{}
	for _, f := range strings.Fields(line) {
		name, v, ok := strings.Cut(f, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || name == "" || err != nil {
			return nil, fmt.Errorf("stats: %q is not name=count", f)
		}
		counts[name] = n
	}
	return counts, nil
}

// countOrder is the order the summary line gives feed-store's counts in;
// others follow by name.
var countOrder = []string{"feeds", "not_modified", "same_body", "errors", "new", "updated", "bytes_saved"}

// countNames are the names of counts, in countOrder, then by name.
func countNames(counts map[string]int64) []string {
	var names []string
	for _, n := range countOrder {
		if _, ok := counts[n]; ok {
			names = append(names, n)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(counts)) {
		if !slices.Contains(countOrder, n) {
			names = append(names, n)
		}
	}
	return names
}

// Text says the heartbeat for people at now: "last cycle: ended 2m ago
// (2026-11-21T10:00:00Z), took 3.2s, status 0: feeds=40 new=17 ...".
func (h *Heartbeat) Text(now time.Time) string {
	c := h.Last
	var b strings.Builder
	fmt.Fprintf(&b, "last cycle: ended %s (%s), took %s, status %d", Ago(now, c.End.Time), c.End,
		c.End.Sub(c.Start.Time).Round(100*time.Millisecond), c.Status)
	if c.Stopped {
		b.WriteString(" (stopped)")
	}
	if names := countNames(c.Counts); len(names) > 0 {
		b.WriteString(":")
		for _, n := range names {
			fmt.Fprintf(&b, " %s=%d", n, c.Counts[n])
		}
	}
	if !c.Completed() {
		if h.Completed.IsZero() {
			b.WriteString("; no cycle has run to its end")
		} else {
			fmt.Fprintf(&b, "; the last that ran to its end ended %s", Ago(now, h.Completed.Time))
		}
	}
	return b.String()
}
