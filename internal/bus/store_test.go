package bus

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/redis/go-redis/v9"

	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

var fetchedAt = time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)

// fetchGroup is a worker's group as put writes it: an entry, then a fetch
// record with its line in fetches/ and its payload.
type fetchGroup struct {
	entry  string
	record string // the fetch record as the pipeline carries it
	line   string // feed-fetch's line of it
	body   []byte // the payload, zstd
	plain  []byte
}

func zst(b []byte) []byte {
	enc, _ := zstd.NewWriter(nil)
	defer enc.Close()
	return enc.EncodeAll(b, nil)
}

func newFetchGroup(t *testing.T, n int, body string, change ...func(*ndjson.Fetch)) fetchGroup {
	t.Helper()
	sum := sha256.Sum256([]byte(body))
	hexSum := hex.EncodeToString(sum[:])
	feed := fmt.Sprintf("6ba7b811-9dad-51d1-80b4-%012d", n)
	f := ndjson.Fetch{Header: ndjson.Head(ndjson.TypeFetch), FetchID: fmt.Sprintf("01937a4e-8e35-7c6b-9f3e-%012d", n),
		Due:          ndjson.Due{Header: ndjson.Head(ndjson.TypeDue), FeedID: feed, URL: "http://example.org/feed", Labels: []string{}, Bus: &ndjson.BusRef{Stream: "due", Group: "workers", ID: "1-0"}},
		RequestedURL: "http://example.org/feed", URL: "http://example.org/feed", Redirects: []ndjson.Redirect{}, FetchedAt: ndjson.At(fetchedAt), HTTPStatus: 200,
		BodyRef: &ndjson.BlobRef{Storage: storedir.RawStorage, Key: "raw/2026-11-28/" + hexSum + ".zst"}, BodySHA256: hexSum, ContentLength: int64(len(body))}
	for _, c := range change {
		c(&f)
	}
	line, err := ndjson.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	f.Parse = &ndjson.Parse{Format: "rss", Title: "Feed"}
	rec, err := ndjson.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	entry := fmt.Sprintf(`{"type":"entry","v":1,"entry_uid":"%016x","feed_id":"%s","content_hash":"abc","raw_ref":{"fetch_id":"%s","offset":0,"length":0}}`, n, feed, f.FetchID)
	return fetchGroup{entry: entry, record: strings.TrimSpace(string(rec)), line: strings.TrimSpace(string(line)), body: zst([]byte(body)), plain: []byte(body)}
}

// xadd appends a group as a worker's put would, in one transaction.
func (f *fixture) xadd(stream string, entries ...map[string]any) {
	f.t.Helper()
	_, err := f.conn.Client.TxPipelined(context.Background(), func(p redis.Pipeliner) error {
		p.SAdd(context.Background(), streamsKey(f.conn), stream)
		for _, e := range entries {
			p.XAdd(context.Background(), &redis.XAddArgs{Stream: f.conn.Key(stream), Values: e})
		}
		return nil
	})
	if err != nil {
		f.t.Fatal(err)
	}
}

func (g fetchGroup) fields() []map[string]any {
	return []map[string]any{{"record": g.entry}, {"record": g.record, "fetch": g.line, "body": g.body}}
}

// TestStoreFetches: the coordinator's take writes each good group's
// payload and feed-fetch's line of its fetch record to the store, then its
// records and a bus_ack; every hostile record is refused with a line that
// says why, moved to the dead stream, and the others go on.
func TestStoreFetches(t *testing.T) {
	f := newFixture(t)
	st, err := storedir.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	good := newFetchGroup(t, 1, "<rss>good</rss>")
	f.xadd("parsed", good.fields()...)

	hostile := map[string][]map[string]any{}
	add := func(name string, e ...map[string]any) { hostile[name] = e; f.xadd("parsed", e...) }
	// A body that does not match its sha256.
	bad := newFetchGroup(t, 2, "<rss>what the sum says</rss>")
	add("body_sha256", map[string]any{"record": bad.entry}, map[string]any{"record": bad.record, "fetch": bad.line, "body": zst([]byte("<rss>something else</rss>"))})
	// A key out of the store: traversal.
	trav := newFetchGroup(t, 3, "<rss>x</rss>")
	trav.record = strings.Replace(trav.record, `"key":"raw/2026-11-28/`, `"key":"raw/../../../etc/`, 1)
	add("raw/../", map[string]any{"record": trav.record, "fetch": trav.line, "body": trav.body})
	// A key whose sum is another payload's.
	other := newFetchGroup(t, 4, "<rss>y</rss>", func(f *ndjson.Fetch) { f.BodySHA256 = strings.Repeat("1", 64) })
	add("the sha256 its key", map[string]any{"record": other.record, "fetch": other.line, "body": other.body})
	// A payload over the cap.
	huge := newFetchGroup(t, 5, strings.Repeat("z", 3000))
	add("decodes to more than", map[string]any{"record": huge.record, "fetch": huge.line, "body": huge.body})
	// No payload, and none in the store.
	none := newFetchGroup(t, 6, "<rss>n</rss>")
	add("no payload came with it", map[string]any{"record": none.record, "fetch": none.line})
	// Not JSON; no record at all; a bus_ack where records go.
	add("invalid JSON", map[string]any{"record": `{"type":"entry",`})
	add("no record field", map[string]any{"body": "x"})
	add("--max-record-bytes", map[string]any{"record": `{"type":"entry","v":1,"title":"` + strings.Repeat("x", 20000) + `"}`})
	add("a bus_ack record on a stream", map[string]any{"record": `{"type":"bus_ack","v":1,"stream":"parsed","group":"store","ids":["1-0"]}`})
	// A fetch line of another fetch.
	swap := newFetchGroup(t, 7, "<rss>s</rss>")
	add("its fetch line is of fetch", map[string]any{"record": swap.record, "fetch": good.line, "body": swap.body})
	// A payload of a length its record does not say.
	length := newFetchGroup(t, 8, "<rss>l</rss>", func(f *ndjson.Fetch) { f.ContentLength++ })
	add("content_length", map[string]any{"record": length.record, "fetch": length.line, "body": length.body})

	last := newFetchGroup(t, 9, "<rss>last</rss>")
	f.xadd("parsed", last.fields()...)

	cfg := f.config(CmdTake, "parsed")
	var out strings.Builder
	cfg.Out, cfg.Store = &out, st
	cfg.Take = TakeOptions{Group: "store", StoreFetches: true, Idle: 300 * time.Millisecond, Takeover: time.Second, Linger: time.Second, MaxBodyBytes: 2000, MaxRecordBytes: 10000}
	err = Run(context.Background(), cfg)
	if !errors.Is(err, pipe.ErrFailed) {
		t.Errorf("take: %v, want some records failed", err)
	}
	logs := f.logs.String()
	for reason := range hostile {
		if !strings.Contains(logs, reason) {
			t.Errorf("no refusal says %q:\n%s", reason, logs)
		}
	}
	// The good groups went on: their records, then a bus_ack of their ids
	// only.
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{good.entry, good.record, last.entry, last.record}
	if len(lines) != 5 || strings.Join(lines[:4], "\n") != strings.Join(want, "\n") {
		t.Fatalf("take wrote\n%s\nwant the good groups' records and a bus_ack", out.String())
	}
	var ack ndjson.BusAck
	if err := ndjson.Unmarshal([]byte(lines[4]), &ack); err != nil || ack.Type != ndjson.TypeBusAck || len(ack.IDs) != 4 || ack.Stream != "parsed" || ack.Group != "store" {
		t.Errorf("last line %s, want a bus_ack of the good groups' 4 entries", lines[4])
	}
	// The store has their payloads, exactly, and feed-fetch's lines of
	// their fetch records without the bus member; nothing else.
	for _, g := range []fetchGroup{good, last} {
		var rec ndjson.Fetch
		ndjson.Unmarshal([]byte(g.record), &rec)
		body, err := st.GetRaw(rec.BodyRef.Key, 0)
		if err != nil || string(body) != string(g.plain) {
			t.Errorf("payload %s: %q, %v", rec.BodyRef.Key, body, err)
		}
	}
	fetches, _ := os.ReadFile(filepath.Join(st.Root, "fetches", "2026-11-28.ndjson"))
	wantLines := strings.ReplaceAll(good.line, `,"bus":{"stream":"due","group":"workers","id":"1-0"}`, "") + "\n" +
		strings.ReplaceAll(last.line, `,"bus":{"stream":"due","group":"workers","id":"1-0"}`, "") + "\n"
	if string(fetches) != wantLines {
		t.Errorf("fetches/ holds\n%s\nwant\n%s", fetches, wantLines)
	}
	raws, _ := filepath.Glob(filepath.Join(st.Root, "raw", "*", "*"))
	if len(raws) != 2 {
		t.Errorf("raw/ holds %d payloads, want the 2 good ones: %v", len(raws), raws)
	}
	if _, err := os.Stat(filepath.Join(st.Root, "..", "..", "etc")); err == nil {
		t.Error("a traversal key made a directory outside the store")
	}
	// The refused are on the dead stream, with their reasons, and
	// acknowledged.
	dead, _ := f.conn.Client.XRange(context.Background(), f.conn.Key(DeadStream), "-", "+").Result()
	if len(dead) != 12 {
		t.Errorf("%d records on the dead stream, want the 12 refused", len(dead))
	}
	if g := f.group("parsed", "store"); g.Pending != 4 {
		t.Errorf("parsed/store: %d pending, want the 4 good ones, until put acknowledges them", g.Pending)
	}
}

// TestStoreFetchesTakenAgain: a group taken again (the coordinator died
// before feed-store committed it) is written again downstream, where the
// store's idempotence absorbs it, but its fetch record is not appended to
// fetches/ twice.
func TestStoreFetchesTakenAgain(t *testing.T) {
	f := newFixture(t)
	st, err := storedir.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	g := newFetchGroup(t, 1, "<rss>again</rss>")
	f.xadd("parsed", g.fields()...)
	take := func() string {
		cfg := f.config(CmdTake, "parsed")
		var out strings.Builder
		cfg.Out, cfg.Store = &out, st
		cfg.Take = TakeOptions{Group: "store", Consumer: "coord", StoreFetches: true, Idle: 200 * time.Millisecond, Takeover: time.Second, Linger: time.Second}
		if err := Run(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	first, second := take(), take()
	if first != second || !strings.Contains(second, g.record) {
		t.Errorf("taken again:\n%s\nfirst:\n%s", second, first)
	}
	fetches, _ := os.ReadFile(filepath.Join(st.Root, "fetches", "2026-11-28.ndjson"))
	if n := strings.Count(string(fetches), "\n"); n != 1 {
		t.Errorf("fetches/ holds %d lines, want 1", n)
	}
}
