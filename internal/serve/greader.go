package serve

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
)

// The Google Reader API, as FreshRSS, FeedHQ and BazQux implement it, so
// that reader apps (newsboat, Reeder, NetNewsWire, FeedMe...) read the
// store: ClientLogin, then GoogleLogin auth tokens; the subscriptions, tags
// and unread counts; streams of items (the reading list, a feed, a label,
// the starred and read items) as JSON and, for newsboat, as Atom; marks
// by edit-tag and mark-all-as-read; subscriptions changed through the
// functions feed-sub uses. A user's marks are those of the reader of
// their name. It is off (404) until `feed-serve user add` made a user.
// docs/serve.md, "Google Reader API", says what each route takes.

// DefaultUnreadWindow is how far back the Google Reader API, and the
// unread counts of GET /feeds, look for unread entries: older ones count
// as read, as Google Reader's did after 30 days. It bounds the work of an
// unread count by the entries of a month, not of the whole store.
const DefaultUnreadWindow = 30 * 24 * time.Hour

// greaderPrefix is where the API is, and clientLogin its login.
const (
	greaderPrefix = "/reader/"
	apiPrefix     = "/reader/api/0/"
	atomPrefix    = "/reader/atom/"
	clientLogin   = "/accounts/ClientLogin"
)

// isGReader reports whether a request's path is the Google Reader API's.
func isGReader(path string) bool {
	return path == clientLogin || strings.HasPrefix(path, greaderPrefix)
}

// greaderPath is the request's path with the leading slashes made one:
// clients join a base URL that ends in a slash with paths that begin with
// one (newsboat's feedhq-url "http://host/").
func greaderPath(r *http.Request) string {
	if strings.HasPrefix(r.URL.Path, "//") && isGReader("/"+strings.TrimLeft(r.URL.Path, "/")) {
		r.URL.Path = "/" + strings.TrimLeft(r.URL.Path, "/")
		if r.URL.RawPath != "" {
			r.URL.RawPath = "/" + strings.TrimLeft(r.URL.RawPath, "/")
		}
	}
	return r.URL.Path
}

// greaderState is what the API keeps between requests.
type greaderState struct {
	mu     sync.Mutex
	counts map[string]*unreadMemo // by user
}

// unreadMemo is a user's unread counts, kept while the catalog is
// unchanged.
type unreadMemo struct {
	gen    uint64 // the catalog's changes seen before (changeTracker)
	at     time.Time
	counts map[string]catalog.Unread
}

// The limits of a stream.
const (
	greaderDefaultN = 20
	greaderMaxN     = 1000
)

// greaderRoute is a route of the API: its method (a GET takes POST too,
// as clients send either), its path (a ServeMux pattern), and its whole
// policy: the gate its reads wait at, whether it takes the edit token T
// (the writes), whether it is an admin's alone (catalog.RoleAdmin: it
// changes the subscriptions); and its handler.
type greaderRoute struct {
	method, path string
	gate         gateKind
	edit, admin  bool
	handle       func(g *greq)
}

// greaderRoutes are the API's routes, those of ClientLogin aside.
var greaderRoutes = []greaderRoute{
	{method: "GET", path: apiPrefix + "token", gate: gateRead, handle: (*greq).token},
	{method: "GET", path: apiPrefix + "user-info", handle: (*greq).userInfo},
	{method: "GET", path: apiPrefix + "subscription/list", gate: gateRead, handle: (*greq).subscriptionList},
	{method: "GET", path: apiPrefix + "tag/list", gate: gateRead, handle: (*greq).tagList},
	{method: "GET", path: apiPrefix + "unread-count", gate: gateRead, handle: (*greq).unreadCount},
	{method: "GET", path: apiPrefix + "stream/contents", gate: gateRead, handle: (*greq).streamJSON},
	{method: "GET", path: apiPrefix + "stream/contents/{stream...}", gate: gateRead, handle: (*greq).streamJSON},
	{method: "GET", path: atomPrefix + "{stream...}", gate: gateRead, handle: (*greq).streamAtom},
	{method: "GET", path: apiPrefix + "stream/items/ids", gate: gateRead, handle: (*greq).itemIDs},
	{method: "POST", path: apiPrefix + "stream/items/contents", gate: gateRead, edit: true, handle: (*greq).itemContents},
	{method: "POST", path: apiPrefix + "edit-tag", edit: true, handle: (*greq).editTag},
	{method: "POST", path: apiPrefix + "mark-all-as-read", edit: true, handle: (*greq).markAllRead},
	{method: "POST", path: apiPrefix + "subscription/edit", edit: true, admin: true, handle: (*greq).subscriptionEdit},
	{method: "POST", path: apiPrefix + "subscription/quickadd", edit: true, admin: true, handle: (*greq).quickAdd},
}

// newGReader is the API's handler: its routes on a mux of their own, a
// path no route has answered as the REST API's are (problem details).
func (s *Server) newGReader() http.Handler {
	mux := http.NewServeMux()
	allowed := map[string][]string{}
	add := func(method, path string, h http.Handler) {
		mux.Handle(method+" "+path, h)
		allowed[path] = append(allowed[path], method)
	}
	add("POST", clientLogin, http.HandlerFunc(s.greaderLogin))
	for _, rt := range greaderRoutes {
		h := s.greaderHandler(rt)
		add(rt.method, rt.path, h)
		if rt.method == "GET" {
			add("POST", rt.path, h)
		}
	}
	for path, methods := range allowed {
		allow := strings.Join(methods, ", ")
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			problem(w, r, http.StatusMethodNotAllowed, "method not allowed", r.Method+" "+r.URL.Path+" is not served: it takes "+allow)
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		problem(w, r, http.StatusNotFound, "no such resource", "the Google Reader API has nothing at "+r.URL.Path+": docs/serve.md lists what it serves")
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		on, err := s.cat.HasUsers(r.Context())
		if err != nil {
			s.serverError(w, r, err)
			return
		}
		if !on {
			problem(w, r, http.StatusNotFound, "Google Reader API off", "the Google Reader API is off until it has a user: add one with feed-serve user add NAME (it reads the password from stdin)")
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// greaderHandler is a route's handler behind what its row asks: the
// user's token, the form, the edit token, the admin's role, the gate.
func (s *Server) greaderHandler(rt greaderRoute) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, ok := s.greaderUser(w, r)
		if !ok {
			return
		}
		form, ok := readGreaderForm(w, r)
		if !ok {
			return
		}
		if rt.edit && !s.editToken(w, r, user.Name, form) {
			return
		}
		if rt.admin && user.Role != catalog.RoleAdmin {
			problem(w, r, http.StatusForbidden, "not an admin", "user "+user.Name+" reads and marks; changing the subscriptions takes an admin "+
				"(feed-serve user role "+user.Name+" admin)")
			return
		}
		s.gated(rt.gate, func(w http.ResponseWriter, r *http.Request) {
			rt.handle(&greq{s: s, w: w, r: r, user: user.Name, form: form, now: s.cfg.Now()})
		})(w, r)
	})
}

// readGreaderForm reads a request's parameters: its query and form body.
func readGreaderForm(w http.ResponseWriter, r *http.Request) (greaderForm, bool) {
	var body []byte
	if r.Method == http.MethodPost && r.Body != nil {
		var err error
		body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, maxFormBytes))
		if err != nil {
			problem(w, r, http.StatusRequestEntityTooLarge, "bad request body", "the body could not be read, or is over "+strconv.Itoa(maxFormBytes)+" bytes: "+err.Error())
			return nil, false
		}
		if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/x-www-form-urlencoded") {
			if len(bytes.TrimSpace(body)) > 0 {
				problem(w, r, http.StatusUnsupportedMediaType, "not a form", "the body is "+strconv.Quote(ct)+": send application/x-www-form-urlencoded")
				return nil, false
			}
		}
	}
	f, err := parseGreaderForm(r.URL.RawQuery, string(body))
	if err != nil {
		badParam(w, r, "", "the parameters cannot be read: "+err.Error()+" (a form of at most "+strconv.Itoa(maxFormItems)+" values a name)")
		return nil, false
	}
	return f, true
}

// greq is one request of the API, its user known.
type greq struct {
	s    *Server
	w    http.ResponseWriter
	r    *http.Request
	user string
	form greaderForm
	now  time.Time
}

func (g *greq) ctx() context.Context { return g.r.Context() }

// json answers with v, private to the user.
func (g *greq) json(v any) {
	g.w.Header().Set("Cache-Control", "private, no-cache")
	g.s.sendJSON(g.w, g.r, http.StatusOK, v, time.Time{})
}

// text answers with a line of text: "OK" for a write, as clients expect.
func (g *greq) text(s string) {
	g.w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	g.w.Header().Set("Cache-Control", "no-store")
	io.WriteString(g.w, s)
}

// readBefore is when the entries the API counts as read however marked
// were first seen: DefaultUnreadWindow (Config.UnreadWindow) ago.
func (s *Server) readBefore(now time.Time) time.Time {
	if s.cfg.UnreadWindow < 0 {
		return time.Time{}
	}
	return now.Add(-s.cfg.UnreadWindow)
}
