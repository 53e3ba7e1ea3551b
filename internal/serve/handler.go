package serve

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/gzhttp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedpipe/feedpipe/internal/catalog"
)

// Server is feed-serve's HTTP handler.
type Server struct {
	cfg     Config
	cat     *catalog.Catalog
	mux     *http.ServeMux
	handler http.Handler
	metrics *metrics
	push    *pushMetrics // push.go
	bus     *BusStatus   // the Redis bus's status (bus.go); nil without one
	reg     *prometheus.Registry
	cache   answerCache
	changes changeTracker
	reads   *gate // the catalog's readers, in line (gate.go)
	heavy   *gate // the gateHeavy reads, before reads
	files   dayFiles
	greader http.Handler // the Google Reader API (greader.go)
	gr      greaderState
	hosts   []string // the names it answers to besides loopback's (hosts.go)
	token   *tokenSource
	logins  *loginLimiter // password checks (login.go)

	ctx    context.Context // done when the server closes: the event streams end
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New makes the handler of cfg; cfg.Catalog must be open. Close lets go of
// what it started.
func New(cfg Config) (*Server, error) {
	cfg.defaults()
	if cfg.Catalog == nil {
		return nil, errNoCatalog
	}
	s := &Server{cfg: cfg, cat: cfg.Catalog, changes: changeTracker{cat: cfg.Catalog}, mux: http.NewServeMux(), reads: newGate(cfg.MaxReads),
		heavy: newGate(MaxHeavyReads), hosts: knownHosts(cfg.BaseURL, append(hostOf(cfg.PublicURL), cfg.AllowedHosts...))}
	s.token = newTokenSource(cfg.Token, cfg.TokenFile, func(err error) {
		s.cfg.Log.Error("the token file cannot be read: nothing needing the token is let in until it can", "err", err)
	})
	s.ctx, s.cancel = context.WithCancel(context.Background())
	var err error
	if s.metrics, s.reg, err = newMetrics(s); err != nil {
		return nil, err
	}
	if s.push, err = newPushMetrics(s.reg); err != nil {
		return nil, err
	}
	if cfg.Bus != nil {
		s.bus = NewBusStatus(cfg.Bus)
		if err := s.reg.Register(s.bus); err != nil {
			return nil, err
		}
	}
	gz, err := gzhttp.NewWrapper(gzhttp.MinSize(512))
	if err != nil {
		return nil, err
	}
	for _, rt := range routes {
		if !rt.served(s) {
			continue
		}
		s.mux.Handle(rt.method+" "+rt.pattern, rt.compressed(gz, s.wrap(rt)))
	}
	s.addWeb(gz) // the web page (web.go)
	s.mux.HandleFunc("/", s.notFound)
	s.greader = gz(s.newGReader())
	s.logins = newLoginLimiter()
	s.handler = s.mux
	return s, nil
}

// Close ends the event streams and the metrics' work.
func (s *Server) Close() {
	s.cancel()
	s.wg.Wait()
	s.files.close()
}

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w}
	switch {
	case !s.hostAllowed(r):
		misdirected(rec, r)
	case s.cors(rec, r): // a preflight, answered
	case isGReader(greaderPath(r)):
		s.greader.ServeHTTP(rec, r)
	default:
		s.handler.ServeHTTP(rec, r)
	}
	s.metrics.request(r, rec.status, time.Since(start))
	s.cfg.Log.Debug("request", "method", r.Method, "path", r.URL.Path, "status", rec.status,
		"elapsed_ms", time.Since(start).Milliseconds())
}

// cors answers a preflight request from the allowed origin, and marks the
// answers to its other requests; it reports whether it answered.
func (s *Server) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if s.cfg.CORS == "" || origin == "" {
		return false
	}
	w.Header().Add("Vary", "Origin")
	if origin != s.cfg.CORS {
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Expose-Headers", "ETag, Last-Modified, Link, Location")
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		h.Set("Access-Control-Allow-Methods", "GET, POST, PATCH, DELETE")
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, If-None-Match, If-Modified-Since, Last-Event-ID")
		h.Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
		return true
	}
	return false
}

// notFound answers a path no route has, or a method the path's routes do
// not take.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{"GET", "POST", "PATCH", "DELETE"} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "/" && pattern != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		if slices.Contains(allow, "GET") {
			allow = append(allow, "HEAD")
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		problem(w, r, http.StatusMethodNotAllowed, "method not allowed", r.Method+" "+r.URL.Path+" is not served: it takes "+strings.Join(allow, ", "))
		return
	}
	problem(w, r, http.StatusNotFound, "no such resource", "nothing is served at "+r.URL.Path+": GET /openapi.json lists what is")
}

// statusRecorder remembers the status a handler answered with.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
