package fetch

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/clock"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/ids"
	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/testids"
	"github.com/feedpipe/feedpipe/internal/testserver"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

const feedBody = `<?xml version="1.0"?><rss version="2.0"><channel><title>T</title><item><guid>1</guid><title>One</title></item></channel></rss>`

func server(t *testing.T) *httptest.Server {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "feed.xml"), []byte(feedBody), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(testserver.New(dir, nil))
	t.Cleanup(srv.Close)
	return srv
}

func dueLine(t *testing.T, id, url string, v ndjson.Validators) string {
	t.Helper()
	b, err := ndjson.Marshal(ndjson.Due{Header: ndjson.Head(ndjson.TypeDue), FeedID: testids.Feed(id), URL: url, Validators: v, Labels: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(string(b), "\n")
}

type runResult struct {
	fetches []ndjson.Fetch
	lines   []string
	logs    string
	err     error
}

func run(t *testing.T, st *storedir.Store, input string) runResult {
	t.Helper()
	fake := clock.NewFake(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
	return runConfig(t, Config{
		In: strings.NewReader(input), Store: st,
		Client:  httpx.New(httpx.Options{AllowPrivate: true}),
		Clock:   fake,
		Limiter: httpx.NewLimiter(100, 0, fake), // politeness has tests of its own
	})
}

// runConfig runs feed-fetch with cfg, its output and log collected.
func runConfig(t *testing.T, cfg Config) runResult {
	t.Helper()
	var out, logs bytes.Buffer
	cfg.Out = ndjson.NewWriter(&out)
	cfg.Log = slog.New(slog.NewTextHandler(&logs, nil))
	if cfg.Rand == nil {
		cfg.Rand = rand.NewChaCha8([32]byte{1})
	}
	err := Run(context.Background(), cfg)
	r := runResult{err: err, logs: logs.String()}
	rd := ndjson.NewReader(&out)
	for {
		line, err := rd.Next()
		if err != nil {
			break
		}
		r.lines = append(r.lines, string(line.Raw))
		if line.Type == ndjson.TypeFetch {
			var f ndjson.Fetch
			if err := line.Decode(&f); err != nil {
				t.Fatal(err)
			}
			r.fetches = append(r.fetches, f)
		}
	}
	return r
}

func TestFetchStoresPayloadAndRecordBeforeEmitting(t *testing.T) {
	srv := server(t)
	st, _ := storedir.Open(t.TempDir())
	r := run(t, st, dueLine(t, "f1", srv.URL+"/feed.xml", ndjson.Validators{}))
	if r.err != nil || len(r.fetches) != 1 {
		t.Fatalf("err %v, %d fetches; logs:\n%s", r.err, len(r.fetches), r.logs)
	}
	f := r.fetches[0]
	if f.HTTPStatus != 200 || f.Error != nil || f.NotModified || testids.Name(f.Due.FeedID) != "f1" || f.URL != srv.URL+"/feed.xml" {
		t.Fatalf("fetch %+v", f)
	}
	if f.FetchID == "" || f.FetchedAt.String() != "2026-11-21T10:00:00Z" || f.ContentLength != int64(len(feedBody)) {
		t.Errorf("id %q fetched_at %s length %d", f.FetchID, f.FetchedAt, f.ContentLength)
	}
	if f.ResponseHeaders["Etag"] == "" || f.RequestHeaders["User-Agent"] == "" || f.ContentType == "" {
		t.Errorf("headers: req %v resp %v", f.RequestHeaders, f.ResponseHeaders)
	}
	body, err := st.GetRaw(f.BodyRef.Key, 0)
	if err != nil || string(body) != feedBody || f.BodyRef.Storage != "localfs" || !strings.HasPrefix(f.BodyRef.Key, "raw/2026-11-21/"+f.BodySHA256) {
		t.Fatalf("stored body %q, ref %+v, err %v", body, f.BodyRef, err)
	}
	logged, _ := os.ReadFile(st.Path("fetches/2026-11-21.ndjson"))
	if strings.TrimSpace(string(logged)) != r.lines[0] {
		t.Fatalf("fetches/ holds\n%s\nstdout had\n%s", logged, r.lines[0])
	}
}

func TestConditionalGetAnd304(t *testing.T) {
	srv := server(t)
	st, _ := storedir.Open(t.TempDir())
	first := run(t, st, dueLine(t, "f1", srv.URL+"/feed.xml", ndjson.Validators{})).fetches[0]
	v := ndjson.Validators{ETag: first.ResponseHeaders["Etag"], LastModified: first.ResponseHeaders["Last-Modified"]}
	second := run(t, st, dueLine(t, "f1", srv.URL+"/feed.xml", v))
	f := second.fetches[0]
	if second.err != nil || f.HTTPStatus != 304 || !f.NotModified || f.BodyRef != nil || f.RequestHeaders["If-None-Match"] != v.ETag {
		t.Fatalf("err %v, fetch %+v", second.err, f)
	}
}

func TestFailuresAreRecordedAndTheRestGoesOn(t *testing.T) {
	srv := server(t)
	st, _ := storedir.Open(t.TempDir())
	input := strings.Join([]string{
		dueLine(t, "ok", srv.URL+"/feed.xml", ndjson.Validators{}),
		dueLine(t, "err500", srv.URL+"/status/500", ndjson.Validators{}),
		dueLine(t, "gone", srv.URL+"/status/404", ndjson.Validators{}),
		dueLine(t, "slow", srv.URL+"/status/429?retry-after=90", ndjson.Validators{}),
		dueLine(t, "ftp", "ftp://example.org/feed", ndjson.Validators{}),
		`{"type":"something_else","v":1,"x":[1,2]}`,
		`not json`,
		`{"type":"due","v":1,"url":`, // not JSON either: reported by the decoding (Reader.SetDecoded)
		`{"type":"due","v":1,"feed_id":"` + testids.Feed("no-url") + `"}`,
		`{"type":"due","v":1,"url":"` + srv.URL + `/feed.xml?by=hand"}`,
	}, "\n") + "\n"
	r := run(t, st, input)
	if !errors.Is(r.err, pipe.ErrFailed) || !strings.Contains(r.err.Error(), "4 feeds failed, 3 malformed input lines skipped") {
		t.Fatalf("err %v", r.err)
	}
	by := map[string]ndjson.Fetch{}
	for _, f := range r.fetches {
		by[testids.Name(f.Due.FeedID)] = f
	}
	byHand := ids.FeedID(srv.URL + "/feed.xml?by=hand")
	if len(by) != 6 || by["ok"].Error != nil || by[byHand].Error != nil {
		t.Fatalf("fetches %v", by)
	}
	for id, want := range map[string]string{"err500": "transient/http_500", "gone": "permanent/http_404", "slow": "rate_limited/http_429", "ftp": "permanent/invalid_url"} {
		e := by[id].Error
		if e == nil || e.Class+"/"+e.Code != want || e.Message == "" {
			t.Errorf("%s: error %+v, want %s", id, e, want)
		}
	}
	if by["slow"].RetryAfterSec != 90 {
		t.Errorf("retry_after_sec %d", by["slow"].RetryAfterSec)
	}
	if by["err500"].BodyRef == nil {
		t.Error("the body of an error response was not stored")
	}
	var passed bool
	for _, l := range r.lines {
		passed = passed || l == `{"type":"something_else","v":1,"x":[1,2]}`
	}
	if !passed {
		t.Error("unknown record not passed through unchanged")
	}
	// A permanent error is logged at ERROR, a transient one at WARN.
	if !strings.Contains(r.logs, "line=7") || !strings.Contains(r.logs, "line=8 error=\"invalid JSON: ") ||
		!strings.Contains(r.logs, "line=9 error=\"due record: field url is empty\"") ||
		!strings.Contains(r.logs, `level=ERROR msg="fetch failed" feed_id=`+testids.Feed("gone")) ||
		!strings.Contains(r.logs, `level=WARN msg="fetch failed" feed_id=`+testids.Feed("err500")) {
		t.Errorf("logs lack the bad line or the failed feed:\n%s", r.logs)
	}
}

func TestBrokenStoreStopsTheRun(t *testing.T) {
	srv := server(t)
	st, _ := storedir.Open(t.TempDir())
	// fetches/ replaced by a file: appending to it cannot work.
	os.RemoveAll(st.Path("fetches"))
	os.WriteFile(st.Path("fetches"), []byte("x"), 0o644)
	r := run(t, st, dueLine(t, "f1", srv.URL+"/feed.xml", ndjson.Validators{})+"\n")
	if r.err == nil || errors.Is(r.err, pipe.ErrFailed) || len(r.fetches) != 0 {
		t.Fatalf("err %v, %d records emitted: a record must not be emitted unless stored", r.err, len(r.fetches))
	}
}

func TestConcurrency(t *testing.T) {
	var inFlight, most int
	mu := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu <- struct{}{}
		inFlight++
		most = max(most, inFlight)
		<-mu
		time.Sleep(20 * time.Millisecond)
		mu <- struct{}{}
		inFlight--
		<-mu
		w.Write([]byte(feedBody))
	}))
	defer srv.Close()
	st, _ := storedir.Open(t.TempDir())
	var in strings.Builder
	for i := range 20 {
		in.WriteString(dueLine(t, "f"+string(rune('a'+i)), srv.URL+"/x", ndjson.Validators{}) + "\n")
	}
	r := run(t, st, in.String())
	if r.err != nil || len(r.fetches) != 20 {
		t.Fatalf("err %v, %d fetches", r.err, len(r.fetches))
	}
	if most < 2 || most > DefaultConcurrency {
		t.Fatalf("at most %d requests in flight, want 2..%d", most, DefaultConcurrency)
	}
}

// TestSignalStopsNewFetchesOnly cancels the run while one fetch is in
// flight: that fetch completes and its record is stored and emitted; the
// feeds not yet started are left for the next run.
func TestSignalStopsNewFetchesOnly(t *testing.T) {
	started, release := make(chan struct{}, 8), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-release
		w.Write([]byte(feedBody))
	}))
	defer srv.Close()
	st, _ := storedir.Open(t.TempDir())
	var in strings.Builder
	for _, id := range []string{"a", "b", "c"} {
		in.WriteString(dueLine(t, id, srv.URL+"/"+id, ndjson.Validators{}) + "\n")
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{In: strings.NewReader(in.String()), Out: ndjson.NewWriter(&out), Store: st,
			Client: httpx.New(httpx.Options{AllowPrivate: true}), Concurrency: 1, Limiter: httpx.NewLimiter(1, 0, nil)})
	}()
	<-started
	cancel()
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), `"type":"fetch"`); n != 1 {
		t.Fatalf("%d fetch records after a signal during the first fetch, want 1:\n%s", n, out.String())
	}
	if !strings.Contains(out.String(), `"feed_id":"`+testids.Feed("a")+`"`) {
		t.Fatal("the fetch in flight was not emitted")
	}
}

// TestSignalLeavesTheRestToTheNextRun: the runs a signal kept feed-fetch
// from fetching are not left claimed, so the next feed-fetch fetches them
// at once (it took them for another pipeline's for 15 minutes).
func TestSignalLeavesTheRestToTheNextRun(t *testing.T) {
	var block atomic.Bool
	block.Store(true)
	started, release := make(chan struct{}, 8), make(chan struct{})
	var gets sync.Map // path -> count
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := gets.LoadOrStore(r.URL.Path, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		if block.Load() {
			started <- struct{}{}
			<-release
		}
		w.Write([]byte(feedBody))
	}))
	defer srv.Close()
	st, _ := storedir.Open(t.TempDir())
	var in strings.Builder
	at := ndjson.At(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	for _, id := range []string{"a", "b", "c"} {
		b, _ := ndjson.Marshal(ndjson.Due{Header: ndjson.Head(ndjson.TypeDue), FeedID: testids.Feed(id), URL: srv.URL + "/" + id, Labels: []string{}, ScheduledAt: at})
		in.Write(b)
	}
	cfg := func(out *bytes.Buffer) Config {
		return Config{In: strings.NewReader(in.String()), Out: ndjson.NewWriter(out), Store: st,
			Client: httpx.New(httpx.Options{AllowPrivate: true}), Concurrency: 1, Limiter: httpx.NewLimiter(1, 0, nil)}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var first bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg(&first)) }()
	<-started
	cancel()
	block.Store(false)
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var second bytes.Buffer
	if err := Run(context.Background(), cfg(&second)); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(second.String(), `"type":"fetch"`); n != 3 {
		t.Errorf("the run after the signal passed on %d fetch records, want 3 (a's, fetched before, and b's and c's):\n%s", n, second.String())
	}
	for _, p := range []string{"/a", "/b", "/c"} {
		if n, ok := gets.Load(p); !ok || n.(*atomic.Int32).Load() != 1 {
			t.Errorf("%s requested %v times, want once", p, n)
		}
	}
}

// A fetch slower than SlowAfter (30 s by default, docs/design.md#logging) is
// logged at WARN.
func TestSlowFetchWarns(t *testing.T) {
	srv := server(t)
	st, _ := storedir.Open(t.TempDir())
	fake := clock.NewFake(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
	in := dueLine(t, "slow", srv.URL+"/feed.xml?delay=300ms", ndjson.Validators{}) + "\n" + dueLine(t, "quick", srv.URL+"/feed.xml", ndjson.Validators{}) + "\n"
	r := runConfig(t, Config{In: strings.NewReader(in), Store: st, Client: httpx.New(httpx.Options{AllowPrivate: true}), Clock: fake,
		Limiter: httpx.NewLimiter(100, 0, fake), SlowAfter: 200 * time.Millisecond})
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !strings.Contains(r.logs, `level=WARN msg="slow fetch" feed_id=`+testids.Feed("slow")) || strings.Contains(r.logs, testids.Feed("quick")) {
		t.Errorf("logs:\n%s", r.logs)
	}
}
