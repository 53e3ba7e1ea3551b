package stats

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/testenv"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func fixture(t *testing.T) (*storedir.Store, *catalog.Catalog) {
	t.Helper()
	st, cat := testenv.Store(t)
	cat.EditSubscriptions(context.Background(), func([]ndjson.Subscription) ([]ndjson.Subscription, error) {
		return []ndjson.Subscription{
			{Header: ndjson.Head(ndjson.TypeSubscription), FeedID: "aaaaaaaa-0000-4000-8000-000000000001", URL: "https://a.example/feed", Name: "A"},
			{Header: ndjson.Head(ndjson.TypeSubscription), FeedID: "bbbbbbbb-0000-4000-8000-000000000002", URL: "https://b.example/feed", Disabled: true},
		}, nil
	})
	err := cat.Update(context.Background(), func(tx *catalog.Tx) error {
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
	st.AppendLines(storedir.DayFile(storedir.DirEntries, now), entries, storedir.Durable)
	return st, cat
}

// rowsOf reads feed-stats --json output, by feed id ("total" for the
// total row).
func rowsOf(t *testing.T, out *bytes.Buffer) map[string]Row {
	t.Helper()
	rows := map[string]Row{}
	rd := ndjson.NewReader(out)
	for {
		l, err := rd.Next()
		if err != nil {
			return rows
		}
		var r Row
		if err := l.Decode(&r); err != nil {
			t.Fatal(err)
		}
		rows[r.FeedID] = r
	}
}

func TestRunFormats(t *testing.T) {
	st, _ := fixture(t)
	var out bytes.Buffer
	if err := Run(Config{Out: &out, Store: st, Now: now, Days: 3, Format: NDJSON}); err != nil {
		t.Fatal(err)
	}
	rows := rowsOf(t, &out)
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

// The table names each feed and shows its last error; new entries per day
// are counted over the days the store has held a younger feed (at least
// one), not the whole window.
func TestTableNamesAndRates(t *testing.T) {
	st, cat := fixture(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		created time.Time
		want    float64
	}{
		{"older than the window", now.Add(-30 * 24 * time.Hour), 1},
		{"added 2 days ago", now.Add(-48 * time.Hour), 1.5},
		{"added an hour ago: one day", now.Add(-time.Hour), 3},
		{"no creation time: the window", time.Time{}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := cat.EditSubscriptions(ctx, func(subs []ndjson.Subscription) ([]ndjson.Subscription, error) {
				subs[0].CreatedAt = ndjson.At(tc.created)
				return subs, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := Run(Config{Out: &out, Store: st, Now: now, Days: 3, Format: NDJSON}); err != nil {
				t.Fatal(err)
			}
			var a, total Row
			rd := ndjson.NewReader(&out)
			for i := 0; ; i++ {
				l, err := rd.Next()
				if err != nil {
					break
				}
				switch i {
				case 0:
					l.Decode(&a)
				case 2:
					l.Decode(&total)
				}
			}
			if a.NewPerDay != tc.want || total.NewPerDay != tc.want {
				t.Errorf("new per day %g, total %g; want %g", a.NewPerDay, total.NewPerDay, tc.want)
			}
		})
	}
	var out bytes.Buffer
	if err := Run(Config{Out: &out, Store: st, Now: now, Format: Table}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	if !regexp.MustCompile(`^FEED ID +NAME +FETCHES .* INTERVAL +STATUS$`).MatchString(lines[0]) ||
		!regexp.MustCompile(`^aaaaaaaa +A +10 .* enabled$`).MatchString(lines[1]) ||
		!regexp.MustCompile(`^bbbbbbbb +B's title +2 .* disabled by hand, last error http_404$`).MatchString(lines[2]) {
		t.Errorf("table:\n%q", lines)
	}
}

// TestTableFits: on a terminal of 120 columns the table fits it, however
// long the names and statuses (it was 143 columns and more), the last
// cycle's line too; piped, it is whole.
func TestTableFits(t *testing.T) {
	st, cat := fixture(t)
	ctx := context.Background()
	cat.EditSubscriptions(ctx, func(subs []ndjson.Subscription) ([]ndjson.Subscription, error) {
		subs[0].Name = "A feed with a name far longer than any column should have to hold"
		return subs, nil
	})
	cat.Update(ctx, func(tx *catalog.Tx) error {
		fs, _, err := tx.State("bbbbbbbb-0000-4000-8000-000000000002")
		if err != nil {
			return err
		}
		fs.LastError = &ndjson.Error{Code: "http_404_with_a_long_code", Message: "gone"}
		return tx.PutStates(fs)
	})
	RecordCycle(ctx, cat, Cycle{Start: ndjson.At(now.Add(-time.Minute)), End: ndjson.At(now), Counts: map[string]int64{"feeds": 40000, "not_modified": 31000, "same_body": 2000, "errors": 100, "new": 17000, "updated": 200, "bytes_saved": 1843221000}})
	for _, width := range []int{120, 0} {
		var out bytes.Buffer
		if err := Run(Config{Out: &out, Store: st, Catalog: cat, Now: now, Format: Table, Width: width}); err != nil {
			t.Fatal(err)
		}
		long := 0
		for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
			long = max(long, len([]rune(l)))
		}
		switch {
		case width > 0 && long > width:
			t.Errorf("width %d: a line of %d:\n%s", width, long, out.String())
		case width == 0 && (long <= 120 || !strings.Contains(out.String(), "A feed with a name far longer")):
			t.Errorf("piped: cut:\n%s", out.String())
		case !strings.Contains(out.String(), "A feed with") || !strings.Contains(out.String(), "bytes_saved="):
			t.Errorf("width %d:\n%s", width, out.String())
		}
	}
}

// feed-loop's heartbeat: each cycle recorded, shown by feed-stats (the
// table's last line, the total row) and in the metrics.
func TestHeartbeat(t *testing.T) {
	st, cat := fixture(t)
	ctx := context.Background()
	if h := LoadHeartbeat(ctx, cat); h != nil {
		t.Fatalf("a heartbeat before any cycle: %+v", h)
	}
	counts, err := ParseCounts("feeds=40 not_modified=31 same_body=2 errors=1 new=17 updated=2 bytes_saved=1843221\n")
	if err != nil {
		t.Fatal(err)
	}
	start := now.Add(-2 * time.Minute)
	ok := Cycle{Start: ndjson.At(start), End: ndjson.At(start.Add(3200 * time.Millisecond)), Status: 1, Counts: counts}
	if _, err := RecordCycle(ctx, cat, ok); err != nil {
		t.Fatal(err)
	}
	stopped := Cycle{Start: ndjson.At(now.Add(-time.Minute)), End: ndjson.At(now.Add(-50 * time.Second)), Status: 143, Stopped: true}
	h, err := RecordCycle(ctx, cat, stopped)
	if err != nil || h.Cycles != 2 || !h.Completed.Equal(ok.End.Time) || h.Last.Status != 143 {
		t.Fatalf("heartbeat %+v, %v", h, err)
	}

	var out bytes.Buffer
	if err := Run(Config{Out: &out, Store: st, Now: now, Format: Table}); err != nil {
		t.Fatal(err)
	}
	want := "last cycle: ended 50s ago (2026-11-21T11:59:10Z), took 10s, status 143 (stopped); the last that ran to its end ended 1m ago\n"
	if !strings.HasSuffix(out.String(), want) {
		t.Errorf("table ends:\n%s\nwant %s", out.String(), want)
	}
	out.Reset()
	if err := Run(Config{Out: &out, Store: st, Now: now, Format: NDJSON}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"feed_id":"total",`) || !strings.Contains(out.String(), `"last_cycle":{"last":{"start":"2026-11-21T11:59:00Z","end":"2026-11-21T11:59:10Z","status":143,"stopped":true,"counts":{}},"completed":"2026-11-21T11:58:03.2Z","cycles":2}}`) {
		t.Errorf("json:\n%s", out.String())
	}

	if _, err := RecordCycle(ctx, cat, ok); err != nil {
		t.Fatal(err)
	}
	totals, err := Compute(ctx, cat, now)
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := WriteMetrics(&out, totals, LoadHistogram(ctx, cat)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"feedpipe_cycles_total 3", "feedpipe_last_cycle_start_timestamp_seconds 1795262280",
		"feedpipe_last_cycle_end_timestamp_seconds 1795262283.2", "feedpipe_last_cycle_status 1",
		"feedpipe_last_completed_cycle_end_timestamp_seconds 1795262283.2", `feedpipe_last_cycle_count{name="feeds"} 40`,
		`feedpipe_last_cycle_count{name="bytes_saved"} 1843221`} {
		if !strings.Contains(out.String(), want+"\n") {
			t.Errorf("metrics lack %q:\n%s", want, out.String())
		}
	}
	if _, err := ParseCounts("feeds=x"); err == nil {
		t.Error("feeds=x read as a count")
	}
}

// TestRefusalsAreNoFailures: a fetch this machine refused to make (its
// address private) asked nothing of the publisher: feed-stats's rates and
// the metrics count it apart, not as a failed fetch, as the scheduler
// counts no failure of it.
func TestRefusalsAreNoFailures(t *testing.T) {
	st, cat := testenv.Store(t)
	id := "cccccccc-0000-4000-8000-000000000003"
	cat.EditSubscriptions(context.Background(), func([]ndjson.Subscription) ([]ndjson.Subscription, error) {
		return []ndjson.Subscription{{Header: ndjson.Head(ndjson.TypeSubscription), FeedID: id, URL: "http://127.0.0.1:8000/feed.xml"}}, nil
	})
	err := cat.Update(context.Background(), func(tx *catalog.Tx) error {
		return tx.PutStates(catalog.FeedState{FeedID: id, Counts: catalog.FeedCounts{Fetches: 5, OK: 1, NotModified: 1, Errors: 3,
			ErrorCodes: map[string]int{"address_refused": 2, "http_500": 1}}})
	})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Run(Config{Out: &out, Store: st, Catalog: cat, Now: now, Format: NDJSON}); err != nil {
		t.Fatal(err)
	}
	rows := rowsOf(t, &out)
	if r := rows[id]; r.Fetches != 3 || r.Refused != 2 || r.ErrorRate != 1.0/3 || r.OKRate != 1.0/3 {
		t.Errorf("row: %+v", r)
	}
	if r := rows["total"]; r.Fetches != 3 || r.Refused != 2 || r.ErrorRate != 1.0/3 {
		t.Errorf("total: %+v", r)
	}
	tot, err := Compute(context.Background(), cat, now)
	if err != nil {
		t.Fatal(err)
	}
	var metrics bytes.Buffer
	WriteMetrics(&metrics, tot, &Histogram{})
	for _, want := range []string{"\nsources_failed_total 1\n", "feedpipe_fetches_total{result=\"error\"} 1\n", "sources_total{state=\"failing\"} 0\n"} {
		if !strings.Contains(metrics.String(), want) {
			t.Errorf("metrics lack %q:\n%s", want, metrics.String())
		}
	}
	if strings.Contains(metrics.String(), "address_refused") {
		t.Errorf("refusals among the fetch errors:\n%s", metrics.String())
	}
}

// TestMediaMetrics: the textfile has the media families, every state of
// a file whether or not one is in it, the reasons there are.
func TestMediaMetrics(t *testing.T) {
	var out bytes.Buffer
	m := catalog.MediaFigures{Files: map[string]int{"stored": 3, "refused": 1}, Refused: map[string]int{"too_large": 1},
		Failed: map[string]int{}, Due: 2, StoredFiles: 2, StoredBytes: 1 << 20}
	if err := WriteMetrics(&out, Totals{Media: m}, &Histogram{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# TYPE feedpipe_media_files gauge", `feedpipe_media_files{state="queued"} 0`, `feedpipe_media_files{state="stored"} 3`,
		`feedpipe_media_files{state="failed"} 0`, `feedpipe_media_refused_files{reason="too_large"} 1`, "# TYPE feedpipe_media_failed_files gauge",
		"feedpipe_media_queued_due 2", "feedpipe_media_stored_files 2", "feedpipe_media_stored_bytes 1048576"} {
		if !strings.Contains(out.String(), want+"\n") {
			t.Errorf("metrics lack %q:\n%s", want, out.String())
		}
	}
}
