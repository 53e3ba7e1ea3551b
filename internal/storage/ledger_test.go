package storage

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

func TestRunLedger(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	fetch := func(feed string, scheduled time.Time, id string, fetched time.Time) *ndjson.Fetch {
		return &ndjson.Fetch{Header: ndjson.Head(ndjson.TypeFetch), FetchID: id, FetchedAt: ndjson.At(fetched),
			Due: ndjson.Due{FeedID: feed, ScheduledAt: ndjson.At(scheduled)}}
	}
	tests := []struct {
		name    string
		records []*ndjson.Fetch
		feed    string
		want    string // fetch id of the last run; "" for none
	}{
		{"none", nil, "aa01", ""},
		{"one", []*ndjson.Fetch{fetch("aa01", t0, "f1", t0)}, "aa01", "f1"},
		{"latest scheduled wins", []*ndjson.Fetch{fetch("aa01", t0.Add(time.Hour), "f2", t0), fetch("aa01", t0, "f1", t0.Add(time.Minute))}, "aa01", "f2"},
		{"other feed in the shard", []*ndjson.Fetch{fetch("aa02", t0, "f1", t0)}, "aa01", ""},
		{"page fetches are no run", []*ndjson.Fetch{func() *ndjson.Fetch { f := fetch("aa01", t0, "p1", t0); f.Page = &ndjson.Page{}; return f }()}, "aa01", ""},
		{"no scheduled_at is no run", []*ndjson.Fetch{fetch("aa01", time.Time{}, "f1", t0)}, "aa01", ""},
		{"odd feed id", []*ndjson.Fetch{fetch("zz", t0, "f1", t0)}, "zz", "f1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, _ := Open(t.TempDir())
			if err := st.AppendFetches(tt.records); err != nil {
				t.Fatal(err)
			}
			r, ok, err := st.Ledger(false).LastRun(tt.feed)
			if err != nil || ok != (tt.want != "") || r.FetchID != tt.want {
				t.Fatalf("LastRun = %+v, %v, %v; want fetch %q", r, ok, err, tt.want)
			}
			if !ok {
				return
			}
			line, found, err := st.RecordedFetch(r)
			if err != nil || !found || !strings.Contains(string(line), `"fetch_id":"`+tt.want+`"`) {
				t.Fatalf("RecordedFetch = %s, %v, %v", line, found, err)
			}
		})
	}
}

func TestRunLedgerCompactsAndSurvivesATornLine(t *testing.T) {
	st, _ := Open(t.TempDir())
	t0 := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	for i := range 200 {
		at := t0.Add(time.Duration(i) * time.Minute)
		f := &ndjson.Fetch{Header: ndjson.Head(ndjson.TypeFetch), FetchID: "id" + at.Format("1504"), FetchedAt: ndjson.At(at),
			Due: ndjson.Due{FeedID: "ab01", ScheduledAt: ndjson.At(at)}}
		if err := st.AppendFetches([]*ndjson.Fetch{f}); err != nil {
			t.Fatal(err)
		}
	}
	key := ledgerShard(ledgerFetched, "ab01")
	f, _ := os.OpenFile(st.Path(key), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("ab01\t2030-01-01T00:00:00Z\ttorn") // a crash mid-append
	f.Close()
	r, ok, err := st.Ledger(false).LastRun("ab01")
	if err != nil || !ok || r.FetchID != "id1219" {
		t.Fatalf("LastRun = %+v, %v, %v", r, ok, err)
	}
	b, _ := os.ReadFile(st.Path(key))
	if n := strings.Count(string(b), "\n"); n != 1 {
		t.Fatalf("compacted shard has %d lines:\n%s", n, b)
	}
	if line, ok, _ := st.RecordedFetch(r); !ok || !strings.Contains(string(line), "id1219") {
		t.Fatalf("record of the last run: %s", line)
	}
}

func TestStoredLedger(t *testing.T) {
	st, _ := Open(t.TempDir())
	t0 := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	if err := st.RecordCommitted([]Committed{{FeedID: "cd01", FetchID: "f1", FetchedAt: t0}}); err != nil {
		t.Fatal(err)
	}
	l := st.Ledger(true)
	for _, tt := range []struct {
		feed, id string
		at       time.Time
		want     bool
	}{
		{"cd01", "f1", t0, true},
		{"cd01", "f0", t0.Add(-time.Minute), true}, // an earlier fetch: superseded
		{"cd01", "f2", t0.Add(time.Minute), false},
		{"cd02", "f1", t0, false},
	} {
		if got, err := l.IsCommitted(tt.feed, tt.id, tt.at); err != nil || got != tt.want {
			t.Errorf("IsCommitted(%s, %s, %s) = %v, %v", tt.feed, tt.id, tt.at, got, err)
		}
	}
	l.NoteCommitted(Committed{FeedID: "cd01", FetchID: "f2", FetchedAt: t0.Add(time.Minute)})
	if got, _ := l.IsCommitted("cd01", "f2", t0.Add(time.Minute)); !got {
		t.Error("a commit noted in memory is not seen")
	}
}

func TestCompactLedgers(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	old := t0.Add(-30 * 24 * time.Hour)
	fetch := func(feed, id string, at time.Time) *ndjson.Fetch {
		return &ndjson.Fetch{Header: ndjson.Head(ndjson.TypeFetch), FetchID: id, FetchedAt: ndjson.At(at),
			Due: ndjson.Due{FeedID: feed, ScheduledAt: ndjson.At(at)}}
	}
	goneBefore := func(cut time.Time) func(string, time.Time) bool {
		return func(_ string, at time.Time) bool { return at.Before(cut) }
	}
	tests := []struct {
		name    string
		fetches []*ndjson.Fetch
		gone    func(string, time.Time) bool
		dry     bool
		dropped int      // feeds, in both ledgers
		runs    []string // feeds with a last run after
	}{
		{"nothing gone: one line a feed", []*ndjson.Fetch{fetch("aa01", "f1", old), fetch("aa01", "f2", t0), fetch("aa02", "f3", t0)},
			goneBefore(old), false, 0, []string{"aa01", "aa02"}},
		{"a feed whose last fetch is gone", []*ndjson.Fetch{fetch("aa01", "f1", old), fetch("aa02", "f2", old), fetch("aa02", "f3", t0)},
			goneBefore(t0.Add(-time.Hour)), false, 2, []string{"aa02"}},
		{"dry run: counted, kept", []*ndjson.Fetch{fetch("aa01", "f1", old)},
			goneBefore(t0), true, 2, []string{"aa01"}},
		{"a kept record keeps its line", []*ndjson.Fetch{fetch("aa01", "keep", old), fetch("bb01", "f2", old)},
			func(id string, at time.Time) bool { return id != "keep" }, false, 2, []string{"aa01"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, _ := Open(t.TempDir())
			if err := st.AppendFetches(tt.fetches); err != nil {
				t.Fatal(err)
			}
			var cs []Committed
			for _, f := range tt.fetches {
				cs = append(cs, Committed{FeedID: f.Due.FeedID, FetchID: f.FetchID, FetchedAt: f.FetchedAt.Time})
			}
			if err := st.RecordCommitted(cs); err != nil {
				t.Fatal(err)
			}
			dropped, err := st.CompactLedgers(tt.gone, tt.dry)
			if err != nil || dropped != tt.dropped {
				t.Fatalf("CompactLedgers = %d, %v; want %d", dropped, err, tt.dropped)
			}
			var have []string
			l := st.Ledger(false)
			for _, feed := range []string{"aa01", "aa02", "bb01"} {
				r, ok, err := l.LastRun(feed)
				c, cok, err2 := l.LastCommitted(feed)
				if err != nil || err2 != nil || ok != cok || ok && r.FetchID != c.FetchID {
					t.Fatalf("%s: run %+v %v, commit %+v %v (%v, %v)", feed, r, ok, c, cok, err, err2)
				}
				if ok {
					have = append(have, feed)
				}
			}
			if strings.Join(have, " ") != strings.Join(tt.runs, " ") {
				t.Errorf("feeds with a run: %v, want %v", have, tt.runs)
			}
			if !tt.dry {
				// Compacted: one line a feed left.
				b, _ := os.ReadFile(st.Path(ledgerShard(ledgerFetched, "aa01")))
				if n := strings.Count(string(b), "\n"); n > 2 {
					t.Errorf("shard aa holds %d lines:\n%s", n, b)
				}
			}
		})
	}
}
