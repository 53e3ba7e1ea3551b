package fetch

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/testserver"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// countingServer is the test server, counting the requests it answers.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "feed.xml"), []byte(feedBody), 0o644); err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	h := testserver.New(dir, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func scheduledDue(t *testing.T, feedID, url string, at time.Time) string {
	t.Helper()
	d := ndjson.Due{Header: ndjson.Head(ndjson.TypeDue), FeedID: feedID, URL: url, Labels: []string{}, Reason: ndjson.ReasonScheduled}
	if !at.IsZero() {
		d.ScheduledAt = ndjson.At(at)
	}
	b, err := ndjson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReplayedDueRecords replays due records through feed-fetch against a
// real server: a scheduled run is fetched once, whether feed-store stored
// it (then nothing is emitted) or not (then its stored record is passed
// on again, without a request).
func TestReplayedDueRecords(t *testing.T) {
	s0 := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	const feed = "a1b2c3d4-0000-5000-8000-000000000001"
	tests := []struct {
		name   string
		first  []time.Time // scheduled_at of the due records of the first run
		commit bool        // feed-store committed the first run's fetches
		second []time.Time // ... and of the replay
		// Requests made, fetch records emitted and of those passed on
		// again, in the second run; and its log.
		requests, emitted, resumed int
		log                        string
	}{
		{name: "stored run replayed", first: []time.Time{s0}, commit: true, second: []time.Time{s0},
			log: "skipped: this scheduled run was fetched and stored already"},
		{name: "unstored run replayed", first: []time.Time{s0}, second: []time.Time{s0},
			emitted: 1, resumed: 1, log: "not fetched again"},
		{name: "next run", first: []time.Time{s0}, commit: true, second: []time.Time{s0.Add(time.Hour)},
			requests: 1, emitted: 1},
		{name: "older run after a later one", first: []time.Time{s0}, commit: true, second: []time.Time{s0.Add(-time.Hour)},
			log: "skipped: this scheduled run"},
		{name: "no scheduled_at names no run", first: []time.Time{{}}, commit: true, second: []time.Time{{}},
			requests: 1, emitted: 1},
		{name: "repeated in one input", first: nil, second: []time.Time{s0, s0},
			requests: 1, emitted: 1, log: "skipped a repeated due record"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, requests := countingServer(t)
			st, err := storedir.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			input := func(ats []time.Time) string {
				var b strings.Builder
				for _, at := range ats {
					b.WriteString(scheduledDue(t, feed, srv.URL+"/feed.xml", at))
				}
				return b.String()
			}
			var first runResult
			if tt.first != nil {
				first = run(t, st, input(tt.first))
				if first.err != nil || len(first.fetches) != len(tt.first) {
					t.Fatalf("first run: %v, %d fetches\n%s", first.err, len(first.fetches), first.logs)
				}
				if tt.commit {
					commit(t, st, first.fetches)
				}
			}
			before := requests.Load()
			second := run(t, st, input(tt.second))
			if second.err != nil {
				t.Fatalf("second run: %v\n%s", second.err, second.logs)
			}
			if got := requests.Load() - before; got != int64(tt.requests) {
				t.Errorf("%d requests, want %d", got, tt.requests)
			}
			if len(second.fetches) != tt.emitted {
				t.Errorf("%d fetch records, want %d", len(second.fetches), tt.emitted)
			}
			if tt.resumed > 0 && second.lines[0] != strings.TrimSuffix(first.lines[0], "\n") {
				t.Errorf("passed on\n%s\nwant the first run's record\n%s", second.lines[0], first.lines[0])
			}
			if !strings.Contains(second.logs, tt.log) || strings.Count(second.logs, "msg=skipped")+strings.Count(second.logs, "not fetched again") > 1 {
				t.Errorf("log lacks %q, or says it more than once:\n%s", tt.log, second.logs)
			}
			// fetches/ holds one record per request made.
			n := 0
			files, _ := st.DayFiles(storedir.DirFetches)
			for _, f := range files {
				st.ReadLog(f, 0, func(ndjson.Line) error { n++; return nil })
			}
			if int64(n) != requests.Load() {
				t.Errorf("fetches/ holds %d records for %d requests", n, requests.Load())
			}
		})
	}
}

// commit does to the catalog what feed-store does when it stores fetches:
// the feed's last fetch and run, and the runs' claims released.
func commit(t *testing.T, st *storedir.Store, fetches []ndjson.Fetch) {
	t.Helper()
	cat, err := catalog.Open(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	err = cat.Update(context.Background(), func(tx *catalog.Tx) error {
		for _, f := range fetches {
			fs := catalog.FeedState{FeedID: f.Due.FeedID, LastFetchAt: f.FetchedAt, LastRunAt: f.Due.ScheduledAt}
			if err := tx.PutStates(fs); err != nil {
				return err
			}
			if err := tx.ReleaseRuns(f.Due.FeedID, f.Due.ScheduledAt.Time); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestBusyRunFromBus: a run this store claimed and did not fetch (a
// worker's feed-fetch killed mid-fetch) is fetched when the bus hands it
// out again (its due record has a bus member), and skipped as another
// pipeline's otherwise.
func TestBusyRunFromBus(t *testing.T) {
	s0 := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	const feed = "a1b2c3d4-0000-5000-8000-000000000002"
	for _, fromBus := range []bool{false, true} {
		srv, requests := countingServer(t)
		st, err := storedir.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		cat, err := catalog.Open(context.Background(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cat.ClaimRuns(context.Background(), []catalog.Run{{FeedID: feed, ScheduledAt: s0}}, time.Now()); err != nil {
			t.Fatal(err)
		}
		cat.Close()
		d := ndjson.Due{Header: ndjson.Head(ndjson.TypeDue), FeedID: feed, URL: srv.URL + "/feed.xml", Labels: []string{}, ScheduledAt: ndjson.At(s0)}
		if fromBus {
			d.Bus = &ndjson.BusRef{Stream: "due", Group: "workers", ID: "1-0"}
		}
		line, err := ndjson.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		res := run(t, st, string(line))
		if res.err != nil {
			t.Fatalf("bus %v: %v\n%s", fromBus, res.err, res.logs)
		}
		want := 0
		if fromBus {
			want = 1
		}
		if got := int(requests.Load()); got != want || len(res.fetches) != want {
			t.Errorf("bus %v: %d requests, %d fetch records; want %d\n%s", fromBus, got, len(res.fetches), want, res.logs)
		}
		if fromBus && (res.fetches[0].Due.Bus == nil || res.fetches[0].Due.Bus.ID != "1-0") {
			t.Errorf("the fetch record's due lost its bus member: %+v", res.fetches[0].Due.Bus)
		}
	}
}

// TestFlushesWhenIdle: a fetch record goes out once nothing more is
// ready, while the input is still open: a stage downstream, or a bus
// worker's take waiting for its records to be handed on, is not kept
// waiting for the buffer to fill or the input to end.
func TestFlushesWhenIdle(t *testing.T) {
	srv, _ := countingServer(t)
	st, err := storedir.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	in, inW := io.Pipe()
	out, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Config{In: in, Out: ndjson.NewWriter(outW), Store: st,
			Client: httpx.New(httpx.Options{AllowPrivate: true}), Limiter: httpx.NewLimiter(1, 0, nil)})
		outW.Close()
	}()
	fmt.Fprintln(inW, scheduledDue(t, "a1b2c3d4-0000-5000-8000-000000000003", srv.URL+"/feed.xml", time.Time{}))
	got := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		got <- line
	}()
	select {
	case line := <-got:
		if !strings.HasPrefix(line, `{"type":"fetch"`) {
			t.Errorf("first line out: %q", line)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the fetch record did not come out while the input stayed open")
	}
	inW.Close()
	go io.Copy(io.Discard, out)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
