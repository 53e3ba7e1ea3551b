package catalog

import (
	"database/sql"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/internal/testids"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// TestStatePacked checks what a state row holds since schema version 15:
// counts, sched and decision in their binary layout (statebin.go), much
// smaller than their JSON; last_error as JSON text.
func TestStatePacked(t *testing.T) {
	c := openTemp(t)
	fs := FeedState{FeedID: testids.Feed("a"), LastFetchAt: ndjson.At(t0), LastError: &ndjson.Error{Class: "transient", Code: "http_503"},
		Counts: FeedCounts{Fetches: 40, OK: 38, Errors: 2, ErrorCodes: map[string]int{"http_503": 2}, BytesIn: 123456, DurationMS: 4567}}
	fs.SetSched(sched.State{Lifecycle: sched.StateHealthy, Reason: "posting_rate", IntervalSec: 2425, NextAt: ndjson.At(t0.Add(time.Hour)),
		DecidedAt: ndjson.At(t0), FetchedAt: ndjson.At(t0), EWMASec: 10800, Pub: []int64{1795227111, 1795237911}, RateN: 3.9240960706630057,
		RateT: 38715.7814162151, Window: 20}, sched.Decision{Kind: sched.Defer, Reason: "posting_rate", At: ndjson.At(t0), NextAt: ndjson.At(t0.Add(time.Hour)),
		Inputs: sched.Inputs{Policy: "adaptive", Outcome: "fetch", HTTPStatus: 200, Items: 20, IntervalBeforeSec: 2664, IntervalAfterSec: 2425,
			MinSec: 300, MaxSec: 86400, RatePerDay: 8.949, Scale: 7200, BaseSec: 2425}})
	if err := c.Update(ctx, func(t *Tx) error { return t.PutStates(fs) }); err != nil {
		t.Fatal(err)
	}
	var counts, schedCol, decision []byte
	var lastErr string
	if err := c.db.QueryRow(`SELECT counts, sched, decision, last_error FROM feed_state`).Scan(&counts, &schedCol, &decision, &lastErr); err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		col []byte
		src any
	}{{counts, fs.Counts}, {schedCol, fs.Sched}, {decision, fs.Decision}} {
		js, _ := json.Marshal(v.src)
		if len(v.col) == 0 || v.col[0] != stateBinV1 || len(v.col) > len(js)*2/3 {
			t.Errorf("%d bytes for %d of JSON (%q)", len(v.col), len(js), v.col)
		}
	}
	if lastErr != `{"class":"transient","code":"http_503","message":""}` {
		t.Errorf("last_error %s", lastErr)
	}
	got, _, err := c.State(ctx, fs.FeedID)
	fs.Header = ndjson.Head(TypeFeedState)
	if err != nil || !reflect.DeepEqual(got, fs) {
		t.Fatalf("%v\n got %+v\nwant %+v", err, got, fs)
	}
}

// TestPackStates: a row written before schema version 6, JSON text, is
// read as it is, migration 6 compresses it and migration 15 rewrites it
// in the binary layout.
func TestPackStates(t *testing.T) {
	c := openAtVersion(t, 5)
	feed, other := testids.Feed("old"), testids.Feed("new")
	fs := FeedState{FeedID: feed, LastFetchAt: ndjson.At(t0), Counts: FeedCounts{Fetches: 3, OK: 3}}
	fs.SetSched(sched.State{Lifecycle: sched.StateHealthy, IntervalSec: 3600, NextAt: ndjson.At(t0.Add(time.Hour))}, sched.Decision{Kind: sched.Defer})
	counts, _ := json.Marshal(fs.Counts)
	schedJSON, _ := json.Marshal(fs.Sched)
	decJSON, _ := json.Marshal(fs.Decision)
	for _, q := range []string{
		`INSERT INTO feeds (feed_id) VALUES (:feed), (:other)`,
		`INSERT INTO feed_state (feed_key, last_fetch_at, interval_sec, next_fetch_at, lifecycle, counts, sched, decision)
			SELECT key, :fetched, :interval, :next, 'healthy', :counts, :sched, :decision FROM feeds WHERE feed_id = :feed`,
		`INSERT INTO feed_state (feed_key) SELECT key FROM feeds WHERE feed_id = :other`,
	} {
		if _, err := c.db.Exec(q, sql.Named("feed", feed), sql.Named("other", other), sql.Named("fetched", unixMS(t0)), sql.Named("interval", 3600),
			sql.Named("next", unixMS(t0.Add(time.Hour))), sql.Named("counts", string(counts)), sql.Named("sched", string(schedJSON)),
			sql.Named("decision", string(decJSON))); err != nil {
			t.Fatal(err)
		}
	}
	fs.Header = ndjson.Head(TypeFeedState)
	check := func(when string) {
		t.Helper()
		if got, _, err := c.State(ctx, feed); err != nil || !reflect.DeepEqual(got, fs) {
			t.Fatalf("%s: %v\n got %+v\nwant %+v", when, err, got, fs)
		}
	}
	// A value written before version 6 is JSON text, read as it is.
	if b, err := unpackJSON(counts); err != nil || string(b) != string(counts) {
		t.Fatalf("as JSON text: %s %v", b, err)
	}
	c = reopen(t, c)
	check("packed")
	var n int
	c.db.QueryRow(`SELECT count(*) FROM feed_state WHERE typeof(counts) = 'blob' AND (sched IS NULL OR typeof(sched) = 'blob')
		AND (decision IS NULL OR typeof(decision) = 'blob')`).Scan(&n)
	if n != 2 {
		t.Fatalf("%d rows packed, want 2", n)
	}
	c.db.QueryRow(`SELECT count(*) FROM feed_state WHERE substr(counts, 1, 1) = x'01' AND (sched IS NULL OR substr(sched, 1, 1) = x'01')
		AND (decision IS NULL OR substr(decision, 1, 1) = x'01')`).Scan(&n)
	if n != 2 {
		t.Fatalf("%d rows in the binary layout, want 2", n)
	}
	var nulls int
	c.db.QueryRow(`SELECT count(*) FROM feed_state WHERE sched IS NULL AND decision IS NULL`).Scan(&nulls)
	if nulls != 1 {
		t.Fatalf("%d rows without a scheduler state, want 1", nulls)
	}
}
