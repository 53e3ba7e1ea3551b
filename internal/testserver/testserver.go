// Package testserver serves feed files and generated feeds over HTTP the way
// publishers do (ETag, Last-Modified, gzip, 304) and misbehaves on request,
// for tests, the demo and benchmarks.
//
// A Handler answers these paths; the Host header never matters, so one
// server can stand for many publishers reached through many addresses:
//
//	/PATH                         the file PATH under Dir, with ETag,
//	                              Last-Modified, 304 and gzip when accepted;
//	                              or, while Dir holds PATH.redirect, a file
//	                              of one line "NNN LOCATION", a redirect
//	                              with status NNN to LOCATION (so that a
//	                              test can move a feed between requests)
//	/gen/N.xml                    a generated RSS 2.0 feed for N >= 0: about
//	                              5 KB, 10 items, deterministic for N and the
//	                              handler's Revision; ETag, Last-Modified,
//	                              304 and gzip as for files. Each Revision
//	                              bump adds one newest item (and drops the
//	                              oldest) in every generated feed.
//	/status/NNN[?retry-after=V]   that status, with an optional Retry-After
//	/redirect/NNN?to=PATH         a redirect with status NNN to PATH
//
// and these faults:
//
//	/fault/trickle?bytes=N&every=D[&chunk=C]
//	                              a 200 with N bytes (default 1024) of feed
//	                              text, C bytes (default 4) every D (default 1s)
//	/fault/hang                   no answer until the client goes away
//	/fault/reset                  the connection reset (TCP RST) before any response
//	/fault/redirect-loop[?status=NNN]
//	                              a redirect (default 302) to itself, forever
//	/fault/gzip-bomb[?size=BYTES] Content-Encoding gzip: about BYTES/1000 bytes
//	                              that decode to BYTES (default 1 GiB, at most
//	                              16 GiB) spaces
//	/fault/cloudflare             a 403 challenge page (server: cloudflare,
//	                              cf-mitigated: challenge)
//	/fault/huge[?size=BYTES]      a 200 with BYTES (default 64 MiB) of RSS,
//	                              streamed, ETag "huge-BYTES"
//	/fault/wrong-length[?claim=N] Content-Length N (default 4096), ETag
//	                              "wrong-length-N", then N/2 bytes and the
//	                              connection closes
//	/fault/encoding/E             /gen/0.xml with Content-Encoding E
//	                              (gzip, deflate, zstd or br), whatever the
//	                              request accepts
//	/fault/retry-after[?status=NNN&after=V]
//	                              status 429 (or NNN) with Retry-After V
//	                              (default 120; seconds or an HTTP date)
//
// A generated feed is made once per revision and kept, gzipped, as a
// publisher keeps a static file: on the first request for it, or ahead of
// any with Prepare, and again at once on SetRevision for every feed made
// so far. The server then costs about what a static file server does (a
// 304 costs no body at all), so that a benchmark sharing the machine with
// it measures its client, not the feed generator. 10,000 feeds keep about
// 11 MB.
//
// Any request with ?delay=DURATION (such as 500ms) is answered that much
// later. Files named gen, status, redirect or fault under Dir are hidden by
// these routes.
package testserver

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/gzip"
)

// Handler serves the files under Dir and the routes of the package comment.
// Requests are logged, one line each, to Log when it is not nil:
//
//	GET /feed.xml if-none-match="abc" if-modified-since="" -> 304
//
// A request that gets no response (a hang, a reset, a delay the client did
// not wait for) is logged with status 0.
type Handler struct {
	Dir string
	Log io.Writer

	mu       sync.Mutex // serialises writes to Log
	revision atomic.Int64
	inFlight atomic.Int64
	bombs    bombCache
	gen      genCache
}

// New returns a Handler for dir.
func New(dir string, log io.Writer) *Handler { return &Handler{Dir: dir, Log: log} }

// SetRevision sets the revision of the generated feeds (0 at first); any
// change gives every /gen/ feed new items, validators and a new body.
// The feeds made so far are made again at the new revision before it
// returns.
func (h *Handler) SetRevision(n int) {
	if int(h.revision.Swap(int64(n))) != n {
		h.gen.remake(n)
	}
}

// Revision returns the revision of the generated feeds.
func (h *Handler) Revision() int { return int(h.revision.Load()) }

// InFlight returns the number of requests being handled, so that tests can
// check that a client that gave up did not leave a handler running.
func (h *Handler) InFlight() int { return int(h.inFlight.Load()) }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.inFlight.Add(1)
	defer h.inFlight.Add(-1)
	// The request is logged before the response leaves, so that a client
	// that has its answer finds it in the log.
	rec := &statusRecorder{ResponseWriter: w, log: func(status int) { h.logRequest(r, status) }}
	defer func() {
		if !rec.started {
			// Nothing was written: net/http sends an empty 200 unless the
			// client is gone.
			status := http.StatusOK
			if r.Context().Err() != nil {
				status = 0
			}
			rec.logOnly(status)
		}
	}()
	if !waitDelay(r) {
		return
	}
	h.serve(rec, r)
}

// waitDelay waits for the ?delay= of the request, if any, and reports
// whether the client is still there.
func waitDelay(r *http.Request) bool {
	if r.URL.RawQuery == "" {
		return true
	}
	d, err := time.ParseDuration(r.URL.Query().Get("delay"))
	if err != nil {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

func (h *Handler) logRequest(r *http.Request, status int) {
	if h.Log == nil {
		return
	}
	// As fmt's "%s %s if-none-match=%q if-modified-since=%q -> %d\n",
	// without fmt's cost on every request.
	line := make([]byte, 0, 128)
	line = append(line, r.Method...)
	line = append(line, ' ')
	line = append(line, r.URL.RequestURI()...)
	line = append(line, " if-none-match="...)
	line = strconv.AppendQuote(line, r.Header.Get("If-None-Match"))
	line = append(line, " if-modified-since="...)
	line = strconv.AppendQuote(line, r.Header.Get("If-Modified-Since"))
	line = append(line, " -> "...)
	line = strconv.AppendInt(line, int64(status), 10)
	line = append(line, '\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Log.Write(line)
}

func (h *Handler) serve(w *statusRecorder, r *http.Request) {
	p := path.Clean("/" + r.URL.Path)
	switch {
	case strings.HasPrefix(p, "/status/"):
		code, err := strconv.Atoi(strings.TrimPrefix(p, "/status/"))
		if err != nil || code < 100 || code > 999 {
			http.Error(w, "bad status", http.StatusBadRequest)
			return
		}
		if ra := r.URL.Query().Get("retry-after"); ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		w.WriteHeader(code)
		fmt.Fprintf(w, "status %d\n", code)
	case strings.HasPrefix(p, "/redirect/"):
		code, err := strconv.Atoi(strings.TrimPrefix(p, "/redirect/"))
		if err != nil || code < 300 || code > 399 {
			http.Error(w, "bad redirect status", http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, r.URL.Query().Get("to"), code)
	case strings.HasPrefix(p, "/gen/"):
		h.serveGen(w, r, strings.TrimPrefix(p, "/gen/"))
	case strings.HasPrefix(p, "/fault/"):
		h.serveFault(w, r, strings.TrimPrefix(p, "/fault/"))
	default:
		h.serveFile(w, r, p)
	}
}

func (h *Handler) serveFile(w http.ResponseWriter, r *http.Request, p string) {
	file := filepath.Join(h.Dir, filepath.FromSlash(p))
	if rule, err := os.ReadFile(file + ".redirect"); err == nil {
		serveRedirectFile(w, r, string(rule))
		return
	}
	st, err := os.Stat(file)
	if err != nil || st.IsDir() {
		http.NotFound(w, r)
		return
	}
	body, err := os.ReadFile(file)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:8]) + `"`
	ctype := mime.TypeByExtension(filepath.Ext(file))
	switch filepath.Ext(file) {
	case ".xml", ".rss", ".atom":
		ctype = "application/xml; charset=utf-8"
	case ".json":
		ctype = "application/feed+json; charset=utf-8"
	}
	if ctype == "" {
		ctype = http.DetectContentType(body)
	}
	serveBody(w, r, body, ctype, etag, st.ModTime())
}

// serveRedirectFile answers with the redirect of a PATH.redirect file:
// "NNN LOCATION".
func serveRedirectFile(w http.ResponseWriter, r *http.Request, rule string) {
	code, to, _ := strings.Cut(strings.TrimSpace(rule), " ")
	status, err := strconv.Atoi(code)
	if err != nil || status < 300 || status > 399 || strings.TrimSpace(to) == "" {
		http.Error(w, fmt.Sprintf("bad redirect file %q: want \"NNN LOCATION\"", rule), http.StatusInternalServerError)
		return
	}
	http.Redirect(w, r, strings.TrimSpace(to), status)
}

// resource is a body with its type and validators, as serveResource
// answers with it. Its plain and gzipped forms are made on first use and
// kept, so that a resource kept between requests (a generated feed) costs
// that work once.
type resource struct {
	rev          int // the revision a generated feed was made at
	ctype, etag  string
	modified     time.Time // UTC, whole seconds
	lastModified string    // modified as an HTTP date
	body         func() []byte

	mu        sync.Mutex
	plain, gz []byte
}

func (res *resource) setModified(t time.Time) {
	res.modified = t.UTC().Truncate(time.Second)
	res.lastModified = res.modified.Format(http.TimeFormat)
}

// content returns the body, gzip-compressed if gzipped. The plain form is
// kept only once asked for, so a cache of feeds that are only ever sent
// gzipped holds just that.
func (res *resource) content(gzipped bool) []byte {
	res.mu.Lock()
	defer res.mu.Unlock()
	if !gzipped {
		if res.plain == nil {
			res.plain = res.body()
		}
		return res.plain
	}
	if res.gz == nil {
		b := res.plain
		if b == nil {
			b = res.body()
		}
		res.gz = gzipBytes(b)
	}
	return res.gz
}

// serveBody answers with body, or 304 when the request's validators match
// etag or modified, gzip-compressed when the client accepts it.
func serveBody(w http.ResponseWriter, r *http.Request, body []byte, ctype, etag string, modified time.Time) {
	res := &resource{ctype: ctype, etag: etag, plain: body}
	res.setModified(modified)
	serveResource(w, r, res)
}

// serveResource answers with res, or 304 when the request's validators
// match it, gzip-compressed when the client accepts it.
func serveResource(w http.ResponseWriter, r *http.Request, res *resource) {
	h := w.Header()
	h.Set("ETag", res.etag)
	h.Set("Last-Modified", res.lastModified)
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		if etagMatch(inm, res.etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	} else if v := r.Header.Get("If-Modified-Since"); v != "" {
		if ims, err := http.ParseTime(v); err == nil && !res.modified.After(ims) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	h.Set("Content-Type", res.ctype)
	gzipped := strings.Contains(r.Header.Get("Accept-Encoding"), "gzip")
	body := res.content(gzipped)
	if gzipped {
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.Write(body)
}

// gzipWriters are reused because a compressor's state is large next to a
// 5 KB feed, and a benchmark asks for thousands of them.
var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzipWriters.Get().(*gzip.Writer)
	zw.Reset(&buf)
	zw.Write(b)
	zw.Close()
	gzipWriters.Put(zw)
	return buf.Bytes()
}

// etagMatch is the weak comparison of If-None-Match (RFC 9110 §13.1.2).
func etagMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == strings.TrimPrefix(etag, "W/") {
			return true
		}
	}
	return false
}

// statusRecorder calls log with the status as the response starts.
type statusRecorder struct {
	http.ResponseWriter
	log     func(status int)
	started bool
}

func (s *statusRecorder) WriteHeader(code int) {
	s.logOnly(code)
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if !s.started {
		s.WriteHeader(http.StatusOK)
	}
	return s.ResponseWriter.Write(b)
}

// logOnly logs status as this request's outcome without writing a response,
// for requests that end with none.
func (s *statusRecorder) logOnly(status int) {
	if !s.started {
		s.started = true
		s.log(status)
	}
}

// Unwrap lets http.ResponseController reach the connection (Flush, Hijack).
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
