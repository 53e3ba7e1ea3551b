package httpx

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/feedpipe/feedpipe/internal/testserver"
)

// fileServer serves one file at /f with http.ServeContent (Range,
// If-Range, the ETag etag) and remembers the Range and If-Range of each
// request.
type fileServer struct {
	mu     sync.Mutex
	body   []byte
	etag   string
	ranges []string // "Range|If-Range" of each request
}

func (f *fileServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	body, etag := f.body, f.etag
	f.ranges = append(f.ranges, r.Header.Get("Range")+"|"+r.Header.Get("If-Range"))
	f.mu.Unlock()
	w.Header().Set("ETag", etag)
	w.Header().Set("Content-Type", "audio/mpeg")
	http.ServeContent(w, r, "f.mp3", time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), bytes.NewReader(body))
}

func (f *fileServer) set(body []byte, etag string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.body, f.etag = body, etag
}

func (f *fileServer) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ranges...)
}

func readAll(t *testing.T, s *Stream) []byte {
	t.Helper()
	if s.Err != nil {
		t.Fatalf("stream: %+v", s.Err)
	}
	b, err := io.ReadAll(s.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Body.Close(); err != nil {
		t.Fatal(err)
	}
	return b
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) ^ seed
	}
	return b
}

// TestStreamResumes: a whole file, then its rest from an offset with the
// ETag as If-Range (206), then, the file changed, the whole new file
// (200) for the same ask.
func TestStreamResumes(t *testing.T) {
	fs := &fileServer{}
	fs.set(pattern(100000, 1), `"v1"`)
	srv := newTestServer(t, fs)
	c := New(Options{AllowPrivate: true})
	ctx := context.Background()

	s := c.Stream(ctx, StreamRequest{Request: Request{URL: srv.URL + "/f"}})
	if got := readAll(t, s); !bytes.Equal(got, fs.body) || s.Offset != 0 || s.Size != 100000 || s.ETag != `"v1"` || s.Status != 200 || s.Encoded {
		t.Fatalf("whole: %d bytes, offset %d, size %d, etag %q, status %d", len(got), s.Offset, s.Size, s.ETag, s.Status)
	}
	s = c.Stream(ctx, StreamRequest{Request: Request{URL: srv.URL + "/f"}, From: 40000, IfRange: `"v1"`})
	if got := readAll(t, s); !bytes.Equal(got, fs.body[40000:]) || s.Offset != 40000 || s.Size != 100000 || s.Status != 206 {
		t.Fatalf("rest: %d bytes, offset %d, size %d, status %d", len(got), s.Offset, s.Size, s.Status)
	}
	if got := s.RequestHeader.Get("Range"); got != "bytes=40000-" {
		t.Errorf("Range %q", got)
	}
	fs.set(pattern(90000, 2), `"v2"`)
	s = c.Stream(ctx, StreamRequest{Request: Request{URL: srv.URL + "/f"}, From: 40000, IfRange: `"v1"`})
	if got := readAll(t, s); !bytes.Equal(got, fs.body) || s.Offset != 0 || s.Size != 90000 || s.ETag != `"v2"` || s.Status != 200 {
		t.Fatalf("changed: %d bytes, offset %d, size %d, etag %q", len(got), s.Offset, s.Size, s.ETag)
	}
	want := []string{"|", `bytes=40000-|"v1"`, `bytes=40000-|"v1"`}
	if got := fs.seen(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("requests %q, want %q", got, want)
	}
}

// TestStreamRefusesOtherRanges: a 206 that does not start where it was
// asked to, and one never asked for, are no rest of the file.
func TestStreamRefusesOtherRanges(t *testing.T) {
	for _, tc := range []struct {
		name, contentRange string
		from               int64
	}{
		{"another start", "bytes 10-19/100", 50},
		{"not asked for", "bytes 0-9/100", 0},
		{"malformed", "bytes 50-40/100", 50},
	} {
		srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Range", tc.contentRange)
			w.WriteHeader(http.StatusPartialContent)
			w.Write(make([]byte, 10))
		}))
		s := New(Options{AllowPrivate: true}).Stream(context.Background(), StreamRequest{Request: Request{URL: srv.URL}, From: tc.from, IfRange: `"x"`})
		if s.Err == nil || s.Err.Code != "bad_range" || s.Body != nil {
			t.Errorf("%s: err %+v", tc.name, s.Err)
		}
	}
}

// TestStreamKeepsOnlyStrongValidators: a weak ETag cannot say two ranges
// are of one file (RFC 9110 §13.1.5); Last-Modified is kept.
func TestStreamKeepsOnlyStrongValidators(t *testing.T) {
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `W/"weak"`)
		w.Header().Set("Last-Modified", "Sun, 29 Nov 2026 00:00:00 GMT")
		w.Write([]byte("x"))
	}))
	s := New(Options{AllowPrivate: true}).Stream(context.Background(), StreamRequest{Request: Request{URL: srv.URL}})
	readAll(t, s)
	if s.ETag != "" || s.LastModified != "Sun, 29 Nov 2026 00:00:00 GMT" {
		t.Errorf("etag %q, last-modified %q", s.ETag, s.LastModified)
	}
}

// TestStreamDecodes: a body sent gzipped anyway is decoded, and said not
// to be resumable.
func TestStreamDecodes(t *testing.T) {
	want := pattern(5000, 3)
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept-Encoding") != "identity" {
			t.Errorf("Accept-Encoding %q", r.Header.Get("Accept-Encoding"))
		}
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		zw.Write(want)
		zw.Close()
	}))
	s := New(Options{AllowPrivate: true}).Stream(context.Background(), StreamRequest{Request: Request{URL: srv.URL}})
	if got := readAll(t, s); !bytes.Equal(got, want) || !s.Encoded || s.Size != -1 {
		t.Fatalf("%d bytes, encoded %v, size %d", len(got), s.Encoded, s.Size)
	}
}

// TestStreamErrors: a status that is no success, and a refused address,
// come as Err, with no body, and give back the host's turn.
func TestStreamErrors(t *testing.T) {
	privatePort, privateRequests := countingServer(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("secret")) })
	publicPort, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/gone" {
			http.NotFound(w, r)
			return
		}
		http.Redirect(w, r, "http://internal.example.test"+privatePort+"/admin", http.StatusFound)
	})
	resolver := testserver.DNS(t, map[string]netip.Addr{
		"public.example.test":   netip.MustParseAddr("127.0.0.1"),
		"internal.example.test": netip.MustParseAddr("127.0.0.1"),
	})
	c := New(Options{Resolver: resolver, Public: func(a netip.AddrPort) bool { return ":"+strconv.Itoa(int(a.Port())) == publicPort }})
	limiter := NewLimiter(1, 0, nil)
	for _, tc := range []struct{ path, code string }{{"/gone", "http_404"}, {"/file", CodeAddressRefused}} {
		u := "http://public.example.test" + publicPort + tc.path
		release, err := limiter.Acquire(context.Background(), HostKey(u))
		if err != nil {
			t.Fatal(err)
		}
		s := c.Stream(context.Background(), StreamRequest{Request: Request{URL: u, Limiter: limiter, Release: release}})
		if s.Err == nil || s.Err.Code != tc.code || s.Body != nil {
			t.Errorf("%s: err %+v", tc.path, s.Err)
		}
		r, _, ok := limiter.TryAcquire(HostKey(u))
		if !ok {
			t.Fatalf("%s: the host's turn was kept", tc.path)
		}
		r()
	}
	if n := privateRequests.Load(); n != 0 {
		t.Fatalf("the private server got %d requests", n)
	}
}

// TestStreamHoldsTheTurn: the host's turn is held while the body is read,
// and given back by Close.
func TestStreamHoldsTheTurn(t *testing.T) {
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(pattern(1000, 4)) }))
	limiter := NewLimiter(1, 0, nil)
	host := HostKey(srv.URL)
	release, err := limiter.Acquire(context.Background(), host)
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{AllowPrivate: true}).Stream(context.Background(), StreamRequest{Request: Request{URL: srv.URL, Limiter: limiter, Release: release}})
	if s.Err != nil {
		t.Fatal(s.Err)
	}
	if _, _, ok := limiter.TryAcquire(host); ok {
		t.Fatal("a second turn while the body is open")
	}
	readAll(t, s)
	if _, _, ok := limiter.TryAcquire(host); !ok {
		t.Fatal("no turn after Close")
	}
}

var contentRanges = []struct {
	v           string
	first, size int64
	ok          bool
}{
	{"bytes 0-9/10", 0, 10, true},
	{"bytes 40000-99999/100000", 40000, 100000, true},
	{"bytes 5-9/*", 5, -1, true},
	{"bytes 5-9/9", 0, 0, false},
	{"bytes 9-5/10", 0, 0, false},
	{"bytes */10", 0, 0, false},
	{"items 0-9/10", 0, 0, false},
	{"bytes -1-9/10", 0, 0, false},
	{"", 0, 0, false},
}

func TestContentRange(t *testing.T) {
	for _, tc := range contentRanges {
		first, size, ok := contentRange(tc.v)
		if ok != tc.ok || ok && (first != tc.first || size != tc.size) {
			t.Errorf("%q: %d, %d, %v", tc.v, first, size, ok)
		}
	}
}

// FuzzContentRange: a Content-Range read is a range that can be: a first
// byte at 0 or more, inside the complete length when one is said.
func FuzzContentRange(f *testing.F) {
	for _, tc := range contentRanges {
		f.Add(tc.v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		first, size, ok := contentRange(v)
		if ok && (first < 0 || size < -1 || size >= 0 && first >= size) {
			t.Fatalf("%q: first %d, size %d", v, first, size)
		}
	})
}
