package serve

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"math"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
)

// The web page (docs/serve.md, "The web page"): a small site for a person
// over the same catalog as the API, drawn on the server (html/template,
// SVG charts) with no script at all, so that it works with no network and
// under a policy that lets no script run. Reads are open as the API's
// are (or need the token, with --auth reads); a change (marking entries)
// needs the API token, which the sign-in page takes once and keeps as a
// cookie the browser sends to this site only (HttpOnly, SameSite=Strict),
// and every form post must come from a page of this site (Origin or
// Sec-Fetch-Site): no other site can post on the reader's behalf.

//go:embed web
var webFiles embed.FS

// webRoute is a route of the site: its ServeMux pattern, its policy (a
// write needs signing in; an open route is open even with --auth reads:
// signing in, the style sheet), and its handler.
type webRoute struct {
	method, pattern string
	policy
	handle func(s *Server, w http.ResponseWriter, r *http.Request)
}

// The policies of the site's routes.
var (
	pageRead   = policy{gate: gateRead}
	pageChange = policy{write: true}
	// openPage is open to anyone, and waits at no gate: signing in,
	// the style sheet and icon (they read no catalog).
	openPage = policy{open: true}
	// busPage shows the Redis bus: there only with one, waiting at no
	// gate (it reads Redis, not the catalog).
	busPage = policy{bus: true}
)

// webRoutes are the pages of the site. They are not the API's routes
// (openapi.json describes those).
var webRoutes = []webRoute{
	{"GET", "/{$}", pageRead, (*Server).webFeeds},
	{"GET", "/web/feeds/{id}", pageRead, (*Server).webFeed},
	{"GET", "/web/river", pageRead, (*Server).webRiver},
	{"GET", "/web/entries/{id}/{uid}", pageRead, (*Server).webEntry},
	{"GET", "/web/dashboard", pageRead, (*Server).webDashboard},
	{"GET", "/web/bus", busPage, (*Server).webBus},
	{"GET", "/web/signin", openPage, (*Server).webSignInForm},
	{"POST", "/web/signin", openPage, (*Server).webSignIn},
	{"POST", "/web/signout", openPage, (*Server).webSignOut},
	{"POST", "/web/mark", pageChange, (*Server).webMark},
	{"GET", "/web/static/{file}", openPage, (*Server).webStatic},
	{"GET", "/web/", openPage, (*Server).webNotFound},
}

// addWeb registers the site's routes on the server's mux, each through
// wrap (compressed answers).
func (s *Server) addWeb(wrap func(http.Handler) http.HandlerFunc) {
	for _, rt := range webRoutes {
		if !rt.served(s) {
			continue
		}
		s.mux.Handle(rt.method+" "+rt.pattern, rt.compressed(wrap, s.webHandler(rt)))
	}
}

// pagePolicy is the Content-Security-Policy of every page: no script at
// all (the site has none, and a payload of /raw served from this origin
// must not become one), no inline style, images from anywhere an entry
// links them, no framing, forms to this site only.
const pagePolicy = "default-src 'self'; script-src 'none'; style-src 'self'; img-src 'self' https: http: data:; " +
	"media-src 'self' https: http:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

// webHandler is a page's handler behind the site's headers and checks.
func (s *Server) webHandler(rt webRoute) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", pagePolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin") // same-origin: the forms' Origin header is kept
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Cache-Control", "private, no-cache")
		if c, err := s.callerOf(r); err == nil {
			r = r.WithContext(context.WithValue(r.Context(), callerKey{}, c)) // looked up once a page
		}
		if r.Method == http.MethodPost {
			if !s.sameOrigin(r) {
				s.webMessage(w, r, http.StatusForbidden, "Refused", "This form was not sent from a page of this site, so it is refused: "+
					"open the page again from feed-serve itself and send it from there.")
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		}
		if (rt.write || !rt.open && s.cfg.AuthReads) && !s.signedIn(r) {
			s.signInPage(w, r, http.StatusUnauthorized, s.whyNotSignedIn(r, rt.write))
			return
		}
		if !rt.open && !s.pageReaderAllowed(w, r) {
			return
		}
		s.gated(rt.gate, func(w http.ResponseWriter, r *http.Request) { rt.handle(s, w, r) })(w, r)
	})
}

// sameOrigin reports whether a form post comes from a page of this site:
// Sec-Fetch-Site says same-origin, or (a browser without it) Origin is
// this server's. A post with neither is refused: every browser sends one.
func (s *Server) sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		return site == "same-origin"
	}
	origin := r.Header.Get("Origin")
	if origin == "" || origin == "null" {
		return false
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	if s.cfg.BaseURL != "" {
		b, err := url.Parse(s.cfg.BaseURL)
		return err == nil && strings.EqualFold(b.Scheme+"://"+b.Host, origin)
	}
	return false
}

// sessionCookie is the name of the sign-in cookie: a web session's token
// (catalog.NewWebSession), random for each browser, which signing out or
// a rotated API token ends.
const sessionCookie = "feedpipe_session"

// signedIn reports whether the request may change what its page shows:
// it carries the API token, or a session opened with it or with the
// password of a user.
func (s *Server) signedIn(r *http.Request) bool {
	c, err := s.callerOf(r)
	return err == nil && (c.token || c.user != "")
}

// whyNotSignedIn says why a request must sign in first.
func (s *Server) whyNotSignedIn(r *http.Request, write bool) string {
	what := "Reading this site needs the API token (feed-serve runs with --auth reads)."
	if write {
		what = "Marking entries changes the catalog: sign in with the API token, or as a user of the Google Reader API."
	}
	if _, err := r.Cookie(sessionCookie); err == nil {
		what += " This browser's session ended (signed out elsewhere, expired, or the token changed): sign in again."
	}
	return what
}

// localPath returns p when it is a path of this site (a "back" or "next"
// form field), else "/": a form never sends the browser elsewhere.
func localPath(p string) string {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.ContainsAny(p, "\\\r\n\t") || len(p) > 2000 {
		return "/"
	}
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Host != "" {
		return "/"
	}
	return p
}

// readerOf is the reader whose marks the page shows and changes: the
// reader query parameter or form field; else the user signed in; else,
// for the token's holder, the one user of the Google Reader API when
// there is exactly one (the person who also reads in an app, as feed-read
// reads); else catalog.DefaultReader.
func (s *Server) readerOf(r *http.Request) (string, error) {
	name := r.FormValue("reader")
	if name != "" {
		return name, catalog.CheckReader(name)
	}
	c, err := s.callerOf(r)
	switch {
	case err != nil:
	case c.user != "":
		return c.user, nil
	case c.token:
		if users, err := s.cat.Users(r.Context()); err == nil && len(users) == 1 {
			return users[0].Name, nil
		}
	}
	return catalog.DefaultReader, nil
}

// pageReaderAllowed answers with the sign-in page a request for the marks
// of a reader its caller may not see (caller.mayRead), and reports
// whether it may go on.
func (s *Server) pageReaderAllowed(w http.ResponseWriter, r *http.Request) bool {
	reader, err := s.readerOf(r)
	if err != nil || reader == catalog.DefaultReader {
		return true // a bad name gets its own page
	}
	c, err := s.callerOf(r)
	if err != nil {
		s.webError(w, r, err)
		return false
	}
	if c.mayRead(reader) {
		return true
	}
	s.signInPage(w, r, http.StatusUnauthorized, "The marks of reader "+reader+" are theirs: sign in as "+reader+", or with the API token.")
	return false
}

// pageData is what every page's template gets: the page's own data in
// Data, and what the layout shows.
type pageData struct {
	Title    string
	Nav      string // the menu entry of the page: feeds, river, dashboard, bus
	Reader   string // the reader named, "" for the default one
	Now      time.Time
	SignedIn bool
	HasToken bool   // the server takes changes at all
	Bus      bool   // the server shows a Redis bus: the menu has its page
	Here     string // this page's path and query, where its forms come back to
	Data     any
}

// pages are the templates of the site, each with the layout, parsed when
// a page is first rendered: every feedpipe command is one binary, and a
// parse at start-up cost each stage of the pipeline about 8 ms a run.
var pages = sync.OnceValue(func() map[string]*template.Template {
	funcs := template.FuncMap{
		"url":   pageURL,
		"ago":   ago,
		"stamp": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
		"date":  func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04Z") },
		"size":  size,
		"span":  func(sec int) string { return spanOf(float64(sec)) },
		"spanf": spanOf,
		"key":   func(feedID, uid string) string { return feedID + "/" + uid },
		"num":   func(v any) string { return number(toFloat(v)) },
	}
	out := map[string]*template.Template{}
	names, err := fs.Glob(webFiles, "web/*.html")
	if err != nil {
		panic(err)
	}
	for _, name := range names {
		base := path.Base(name)
		if base == "layout.html" || base == "parts.html" {
			continue
		}
		out[strings.TrimSuffix(base, ".html")] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(webFiles, "web/layout.html", "web/parts.html", name))
	}
	return out
})

func toFloat(v any) float64 {
	switch n := v.(type) {
	case int:
		return float64(n)
	case int64:
		return float64(n)
	case float64:
		return n
	}
	return 0
}

// pageURL is the path p with the query parameters of kv (name, value,
// ...; an empty value is left out) and the reader's name unless it is
// the default.
func pageURL(reader, p string, kv ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	if reader != "" && reader != catalog.DefaultReader {
		q.Set("reader", reader)
	}
	if len(q) == 0 {
		return p
	}
	return p + "?" + q.Encode()
}

// ago says how long before (or after) now t is, briefly; "never" for
// the zero time.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t)
	if d < 0 {
		return "in " + spanOf((-d).Seconds())
	}
	if d < 5*time.Second {
		return "now"
	}
	if d > 30*24*time.Hour {
		return t.UTC().Format("2006-01-02")
	}
	return spanOf(d.Seconds()) + " ago"
}

// size writes a byte count briefly.
func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// render answers with the page name, its layout filled from d.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, d pageData) {
	d.Now = s.cfg.Now()
	d.SignedIn = s.signedIn(r)
	d.HasToken = s.token.current() != ""
	d.Bus = s.bus != nil
	if d.Reader == "" {
		d.Reader, _ = s.readerOf(r)
	}
	if d.Reader == catalog.DefaultReader {
		d.Reader = ""
	}
	if d.Here == "" {
		d.Here = r.URL.RequestURI()
	}
	var b bytes.Buffer
	if err := pages()[name].Execute(&b, d); err != nil {
		s.cfg.Log.Error("web page failed", "page", name, "err", err)
		http.Error(w, "the page failed: the server's log says why", http.StatusInternalServerError)
		return
	}
	if status != http.StatusOK {
		w.Header().Set("Cache-Control", "no-store")
	}
	send(w, r, status, "text/html; charset=utf-8", b.Bytes(), time.Time{})
}

// message is the data of the message page.
type message struct {
	Heading, Text string
	Back          string
}

// webMessage answers with a page that says one thing (an error, mostly).
func (s *Server) webMessage(w http.ResponseWriter, r *http.Request, status int, heading, text string) {
	s.render(w, r, status, "message", pageData{Title: heading, Data: message{Heading: heading, Text: text}})
}

// webNotFound is any other path under /web/.
func (s *Server) webNotFound(w http.ResponseWriter, r *http.Request) {
	s.webMessage(w, r, http.StatusNotFound, "Not found", "There is no page at "+r.URL.Path+". The feeds are at /.")
}

// webError answers a request the server failed, logging why.
func (s *Server) webError(w http.ResponseWriter, r *http.Request, err error) {
	s.cfg.Log.Error("web page failed", "path", r.URL.Path, "err", err)
	s.webMessage(w, r, http.StatusInternalServerError, "The server failed", "The page could not be made: the server's log says why.")
}

// signIn is the data of the sign-in page.
type signIn struct {
	Why     string // what needs signing in; "" when asked for directly
	Wrong   string // what was wrong with what was sent; "" when nothing was
	Next    string
	NoToken bool // the server has no token
	Users   bool // the Google Reader API has users, who may sign in
	User    string
}

// signInPage answers with the sign-in form, saying why.
func (s *Server) signInPage(w http.ResponseWriter, r *http.Request, status int, why string) {
	next := r.FormValue("next")
	if next == "" {
		next = r.FormValue("back")
	}
	if next == "" && r.Method == http.MethodGet && r.URL.Path != "/web/signin" {
		next = r.URL.RequestURI()
	}
	s.renderSignIn(w, r, status, signIn{Why: why, Next: localPath(next)})
}

// renderSignIn answers with the sign-in form of d.
func (s *Server) renderSignIn(w http.ResponseWriter, r *http.Request, status int, d signIn) {
	d.NoToken = s.token.current() == ""
	d.Users, _ = s.cat.HasUsers(r.Context())
	s.render(w, r, status, "signin", pageData{Title: "Sign in", Data: d})
}

// webSignInForm is GET /web/signin.
func (s *Server) webSignInForm(w http.ResponseWriter, r *http.Request) {
	s.signInPage(w, r, http.StatusOK, "")
}

// webSignIn is POST /web/signin: token=TOKEN, or user=NAME&password=PW
// (a user of the Google Reader API), and next=PATH. Either opens a new
// session for this browser and goes on to next.
func (s *Server) webSignIn(w http.ResponseWriter, r *http.Request) {
	next := localPath(r.PostFormValue("next"))
	user := strings.TrimSpace(r.PostFormValue("user"))
	if user == "" {
		if s.token.current() == "" {
			s.renderSignIn(w, r, http.StatusForbidden, signIn{Next: next})
			return
		}
		if !s.isToken(strings.TrimSpace(r.PostFormValue("token"))) {
			s.renderSignIn(w, r, http.StatusUnauthorized, signIn{Next: next,
				Wrong: "That is not this server's token: nothing was signed in. Copy it again from the token file."})
			return
		}
	} else {
		ok, wait, err := s.checkLogin(r, user, r.PostFormValue("password"))
		if err != nil {
			s.webError(w, r, err)
			return
		}
		if wait > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
			s.renderSignIn(w, r, http.StatusTooManyRequests, signIn{User: user, Next: next,
				Wrong: "Too many wrong passwords: try again in " + spanOf(wait.Seconds()) + "."})
			return
		}
		if !ok {
			s.renderSignIn(w, r, http.StatusUnauthorized, signIn{User: user, Next: next, Wrong: "That name and password do not match: nothing was signed in."})
			return
		}
	}
	token, err := s.cat.NewWebSession(r.Context(), user, s.cfg.Now())
	if err != nil {
		s.webError(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: token, Path: "/", MaxAge: int(catalog.WebSessionTTL.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secure(r)})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// webSignOut is POST /web/signout: this browser's session ends, and the
// cookie is dropped.
func (s *Server) webSignOut(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		if err := s.cat.EndWebSession(r.Context(), c.Value); err != nil {
			s.webError(w, r, err)
			return
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secure(r)})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// webStatic is GET /web/static/{file}: the style sheet and the icon.
func (s *Server) webStatic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	types := map[string]string{".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
	ct, ok := types[path.Ext(name)]
	b, err := webFiles.ReadFile("web/static/" + name)
	if !ok || err != nil || strings.Contains(name, "/") {
		s.webNotFound(w, r)
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=3600")
	send(w, r, http.StatusOK, ct, b, time.Time{})
}
