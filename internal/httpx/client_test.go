package httpx

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/feedpipe/feedpipe/internal/testserver"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

func newTestServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func feedServer(t *testing.T) (*httptest.Server, *bytes.Buffer) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/feed.xml", []byte("<rss><channel><title>x</title></channel></rss>"), 0o644); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	return newTestServer(t, testserver.New(dir, &log)), &log
}

func local() *Client { return New(Options{AllowPrivate: true}) }

func TestGetDecodesGzipAndSendsHeaders(t *testing.T) {
	srv, _ := feedServer(t)
	r := local().Get(context.Background(), Request{URL: srv.URL + "/feed.xml", Header: http.Header{"Authorization": {"Basic c2VjcmV0"}}})
	if r.Err != nil || r.Status != 200 {
		t.Fatalf("status %d, err %+v", r.Status, r.Err)
	}
	if string(r.Body) != "<rss><channel><title>x</title></channel></rss>" {
		t.Fatalf("body %q", r.Body)
	}
	if r.Header.Get("Content-Encoding") != "gzip" {
		t.Fatal("server did not gzip: the test does not test decoding")
	}
	if ua := r.RequestHeader.Get("User-Agent"); !strings.Contains(ua, "feedpipe/") || !strings.Contains(ua, "https://") {
		t.Errorf("User-Agent %q does not name feedpipe and a URL", ua)
	}
	if got := r.RequestHeader.Get("Authorization"); got != "(redacted)" {
		t.Errorf("Authorization recorded as %q", got)
	}
}

// TestLastToHostClosesTheConnection: a host's connection is kept for its
// next request, and closed after the one marked last.
func TestLastToHostClosesTheConnection(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("<rss/>"))
	}))
	var mu sync.Mutex
	conns := 0
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			conns++
			mu.Unlock()
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	c := local()
	for i, last := range []bool{false, false, true, false} {
		r := c.Get(context.Background(), Request{URL: srv.URL + "/feed.xml", LastToHost: last})
		if r.Err != nil {
			t.Fatalf("request %d: %+v", i, r.Err)
		}
		if got := r.RequestHeader.Get("Connection"); got != "" {
			t.Errorf("request %d recorded a Connection header %q", i, got)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if conns != 2 { // the first three on one connection, the fourth on a new one
		t.Errorf("%d connections, want 2", conns)
	}
}

func TestConditionalGet(t *testing.T) {
	srv, log := feedServer(t)
	c := local()
	first := c.Get(context.Background(), Request{URL: srv.URL + "/feed.xml"})
	v := ndjson.Validators{ETag: first.Header.Get("ETag"), LastModified: first.Header.Get("Last-Modified")}
	if v.ETag == "" || v.LastModified == "" {
		t.Fatalf("no validators: %+v", v)
	}
	second := c.Get(context.Background(), Request{URL: srv.URL + "/feed.xml", Validators: v})
	if second.Status != 304 || !second.NotModified || second.Err != nil || len(second.Body) != 0 {
		t.Fatalf("second fetch: status %d not_modified %v err %+v", second.Status, second.NotModified, second.Err)
	}
	if second.RequestHeader.Get("If-None-Match") != v.ETag || second.RequestHeader.Get("If-Modified-Since") != v.LastModified {
		t.Errorf("validators not sent: %v", second.RequestHeader)
	}
	if !strings.Contains(log.String(), "if-none-match="+`"\"`) || !strings.Contains(log.String(), "-> 304") {
		t.Errorf("server log does not show the conditional request:\n%s", log)
	}
}

func TestRedirectsRecorded(t *testing.T) {
	srv, _ := feedServer(t)
	start := srv.URL + "/redirect/301?to=" + "/redirect/302%3Fto%3D/feed.xml"
	r := local().Get(context.Background(), Request{URL: start})
	if r.Err != nil || r.Status != 200 {
		t.Fatalf("status %d err %+v", r.Status, r.Err)
	}
	if len(r.Redirects) != 2 || r.Redirects[0].Status != 301 || r.Redirects[1].Status != 302 || r.Redirects[0].URL != start {
		t.Fatalf("redirects %+v", r.Redirects)
	}
	if r.URL != srv.URL+"/feed.xml" {
		t.Errorf("final URL %s", r.URL)
	}
}

// TestMaxRedirects: exactly MaxRedirects redirects are followed; the one
// over it is the response, with the error too_many_redirects; 0 follows
// none, and nil means the default.
func TestMaxRedirects(t *testing.T) {
	// /hop/N redirects to /hop/N-1; /hop/0 is the feed.
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/hop/"))
		if n == 0 {
			w.Write([]byte("<rss/>"))
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/hop/%d", n-1), http.StatusFound)
	}))
	for _, tc := range []struct {
		max       *int
		hops      int
		followed  int    // redirects recorded
		stoppedAt string // "": the feed was reached
	}{
		{new(3), 3, 3, ""},
		{new(3), 4, 3, "/hop/1"},
		{new(0), 0, 0, ""},
		{new(0), 1, 0, "/hop/1"},
		{nil, DefaultMaxRedirects, DefaultMaxRedirects, ""},
		{nil, DefaultMaxRedirects + 1, DefaultMaxRedirects, "/hop/1"},
	} {
		name := fmt.Sprintf("max %v, %d hops", tc.max, tc.hops)
		if tc.max != nil {
			name = fmt.Sprintf("max %d, %d hops", *tc.max, tc.hops)
		}
		r := New(Options{AllowPrivate: true, MaxRedirects: tc.max}).Get(context.Background(), Request{URL: fmt.Sprintf("%s/hop/%d", srv.URL, tc.hops)})
		if len(r.Redirects) != tc.followed {
			t.Errorf("%s: %d redirects recorded, want %d", name, len(r.Redirects), tc.followed)
		}
		if tc.stoppedAt == "" {
			if r.Err != nil || r.Status != 200 || r.URL != srv.URL+"/hop/0" {
				t.Errorf("%s: status %d, url %s, err %+v; want the feed", name, r.Status, r.URL, r.Err)
			}
			continue
		}
		if r.Err == nil || r.Err.Code != "too_many_redirects" || r.Err.Class != ndjson.ClassPermanent || r.Status != http.StatusFound || r.URL != srv.URL+tc.stoppedAt ||
			!strings.Contains(r.Err.Message, "HTTP 302 to "+srv.URL+"/hop/0 not followed") || !strings.Contains(r.Err.Message, "--max-redirects is") {
			t.Errorf("%s: status %d, url %s, err %+v; want the redirect at %s with too_many_redirects", name, r.Status, r.URL, r.Err, tc.stoppedAt)
		}
		if r.Header.Get("Location") != "/hop/0" {
			t.Errorf("%s: the redirect's Location was not kept: %v", name, r.Header)
		}
	}
}

func TestStatusClassification(t *testing.T) {
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/cf":
			w.Header().Set("Cf-Mitigated", "challenge")
			w.WriteHeader(403)
		case "/503-date":
			w.Header().Set("Retry-After", time.Date(2026, 11, 21, 12, 10, 0, 0, time.UTC).Format(http.TimeFormat))
			w.WriteHeader(503)
		default:
			testserver.New("", nil).ServeHTTP(w, r)
		}
	}))
	now := func() time.Time { return time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC) }
	c := New(Options{AllowPrivate: true, Now: now})
	for _, tc := range []struct {
		path, class, code string
		retry             time.Duration
	}{
		{"/status/404", ndjson.ClassPermanent, "http_404", 0},
		{"/status/410", ndjson.ClassPermanent, "http_410", 0},
		{"/status/401", ndjson.ClassPermanent, "http_401", 0},
		{"/status/500", ndjson.ClassTransient, "http_500", 0},
		{"/status/502", ndjson.ClassTransient, "http_502", 0},
		{"/status/408", ndjson.ClassTransient, "http_408", 0},
		{"/status/503", ndjson.ClassTransient, "http_503", 0},
		{"/status/429", ndjson.ClassRateLimited, "http_429", 0},
		{"/status/429?retry-after=120", ndjson.ClassRateLimited, "http_429", 120 * time.Second},
		{"/503-date", ndjson.ClassRateLimited, "http_503", 10 * time.Minute},
		{"/status/403", ndjson.ClassBlocked, "http_403", 0},
		{"/cf", ndjson.ClassBlocked, "bot_challenge", 0},
	} {
		r := c.Get(context.Background(), Request{URL: srv.URL + tc.path})
		if r.Err == nil || r.Err.Class != tc.class || r.Err.Code != tc.code {
			t.Errorf("%s: err %+v, want class %s code %s", tc.path, r.Err, tc.class, tc.code)
			continue
		}
		if r.RetryAfter != tc.retry || r.HasRetryAfter != (tc.retry > 0) {
			t.Errorf("%s: retry after %v (%v), want %v", tc.path, r.RetryAfter, r.HasRetryAfter, tc.retry)
		}
	}
}

func TestBodyCapAndGzipBomb(t *testing.T) {
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zw.Write(bytes.Repeat([]byte("A"), 50<<20))
	zw.Close()
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bomb" {
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(bomb.Bytes())
			return
		}
		w.Write(bytes.Repeat([]byte("B"), 5000))
	}))
	c := New(Options{AllowPrivate: true, MaxBodyBytes: 1000})
	for _, p := range []string{"/big", "/bomb"} {
		r := c.Get(context.Background(), Request{URL: srv.URL + p})
		if !r.Truncated || len(r.Body) != 1000 || r.Err == nil || r.Err.Code != "body_too_large" || !strings.Contains(r.Err.Message, "1000 bytes") {
			t.Errorf("%s: truncated %v, %d bytes, err %+v", p, r.Truncated, len(r.Body), r.Err)
		}
	}
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer close(release)
	r := New(Options{AllowPrivate: true, Timeout: 100 * time.Millisecond}).Get(context.Background(), Request{URL: srv.URL})
	if r.Err == nil || r.Err.Class != ndjson.ClassTransient || r.Err.Code != "timeout" || r.Err.Message != "nothing for 100ms (--timeout)" {
		t.Fatalf("err %+v", r.Err)
	}
}

func TestRefusesPrivateAddressesUnlessAllowed(t *testing.T) {
	srv, _ := feedServer(t)
	strict := New(Options{})
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	for _, u := range []string{srv.URL + "/feed.xml", "http://localhost" + port + "/feed.xml", "http://[::ffff:127.0.0.1]" + port + "/feed.xml"} {
		r := strict.Get(context.Background(), Request{URL: u})
		if r.Err == nil || r.Err.Code != "address_refused" || !strings.Contains(r.Err.Message, "--allow-private") {
			t.Errorf("%s: err %+v, want address_refused", u, r.Err)
		}
	}
	if r := local().Get(context.Background(), Request{URL: srv.URL + "/feed.xml"}); r.Err != nil {
		t.Errorf("allowed: %+v", r.Err)
	}
}

func TestInvalidURL(t *testing.T) {
	for _, u := range []string{"file:///etc/passwd", "ftp://example.org/x", "not a url"} {
		r := local().Get(context.Background(), Request{URL: u})
		if r.Err == nil || r.Err.Class != ndjson.ClassPermanent || r.Err.Code != "invalid_url" {
			t.Errorf("%s: %+v", u, r.Err)
		}
	}
}

func TestPublicAddr(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		public bool
	}{
		{"93.184.215.14", true}, {"2606:4700::6810:85e5", true}, {"8.8.8.8", true},
		{"127.0.0.1", false}, {"127.8.9.10", false}, {"10.1.2.3", false}, {"172.16.0.1", false},
		{"192.168.1.1", false}, {"169.254.169.254", false}, {"100.64.0.1", false}, {"0.0.0.0", false},
		{"224.0.0.1", false}, {"255.255.255.255", false}, {"198.18.0.1", false},
		{"::1", false}, {"::", false}, {"fe80::1", false}, {"fc00::1", false}, {"ff02::1", false},
		{"::ffff:127.0.0.1", false}, {"::ffff:10.0.0.1", false}, {"::ffff:8.8.8.8", true},
		{"::127.0.0.1", false}, {"64:ff9b::10.0.0.1", false}, {"64:ff9b::8.8.8.8", true},
		{"2002:7f00:0001::", false}, {"2002:0808:0808::", true},
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", false},         // Teredo carrying 127.0.0.1
		{"::ffff:0:7f00:1", false}, {"::ffff:0:808:808", false}, // IPv4-translated (SIIT)
		{"fec0::1", false}, {"feff:ffff::1", false}, // site-local, fec0::/10
	} {
		if got := publicAddr(netip.MustParseAddr(tc.addr)); got != tc.public {
			t.Errorf("publicAddr(%s) = %v, want %v", tc.addr, got, tc.public)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"120", 2 * time.Minute, true}, {"0", 0, true}, {" 5 ", 5 * time.Second, true},
		{"Sat, 21 Nov 2026 12:05:00 GMT", 5 * time.Minute, true},
		{"Sat, 21 Nov 2026 11:00:00 GMT", 0, true},
		{"", 0, false}, {"-1", 0, false}, {"soon", 0, false}, {"1.5", 0, false},
	} {
		got, ok := parseRetryAfter(tc.in, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	// A date is rounded up to a second, never down: the pause must not end
	// before it.
	if got, _ := parseRetryAfter("Sat, 21 Nov 2026 12:05:00 GMT", now.Add(750*time.Millisecond)); got != 5*time.Minute {
		t.Errorf("parseRetryAfter of a date 4m59.25s away = %v, want 5m0s", got)
	}
}
