// Package testserver serves feed files over HTTP the way publishers do
// (ETag, Last-Modified, gzip, 304) and misbehaves on request, for tests,
// the demo and benchmarks.
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
	"time"

	"github.com/klauspost/compress/gzip"
)

// Handler serves the files under dir. Requests are logged, one line each,
// to log when it is not nil:
//
//	GET /feed.xml if-none-match="abc" if-modified-since="" -> 304
//
// Besides files it answers these paths:
//
//	/status/NNN[?retry-after=V]   that status, with an optional Retry-After
//	/redirect/NNN?to=PATH         a redirect with status NNN to PATH
//
// and any request with ?delay=DURATION (such as 500ms) is answered that
// much later.
type Handler struct {
	Dir string
	Log io.Writer

	mu sync.Mutex
}

// New returns a Handler for dir.
func New(dir string, log io.Writer) *Handler { return &Handler{Dir: dir, Log: log} }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if d, err := time.ParseDuration(r.URL.Query().Get("delay")); err == nil {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	// The request is logged before the response leaves, so that a client
	// that has its answer finds it in the log.
	h.serve(&statusRecorder{ResponseWriter: w, log: func(status int) {
		if h.Log == nil {
			return
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		fmt.Fprintf(h.Log, "%s %s if-none-match=%q if-modified-since=%q -> %d\n",
			r.Method, r.URL.RequestURI(), r.Header.Get("If-None-Match"), r.Header.Get("If-Modified-Since"), status)
	}}, r)
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request) {
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
		return
	case strings.HasPrefix(p, "/redirect/"):
		code, err := strconv.Atoi(strings.TrimPrefix(p, "/redirect/"))
		if err != nil || code < 300 || code > 399 {
			http.Error(w, "bad redirect status", http.StatusBadRequest)
			return
		}
		http.Redirect(w, r, r.URL.Query().Get("to"), code)
		return
	}
	h.serveFile(w, r, p)
}

func (h *Handler) serveFile(w http.ResponseWriter, r *http.Request, p string) {
	file := filepath.Join(h.Dir, filepath.FromSlash(p))
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
	modified := st.ModTime().UTC().Truncate(time.Second)
	w.Header().Set("ETag", etag)
	w.Header().Set("Last-Modified", modified.Format(http.TimeFormat))
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		if etagMatch(inm, etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	} else if ims, err := http.ParseTime(r.Header.Get("If-Modified-Since")); err == nil && !modified.After(ims) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
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
	w.Header().Set("Content-Type", ctype)
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(body)
		zw.Close()
		body = buf.Bytes()
		w.Header().Set("Content-Encoding", "gzip")
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Write(body)
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
	if !s.started {
		s.started = true
		s.log(code)
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if !s.started {
		s.WriteHeader(http.StatusOK)
	}
	return s.ResponseWriter.Write(b)
}
