package httpx

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

const rss = `<?xml version="1.0"?><rss version="2.0"><channel><title>encoded</title></channel></rss>`

func encode(t *testing.T, coding string, body []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w interface {
		Write([]byte) (int, error)
		Close() error
	}
	switch coding {
	case "gzip":
		w = gzip.NewWriter(&buf)
	case "deflate":
		w = zlib.NewWriter(&buf)
	case "raw-deflate":
		w, _ = flate.NewWriter(&buf, flate.DefaultCompression)
	case "br":
		w = brotli.NewWriter(&buf)
	case "zstd":
		w, _ = zstd.NewWriter(&buf)
	}
	w.Write(body)
	w.Close()
	return buf.Bytes()
}

func TestContentEncodings(t *testing.T) {
	for _, tc := range []struct{ coding, header string }{
		{"gzip", "gzip"}, {"deflate", "deflate"}, {"raw-deflate", "deflate"}, {"br", "br"}, {"zstd", "zstd"}, {"gzip", "x-gzip"},
	} {
		payload := encode(t, tc.coding, []byte(rss))
		srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.Contains(r.Header.Get("Accept-Encoding"), "zstd") || !strings.Contains(r.Header.Get("Accept-Encoding"), "br") {
				t.Errorf("Accept-Encoding %q", r.Header.Get("Accept-Encoding"))
			}
			w.Header().Set("Content-Encoding", tc.header)
			w.Write(payload)
		}))
		r := local().Get(context.Background(), Request{URL: srv.URL})
		if r.Err != nil || string(r.Body) != rss {
			t.Errorf("%s as %s: err %+v, body %q", tc.coding, tc.header, r.Err, r.Body)
		}
	}
}

func TestEveryCodingIsCappedAfterDecoding(t *testing.T) {
	big := bytes.Repeat([]byte("A"), 4<<20)
	for _, coding := range []string{"gzip", "deflate", "br", "zstd"} {
		payload := encode(t, coding, big)
		srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", coding)
			w.Write(payload)
		}))
		r := New(Options{AllowPrivate: true, MaxBodyBytes: 1 << 20}).Get(context.Background(), Request{URL: srv.URL})
		if !r.Truncated || len(r.Body) != 1<<20 || r.Err == nil || r.Err.Code != "body_too_large" {
			t.Errorf("%s: %d compressed bytes gave truncated %v, %d bytes, err %+v", coding, len(payload), r.Truncated, len(r.Body), r.Err)
		}
	}
}

func TestUnknownEncodingIsAnError(t *testing.T) {
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "compress")
		w.Write([]byte("x"))
	}))
	r := local().Get(context.Background(), Request{URL: srv.URL})
	if r.Err == nil || !strings.Contains(r.Err.Message, `unsupported Content-Encoding "compress"`) {
		t.Fatalf("err %+v", r.Err)
	}
}

func TestTotalTimeoutCutsATrickle(t *testing.T) {
	// /?n=N&stall=D sends N bytes 20ms apart, then waits D before the rest.
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		stall, _ := time.ParseDuration(r.URL.Query().Get("stall"))
		w.Header().Set("Content-Length", strconv.Itoa(n+1))
		w.WriteHeader(200)
		for i := 0; i <= n; i++ {
			wait := 20 * time.Millisecond
			if i == n {
				wait = stall
			}
			select {
			case <-r.Context().Done():
				return
			case <-time.After(wait):
			}
			if _, err := w.Write([]byte("x")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}))
	for _, tc := range []struct {
		name           string
		query          string
		timeout, total time.Duration
		want           string // the error message; "" for the whole body
	}{
		// The trickle never stalls for a request's timeout: the total
		// cuts it off.
		{"trickle", "n=1000", time.Second, 200 * time.Millisecond, "took longer than 200ms in all (--total-timeout)"},
		// A body that stalls is cut off by the request's timeout.
		{"stall", "n=3&stall=1s", 150 * time.Millisecond, time.Minute, "nothing for 150ms (--timeout)"},
		// A body that keeps coming may take longer than a request's
		// timeout: a large feed on a slow link arrives.
		{"slow but steady", "n=20", 150 * time.Millisecond, time.Minute, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := New(Options{AllowPrivate: true, Timeout: tc.timeout, TotalTimeout: tc.total}).Get(context.Background(), Request{URL: srv.URL + "/?" + tc.query})
			switch {
			case tc.want == "" && r.Err != nil:
				t.Fatalf("err %+v, want the body", r.Err)
			case tc.want == "" && len(r.Body) != 21:
				t.Fatalf("%d bytes, want 21", len(r.Body))
			case tc.want != "" && (r.Err == nil || r.Err.Code != "timeout" || r.Err.Message != tc.want):
				t.Fatalf("err %+v, want timeout %q", r.Err, tc.want)
			}
		})
	}
}

func TestConnectionReset(t *testing.T) {
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.(*net.TCPConn).SetLinger(0) // close with a RST
		conn.Close()
	}))
	r := local().Get(context.Background(), Request{URL: srv.URL})
	if r.Err == nil || r.Err.Class != ndjson.ClassTransient || r.Err.Code != "connection_reset" {
		t.Fatalf("err %+v, want transient connection_reset", r.Err)
	}
}

func TestPermanentRedirect(t *testing.T) {
	srv, _ := feedServer(t)
	c := local()
	for _, tc := range []struct{ path, want string }{
		{"/redirect/301?to=/feed.xml", srv.URL + "/feed.xml"},
		{"/redirect/308?to=/redirect/301%3Fto%3D/feed.xml", srv.URL + "/feed.xml"},
		{"/redirect/302?to=/feed.xml", ""},
		{"/redirect/301?to=/redirect/307%3Fto%3D/feed.xml", ""},
		{"/feed.xml", ""},
		{"/redirect/301?to=/status/404", ""},
	} {
		if got := c.Get(context.Background(), Request{URL: srv.URL + tc.path}).PermanentRedirect(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.path, got, tc.want)
		}
	}
}

func TestUserAgentAndBasicAuthPerRequest(t *testing.T) {
	var gotUA, gotAuth string
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotUA, gotAuth = r.Header.Get("User-Agent"), r.Header.Get("Authorization")
		w.Write([]byte(rss))
	}))
	r := local().Get(context.Background(), Request{URL: srv.URL, UserAgent: "special/1.0", Auth: &BasicAuth{"ann", "s3cret"},
		Header: http.Header{"X-Api-Key": {"k"}, "X-Other": {"v"}, "Accept": {"application/rss+xml"}}})
	if gotUA != "special/1.0" || gotAuth != "Basic "+base64.StdEncoding.EncodeToString([]byte("ann:s3cret")) {
		t.Fatalf("server saw UA %q auth %q", gotUA, gotAuth)
	}
	// Every header the caller adds may be a secret, whatever its name;
	// the standard ones stay readable.
	for name, want := range map[string]string{"Authorization": "", "X-Api-Key": "(redacted)", "X-Other": "(redacted)", "User-Agent": "special/1.0",
		"Accept": "application/rss+xml", "Accept-Encoding": acceptEncoding} {
		if got := r.RequestHeader.Get(name); got != want {
			t.Errorf("recorded %s = %q, want %q", name, got, want)
		}
	}
	for _, v := range Flatten(r.RequestHeader) {
		if strings.Contains(v, "s3cret") || strings.Contains(v, base64.StdEncoding.EncodeToString([]byte("ann:s3cret"))) {
			t.Fatal("a credential reached the recorded headers")
		}
	}
}

// TestURLCredentialsSentAsBasicAuthOnly: user:password@ in the URL
// authenticates, and neither it nor one in a redirect's Location is
// recorded with the URLs.
func TestURLCredentialsSentAsBasicAuthOnly(t *testing.T) {
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user, pass, _ := r.BasicAuth(); user != "ann" || pass != "s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/a":
			http.Redirect(w, r, "http://bob:hunter2@"+r.Host+"/b", http.StatusFound)
			return
		case "/ftp":
			http.Redirect(w, r, "ftp://bob:hunter2@"+r.Host+"/b", http.StatusFound)
			return
		}
		w.Write([]byte(rss))
	}))
	host := strings.TrimPrefix(srv.URL, "http://")
	r := local().Get(context.Background(), Request{URL: "http://ann:s3cret@" + host + "/a"})
	if r.Err != nil || r.Status != 200 {
		t.Fatalf("status %d, err %+v", r.Status, r.Err)
	}
	if r.RequestedURL != srv.URL+"/a" || r.URL != srv.URL+"/b" || len(r.Redirects) != 1 || r.Redirects[0].URL != srv.URL+"/a" {
		t.Errorf("requested %s, final %s, redirects %+v", r.RequestedURL, r.URL, r.Redirects)
	}
	ftp := local().Get(context.Background(), Request{URL: "http://ann:s3cret@" + host + "/ftp"})
	if ftp.Err == nil || ftp.Err.Code != "invalid_url" {
		t.Fatalf("a redirect to ftp: %+v", ftp.Err)
	}
	recorded := fmt.Sprint(r.RequestedURL, r.URL, r.Redirects, Flatten(r.RequestHeader), ftp.URL, ftp.Redirects, ftp.Err.Message)
	for _, secret := range []string{"s3cret", "hunter2", base64.StdEncoding.EncodeToString([]byte("ann:s3cret"))} {
		if strings.Contains(recorded, secret) {
			t.Errorf("%q recorded: %s", secret, recorded)
		}
	}
}

// TestRedirectToAnotherHostDropsTheRequestsHeaders: a feed's own headers
// and basic auth go to its host only, not to another one it redirects to
// (another port of 127.0.0.1, which Go alone would send Authorization to);
// a redirect within the host keeps them.
func TestRedirectToAnotherHostDropsTheRequestsHeaders(t *testing.T) {
	type seen struct{ key, auth, ua string }
	got := map[string]seen{}
	record := func(name string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			got[name] = seen{r.Header.Get("X-Api-Key"), r.Header.Get("Authorization"), r.Header.Get("User-Agent")}
			w.Write([]byte(rss))
		}
	}
	other := newTestServer(t, record("other"))
	origin := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/feed", http.StatusFound)
		case "/within":
			http.Redirect(w, r, "/feed", http.StatusFound)
		default:
			record("origin")(w, r)
		}
	}))
	c := local()
	for _, path := range []string{"/away", "/within"} {
		r := c.Get(context.Background(), Request{URL: origin.URL + path, UserAgent: "mine/1",
			Header: http.Header{"X-Api-Key": {"k-e-y"}}, Auth: &BasicAuth{"ann", "s3cret"}})
		if r.Err != nil || len(r.Redirects) != 1 {
			t.Fatalf("%s: err %+v, redirects %+v", path, r.Err, r.Redirects)
		}
	}
	if o := got["other"]; o.key != "" || o.auth != "" || o.ua != "mine/1" {
		t.Errorf("the other host got X-Api-Key %q, Authorization %q, User-Agent %q", o.key, o.auth, o.ua)
	}
	if o := got["origin"]; o.key != "k-e-y" || o.auth == "" {
		t.Errorf("a redirect within the host lost X-Api-Key %q or Authorization %q", o.key, o.auth)
	}
}

func TestLeavesHost(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		leaves   bool
	}{
		{"https://example.org/a", "https://EXAMPLE.org:443/b", false},
		{"http://example.org/a", "https://example.org/a", false}, // an upgrade to https
		{"http://example.org:80/a", "https://example.org:443/a", false},
		{"https://example.org/a", "http://example.org/a", true}, // a downgrade
		{"http://example.org:8080/a", "https://example.org/a", true},
		{"http://example.org/a", "https://example.org:8443/a", true},
		{"http://127.0.0.1:8080/a", "http://127.0.0.1:9090/a", true},
		{"https://example.org/a", "https://feeds.example.org/a", true},
	} {
		from, _ := url.Parse(tc.from)
		to, _ := url.Parse(tc.to)
		if got := leavesHost(from, to); got != tc.leaves {
			t.Errorf("leavesHost(%s, %s) = %v, want %v", tc.from, tc.to, got, tc.leaves)
		}
	}
}

func TestRobotsAllowed(t *testing.T) {
	robotsFetches := 0
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			robotsFetches++
			w.Write([]byte("User-agent: *\nDisallow: /private/\n\nUser-agent: feedpipe\nDisallow: /no-feedpipe/\n"))
			return
		}
		w.Write([]byte("page"))
	}))
	c := local()
	for path, want := range map[string]bool{"/": true, "/articles/1": true, "/no-feedpipe/x": false, "/private/x": true} {
		ok, err := c.RobotsAllowed(context.Background(), srv.URL+path, nil)
		if err != nil || ok != want {
			t.Errorf("%s: %v, %v; want %v", path, ok, err, want)
		}
	}
	if robotsFetches != 1 {
		t.Errorf("robots.txt fetched %d times, want once", robotsFetches)
	}
	for status, want := range map[int]bool{404: true, 500: false} {
		srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(status) }))
		if ok, _ := local().RobotsAllowed(context.Background(), srv.URL+"/page", nil); ok != want {
			t.Errorf("robots.txt answering %d: allowed %v, want %v", status, ok, want)
		}
	}
}

// TestRobotsCachedPerHost: each host's robots.txt is fetched once and
// applies to that host only, two ports of one address being two hosts.
func TestRobotsCachedPerHost(t *testing.T) {
	var fetches [2]atomic.Int32
	robots := func(i int, body string) *httptest.Server {
		return newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/robots.txt" {
				fetches[i].Add(1)
				w.Write([]byte(body))
			}
		}))
	}
	closed := robots(0, "User-agent: *\nDisallow: /\n")
	open := robots(1, "User-agent: *\nDisallow: /private/\n")
	c := local()
	for range 2 {
		for u, want := range map[string]bool{closed.URL + "/a": false, open.URL + "/a": true, open.URL + "/private/a": false} {
			if ok, err := c.RobotsAllowed(context.Background(), u, nil); err != nil || ok != want {
				t.Errorf("%s: %v, %v; want %v", u, ok, err, want)
			}
		}
	}
	if a, b := fetches[0].Load(), fetches[1].Load(); a != 1 || b != 1 {
		t.Errorf("robots.txt fetched %d and %d times, want once from each host", a, b)
	}
}

// TestRobotsNotCachedWhenCancelled: a robots.txt fetch cut short by the
// caller's context (a signal) says nothing about the host: it is not kept
// as "disallow everything" for the Client's life, and the next call
// fetches again.
func TestRobotsNotCachedWhenCancelled(t *testing.T) {
	var fetches atomic.Int32
	started := make(chan struct{})
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fetches.Add(1) == 1 { // the first hangs until the client gives up
			close(started)
			<-r.Context().Done()
			return
		}
		w.Write([]byte("User-agent: *\nDisallow: /private/\n"))
	}))
	c := local()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	if ok, err := c.RobotsAllowed(ctx, srv.URL+"/page", nil); ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v, %v; want false and context.Canceled", ok, err)
	}
	if ok, err := c.RobotsAllowed(ctx, srv.URL+"/page", nil); ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled before: %v, %v; want false and context.Canceled", ok, err)
	}
	for path, want := range map[string]bool{"/page": true, "/private/x": false} {
		if ok, err := c.RobotsAllowed(context.Background(), srv.URL+path, nil); err != nil || ok != want {
			t.Errorf("%s after the cancelled call: %v, %v; want %v", path, ok, err, want)
		}
	}
	if n := fetches.Load(); n != 2 {
		t.Errorf("robots.txt fetched %d times, want 2 (the cancelled one and one kept)", n)
	}
}

// TestGzipReadersReused: gzip readers and read buffers are pooled, so one
// client decodes responses one after another with reused state: a bomb cut
// at the cap, a corrupt stream, a two-member stream, an empty body and
// bodies of different sizes must each come out as if decoded alone.
func TestGzipReadersReused(t *testing.T) {
	small := []byte(rss)
	large := bytes.Repeat([]byte("<item>reused reader</item>\n"), 20000) // 540 KB
	bomb := encode(t, "gzip", bytes.Repeat([]byte("A"), 8<<20))
	twoMembers := append(encode(t, "gzip", []byte("first ")), encode(t, "gzip", []byte("second"))...)
	corrupt := encode(t, "gzip", large)
	corrupt = corrupt[:len(corrupt)/2]
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		switch r.URL.Path {
		case "/small":
			w.Write(encode(t, "gzip", small))
		case "/large":
			w.Write(encode(t, "gzip", large))
		case "/bomb":
			w.Write(bomb)
		case "/two":
			w.Write(twoMembers)
		case "/corrupt":
			w.Write(corrupt)
		case "/empty":
			w.Header().Del("Content-Encoding")
		}
	}))
	c := New(Options{AllowPrivate: true, MaxBodyBytes: 1 << 20})
	for round := range 3 {
		for _, tc := range []struct {
			path      string
			want      []byte
			truncated bool
			fails     bool
		}{
			{"/large", large, false, false},
			{"/bomb", bytes.Repeat([]byte("A"), 1<<20), true, true},
			{"/small", small, false, false},
			{"/corrupt", nil, false, true},
			{"/two", []byte("first second"), false, false},
			{"/empty", []byte{}, false, false},
			{"/small", small, false, false},
		} {
			r := c.Get(context.Background(), Request{URL: srv.URL + tc.path})
			if (r.Err != nil) != tc.fails || r.Truncated != tc.truncated {
				t.Errorf("round %d %s: err %+v, truncated %v", round, tc.path, r.Err, r.Truncated)
			}
			if tc.want != nil && (!bytes.Equal(r.Body, tc.want) || r.Body == nil) {
				t.Errorf("round %d %s: %d bytes, want %d", round, tc.path, len(r.Body), len(tc.want))
			}
		}
	}
}
