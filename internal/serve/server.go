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
	reg     *prometheus.Registry
	cache   answerCache
	changes changeTracker
	reads   *gate // the catalog's readers, in line (gate.go)
	heavy   *gate // those of heavyRoutes, before reads
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

// route is one route of the API: its ServeMux pattern, whether it needs
// the token (a write), and the paths openapi.json documents it under.
type route struct {
	method, pattern string
	write           bool
	docs            []string // OpenAPI paths; nil: the pattern's path
	handle          func(s *Server, w http.ResponseWriter, r *http.Request)
}

// routes are every route of the server; openapi.json documents each, and
// a test holds them to it.
var routes = []route{
	{"GET", "/feeds", false, nil, (*Server).listFeeds},
	{"POST", "/feeds", true, nil, (*Server).addFeed},
	{"GET", "/feeds/{id}", false, nil, (*Server).getFeed},
	{"PATCH", "/feeds/{id}", true, nil, (*Server).patchFeed},
	{"DELETE", "/feeds/{id}", true, nil, (*Server).deleteFeed},
	{"POST", "/feeds/{id}/refetch", true, nil, (*Server).refetchFeed},
	{"GET", "/feeds/{id}/entries", false, nil, (*Server).feedEntries},
	{"GET", "/feeds/{id}/feed.atom", false, nil, (*Server).feedFeed},
	{"GET", "/feeds/{id}/feed.rss", false, nil, (*Server).feedFeed},
	{"GET", "/feeds/{id}/feed.json", false, nil, (*Server).feedFeed},
	{"GET", "/labels/{file}", false, []string{"/labels/{label}.atom", "/labels/{label}.rss", "/labels/{label}.json"}, (*Server).labelFeed},
	{"GET", "/all.atom", false, nil, (*Server).allFeed},
	{"GET", "/all.rss", false, nil, (*Server).allFeed},
	{"GET", "/all.json", false, nil, (*Server).allFeed},
	{"GET", "/entries", false, nil, (*Server).listEntries},
	{"GET", "/entries/{uid}", false, nil, (*Server).getEntry},
	{"GET", "/fetches/{id}", false, nil, (*Server).getFetch},
	{"GET", "/raw/{id}", false, nil, (*Server).getRaw},
	{"GET", "/events", false, nil, (*Server).listEvents},
	{"GET", "/events/stream", false, nil, (*Server).streamEvents},
	{"GET", "/healthz", false, nil, (*Server).healthz},
	{"GET", "/metrics", false, nil, (*Server).serveMetrics},
	{"GET", "/openapi.json", false, nil, (*Server).openAPI},
}

// New makes the handler of cfg; cfg.Catalog must be open. Close lets go of
// what it started.
func New(cfg Config) (*Server, error) {
	cfg.defaults()
	if cfg.Catalog == nil {
		return nil, errNoCatalog
	}
	s := &Server{cfg: cfg, cat: cfg.Catalog, changes: changeTracker{cat: cfg.Catalog}, mux: http.NewServeMux(), reads: newGate(cfg.MaxReads),
		heavy: newGate(MaxHeavyReads), hosts: knownHosts(cfg.BaseURL, cfg.AllowedHosts)}
	s.token = newTokenSource(cfg.Token, cfg.TokenFile, func(err error) {
		s.cfg.Log.Error("the token file cannot be read: nothing needing the token is let in until it can", "err", err)
	})
	s.ctx, s.cancel = context.WithCancel(context.Background())
	var err error
	if s.metrics, s.reg, err = newMetrics(s); err != nil {
		return nil, err
	}
	gz, err := gzhttp.NewWrapper(gzhttp.MinSize(512))
	if err != nil {
		return nil, err
	}
	for _, rt := range routes {
		h := s.wrap(rt)
		if rt.pattern != "/events/stream" { // a stream is sent as it comes, not compressed
			h = gz(h)
		}
		s.mux.Handle(rt.method+" "+rt.pattern, h)
	}
	s.addWeb(gz) // the web page (web.go)
	s.mux.HandleFunc("/", s.notFound)
	s.greader = gz(http.HandlerFunc(s.serveGReader))
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
	case isGReader(greaderPath(r)) && isRead(r):
		s.gated(s.greader.ServeHTTP)(rec, r)
	case isGReader(r.URL.Path):
		s.greader.ServeHTTP(rec, r)
	default:
		s.handler.ServeHTTP(rec, r)
	}
	s.metrics.request(r, rec.status, time.Since(start))
	s.cfg.Log.Debug("request", "method", r.Method, "path", r.URL.Path, "status", rec.status,
		"elapsed_ms", time.Since(start).Milliseconds())
}

// wrap is a route's handler behind the token check.
func (s *Server) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (rt.write || s.cfg.AuthReads && rt.pattern != "/healthz") && !s.authorized(w, r, rt.write) {
			return
		}
		if strings.Contains(r.URL.RawQuery, "reader=") && !s.readerAllowed(w, r, r.URL.Query().Get("reader")) {
			return
		}
		if rt.write {
			r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		}
		handle := func(w http.ResponseWriter, r *http.Request) { rt.handle(s, w, r) }
		linger, cached := cachedRoutes[rt.pattern]
		switch {
		case cached && r.Method == http.MethodGet && !s.cfg.NoCache:
			s.serveCached(w, r, linger, handle) // its makes pass the gate
		case isRead(r) && !ungated[rt.pattern]:
			s.gated(handle)(w, r)
		default:
			handle(w, r)
		}
	})
}

// authorized checks the request's bearer token, and answers the request
// when it does not pass.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request, write bool) bool {
	what := "reading"
	if write {
		what = "a change"
	}
	if s.token.current() == "" {
		problem(w, r, http.StatusForbidden, "writes are off", "this feed-serve has no token, so it takes no "+what+
			": start it with --token-file (it makes a token in the store on first start)")
		return false
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="feedpipe"`)
	switch {
	case r.Header.Get("Authorization") == "":
		problem(w, r, http.StatusUnauthorized, "no token", what+" needs the API token: send the header \"Authorization: Bearer TOKEN\" with the token in the file --token-file names (STORE/serve.token by default)")
		return false
	case !s.holdsToken(r):
		problem(w, r, http.StatusUnauthorized, "wrong token", "the token sent is not this server's: send the one in the file --token-file names (STORE/serve.token by default)")
		return false
	}
	return true
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
