package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/dedup"
	"github.com/feedpipe/feedpipe/internal/due"
	"github.com/feedpipe/feedpipe/internal/fetch"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/parse"
	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/internal/store"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/sub"
	"github.com/feedpipe/feedpipe/internal/testserver"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

const testToken = "0123456789abcdef0123456789abcdef"

// atClock is a clock stopped at one moment that still waits in real time.
type atClock struct{ now time.Time }

func (c atClock) Now() time.Time                         { return c.now }
func (c atClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// world is a real store fed by the real stages, in process, from a
// loopback feed server over files, and feed-serve over it on loopback.
type world struct {
	t     testing.TB
	st    *storedir.Store
	cat   *catalog.Catalog
	www   string
	feeds *httptest.Server // the publishers
	api   *httptest.Server // feed-serve
	s     *Server
	ids   map[string]string // feed ids by file name
}

// newWorld subscribes to three of the shared fixtures (two labelled
// "news", one "video"), runs a pipeline cycle, and serves the store.
func newWorld(t testing.TB, cfgs ...func(*Config)) *world {
	t.Helper()
	dir := t.TempDir()
	st, err := storedir.Open(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, st: st, www: filepath.Join(dir, "www"), ids: map[string]string{}}
	os.MkdirAll(w.www, 0o755)
	w.feeds = httptest.NewServer(testserver.New(w.www, io.Discard))
	t.Cleanup(w.feeds.Close)
	for name, labels := range map[string][]string{"TechCrunch.xml": {"news"}, "AmazonWebServicesBlog.xml": {"news", "cloud"}, "youtube_atom.xml": {"video"}} {
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "feeds", name))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(w.www, name), b, 0o644)
		s, _, err := sub.Add(sub.Config{Store: st, Out: io.Discard, Now: func() time.Time { return t0 }}, sub.Spec{URL: w.feeds.URL + "/" + name, Labels: labels})
		if err != nil {
			t.Fatal(err)
		}
		w.ids[name] = s.FeedID
	}
	w.cycle(t0)
	if w.cat, err = catalog.Open(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.cat.Close() })
	cfg := Config{Store: st, Catalog: w.cat, Token: testToken, Now: func() time.Time { return t0.Add(time.Minute) },
		Sched: sched.Defaults(), Poll: 20 * time.Millisecond, Heartbeat: 200 * time.Millisecond, MetricsEvery: time.Nanosecond}
	for _, f := range cfgs {
		f(&cfg)
	}
	if w.s, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	w.s.metrics.sync = true // each scrape sees the store as it is
	w.api = httptest.NewServer(w.s)
	t.Cleanup(func() { w.api.Close(); w.s.Close() })
	return w
}

// cycle runs feed-due --all | feed-fetch | feed-parse | feed-dedup |
// feed-store at now.
func (w *world) cycle(now time.Time) {
	w.t.Helper()
	w.cycleWith(now, httpx.New(httpx.Options{AllowPrivate: true}))
}

// cycleWith is cycle with the HTTP client of feed-fetch.
func (w *world) cycleWith(now time.Time, client *httpx.Client) {
	w.t.Helper()
	ctx := context.Background()
	var dues, fetched, parsed, deduped bytes.Buffer
	if err := due.Run(due.Config{Out: ndjson.NewWriter(&dues), Store: w.st, Now: now, All: true}); err != nil {
		w.t.Fatal(err)
	}
	err := fetch.Run(ctx, fetch.Config{In: &dues, Out: ndjson.NewWriter(&fetched), Store: w.st,
		Client: client, Limiter: httpx.NewLimiter(8, 0, nil), Clock: atClock{now}})
	if err != nil && !errors.Is(err, pipe.ErrFailed) {
		w.t.Fatal(err)
	}
	if err := parse.Run(ctx, parse.Config{In: &fetched, Out: ndjson.NewWriter(&parsed), Store: w.st, Workers: 2}); err != nil && !errors.Is(err, pipe.ErrFailed) {
		w.t.Fatal(err)
	}
	if err := dedup.Run(ctx, dedup.Config{In: &parsed, Out: ndjson.NewWriter(&deduped), Store: w.st}); err != nil {
		w.t.Fatal(err)
	}
	if err := store.Run(ctx, store.Config{In: &deduped, Out: ndjson.NewWriter(io.Discard), Store: w.st, Now: func() time.Time { return now }}); err != nil {
		w.t.Fatal(err)
	}
}

// reply is an answer of the API.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("%v: %s", err, r.body)
	}
}

// problem reads a problem detail, failing unless the reply is one of the
// status.
func (r reply) problem(t testing.TB, status int) Problem {
	t.Helper()
	var p Problem
	if r.status != status || !strings.HasPrefix(r.header.Get("Content-Type"), "application/problem+json") {
		t.Fatalf("status %d (%s), want a problem of status %d: %s", r.status, r.header.Get("Content-Type"), status, r.body)
	}
	r.json(t, &p)
	if p.Status != status || p.Title == "" || len(p.Detail) < 10 || p.Type != "about:blank" {
		t.Fatalf("problem %+v", p)
	}
	return p
}

// do sends a request to feed-serve with a real client, which does not
// follow redirects (the test sees them); header pairs follow the body.
func (w *world) do(method, path string, body string, header ...string) reply {
	w.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, w.api.URL+path, rd)
	if err != nil {
		w.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	client := *w.api.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		w.t.Fatal(err)
	}
	return reply{resp.StatusCode, resp.Header, b}
}

func (w *world) get(path string, header ...string) reply {
	w.t.Helper()
	return w.do("GET", path, "", header...)
}

// write sends a write with the token.
func (w *world) write(method, path, body string) reply {
	w.t.Helper()
	return w.do(method, path, body, "Authorization", "Bearer "+testToken, "Content-Type", "application/json")
}

// storedEntries are the entries of entries/, latest version of each, by
// feed and uid.
func (w *world) storedEntries() map[[2]string]ndjson.Entry {
	w.t.Helper()
	out := map[[2]string]ndjson.Entry{}
	_, _, err := w.st.ReadLogsSince(storedir.DirEntries, "", 0, func(_ string, l ndjson.Line) error {
		var e ndjson.Entry
		if l.Type == ndjson.TypeEntry && l.Decode(&e) == nil {
			out[[2]string{e.FeedID, e.EntryUID}] = e
		}
		return nil
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return out
}
