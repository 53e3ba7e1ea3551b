package serve

import (
	"net/http"
	"strings"
	"time"
)

// policy is what a route is, beyond its handler: everything the server
// does around the handler (wrap, webHandler) is read from it, and from
// nowhere else.
type policy struct {
	// write: a change. It needs the token (the API) or a signed-in
	// session (the page), its body is capped, and it waits at no gate.
	write bool
	// open: it never needs the token, even with --auth reads.
	open bool
	// gate: how its reads wait for the catalog (gate.go).
	gate gateKind
	// keep: its GET answers are kept while what they show is unchanged
	// (cache.go), and serve linger longer past a commit.
	keep   bool
	linger time.Duration
	// stream: its answer is sent as it comes (the event stream): never
	// compressed, never kept.
	stream bool
	// body caps the body of a route that is no write (a write's is
	// MaxBodyBytes); 0 for none.
	body int64
	// bus: it shows the Redis bus (bus.go), and is there only when the
	// server has one (Config.Bus, feed-serve --redis).
	bus bool
	// embedded: the site's pages embed it (a stored file in an entry's
	// page), so that with --auth reads a browser signed in to the site
	// may read it too: its cookie is all the browser sends with an audio
	// or img element. SameSite=Strict keeps it off another site's.
	embedded bool
}

// The policies of the routes, by kind.
var (
	// catalogRead is a read of the catalog whose answer is kept.
	catalogRead = policy{gate: gateRead, keep: true}
	// manyFeeds is a catalogRead that merges many feeds' entries.
	manyFeeds = policy{gate: gateHeavy, keep: true}
	// feedOfFeed is a feed's own meta-feed: kept, lingering a second.
	feedOfFeed = policy{gate: gateRead, keep: true, linger: metaFeedLinger}
	// feedOfMany is a label's or the whole store's meta-feed.
	feedOfMany = policy{gate: gateHeavy, keep: true, linger: metaFeedLinger}
	// gatedRead is a read of the catalog whose answer is not kept.
	gatedRead = policy{gate: gateRead}
	// change is a write of the API.
	change = policy{write: true}
	// ungatedRead reads no catalog, or must answer at once: /raw (a
	// payload can take long to send), /metrics (made once a second),
	// /openapi.json.
	ungatedRead = policy{}
	// streamed is the event stream: it lasts as long as its client.
	streamed = policy{stream: true}
	// file is a stored file (/media), sent as it is read, in ranges: never
	// compressed, never kept, waiting at no gate; an entry's page plays
	// or shows it.
	file = policy{stream: true, embedded: true}
	// health must answer when the server is busiest, and to anyone.
	health = policy{open: true}
	// busRead reads the bus's Redis, not the catalog, afresh each time:
	// never kept, waiting at no gate.
	busRead = policy{bus: true}
	// pushed is a hub's or a webhook sender's call (push.go): open to
	// anyone, as each checks its own secret, and its body capped as a
	// fetched one.
	pushed = policy{open: true, body: MaxPushBytes}
)

// route is one route of the API: its ServeMux pattern, its policy, the
// paths openapi.json documents it under (nil: the pattern's), and its
// handler.
type route struct {
	method, pattern string
	policy
	docs   []string
	handle func(s *Server, w http.ResponseWriter, r *http.Request)
}

// routes are every route of the API; openapi.json documents each, and a
// test holds them to it.
var routes = []route{
	{method: "GET", pattern: "/feeds", policy: catalogRead, handle: (*Server).listFeeds},
	{method: "POST", pattern: "/feeds", policy: change, handle: (*Server).addFeed},
	{method: "GET", pattern: "/feeds/{id}", policy: catalogRead, handle: (*Server).getFeed},
	{method: "PATCH", pattern: "/feeds/{id}", policy: change, handle: (*Server).patchFeed},
	{method: "DELETE", pattern: "/feeds/{id}", policy: change, handle: (*Server).deleteFeed},
	{method: "POST", pattern: "/feeds/{id}/refetch", policy: change, handle: (*Server).refetchFeed},
	{method: "POST", pattern: "/feeds/{id}/backfill", policy: change, handle: (*Server).backfillFeed},
	{method: "GET", pattern: "/feeds/{id}/entries", policy: catalogRead, handle: (*Server).feedEntries},
	{method: "GET", pattern: "/feeds/{id}/feed.atom", policy: feedOfFeed, handle: (*Server).feedFeed},
	{method: "GET", pattern: "/feeds/{id}/feed.rss", policy: feedOfFeed, handle: (*Server).feedFeed},
	{method: "GET", pattern: "/feeds/{id}/feed.json", policy: feedOfFeed, handle: (*Server).feedFeed},
	{method: "GET", pattern: "/labels/{file}", policy: feedOfMany, handle: (*Server).labelFeed,
		docs: []string{"/labels/{label}.atom", "/labels/{label}.rss", "/labels/{label}.json"}},
	{method: "GET", pattern: "/all.atom", policy: feedOfMany, handle: (*Server).allFeed},
	{method: "GET", pattern: "/all.rss", policy: feedOfMany, handle: (*Server).allFeed},
	{method: "GET", pattern: "/all.json", policy: feedOfMany, handle: (*Server).allFeed},
	{method: "GET", pattern: "/entries", policy: manyFeeds, handle: (*Server).listEntries},
	{method: "GET", pattern: "/entries/{uid}", policy: catalogRead, handle: (*Server).getEntry},
	{method: "GET", pattern: "/fetches/{id}", policy: catalogRead, handle: (*Server).getFetch},
	{method: "GET", pattern: "/raw/{id}", policy: ungatedRead, handle: (*Server).getRaw},
	{method: "GET", pattern: "/media/{sha256}", policy: file, handle: (*Server).getMedia},
	{method: "GET", pattern: "/events", policy: gatedRead, handle: (*Server).listEvents},
	{method: "GET", pattern: "/events/stream", policy: streamed, handle: (*Server).streamEvents},
	{method: "GET", pattern: "/healthz", policy: health, handle: (*Server).healthz},
	{method: "GET", pattern: "/metrics", policy: ungatedRead, handle: (*Server).serveMetrics},
	{method: "GET", pattern: "/bus", policy: busRead, handle: (*Server).getBus},
	{method: "GET", pattern: "/openapi.json", policy: ungatedRead, handle: (*Server).openAPI},
	{method: "GET", pattern: WebSubPath + "{id}", policy: pushed, handle: (*Server).websubVerify},
	{method: "POST", pattern: WebSubPath + "{id}", policy: pushed, handle: (*Server).websubDistribute},
	{method: "POST", pattern: WebhookPath + "{id}", policy: pushed, handle: (*Server).webhookPost},
}

// served reports whether the server has the route: a bus route only with
// a bus.
func (p policy) served(s *Server) bool { return !p.bus || s.bus != nil }

// compressed is h behind gzip, unless its answers stream.
func (p policy) compressed(gz func(http.Handler) http.HandlerFunc, h http.Handler) http.Handler {
	if p.stream {
		return h
	}
	return gz(h)
}

// wrap is a route's handler behind what its policy asks: the token, the
// reader's own marks, a capped body, the cache or the read gate.
func (s *Server) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (rt.write || s.cfg.AuthReads && !rt.open) && !(rt.embedded && !rt.write && s.signedIn(r)) && !s.authorized(w, r, rt.write) {
			return
		}
		if strings.Contains(r.URL.RawQuery, "reader=") && !s.readerAllowed(w, r, r.URL.Query().Get("reader")) {
			return
		}
		if rt.write {
			r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		} else if rt.body > 0 {
			r.Body = http.MaxBytesReader(w, r.Body, rt.body)
		}
		handle := func(w http.ResponseWriter, r *http.Request) { rt.handle(s, w, r) }
		switch {
		case rt.keep && r.Method == http.MethodGet && !s.cfg.NoCache:
			s.serveCached(w, r, rt.policy, handle) // its makes pass the gate
		case isRead(r):
			s.gated(rt.gate, handle)(w, r)
		default:
			handle(w, r)
		}
	})
}
