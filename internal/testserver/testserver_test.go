package testserver

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/feedpipe/feedpipe/internal/testenv"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
)

func start(t *testing.T) (*Handler, *httptest.Server, *testenv.Buffer) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.xml"), []byte("<rss version=\"2.0\"><channel><title>a</title></channel></rss>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	log := &testenv.Buffer{}
	h := New(dir, log)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv, log
}

// get requests url with the headers given as name, value pairs. An
// explicit Accept-Encoding keeps the transport from decoding gzip itself.
func get(t *testing.T, c *http.Client, url string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func readAll(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type rss struct {
	Channel struct {
		Title string `xml:"title"`
		Items []struct {
			Title   string `xml:"title"`
			Link    string `xml:"link"`
			GUID    string `xml:"guid"`
			PubDate string `xml:"pubDate"`
		} `xml:"item"`
	} `xml:"channel"`
}

func parseRSS(t *testing.T, b []byte) rss {
	t.Helper()
	var f rss
	if err := xml.Unmarshal(b, &f); err != nil {
		t.Fatalf("not XML: %v\n%.300s", err, b)
	}
	return f
}

func TestFile(t *testing.T) {
	_, srv, log := start(t)
	c := srv.Client()
	resp := get(t, c, srv.URL+"/a.xml", "Accept-Encoding", "identity")
	body := readAll(t, resp)
	etag, lm := resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
	if resp.StatusCode != 200 || etag == "" || lm == "" || !bytes.HasPrefix(body, []byte("<rss")) {
		t.Fatalf("status %d etag %q last-modified %q body %q", resp.StatusCode, etag, lm, body)
	}
	for _, h := range [][]string{{"If-None-Match", etag}, {"If-None-Match", "W/" + etag + ", \"x\""}, {"If-Modified-Since", lm}} {
		if resp := get(t, c, srv.URL+"/a.xml", h...); resp.StatusCode != 304 {
			t.Errorf("%s: %s: status %d, want 304", h[0], h[1], resp.StatusCode)
		}
	}
	if resp := get(t, c, srv.URL+"/a.xml", "If-None-Match", `"other"`); resp.StatusCode != 200 {
		t.Errorf("other etag: status %d, want 200", resp.StatusCode)
	}
	resp = get(t, c, srv.URL+"/a.xml", "Accept-Encoding", "gzip")
	zr, err := gzip.NewReader(bytes.NewReader(readAll(t, resp)))
	if err != nil {
		t.Fatalf("gzip: %v (Content-Encoding %q)", err, resp.Header.Get("Content-Encoding"))
	}
	if plain, _ := io.ReadAll(zr); !bytes.Equal(plain, body) {
		t.Errorf("gzip body %q, want %q", plain, body)
	}
	if resp := get(t, c, srv.URL+"/missing.xml"); resp.StatusCode != 404 {
		t.Errorf("missing file: status %d", resp.StatusCode)
	}
	want := fmt.Sprintf("GET /a.xml if-none-match=%q if-modified-since=\"\" -> 304\n", etag)
	if !strings.Contains(log.String(), want) {
		t.Errorf("log lacks %q:\n%s", want, log)
	}
}

func TestStatusRedirectDelay(t *testing.T) {
	_, srv, _ := start(t)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp := get(t, noFollow, srv.URL+"/status/503?retry-after=7")
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "7" {
		t.Errorf("status: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	resp = get(t, noFollow, srv.URL+"/redirect/308?to=/a.xml")
	if resp.StatusCode != 308 || resp.Header.Get("Location") != "/a.xml" {
		t.Errorf("redirect: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	begin := time.Now()
	resp = get(t, noFollow, srv.URL+"/a.xml?delay=50ms")
	if d := time.Since(begin); resp.StatusCode != 200 || d < 50*time.Millisecond {
		t.Errorf("delay: status %d after %v, want 200 after 50ms or more", resp.StatusCode, d)
	}
}

// TestRedirectFile: a PATH.redirect file redirects /PATH while it is
// there, as its one line says; without it, the file is served again.
func TestRedirectFile(t *testing.T) {
	h, srv, _ := start(t)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	rule := filepath.Join(h.Dir, "a.xml.redirect")
	for _, tc := range []struct {
		rule     string // "" for no file
		status   int
		location string
	}{
		{"301 /b.xml\n", 301, "/b.xml"},
		{"302 http://elsewhere.example/feed", 302, "http://elsewhere.example/feed"},
		{"", 200, ""},
		{"200 /b.xml", 500, ""},
		{"301", 500, ""},
	} {
		os.Remove(rule)
		if tc.rule != "" {
			if err := os.WriteFile(rule, []byte(tc.rule), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		resp := get(t, noFollow, srv.URL+"/a.xml")
		resp.Body.Close()
		if resp.StatusCode != tc.status || resp.Header.Get("Location") != tc.location {
			t.Errorf("%q: %d to %q, want %d to %q", tc.rule, resp.StatusCode, resp.Header.Get("Location"), tc.status, tc.location)
		}
	}
}

func TestGen(t *testing.T) {
	h, srv, _ := start(t)
	c := srv.Client()
	feedURL := srv.URL + "/gen/42.xml"
	resp := get(t, c, feedURL)
	body := readAll(t, resp)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/rss+xml") {
		t.Fatalf("status %d, type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if len(body) < 4000 || len(body) > 6500 {
		t.Errorf("size %d, want about 5 KB", len(body))
	}
	f := parseRSS(t, body)
	if len(f.Channel.Items) != 10 {
		t.Fatalf("%d items, want 10", len(f.Channel.Items))
	}
	guids := map[string]bool{}
	var last time.Time
	for i, it := range f.Channel.Items {
		pub, err := time.Parse(time.RFC1123Z, it.PubDate)
		if err != nil {
			t.Errorf("item %d: pubDate %q: %v", i, it.PubDate, err)
		}
		if i > 0 && !pub.Before(last) {
			t.Errorf("item %d published %v, not before the item above it (%v)", i, pub, last)
		}
		last = pub
		if guids[it.GUID] || it.GUID == "" || !strings.HasPrefix(it.Link, "https://") || !strings.Contains(it.Title, "Feed 42") {
			t.Errorf("item %d: %+v", i, it)
		}
		guids[it.GUID] = true
	}

	// Deterministic, whatever the Host header; different for another n.
	if again := readAll(t, get(t, c, feedURL, "Host", "127.3.4.5:8080")); !bytes.Equal(again, body) {
		t.Error("a second request (with another Host) gave another body")
	}
	other := parseRSS(t, readAll(t, get(t, c, srv.URL+"/gen/43.xml")))
	if other.Channel.Items[0].Title == f.Channel.Items[0].Title || other.Channel.Items[0].GUID == f.Channel.Items[0].GUID {
		t.Errorf("feeds 42 and 43 share their first item: %+v", other.Channel.Items[0])
	}

	etag, lm := resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
	if r := get(t, c, feedURL, "If-None-Match", etag); r.StatusCode != 304 {
		t.Errorf("If-None-Match %s: status %d, want 304", etag, r.StatusCode)
	}
	if r := get(t, c, feedURL, "If-Modified-Since", lm); r.StatusCode != 304 {
		t.Errorf("If-Modified-Since %s: status %d, want 304", lm, r.StatusCode)
	}

	// A revision bump: new validators, one new item on top, the rest kept.
	h.SetRevision(1)
	resp = get(t, c, feedURL, "If-None-Match", etag)
	bumped := parseRSS(t, readAll(t, resp))
	if resp.StatusCode != 200 || resp.Header.Get("ETag") == etag {
		t.Fatalf("after SetRevision(1): status %d, ETag %q (was %q)", resp.StatusCode, resp.Header.Get("ETag"), etag)
	}
	if r := get(t, c, feedURL, "If-Modified-Since", lm); r.StatusCode != 200 {
		t.Errorf("after SetRevision(1), If-Modified-Since the old date: status %d, want 200", r.StatusCode)
	}
	newFirst := bumped.Channel.Items[0]
	if guids[newFirst.GUID] || len(bumped.Channel.Items) != 10 || bumped.Channel.Items[1].GUID != f.Channel.Items[0].GUID {
		t.Errorf("after SetRevision(1) the items are %+v", bumped.Channel.Items)
	}

	for _, bad := range []string{"/gen/x.xml", "/gen/-1.xml", "/gen/1.json"} {
		if r := get(t, c, srv.URL+bad); r.StatusCode != 404 {
			t.Errorf("%s: status %d, want 404", bad, r.StatusCode)
		}
	}
}

// TestGenCached: a generated feed is made once per revision and kept, as a
// publisher keeps a file; what is sent, plain or gzipped, is exactly
// GenFeed's body at the current revision, and the log line of each request
// is as before.
func TestGenCached(t *testing.T) {
	h, srv, log := start(t)
	c := srv.Client()
	h.Prepare(8)
	for _, rev := range []int{0, 1, 0} {
		h.SetRevision(rev)
		want, modified := GenFeed(7, rev)
		for range 2 { // the second answer comes from the cache
			for _, enc := range []string{"identity", "gzip"} {
				resp := get(t, c, srv.URL+"/gen/7.xml", "Accept-Encoding", enc)
				body := readAll(t, resp)
				if resp.Header.Get("Content-Length") != strconv.Itoa(len(body)) {
					t.Errorf("rev %d %s: Content-Length %s for %d bytes", rev, enc, resp.Header.Get("Content-Length"), len(body))
				}
				if enc == "gzip" {
					zr, err := gzip.NewReader(bytes.NewReader(body))
					if err != nil {
						t.Fatalf("rev %d: gzip: %v", rev, err)
					}
					if body, err = io.ReadAll(zr); err != nil {
						t.Fatal(err)
					}
				}
				if !bytes.Equal(body, want) {
					t.Errorf("rev %d %s: the body differs from GenFeed(7, %d)", rev, enc, rev)
				}
				if lm := resp.Header.Get("Last-Modified"); lm != modified.UTC().Format(http.TimeFormat) {
					t.Errorf("rev %d %s: Last-Modified %q, want %v", rev, enc, lm, modified)
				}
				if etag := resp.Header.Get("ETag"); etag != fmt.Sprintf(`"gen-7-%d"`, rev) {
					t.Errorf("rev %d %s: ETag %q", rev, enc, etag)
				}
			}
		}
	}
	get(t, c, srv.URL+"/gen/7.xml", "If-None-Match", `"gen-7-0"`, "If-Modified-Since", "Thu, 01 Jan 2026 09:00:07 GMT").Body.Close()
	want := `GET /gen/7.xml if-none-match="\"gen-7-0\"" if-modified-since="Thu, 01 Jan 2026 09:00:07 GMT" -> 304` + "\n"
	if !strings.HasSuffix(log.String(), want) {
		t.Errorf("the log ends\n%s\nwant\n%s", log.String()[max(0, len(log.String())-200):], want)
	}
}

func TestTrickle(t *testing.T) {
	_, srv, _ := start(t)
	begin := time.Now()
	resp := get(t, srv.Client(), srv.URL+"/fault/trickle?bytes=40&every=20ms&chunk=4")
	body := readAll(t, resp)
	// 10 chunks with 9 pauses between them.
	if d := time.Since(begin); d < 180*time.Millisecond {
		t.Errorf("40 bytes took %v, want at least 180ms", d)
	}
	if resp.StatusCode != 200 || len(body) != 40 || !bytes.HasPrefix(body, []byte("<?xml")) {
		t.Errorf("status %d, body %q", resp.StatusCode, body)
	}
	if r := get(t, srv.Client(), srv.URL+"/fault/trickle?every=soon"); r.StatusCode != 400 {
		t.Errorf("a bad every=: status %d, want 400", r.StatusCode)
	}
}

func TestHang(t *testing.T) {
	h, srv, log := start(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/fault/hang", nil)
		resp, err := srv.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	waitFor(t, "the request to arrive", func() bool { return h.InFlight() == 1 })
	select {
	case err := <-done:
		t.Fatalf("the hang answered: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("client error %v, want context.Canceled", err)
	}
	waitFor(t, "the handler to return", func() bool { return h.InFlight() == 0 })
	if !strings.Contains(log.String(), "GET /fault/hang if-none-match=\"\" if-modified-since=\"\" -> 0\n") {
		t.Errorf("log:\n%s", log)
	}
}

// waitFor polls cond; the deadline only keeps a broken test from hanging.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

func TestReset(t *testing.T) {
	_, srv, log := start(t)
	resp, err := srv.Client().Get(srv.URL + "/fault/reset")
	if err == nil {
		resp.Body.Close()
		t.Fatalf("got a response: %d", resp.StatusCode)
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("error %v, want connection reset", err)
	}
	if !strings.Contains(log.String(), "/fault/reset if-none-match=\"\" if-modified-since=\"\" -> 0\n") {
		t.Errorf("log:\n%s", log)
	}
}

func TestRedirectLoop(t *testing.T) {
	_, srv, log := start(t)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp := get(t, noFollow, srv.URL+"/fault/redirect-loop?status=301")
	if resp.StatusCode != 301 || resp.Header.Get("Location") != "/fault/redirect-loop?status=301" {
		t.Errorf("status %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	_, err := srv.Client().Get(srv.URL + "/fault/redirect-loop")
	if err == nil || !strings.Contains(err.Error(), "stopped after 10 redirects") {
		t.Errorf("following the loop: %v", err)
	}
	if n := strings.Count(log.String(), "GET /fault/redirect-loop if-none-match"); n != 10 {
		t.Errorf("%d requests logged, want 10", n)
	}
}

func TestGzipBomb(t *testing.T) {
	_, srv, _ := start(t)
	c := srv.Client()
	for _, tc := range []struct {
		query      string
		size, read int64 // decoded size; how much of it to read
	}{
		{"?size=8388608", 8 << 20, 8 << 20},
		{"?size=3000001", 3000001, 3000001},
		{"", 1 << 30, 4 << 20},
	} {
		resp := get(t, c, srv.URL+"/fault/gzip-bomb"+tc.query, "Accept-Encoding", "gzip")
		zipped := readAll(t, resp)
		if resp.Header.Get("Content-Encoding") != "gzip" || resp.ContentLength != int64(len(zipped)) {
			t.Errorf("%s: Content-Encoding %q, Content-Length %d, body %d bytes", tc.query, resp.Header.Get("Content-Encoding"), resp.ContentLength, len(zipped))
		}
		if int64(len(zipped)) > tc.size/500+1024 {
			t.Errorf("%s: %d bytes for %d, not a bomb", tc.query, len(zipped), tc.size)
		}
		if isize := binary.LittleEndian.Uint32(zipped[len(zipped)-4:]); isize != uint32(tc.size) {
			t.Errorf("%s: gzip trailer says %d bytes, want %d", tc.query, isize, tc.size)
		}
		zr, err := gzip.NewReader(bytes.NewReader(zipped))
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		buf := make([]byte, 64<<10)
		for n < tc.read {
			m, err := zr.Read(buf[:min(int64(len(buf)), tc.read-n)])
			if bytes.Count(buf[:m], []byte{' '}) != m {
				t.Fatalf("%s: a byte other than a space near offset %d", tc.query, n)
			}
			n += int64(m)
			if err != nil {
				t.Fatalf("%s: after %d bytes: %v", tc.query, n, err)
			}
		}
		// Read to the end (and the checksum) when the cap is the size.
		if tc.read == tc.size {
			if m, err := zr.Read(buf); m != 0 || err != io.EOF {
				t.Errorf("%s: after %d bytes: %d more, %v", tc.query, n, m, err)
			}
		}
	}
	if r := get(t, c, srv.URL+"/fault/gzip-bomb?size=1099511627776"); r.StatusCode != 400 {
		t.Errorf("a 1 TiB bomb: status %d, want 400", r.StatusCode)
	}
}

func TestCloudflare(t *testing.T) {
	_, srv, _ := start(t)
	resp := get(t, srv.Client(), srv.URL+"/fault/cloudflare")
	body := readAll(t, resp)
	if resp.StatusCode != 403 || resp.Header.Get("cf-mitigated") != "challenge" || resp.Header.Get("server") != "cloudflare" ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !bytes.Contains(body, []byte("<title>Just a moment...</title>")) {
		t.Errorf("status %d, headers %v, body %.100q", resp.StatusCode, resp.Header, body)
	}
}

func TestHuge(t *testing.T) {
	_, srv, _ := start(t)
	const size = 1<<20 + 17
	resp := get(t, srv.Client(), srv.URL+"/fault/huge?size="+strconv.Itoa(size))
	body := readAll(t, resp)
	if resp.StatusCode != 200 || resp.ContentLength != size || len(body) != size {
		t.Fatalf("status %d, Content-Length %d, %d bytes; want %d", resp.StatusCode, resp.ContentLength, len(body), size)
	}
	if etag := resp.Header.Get("ETag"); etag != `"huge-1048593"` || resp.Header.Get("Last-Modified") == "" {
		t.Errorf("ETag %q, Last-Modified %q", etag, resp.Header.Get("Last-Modified"))
	}
	if n := len(parseRSS(t, body).Channel.Items); n < 300 {
		t.Errorf("%d items in 1 MiB", n)
	}
}

func TestFeedReader(t *testing.T) {
	for _, size := range []int64{0, 1, 100, int64(len(feedHead) + len(feedFoot)), 1000, 4321, 100_000} {
		b, err := io.ReadAll(newFeedReader(size))
		if err != nil || int64(len(b)) != size {
			t.Errorf("size %d: %d bytes, %v", size, len(b), err)
		}
		if size >= int64(len(feedHead)+len(feedFoot)) {
			parseRSS(t, b)
		}
	}
}

func TestWrongLength(t *testing.T) {
	_, srv, _ := start(t)
	resp := get(t, srv.Client(), srv.URL+"/fault/wrong-length?claim=1000")
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if resp.ContentLength != 1000 || len(body) != 500 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("Content-Length %d, %d bytes, error %v; want 1000, 500, unexpected EOF", resp.ContentLength, len(body), err)
	}
	if etag := resp.Header.Get("ETag"); etag != `"wrong-length-1000"` || resp.Header.Get("Last-Modified") == "" {
		t.Errorf("ETag %q, Last-Modified %q", etag, resp.Header.Get("Last-Modified"))
	}
}

func TestEncodings(t *testing.T) {
	_, srv, _ := start(t)
	decoders := map[string]func(io.Reader) (io.Reader, error){
		"gzip":    func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) },
		"deflate": func(r io.Reader) (io.Reader, error) { return zlib.NewReader(r) },
		"zstd":    func(r io.Reader) (io.Reader, error) { return zstd.NewReader(r) },
		"br":      func(r io.Reader) (io.Reader, error) { return brotli.NewReader(r), nil },
	}
	plain, _ := GenFeed(0, 0)
	for enc, decode := range decoders {
		// The encoding is sent whatever the request accepts.
		resp := get(t, srv.Client(), srv.URL+"/fault/encoding/"+enc, "Accept-Encoding", "identity")
		body := readAll(t, resp)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != enc || bytes.Equal(body, plain) {
			t.Errorf("%s: status %d, Content-Encoding %q", enc, resp.StatusCode, resp.Header.Get("Content-Encoding"))
			continue
		}
		r, err := decode(bytes.NewReader(body))
		if err != nil {
			t.Errorf("%s: %v", enc, err)
			continue
		}
		decoded, err := io.ReadAll(r)
		if err != nil || !bytes.Equal(decoded, plain) {
			t.Errorf("%s: decoded %d bytes (%v), want the %d of /gen/0.xml", enc, len(decoded), err, len(plain))
		}
		if n := len(parseRSS(t, decoded).Channel.Items); n != 10 {
			t.Errorf("%s: %d items", enc, n)
		}
	}
	if r := get(t, srv.Client(), srv.URL+"/fault/encoding/lzma"); r.StatusCode != 400 {
		t.Errorf("unknown encoding: status %d, want 400", r.StatusCode)
	}
}

func TestRetryAfter(t *testing.T) {
	_, srv, _ := start(t)
	date := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC).Format(http.TimeFormat)
	for query, want := range map[string][2]string{
		"":                                {"429", "120"},
		"?status=503&after=30":            {"503", "30"},
		"?after=" + url.QueryEscape(date): {"429", date},
	} {
		resp := get(t, srv.Client(), srv.URL+"/fault/retry-after"+query)
		resp.Body.Close()
		if strconv.Itoa(resp.StatusCode) != want[0] || resp.Header.Get("Retry-After") != want[1] {
			t.Errorf("%q: status %d, Retry-After %q; want %s", query, resp.StatusCode, resp.Header.Get("Retry-After"), want)
		}
	}
	if r := get(t, srv.Client(), srv.URL+"/fault/nonsense"); r.StatusCode != 404 {
		t.Errorf("unknown fault: status %d, want 404", r.StatusCode)
	}
}
