package stats

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/storage"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func fixture(t *testing.T) (*storage.Store, *catalog.Catalog) {
	t.Helper()
	st, err := storage.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Open(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	cat.EditSubscriptions(context.Background(), func([]ndjson.Subscription) ([]ndjson.Subscription, error) {
		return []ndjson.Subscription{
			{Header: ndjson.Head(ndjson.TypeSubscription), FeedID: "aaaaaaaa-0000-4000-8000-000000000001", URL: "https://a.example/feed", Name: "A"},
			{Header: ndjson.Head(ndjson.TypeSubscription), FeedID: "bbbbbbbb-0000-4000-8000-000000000002", URL: "https://b.example/feed", Disabled: true},
		}, nil
	})
	err = cat.Update(context.Background(), func(tx *catalog.Tx) error {
		return tx.PutStates(catalog.FeedState{FeedID: "aaaaaaaa-0000-4000-8000-000000000001", IntervalSec: 3600, Counts: catalog.FeedCounts{Fetches: 10, OK: 6, NotModified: 3, Errors: 1,
			ErrorCodes: map[string]int{"http_500": 1}, BytesIn: 60000, BytesSaved: 30000, NewEntries: 14}},
			catalog.FeedState{FeedID: "bbbbbbbb-0000-4000-8000-000000000002", Title: "B's title", ConsecutiveFailures: 2, LastError: &ndjson.Error{Code: "http_404", Message: "HTTP 404"},
				Counts: catalog.FeedCounts{Fetches: 2, Errors: 2, ErrorCodes: map[string]int{"http_404": 2}}})
	})
	if err != nil {
		t.Fatal(err)
	}
	var entries []byte
	for i, size := range []int{100, 300, 200} {
		e := ndjson.Entry{Header: ndjson.Head(ndjson.TypeEntry), EntryUID: fmt.Sprintf("%016x", i), FeedID: "aaaaaaaa-0000-4000-8000-000000000001", ContentHash: "h",
			Status: ndjson.StatusNew, Content: strings.Repeat("x", size)}
		b, _ := ndjson.Marshal(e)
		entries = append(entries, b...)
	}
	st.AppendLines(storage.DayFile(storage.DirEntries, now), entries, storage.Durable)
	return st, cat
}

func TestRunFormats(t *testing.T) {
	st, _ := fixture(t)
	var out bytes.Buffer
	if err := Run(Config{Out: &out, Store: st, Now: now, Days: 3, Format: NDJSON}); err != nil {
		t.Fatal(err)
	}
	rows := map[string]Row{}
	rd := ndjson.NewReader(&out)
	for {
		l, err := rd.Next()
		if err != nil {
			break
		}
		var r Row
		if err := l.Decode(&r); err != nil {
			t.Fatal(err)
		}
		rows[r.FeedID] = r
	}
	a, b, total := rows["aaaaaaaa-0000-4000-8000-000000000001"], rows["bbbbbbbb-0000-4000-8000-000000000002"], rows["total"]
	if a.Fetches != 10 || a.OKRate != 0.6 || a.NotModifiedRate != 0.3 || a.ErrorRate != 0.1 || a.BytesSaved != 30000 || a.NewPerDay != 1 || a.MedianArticle != 200 || a.State != "enabled" || a.Name != "A" {
		t.Errorf("a: %+v", a)
	}
	if b.State != "disabled" || b.Name != "B's title" || b.LastError != "http_404: HTTP 404" || b.ErrorRate != 1 {
		t.Errorf("b: %+v", b)
	}
	if total.Fetches != 12 || total.NewEntries != 14 || total.BytesIn != 60000 || total.Type != TypeStats {
		t.Errorf("total: %+v", total)
	}

	out.Reset()
	Run(Config{Out: &out, Store: st, Now: now, Format: CSV})
	recs, err := csv.NewReader(&out).ReadAll()
	if err != nil || len(recs) != 4 || recs[0][0] != "feed_id" || recs[3][0] != "total" || recs[1][5] != "0.6000" {
		t.Errorf("csv %v %v", recs, err)
	}
	out.Reset()
	Run(Config{Out: &out, Store: st, Now: now, Format: Table})
	for _, want := range []string{"FEED ID", "aaaaaaaa", "60%", "29.3K", "1h0m0s", "disabled", "total"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

func TestMetrics(t *testing.T) {
	_, cat := fixture(t)
	ctx := context.Background()
	h := LoadHistogram(ctx, cat)
	for _, secs := range []float64{0.01, 0.3, 0.3, 7, 100} {
		h.Observe(secs)
	}
	if err := SaveHistogram(ctx, cat, h); err != nil {
		t.Fatal(err)
	}
	totals, err := Compute(ctx, cat, now)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "feedpipe.prom")
	if err := WriteMetricsFile(path, totals, LoadHistogram(ctx, cat)); err != nil {
		t.Fatal(err)
	}
	text, _ := os.ReadFile(path)
	for _, want := range []string{
		"# TYPE sources_total gauge", `sources_total{state="enabled"} 1`, `sources_total{state="disabled"} 1`,
		"sources_fetched_total 9", "sources_failed_total 3", "items_discovered_total 14",
		`feedpipe_fetch_errors_total{code="http_404"} 2`, "feedpipe_bytes_saved_total 30000",
		`fetch_duration_seconds_bucket{le="0.05"} 1`, `fetch_duration_seconds_bucket{le="0.5"} 3`, `fetch_duration_seconds_bucket{le="10"} 4`,
		`fetch_duration_seconds_bucket{le="+Inf"} 5`, "fetch_duration_seconds_count 5",
	} {
		if !strings.Contains(string(text), want+"\n") {
			t.Errorf("metrics lack %q:\n%s", want, text)
		}
	}
}
