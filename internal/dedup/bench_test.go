package dedup

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/benchgen"
	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/ids"
	"github.com/feedpipe/feedpipe/internal/testenv"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// The fetches of BenchmarkDedup are those of scripts/bench-store (made by
// tools/benchstore): per feed, 100 entries of which 96 stored unchanged,
// 1 stored and edited since, 3 never stored, then the fetch record.
const (
	benchFeeds   = 100
	benchStored  = 100 // entries stored per feed
	benchPer     = 100 // entries per fetch
	benchNew     = 3
	benchUpdated = 1
)

// benchEntry is feed f's k-th entry, version v (0 as stored), as
// tools/benchstore makes it (120 bytes of summary).
func benchEntry(f, k, v int) ndjson.Entry {
	feedID := ids.FeedID(fmt.Sprintf("https://publisher%d.example.org/feed/%d.xml", f%5000, f))
	published := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(k*benchFeeds+f) * time.Minute)
	return benchgen.Entry(feedID, f, k, v, 120, published)
}

func benchFetchID(f int) string { return fmt.Sprintf("0190a000-0000-7000-8000-%012x", f) }

// BenchmarkDedup times feed-dedup over benchFeeds fetches of 100 entries
// of a catalog holding benchStored entries of each feed; ns/fetch and
// cpu-ns/fetch (the process's CPU time, the garbage collector's included)
// are per fetch.
func BenchmarkDedup(b *testing.B) {
	st, cat := testenv.Store(b)
	ctx := context.Background()
	at := ndjson.At(time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC))
	err := cat.Update(ctx, func(tx *catalog.Tx) error {
		for f := range benchFeeds {
			for k := range benchStored {
				e := benchEntry(f, k, 0)
				e.FirstSeen, e.LastSeen, e.SeenCount = at, at, 1
				if err := tx.StoreVersion(&e, catalog.Location{Day: "2026-11-20", Offset: int64(k), Length: 900}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	var in bytes.Buffer
	for f := range benchFeeds {
		for k := benchStored - (benchPer - benchNew); k < benchStored+benchNew; k++ {
			v := 0
			if k < benchStored && k >= benchStored-benchUpdated {
				v = 1
			}
			e := benchEntry(f, k, v)
			e.RawRef = ndjson.RawRef{FetchID: benchFetchID(f), Offset: int64(k), Length: 900}
			line, err := ndjson.Marshal(&e)
			if err != nil {
				b.Fatal(err)
			}
			in.Write(line)
		}
		feedID := benchEntry(f, 0, 0).FeedID
		due := ndjson.Due{Header: ndjson.Head(ndjson.TypeDue), FeedID: feedID, URL: "https://example.org/feed", SourceType: ndjson.SourceAuto,
			Labels: []string{}, ScheduledAt: at, Reason: ndjson.ReasonScheduled}
		fetch := ndjson.Fetch{Header: ndjson.Head(ndjson.TypeFetch), FetchID: benchFetchID(f), Due: due,
			RequestedURL: due.URL, URL: due.URL, FetchedAt: at, DurationMS: 120, HTTPStatus: 200,
			ResponseHeaders: map[string]string{"Etag": fmt.Sprintf(`"%x-bench"`, f)},
			BodySHA256:      fmt.Sprintf("%064x", f), ContentType: "application/rss+xml", ContentLength: 20000,
			Parse: &ndjson.Parse{Format: "rss", Version: "2.0", Title: fmt.Sprintf("Bench feed %d", f), Items: benchPer, Entries: benchPer}}
		line, err := ndjson.Marshal(&fetch)
		if err != nil {
			b.Fatal(err)
		}
		in.Write(line)
	}
	input := in.Bytes()
	var out bytes.Buffer
	if err := Run(ctx, Config{In: bytes.NewReader(input), Out: ndjson.NewWriter(&out), Store: st, Catalog: cat}); err != nil {
		b.Fatal(err)
	}
	if kept, want := bytes.Count(out.Bytes(), []byte(`"type":"entry"`)), benchFeeds*(benchNew+benchUpdated); kept != want {
		b.Fatalf("%d entries kept, want %d", kept, want)
	}

	b.SetBytes(int64(len(input)))
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	b.ResetTimer()
	for b.Loop() {
		if err := Run(ctx, Config{In: bytes.NewReader(input), Out: ndjson.NewWriter(io.Discard), Store: st, Catalog: cat}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	fetches := float64(b.N * benchFeeds)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/fetches, "ns/fetch")
	b.ReportMetric(float64(cpuTime(b)-cpu0)/fetches, "cpu-ns/fetch")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
