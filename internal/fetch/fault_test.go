package fetch

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/clock"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/parse"
	"github.com/feedpipe/feedpipe/internal/store"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/testids"
	"github.com/feedpipe/feedpipe/internal/testserver"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// faultCap is the body cap of the fault tests: small, so that a huge body
// or a bomb is cut fast.
const faultCap = 256 << 10

// faultOptions are feed-fetch's client options in the fault tests: limits
// small enough that every fault ends well under a second, and the fake
// clock for Retry-After dates.
func faultOptions(now func() time.Time) httpx.Options {
	return httpx.Options{AllowPrivate: true, Timeout: 2 * time.Second, TotalTimeout: 3 * time.Second,
		MaxBodyBytes: faultCap, Now: now}
}

// fetchWith runs feed-fetch over one due record with the client opts and
// the clock fake, and returns its fetch record.
func fetchWith(t *testing.T, st *storedir.Store, fake *clock.Fake, opts httpx.Options, threshold int, due ndjson.Due) ndjson.Fetch {
	t.Helper()
	due.Header = ndjson.Head(ndjson.TypeDue)
	line, err := ndjson.Marshal(due)
	if err != nil {
		t.Fatal(err)
	}
	r := runConfig(t, Config{In: bytes.NewReader(line), Store: st, Clock: fake,
		Client: httpx.New(opts), RedirectThreshold: threshold,
		Limiter: httpx.NewLimiter(100, 0, fake)})
	if len(r.fetches) != 1 {
		t.Fatalf("%d fetch records, want 1 (err %v); logs:\n%s", len(r.fetches), r.err, r.logs)
	}
	return r.fetches[0]
}

// blob is the stored payload of f, or nil when none was stored.
func blob(t *testing.T, st *storedir.Store, f ndjson.Fetch) []byte {
	t.Helper()
	if f.BodyRef == nil {
		return nil
	}
	b, err := st.GetRaw(f.BodyRef.Key, 0)
	if err != nil {
		t.Fatalf("stored body %s: %v", f.BodyRef.Key, err)
	}
	return b
}

// TestFaults runs feed-fetch, with its real client, against each fault of
// the test server and checks the fetch record and the stored payload.
func TestFaults(t *testing.T) {
	srv := httptest.NewServer(testserver.New(t.TempDir(), nil))
	defer srv.Close()
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 250e6, time.UTC) // a fraction of a second, for Retry-After dates
	genFeed, _ := testserver.GenFeed(0, 0)
	huge := func() []byte { // the whole of /fault/huge?size=4194304, to compare the cut one with
		resp, err := http.Get(srv.URL + "/fault/huge?size=4194304")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}()

	for _, tc := range []struct {
		name      string
		path      string
		later     time.Duration                          // the fake clock's time past t0
		opts      func(*httpx.Options)                   // changes to faultOptions
		due       func(*ndjson.Due)                      // changes to the due record
		status    int                                    // http_status
		err       string                                 // class/code, "" for none
		message   string                                 // in the error message
		truncated bool                                   // truncated
		retry     int                                    // retry_after_sec
		body      []byte                                 // the stored payload; nil: none stored
		check     func(*testing.T, ndjson.Fetch, []byte) // anything more
		skip      string                                 // why the case is skipped
	}{
		{name: "hang", path: "/fault/hang",
			opts: func(o *httpx.Options) { o.Timeout = 150 * time.Millisecond },
			err:  "transient/timeout", message: "(--timeout)"},
		{name: "trickle cut by the total timeout", path: "/fault/trickle?bytes=4096&chunk=4&every=10ms",
			opts:   func(o *httpx.Options) { o.Timeout, o.TotalTimeout = 5*time.Second, 200*time.Millisecond },
			status: 200, err: "transient/timeout", message: "(--total-timeout)",
			check: func(t *testing.T, f ndjson.Fetch, b []byte) {
				// What came before the cut is kept.
				if len(b) == 0 || len(b) >= 4096 || f.ContentLength != int64(len(b)) {
					t.Errorf("stored %d bytes of the trickle, content_length %d", len(b), f.ContentLength)
				}
			}},
		{name: "reset", path: "/fault/reset", err: "transient/connection_reset"},
		{name: "redirect loop of 301s", path: "/fault/redirect-loop?status=301",
			// Moved there on many fetches before, and a threshold of one:
			// still no new URL, since the chain never ends.
			due: func(d *ndjson.Due) {
				d.Last = ndjson.LastFetch{MovedTo: d.URL, MovedCount: 9}
			},
			// The sixth 301 is the answer recorded, not followed.
			status: 301, err: "permanent/too_many_redirects", message: "not followed: --max-redirects is 5",
			check: func(t *testing.T, f ndjson.Fetch, _ []byte) {
				if f.NewURL != "" || f.MovedTo != "" || f.MovedCount != 0 {
					t.Errorf("new_url %q, moved_to %q, moved_count %d: a loop is no move", f.NewURL, f.MovedTo, f.MovedCount)
				}
				if len(f.Redirects) != 5 || f.Redirects[0].Status != 301 {
					t.Errorf("redirects %+v, want the 5 hops followed", f.Redirects)
				}
			}},
		{name: "gzip bomb", path: "/fault/gzip-bomb?size=268435456",
			status: 200, err: "transient/body_too_large", message: "body over 262144 bytes", truncated: true,
			body: bytes.Repeat([]byte{' '}, faultCap)},
		{name: "huge body", path: "/fault/huge?size=4194304",
			status: 200, err: "transient/body_too_large", message: "raise --max-body-bytes", truncated: true,
			body: huge[:faultCap],
			check: func(t *testing.T, f ndjson.Fetch, _ []byte) {
				if f.ContentLength != faultCap || f.ResponseHeaders["Content-Length"] != "4194304" {
					t.Errorf("content_length %d of a Content-Length %s", f.ContentLength, f.ResponseHeaders["Content-Length"])
				}
			}},
		{name: "wrong Content-Length", path: "/fault/wrong-length?claim=4096",
			status: 200, err: "transient/network", message: "unexpected EOF",
			check: func(t *testing.T, f ndjson.Fetch, b []byte) {
				// The half that came is stored (raw before parse), and
				// recorded as what it is.
				if len(b) != 2048 || f.ContentLength != 2048 || !bytes.HasPrefix(b, []byte("<?xml")) {
					t.Errorf("stored %d bytes (%.20q), content_length %d; want the 2048 sent", len(b), b, f.ContentLength)
				}
			}},
		{name: "cloudflare challenge", path: "/fault/cloudflare",
			status: 403, err: "blocked/bot_challenge", message: "Cloudflare",
			check: func(t *testing.T, f ndjson.Fetch, b []byte) {
				if !bytes.Contains(b, []byte("Just a moment...")) || f.ResponseHeaders["Cf-Mitigated"] != "challenge" {
					t.Errorf("challenge page %.40q, headers %v", b, f.ResponseHeaders)
				}
			}},
		{name: "429 Retry-After seconds", path: "/fault/retry-after?after=90",
			status: 429, err: "rate_limited/http_429", retry: 90},
		{name: "429 Retry-After date", path: "/fault/retry-after?after=" + url.QueryEscape("Sat, 21 Nov 2026 10:01:30 GMT"),
			status: 429, err: "rate_limited/http_429", retry: 90}, // 89.75 s from t0, rounded up
		{name: "429 Retry-After date, past the half second", path: "/fault/retry-after?after=" + url.QueryEscape("Sat, 21 Nov 2026 10:01:30 GMT"),
			later:  500 * time.Millisecond,
			status: 429, err: "rate_limited/http_429", retry: 90}, // 89.25 s, rounded up
		{name: "429 Retry-After date gone by", path: "/fault/retry-after?after=" + url.QueryEscape("Sat, 21 Nov 2026 09:00:00 GMT"),
			status: 429, err: "rate_limited/http_429", retry: 0},
		{name: "503 with Retry-After", path: "/fault/retry-after?status=503&after=30",
			status: 503, err: "rate_limited/http_503", retry: 30},
		{name: "503", path: "/status/503", status: 503, err: "transient/http_503"},
		{name: "gzip", path: "/fault/encoding/gzip", status: 200, body: genFeed},
		{name: "deflate", path: "/fault/encoding/deflate", status: 200, body: genFeed},
		{name: "zstd", path: "/fault/encoding/zstd", status: 200, body: genFeed},
		{name: "br", path: "/fault/encoding/br", status: 200, body: genFeed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.skip != "" {
				t.Skip(tc.skip)
			}
			fake := clock.NewFake(t0.Add(tc.later))
			opts := faultOptions(fake.Now)
			if tc.opts != nil {
				tc.opts(&opts)
			}
			due := ndjson.Due{FeedID: testids.Feed("f"), URL: srv.URL + tc.path, Labels: []string{}}
			if tc.due != nil {
				tc.due(&due)
			}
			st, _ := storedir.Open(t.TempDir())
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			f := fetchWith(t, st, fake, opts, 1, due)
			took := time.Since(start)
			var after runtime.MemStats
			runtime.ReadMemStats(&after)

			var got string
			if f.Error != nil {
				got = f.Error.Class + "/" + f.Error.Code
			}
			if got != tc.err || f.Error != nil && !strings.Contains(f.Error.Message, tc.message) {
				t.Errorf("error %+v, want %s with %q", f.Error, tc.err, tc.message)
			}
			if f.HTTPStatus != tc.status || f.Truncated != tc.truncated || f.RetryAfterSec != tc.retry {
				t.Errorf("http_status %d, truncated %v, retry_after_sec %d; want %d, %v, %d",
					f.HTTPStatus, f.Truncated, f.RetryAfterSec, tc.status, tc.truncated, tc.retry)
			}
			b := blob(t, st, f)
			if tc.body != nil && !bytes.Equal(b, tc.body) {
				t.Errorf("stored %d bytes (%.40q), want %d (%.40q)", len(b), b, len(tc.body), tc.body)
			}
			if tc.status == 0 && f.BodyRef != nil {
				t.Errorf("a body stored for a fetch without a response: %+v", f.BodyRef)
			}
			if tc.check != nil {
				tc.check(t, f, b)
			}
			// Past every timeout of the client: one of them was not
			// applied. (A tighter bound would measure the machine's load.)
			if limit := opts.TotalTimeout + 2*time.Second; took > limit {
				t.Errorf("took %s, over %s", took, limit)
			}
			// Nothing is read past the cap: the bomb decodes to 256 MiB.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
				t.Errorf("%d MiB allocated", alloc>>20)
			}
		})
	}
}

// TestBrokenBodyKeepsTheValidators runs the faults through feed-parse
// and feed-store: a
// body cut short by a wrong Content-Length must leave the feed's
// validators as they were, so that the next fetch downloads it whole; one
// cut at the size cap is as whole as it gets, and its validators are kept.
func TestBrokenBodyKeepsTheValidators(t *testing.T) {
	srv := httptest.NewServer(testserver.New(t.TempDir(), nil))
	defer srv.Close()
	st, _ := storedir.Open(t.TempDir())
	fake := clock.NewFake(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
	validators := func(path string) ndjson.Validators {
		t.Helper()
		f := fetchWith(t, st, fake, faultOptions(fake.Now), 0, ndjson.Due{FeedID: testids.Feed("f"), URL: srv.URL + path, Labels: []string{}})
		line, err := ndjson.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		var parsed bytes.Buffer
		if err := parse.Run(context.Background(), parse.Config{In: bytes.NewReader(line), Out: ndjson.NewWriter(&parsed), Store: st}); err != nil {
			t.Fatal(err)
		}
		err = store.Run(context.Background(), store.Config{In: &parsed, Out: ndjson.NewWriter(io.Discard),
			Store: st, Now: fake.Now})
		if err != nil {
			t.Fatal(err)
		}
		fake.Advance(time.Hour)
		cat, err := catalog.Open(context.Background(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cat.Close()
		fs, _, err := cat.State(context.Background(), testids.Feed("f"))
		if err != nil {
			t.Fatal(err)
		}
		return fs.Validators
	}
	first := validators("/gen/5.xml")
	if first.ETag != `"gen-5-0"` || first.LastModified == "" {
		t.Fatalf("after a whole feed: %+v", first)
	}
	if v := validators("/fault/wrong-length?claim=4096"); v != first {
		t.Fatalf("after a body short of its Content-Length: %+v, want %+v kept", v, first)
	}
	if v := validators("/fault/huge?size=4194304"); v.ETag != `"huge-4194304"` {
		t.Fatalf("after a body cut at the cap: %+v, want the ETag of the cut one", v)
	}
}

// TestRetryAfterCountsFromTheResponse: a server that took 30 s to answer
// "Retry-After: 60" asked for a pause until 90 s after fetched_at.
func TestRetryAfterCountsFromTheResponse(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "60")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	fake := clock.NewFake(t0)
	calls := 0
	slow := func() time.Time { // the request starts at t0; the answer comes 30 s later
		calls++
		if calls == 1 {
			return t0
		}
		return t0.Add(30 * time.Second)
	}
	st, err := storedir.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := runConfig(t, Config{
		In: strings.NewReader(dueLine(t, "a", srv.URL+"/", ndjson.Validators{})), Store: st,
		Client: httpx.New(httpx.Options{AllowPrivate: true, Now: slow}), Clock: fake,
		Limiter: httpx.NewLimiter(100, 0, fake),
	})
	if len(r.fetches) != 1 || r.fetches[0].RetryAfterSec != 90 {
		t.Fatalf("fetches %+v, want retry_after_sec 90", r.fetches)
	}
}
