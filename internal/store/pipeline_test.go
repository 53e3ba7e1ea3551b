package store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/dedup"
	"github.com/feedpipe/feedpipe/internal/due"
	"github.com/feedpipe/feedpipe/internal/fetch"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/parse"
	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/sub"
	"github.com/feedpipe/feedpipe/internal/testserver"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// atClock is a clock stopped at one moment that still waits in real time.
type atClock struct{ now time.Time }

func (c atClock) Now() time.Time                         { return c.now }
func (c atClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// world is a real store fed by the real stages, in process, from a
// loopback test server over a directory of feed files.
type world struct {
	t   *testing.T
	st  *storedir.Store
	www string
	srv *httptest.Server
	h   *testserver.Handler
}

func newWorld(t *testing.T) *world {
	t.Helper()
	dir := t.TempDir()
	st, err := storedir.Open(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, st: st, www: filepath.Join(dir, "www"), h: testserver.New(filepath.Join(dir, "www"), io.Discard)}
	if err := os.MkdirAll(w.www, 0o755); err != nil {
		t.Fatal(err)
	}
	w.srv = httptest.NewServer(w.h)
	t.Cleanup(w.srv.Close)
	return w
}

// serve writes a feed file the server answers at /name.
func (w *world) serve(name, body string) {
	w.t.Helper()
	if err := os.WriteFile(filepath.Join(w.www, name), []byte(body), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

// subscribe adds a subscription to the server's path and returns its id.
func (w *world) subscribe(path string) string {
	w.t.Helper()
	s, _, err := sub.Add(sub.Config{Store: w.st, Out: io.Discard, Now: func() time.Time { return t0 }}, sub.Spec{URL: w.srv.URL + path})
	if err != nil {
		w.t.Fatal(err)
	}
	return s.FeedID
}

// cycle runs feed-due --all | feed-fetch | feed-parse | feed-dedup |
// feed-store at the moment now and returns feed-store's output.
func (w *world) cycle(now time.Time) string {
	w.t.Helper()
	ctx := context.Background()
	var dues, fetched bytes.Buffer
	if err := due.Run(due.Config{Out: ndjson.NewWriter(&dues), Store: w.st, Now: now, All: true}); err != nil {
		w.t.Fatal(err)
	}
	err := fetch.Run(ctx, fetch.Config{In: &dues, Out: ndjson.NewWriter(&fetched), Store: w.st,
		Client: httpx.New(httpx.Options{AllowPrivate: true}), Limiter: httpx.NewLimiter(8, 0, nil), Clock: atClock{now}})
	if err != nil && !errors.Is(err, pipe.ErrFailed) {
		w.t.Fatal(err)
	}
	return w.store(&fetched, parse.DefaultParser, now)
}

// store runs feed-parse | feed-dedup | feed-store over fetch records.
func (w *world) store(fetches io.Reader, p *parse.Parser, now time.Time) string {
	w.t.Helper()
	return storeInto(w.t, w.st, w.st, fetches, p, now)
}

// storeInto parses fetch records with the payloads of from, and dedups and
// stores the entries in to.
func storeInto(t *testing.T, from, to *storedir.Store, fetches io.Reader, p *parse.Parser, now time.Time) string {
	t.Helper()
	ctx := context.Background()
	var parsed, deduped, out bytes.Buffer
	if err := parse.Run(ctx, parse.Config{In: fetches, Out: ndjson.NewWriter(&parsed), Store: from, Parser: p, Workers: 2}); err != nil && !errors.Is(err, pipe.ErrFailed) {
		t.Fatal(err)
	}
	if err := dedup.Run(ctx, dedup.Config{In: &parsed, Out: ndjson.NewWriter(&deduped), Store: to}); err != nil {
		t.Fatal(err)
	}
	if err := Run(ctx, Config{In: &deduped, Out: ndjson.NewWriter(&out), Store: to, Now: func() time.Time { return now }}); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// logText is the text of every day file of a log, in order.
func logText(t *testing.T, st *storedir.Store, dir string) string {
	t.Helper()
	files, err := st.DayFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(st.Path(f))
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
	}
	return b.String()
}

// rssFeed is an RSS document with one item per title, guids g0, g1, ...
// The item links carry a utm_source parameter.
func rssFeed(titles ...string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>T</title><link>https://t.example/</link>`)
	for i, title := range titles {
		b.WriteString(`<item><guid>g` + string(rune('0'+i)) + `</guid><title>` + title + `</title>` +
			`<link>https://t.example/` + string(rune('0'+i)) + `?utm_source=rss&amp;id=` + string(rune('0'+i)) + `</link>` +
			`<pubDate>Sat, 21 Nov 2026 0` + string(rune('0'+i)) + `:00:00 GMT</pubDate></item>`)
	}
	b.WriteString(`</channel></rss>`)
	return b.String()
}
