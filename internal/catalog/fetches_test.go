package catalog

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/testids"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// TestClaimRunsAsOneAtATime checks that ClaimRuns, which claims a batch in
// a few statements, claims exactly as claim does one run after another:
// the same answers and the same runs table, for every case of a run and a
// batch of more runs than one statement takes.
func TestClaimRunsAsOneAtATime(t *testing.T) {
	at := t0.Add(time.Hour)
	var batch []Run
	for i := range 2*maxRowsPerStatement + 10 {
		batch = append(batch, Run{FeedID: testids.Feed(fmt.Sprint("new", i)), ScheduledAt: t0})
	}
	batch = append(batch,
		Run{FeedID: testids.Feed("stored"), ScheduledAt: t0},
		Run{FeedID: testids.Feed("busy"), ScheduledAt: t0},
		Run{FeedID: testids.Feed("busy-later"), ScheduledAt: t0},
		Run{FeedID: testids.Feed("stale"), ScheduledAt: t0},
		Run{FeedID: testids.Feed("fetched"), ScheduledAt: t0},
		Run{FeedID: testids.Feed("pruned"), ScheduledAt: t0},
		// A feed's second run of the batch sees its first's claim.
		Run{FeedID: testids.Feed("new1"), ScheduledAt: t0.Add(-time.Minute)},
		Run{FeedID: testids.Feed("new2"), ScheduledAt: t0.Add(time.Minute)},
		Run{FeedID: testids.Feed("stale"), ScheduledAt: t0.Add(-time.Minute)},
		// Feeds the catalog does not know yet.
		Run{FeedID: testids.Feed("unknown"), ScheduledAt: t0},
		Run{FeedID: testids.Feed("unknown"), ScheduledAt: t0},
		Run{FeedID: testids.Feed("unknown2"), ScheduledAt: t0.Add(time.Minute)},
	)
	setup := func(c *Catalog) {
		t.Helper()
		claim := func(r Run, at time.Time) {
			if _, err := c.ClaimRuns(ctx, []Run{r}, at); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 2*maxRowsPerStatement + 10 {
			if i%2 == 0 { // half the feeds are known: their keys are made
				claim(Run{FeedID: testids.Feed(fmt.Sprint("new", i)), ScheduledAt: t0.Add(-time.Hour)}, t0.Add(-time.Hour))
			}
		}
		claim(Run{FeedID: testids.Feed("busy"), ScheduledAt: t0}, at.Add(-time.Minute))
		claim(Run{FeedID: testids.Feed("busy-later"), ScheduledAt: t0.Add(time.Hour)}, at.Add(-time.Minute))
		claim(Run{FeedID: testids.Feed("stale"), ScheduledAt: t0}, at.Add(-ClaimStale-time.Minute))
		claim(Run{FeedID: testids.Feed("fetched"), ScheduledAt: t0}, at.Add(-time.Minute))
		claim(Run{FeedID: testids.Feed("pruned"), ScheduledAt: t0}, at.Add(-time.Minute))
		err := c.Update(ctx, func(t *Tx) error {
			if err := t.PutStates(FeedState{FeedID: testids.Feed("stored"), LastRunAt: ndjson.At(t0)}); err != nil {
				return err
			}
			for _, name := range []string{"fetched", "pruned"} {
				f := ndjson.Fetch{FetchID: testids.Fetch(name), Due: ndjson.Due{FeedID: testids.Feed(name), ScheduledAt: ndjson.At(t0)},
					FetchedAt: ndjson.At(t0), HTTPStatus: 304}
				if err := t.IndexFetch(&f, Location{Day: "2026-11-21", Length: 10}); err != nil {
					return err
				}
			}
			_, err := t.write(once, `DELETE FROM fetches WHERE fetch_id = ?`, testids.Fetch("pruned"))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	batched, single := openTemp(t), openTemp(t)
	setup(batched)
	setup(single)
	got, err := batched.ClaimRuns(ctx, batch, at)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]ClaimResult, len(batch))
	err = single.Update(ctx, func(t *Tx) error {
		for i, r := range batch {
			res, err := t.claim(r, at)
			if err != nil {
				return err
			}
			want[i] = res
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		for i := range got {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Errorf("run %d %+v: got %+v, want %+v", i, batch[i], got[i], want[i])
			}
		}
	}
	kinds := map[Claim]int{}
	for _, r := range got {
		kinds[r.Claim]++
	}
	if kinds[ClaimFetch] < 2*maxRowsPerStatement || kinds[ClaimStored] == 0 || kinds[ClaimBusy] == 0 || kinds[ClaimFetched] == 0 {
		t.Errorf("not every case was tried: %v", kinds)
	}
	sameTable(t, "runs", runsTable(t, batched), runsTable(t, single))
}

// TestIndexFetchesAsOneAtATime checks IndexFetches against IndexFetch
// record by record: the same fetches and runs tables, a fetch id given
// twice and a run fetched twice in one batch included.
func TestIndexFetchesAsOneAtATime(t *testing.T) {
	var (
		runs    []Run
		records []*ndjson.Fetch
		locs    []Location
	)
	for i := range maxRowsPerStatement + 20 {
		feed := testids.Feed(fmt.Sprint("f", i%(maxRowsPerStatement/2)))
		sched := t0.Add(time.Duration(i/(maxRowsPerStatement/2)) * time.Minute)
		if i%3 == 0 {
			runs = append(runs, Run{FeedID: feed, ScheduledAt: sched})
		}
		f := &ndjson.Fetch{FetchID: testids.Fetch(fmt.Sprint("x", i)), Due: ndjson.Due{FeedID: feed, ScheduledAt: ndjson.At(sched)},
			FetchedAt: ndjson.At(t0.Add(time.Duration(i) * time.Second)), HTTPStatus: 200}
		if i%2 == 0 {
			f.BodyRef = &ndjson.BlobRef{Key: fmt.Sprintf("raw/2026-11-21/%064x.zst", i)}
		}
		if i%7 == 0 {
			f.Due.ScheduledAt = ndjson.Time{}
		}
		records = append(records, f)
		locs = append(locs, Location{Day: "2026-11-21", Offset: int64(i) * 10, Length: 10})
	}
	// The same record again, and another fetch of a run fetched already.
	records = append(records, records[3], &ndjson.Fetch{FetchID: testids.Fetch("again"), Due: records[3].Due, FetchedAt: ndjson.At(t0), HTTPStatus: 304})
	locs = append(locs, Location{Day: "2026-11-21", Offset: 9000, Length: 10}, Location{Day: "2026-11-21", Offset: 9010, Length: 10})
	records = append(records, &ndjson.Fetch{FetchID: testids.Fetch("unknown"), Due: ndjson.Due{FeedID: testids.Feed("unknown")}, FetchedAt: ndjson.At(t0)})
	locs = append(locs, Location{Day: "2026-11-21", Offset: 9020, Length: 10})

	batched, single := openTemp(t), openTemp(t)
	for _, c := range []*Catalog{batched, single} {
		if _, err := c.ClaimRuns(ctx, runs, t0); err != nil {
			t.Fatal(err)
		}
	}
	if err := batched.Update(ctx, func(t *Tx) error { return t.IndexFetches(records, locs) }); err != nil {
		t.Fatal(err)
	}
	err := single.Update(ctx, func(t *Tx) error {
		for i, f := range records {
			if err := t.IndexFetches([]*ndjson.Fetch{f}, []Location{locs[i]}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sameTable(t, "runs", runsTable(t, batched), runsTable(t, single))
	got := fetchesTable(t, batched)
	sameTable(t, "fetches", got, fetchesTable(t, single))
	if len(got) != len(records)-1 {
		t.Errorf("%d fetches indexed, want %d", len(got), len(records)-1)
	}
}

// sameTable reports the rows of one table and not the other.
func sameTable(t *testing.T, name string, got, want []string) {
	t.Helper()
	for _, r := range got {
		if !slices.Contains(want, r) {
			t.Errorf("%s: extra row %s", name, r)
		}
	}
	for _, r := range want {
		if !slices.Contains(got, r) {
			t.Errorf("%s: missing row %s", name, r)
		}
	}
}

func runsTable(t *testing.T, c *Catalog) []string {
	return table(t, c, `SELECT f.feed_id || ' ' || r.scheduled_at || ' ' || r.claimed_at || ' ' || coalesce(r.fetch_id, '-')
		FROM runs r JOIN feeds f ON f.key = r.feed_key ORDER BY 1`)
}

func fetchesTable(t *testing.T, c *Catalog) []string {
	return table(t, c, `SELECT x.fetch_id || ' ' || f.feed_id || ' ' || x.fetched_at || ' ' || x.http_status || ' ' || coalesce(x.body_key, '-')
		|| ' ' || x.day || ' ' || x.offset || ' ' || x.length FROM fetches x JOIN feeds f ON f.key = x.feed_key ORDER BY 1`)
}

func table(t *testing.T, c *Catalog, q string) []string {
	t.Helper()
	rows, err := c.read(ctx, once, q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// BenchmarkClaimAndIndex is feed-fetch's catalog work for a cycle of
// 2,000 feeds, per run: claims in batches of 1,024, then the fetch
// records indexed in batches of 128; cpu-µs/run is the CPU time of the
// process (user and system) per run.
func BenchmarkClaimAndIndex(b *testing.B) {
	c := openTemp(b)
	const feeds = 2000
	loc := Location{Day: "2026-11-21", Length: 10}
	var cpu int64
	for i := 0; b.Loop(); i++ {
		start := cpuTime()
		at := t0.Add(time.Duration(i) * time.Minute)
		runs := make([]Run, feeds)
		records := make([]*ndjson.Fetch, feeds)
		placed := make([]storedir.Placed, feeds)
		for j := range runs {
			runs[j] = Run{FeedID: testids.Feed(fmt.Sprint(j)), ScheduledAt: at}
			records[j] = &ndjson.Fetch{FetchID: fmt.Sprintf("%08x-0000-7000-8000-%012x", i, j), Due: ndjson.Due{FeedID: runs[j].FeedID, ScheduledAt: ndjson.At(at)},
				FetchedAt: ndjson.At(at), HTTPStatus: 304}
			placed[j] = storedir.Placed{Key: "fetches/2026-11-21.ndjson", Offset: int64(i*feeds+j) * loc.Length, Length: loc.Length}
		}
		for k := 0; k < feeds; k += 1024 {
			if _, err := c.ClaimRuns(ctx, runs[k:min(k+1024, feeds)], at); err != nil {
				b.Fatal(err)
			}
		}
		ix := c.FetchIndexer(ctx)
		for k := 0; k < feeds; k += 128 {
			if err := ix.Index(records[k:min(k+128, feeds)], placed[k:min(k+128, feeds)]); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		cpu += cpuTime() - start
		err := c.Update(ctx, func(t *Tx) error {
			for _, r := range runs {
				if err := t.ReleaseRuns(r.FeedID, at); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu)/1e3/float64(b.N*feeds), "cpu-µs/run")
}
