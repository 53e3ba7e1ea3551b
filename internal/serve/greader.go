package serve

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/sub"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
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

// serveGReader answers a request of the Google Reader API.
func (s *Server) serveGReader(w http.ResponseWriter, r *http.Request) {
	on, err := s.cat.HasUsers(r.Context())
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	if !on {
		problem(w, r, http.StatusNotFound, "Google Reader API off", "the Google Reader API is off until it has a user: add one with feed-serve user add NAME (it reads the password from stdin)")
		return
	}
	path := r.URL.Path
	if path == clientLogin {
		r.Pattern = clientLogin
		s.greaderLogin(w, r)
		return
	}
	var op, rest string
	switch {
	case strings.HasPrefix(r.URL.EscapedPath(), atomPrefix):
		op, rest = "atom", strings.TrimPrefix(r.URL.EscapedPath(), atomPrefix)
		r.Pattern = atomPrefix + "{stream}"
	case strings.HasPrefix(r.URL.EscapedPath(), apiPrefix+"stream/contents"):
		op, rest = "stream/contents", strings.TrimPrefix(strings.TrimPrefix(r.URL.EscapedPath(), apiPrefix+"stream/contents"), "/")
		r.Pattern = apiPrefix + "stream/contents/{stream}"
	case strings.HasPrefix(path, apiPrefix):
		op = strings.TrimPrefix(path, apiPrefix)
		if _, ok := greaderOps[op]; !ok {
			problem(w, r, http.StatusNotFound, "no such resource", "the Google Reader API has nothing at "+path+": docs/serve.md lists what it serves")
			return
		}
		r.Pattern = apiPrefix + op
	default:
		problem(w, r, http.StatusNotFound, "no such resource", "the Google Reader API has nothing at "+path+": docs/serve.md lists what it serves")
		return
	}
	want := greaderOps[op]
	if op == "atom" || op == "stream/contents" {
		want = "GET"
	}
	if r.Method != want && !(want == "GET" && r.Method == http.MethodPost) && !(want == "GET" && r.Method == http.MethodHead) {
		w.Header().Set("Allow", want)
		problem(w, r, http.StatusMethodNotAllowed, "method not allowed", r.Method+" "+path+" is not served: it takes "+want)
		return
	}
	user, ok := s.greaderUser(w, r)
	if !ok {
		return
	}
	form, ok := readGreaderForm(w, r)
	if !ok {
		return
	}
	if want == "POST" && !s.editToken(w, r, user.Name, form) {
		return
	}
	if greaderAdminOps[op] && user.Role != catalog.RoleAdmin {
		problem(w, r, http.StatusForbidden, "not an admin", "user "+user.Name+" reads and marks; changing the subscriptions takes an admin "+
			"(feed-serve user role "+user.Name+" admin)")
		return
	}
	g := &greq{s: s, w: w, r: r, user: user.Name, form: form, now: s.cfg.Now()}
	switch op {
	case "token":
		g.token()
	case "user-info":
		g.userInfo()
	case "subscription/list":
		g.subscriptionList()
	case "tag/list":
		g.tagList()
	case "unread-count":
		g.unreadCount()
	case "stream/contents", "atom":
		id, err := url.PathUnescape(rest)
		if err != nil || id == "" {
			id = form.get("s")
		}
		if id == "" {
			id = stateReadingList
		}
		g.streamContents(id, op == "atom")
	case "stream/items/ids":
		g.itemIDs()
	case "stream/items/contents":
		g.itemContents()
	case "edit-tag":
		g.editTag()
	case "mark-all-as-read":
		g.markAllRead()
	case "subscription/edit":
		g.subscriptionEdit()
	case "subscription/quickadd":
		g.quickAdd()
	}
}

// greaderOps are the API's routes below /reader/api/0/, and the method
// each takes (a GET takes POST too, as clients send either).
var greaderOps = map[string]string{
	"token":                 "GET",
	"user-info":             "GET",
	"subscription/list":     "GET",
	"tag/list":              "GET",
	"unread-count":          "GET",
	"stream/items/ids":      "GET",
	"stream/items/contents": "POST",
	"edit-tag":              "POST",
	"mark-all-as-read":      "POST",
	"subscription/edit":     "POST",
	"subscription/quickadd": "POST",
}

// greaderAdminOps are the routes that change the subscriptions: an
// admin's alone (catalog.RoleAdmin).
var greaderAdminOps = map[string]bool{"subscription/edit": true, "subscription/quickadd": true}

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

// greaderUser checks the request's GoogleLogin token, and answers the
// request when it does not pass.
func (s *Server) greaderUser(w http.ResponseWriter, r *http.Request) (catalog.User, bool) {
	h := r.Header.Get("Authorization")
	scheme, rest, _ := strings.Cut(h, " ")
	token, hasAuth := strings.CutPrefix(strings.TrimSpace(rest), "auth=")
	w.Header().Set("WWW-Authenticate", `GoogleLogin realm="feedpipe"`)
	if h == "" || !strings.EqualFold(scheme, "GoogleLogin") || !hasAuth {
		problem(w, r, http.StatusUnauthorized, "no token", "the Google Reader API needs the header \"Authorization: GoogleLogin auth=TOKEN\", with the Auth that POST /accounts/ClientLogin (Email, Passwd) gives")
		return catalog.User{}, false
	}
	user, ok, err := s.cat.SessionUser(r.Context(), token, catalog.SessionAuth)
	if err != nil {
		s.serverError(w, r, err)
		return catalog.User{}, false
	}
	if !ok {
		problem(w, r, http.StatusUnauthorized, "wrong token", "the token sent is not one this server gave, or its user's password changed: log in again (POST /accounts/ClientLogin)")
		return catalog.User{}, false
	}
	w.Header().Del("WWW-Authenticate")
	return user, true
}

// editToken checks the T of a write when there is one: a token of
// GET /reader/api/0/token, of this user. Without one, the Authorization
// header is enough (no cookie carries it, so no other site's page can
// send it).
func (s *Server) editToken(w http.ResponseWriter, r *http.Request, user string, form greaderForm) bool {
	t := form.get("T")
	if t == "" {
		return true
	}
	who, ok, err := s.cat.SessionUser(r.Context(), t, catalog.SessionEdit)
	if err != nil {
		s.serverError(w, r, err)
		return false
	}
	if !ok || who.Name != user {
		w.Header().Set("X-Reader-Google-Bad-Token", "true")
		problem(w, r, http.StatusUnauthorized, "wrong edit token", "T is not a token of GET /reader/api/0/token for this user: get a new one")
		return false
	}
	return true
}

// greaderLogin is POST /accounts/ClientLogin: Email and Passwd give
// "SID=…\nLSID=…\nAuth=…" (text/plain), the Auth to send as
// "Authorization: GoogleLogin auth=…".
func (s *Server) greaderLogin(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		problem(w, r, http.StatusMethodNotAllowed, "method not allowed", "ClientLogin takes POST, with Email and Passwd in a form body (never in the URL)")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		problem(w, r, http.StatusRequestEntityTooLarge, "bad request body", "the body could not be read, or is over "+strconv.Itoa(MaxBodyBytes)+" bytes")
		return
	}
	form, err := parseGreaderForm("", string(body))
	if err != nil {
		badParam(w, r, "", "the body is not a form: send Email and Passwd, application/x-www-form-urlencoded")
		return
	}
	name, pw := form.get("Email"), form.get("Passwd")
	if name == "" || pw == "" {
		badParam(w, r, "Passwd", "send Email (the user's name) and Passwd")
		return
	}
	ok, wait, err := s.checkLogin(r, name, pw)
	switch {
	case err != nil:
		s.serverError(w, r, err)
		return
	case wait > 0:
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		problem(w, r, http.StatusTooManyRequests, "too many logins", "too many wrong passwords from this address or for this user, "+
			"or too many logins at once: try again in "+spanOf(wait.Seconds()))
		return
	case !ok:
		// The form Google answered, which clients look for.
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, "Error=BadAuthentication\n")
		return
	}
	token, err := s.cat.NewSession(r.Context(), name, catalog.SessionAuth, s.cfg.Now())
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	io.WriteString(w, "SID="+token+"\nLSID=null\nAuth="+token+"\n")
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

// token is GET /reader/api/0/token: a token for the T of writes.
func (g *greq) token() {
	t, err := g.s.cat.NewSession(g.ctx(), g.user, catalog.SessionEdit, g.now)
	if err != nil {
		g.s.serverError(g.w, g.r, err)
		return
	}
	g.text(t)
}

// userInfo is GET /reader/api/0/user-info.
func (g *greq) userInfo() {
	g.json(map[string]any{"userId": g.user, "userName": g.user, "userProfileId": g.user, "userEmail": "", "isBloggerUser": false,
		"signupTimeSec": 0, "isMultiLoginEnabled": false})
}

type grCategory struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

type grSubscription struct {
	ID            string       `json:"id"`
	Title         string       `json:"title"`
	Categories    []grCategory `json:"categories"`
	SortID        string       `json:"sortid"`
	FirstItemMsec string       `json:"firstitemmsec"`
	URL           string       `json:"url"`
	HTMLURL       string       `json:"htmlUrl"`
	IconURL       string       `json:"iconUrl"`
}

// feedTitle is what a reader app calls a feed: the name it was
// subscribed with, or its own title, or its URL.
func feedTitle(sb ndjson.Subscription, title string) string {
	switch {
	case sb.Name != "":
		return sb.Name
	case title != "":
		return title
	}
	return sb.URL
}

// subscriptionList is GET /reader/api/0/subscription/list.
func (g *greq) subscriptionList() {
	out := []grSubscription{}
	err := g.s.cat.Feeds(g.ctx(), catalog.FeedFilter{Brief: true}, func(f *catalog.Feed) error {
		cats := []grCategory{}
		for _, l := range f.Sub.Labels {
			if labelProblem(l) == "" {
				cats = append(cats, grCategory{ID: labelStream(l), Label: l})
			}
		}
		out = append(out, grSubscription{ID: "feed/" + f.Sub.FeedID, Title: feedTitle(f.Sub, f.State.Title), Categories: cats,
			SortID: f.Sub.FeedID[:8], FirstItemMsec: "0", URL: f.Sub.URL, HTMLURL: f.Sub.URL})
		return nil
	})
	if err != nil {
		g.s.serverError(g.w, g.r, err)
		return
	}
	g.json(map[string]any{"subscriptions": out})
}

// labels are the labels of the subscriptions (those that can be a
// stream), sorted, and the feeds of each.
func (g *greq) labels() (map[string][]string, error) {
	byLabel := map[string][]string{}
	err := g.s.cat.Feeds(g.ctx(), catalog.FeedFilter{Brief: true}, func(f *catalog.Feed) error {
		for _, l := range f.Sub.Labels {
			if labelProblem(l) == "" {
				byLabel[l] = append(byLabel[l], f.Sub.FeedID)
			}
		}
		return nil
	})
	return byLabel, err
}

// tagList is GET /reader/api/0/tag/list: the starred state and the
// labels, as folders.
func (g *greq) tagList() {
	byLabel, err := g.labels()
	if err != nil {
		g.s.serverError(g.w, g.r, err)
		return
	}
	type tag struct {
		ID     string `json:"id"`
		SortID string `json:"sortid,omitempty"`
		Type   string `json:"type,omitempty"`
	}
	tags := []tag{{ID: stateStarred}}
	for _, l := range sortedKeys(byLabel) {
		tags = append(tags, tag{ID: labelStream(l), Type: "folder"})
	}
	g.json(map[string]any{"tags": tags})
}

// unreadCounts are the user's unread counts by feed, within the window,
// kept while the catalog is unchanged (and 10 seconds at most).
func (s *Server) unreadCounts(ctx context.Context, reader string, now time.Time) (map[string]catalog.Unread, error) {
	gen := s.changes.look(ctx)
	s.gr.mu.Lock()
	m := s.gr.counts[reader]
	s.gr.mu.Unlock()
	if m != nil && m.gen == gen && time.Since(m.at) < cacheMaxAge && !s.cfg.NoCache {
		return m.counts, nil
	}
	counts, err := s.cat.UnreadCounts(ctx, reader, s.readBefore(now))
	if err != nil {
		return nil, err
	}
	s.gr.mu.Lock()
	if s.gr.counts == nil || len(s.gr.counts) > 1000 {
		s.gr.counts = map[string]*unreadMemo{}
	}
	s.gr.counts[reader] = &unreadMemo{gen: gen, at: time.Now(), counts: counts}
	s.gr.mu.Unlock()
	return counts, nil
}

// unreadCount is GET /reader/api/0/unread-count: by feed, by label, and
// the reading list's.
func (g *greq) unreadCount() {
	counts, err := g.s.unreadCounts(g.ctx(), g.user, g.now)
	if err != nil {
		g.s.serverError(g.w, g.r, err)
		return
	}
	byLabel, err := g.labels()
	if err != nil {
		g.s.serverError(g.w, g.r, err)
		return
	}
	type count struct {
		ID     string `json:"id"`
		Count  int    `json:"count"`
		Newest string `json:"newestItemTimestampUsec"`
	}
	usec := func(t time.Time) string { return strconv.FormatInt(t.UnixMicro(), 10) }
	out := []count{}
	var total int
	var newest time.Time
	for _, id := range sortedKeys(counts) {
		u := counts[id]
		out = append(out, count{ID: "feed/" + id, Count: u.Count, Newest: usec(u.Newest)})
		total += u.Count
		if u.Newest.After(newest) {
			newest = u.Newest
		}
	}
	for _, l := range sortedKeys(byLabel) {
		var c count
		var at time.Time
		for _, id := range byLabel[l] {
			if u, ok := counts[id]; ok {
				c.Count += u.Count
				if u.Newest.After(at) {
					at = u.Newest
				}
			}
		}
		if c.Count > 0 {
			c.ID, c.Newest = labelStream(l), usec(at)
			out = append(out, c)
		}
	}
	if total > 0 {
		out = append(out, count{ID: stateReadingList, Count: total, Newest: usec(newest)})
	}
	g.json(map[string]any{"max": total, "unreadcounts": out})
}

// streamQuery reads a stream's parameters (n, c, ot, nt, r, xt, it) into
// a catalog query for the user; false when the request is answered.
func (g *greq) streamQuery(st stream) (catalog.EntryQuery, bool) {
	q := catalog.EntryQuery{Order: catalog.OrderFirstSeen, Reader: g.user, Limit: greaderDefaultN}
	if v := g.form.get("n"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			badParam(g.w, g.r, "n", "n "+strconv.Quote(clip(v))+" is not a number of items from 1")
			return q, false
		}
		q.Limit = min(n, greaderMaxN)
	}
	if c := g.form.get("c"); c != "" {
		if !IsCursor(c) {
			badParam(g.w, g.r, "c", "c "+strconv.Quote(clip(c))+" is not a continuation this server gave")
			return q, false
		}
		q.Cursor = c
	}
	for _, p := range []struct {
		name string
		t    *time.Time
	}{{"ot", &q.Since}, {"nt", &q.Until}} {
		if v := g.form.get(p.name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 || n > 1<<40 {
				badParam(g.w, g.r, p.name, p.name+" "+strconv.Quote(clip(v))+" is not a time in seconds since 1970")
				return q, false
			}
			*p.t = time.Unix(n, 0)
		}
	}
	q.Oldest = g.form.get("r") == "o"
	for _, x := range g.form["xt"] {
		if x == stateRead || x == "user/"+g.user+"/state/com.google/read" {
			q.Unread = true
		}
	}
	for _, x := range g.form["it"] {
		switch x {
		case stateStarred, "user/" + g.user + "/state/com.google/starred":
			q.Starred = true
		case stateRead, "user/" + g.user + "/state/com.google/read":
			q.Read = true
		}
	}
	switch st.Kind {
	case streamStarred:
		q.Starred = true
	case streamRead:
		q.Read = true
	}
	if q.Unread {
		// Entries before the window count as read.
		if before := g.s.readBefore(g.now); before.After(q.Since) {
			q.Since = before
		}
	}
	return q, true
}

// streamID reads a stream id; false when the request is answered.
func (g *greq) streamID(id string) (stream, bool) {
	st, err := parseStream(id, g.user)
	if err != nil {
		badParam(g.w, g.r, "s", "stream "+strconv.Quote(clip(id))+" is "+err.Error())
		return st, false
	}
	if st.Kind == streamFeed && !ndjson.IsFeedID(st.Feed) {
		subs, err := g.s.cat.Subscriptions(g.ctx())
		if err != nil {
			g.s.serverError(g.w, g.r, err)
			return st, false
		}
		i, err := catalog.FindSubscription(subs, st.Feed)
		if err != nil {
			problem(g.w, g.r, http.StatusNotFound, "no such feed", "no feed is subscribed at "+clip(st.Feed))
			return st, false
		}
		st.Feed = subs[i].FeedID
	}
	return st, true
}

// page runs a stream's query.
func (g *greq) page(st stream, q catalog.EntryQuery) (catalog.EntryPage, error) {
	switch st.Kind {
	case streamFeed:
		return g.s.cat.FeedEntries(g.ctx(), st.Feed, q)
	case streamLabel:
		return g.s.cat.LabelEntries(g.ctx(), st.Label, q)
	}
	return g.s.cat.AllEntries(g.ctx(), q)
}

// streamContents is GET /reader/api/0/stream/contents/STREAM (and
// /reader/atom/STREAM, the same as an Atom feed).
func (g *greq) streamContents(id string, atom bool) {
	st, ok := g.streamID(id)
	if !ok {
		return
	}
	q, ok := g.streamQuery(st)
	if !ok {
		return
	}
	page, err := g.page(st, q)
	if g.queryError(err) {
		return
	}
	items := g.items(page.Entries)
	if atom {
		g.atom(st, items, page.Next)
		return
	}
	out := map[string]any{"direction": "ltr", "id": st.id(), "title": g.streamTitle(st), "updated": g.now.Unix(),
		"self": []map[string]string{{"href": g.s.absolute(g.r, selfPath(g.r))}}, "items": items}
	if page.Next != "" {
		out["continuation"] = page.Next
	}
	g.json(out)
}

// queryError answers a query the catalog refused or failed; false when
// there was no error.
func (g *greq) queryError(err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, catalog.ErrBadQuery):
		badParam(g.w, g.r, "c", strings.TrimPrefix(err.Error(), "catalog: "))
	default:
		g.s.serverError(g.w, g.r, err)
	}
	return true
}

// streamTitle is what a stream is called.
func (g *greq) streamTitle(st stream) string {
	switch st.Kind {
	case streamFeed:
		if sb, ok, err := g.s.cat.Subscription(g.ctx(), st.Feed); err == nil && ok {
			fs, _, _ := g.s.cat.State(g.ctx(), st.Feed)
			return feedTitle(sb, fs.Title)
		}
		return st.Feed
	case streamLabel:
		return st.Label
	case streamStarred:
		return "Starred"
	case streamRead:
		return "Read"
	}
	return "Reading list"
}

// itemIDs is GET /reader/api/0/stream/items/ids?s=STREAM: the ids (short
// form) of a stream's items.
func (g *greq) itemIDs() {
	id := g.form.get("s")
	if id == "" {
		badParam(g.w, g.r, "s", "s is missing: the stream whose item ids to list")
		return
	}
	st, ok := g.streamID(id)
	if !ok {
		return
	}
	q, ok := g.streamQuery(st)
	if !ok {
		return
	}
	page, err := g.page(st, q)
	if g.queryError(err) {
		return
	}
	type ref struct {
		ID              string   `json:"id"`
		DirectStreamIDs []string `json:"directStreamIds"`
		TimestampUsec   string   `json:"timestampUsec"`
	}
	refs := []ref{}
	for _, e := range page.Entries {
		refs = append(refs, ref{ID: itemShort(e.UID), DirectStreamIDs: []string{"feed/" + e.FeedID}, TimestampUsec: strconv.FormatInt(e.FirstSeen.UnixMicro(), 10)})
	}
	out := map[string]any{"itemRefs": refs}
	if page.Next != "" {
		out["continuation"] = page.Next
	}
	g.json(out)
}

// itemUIDs reads the i= of a request; false when it is answered.
func (g *greq) itemUIDs() ([]string, bool) {
	is := g.form["i"]
	if len(is) == 0 {
		badParam(g.w, g.r, "i", "i is missing: give the items, one i= each")
		return nil, false
	}
	uids := make([]string, 0, len(is))
	for _, i := range is {
		uid, err := parseItemID(i)
		if err != nil {
			badParam(g.w, g.r, "i", "item "+strconv.Quote(clip(i))+" is "+err.Error())
			return nil, false
		}
		uids = append(uids, uid)
	}
	return uids, true
}

// itemContents is POST /reader/api/0/stream/items/contents (i=...).
func (g *greq) itemContents() {
	uids, ok := g.itemUIDs()
	if !ok {
		return
	}
	rows, err := g.s.cat.EntriesByUIDs(g.ctx(), uids, g.user)
	if g.queryError(err) {
		return
	}
	g.json(map[string]any{"direction": "ltr", "id": "user/-/state/com.google/items", "updated": g.now.Unix(), "items": g.items(rows)})
}

// editTag is POST /reader/api/0/edit-tag: i= items, a= states to add,
// r= to remove: read, starred (kept-unread is unread). Other tags
// (labels of items, tracking states) are not kept, and are let be.
func (g *greq) editTag() {
	uids, ok := g.itemUIDs()
	if !ok {
		return
	}
	var actions []string
	for _, a := range g.form["a"] {
		switch g.state(a) {
		case "read":
			actions = append(actions, catalog.MarkRead)
		case "kept-unread":
			actions = append(actions, catalog.MarkUnread)
		case "starred":
			actions = append(actions, catalog.MarkStar)
		}
	}
	for _, r := range g.form["r"] {
		switch g.state(r) {
		case "read":
			actions = append(actions, catalog.MarkUnread)
		case "starred":
			actions = append(actions, catalog.MarkUnstar)
		}
	}
	if len(actions) > 0 {
		// An item id names every feed's entry of its uid: two feeds
		// sharing a uid (a 64-bit hash) is the rare case where a mark
		// falls on both.
		rows, err := g.s.cat.EntriesByUIDs(g.ctx(), uids, "")
		if g.queryError(err) {
			return
		}
		keys := make([]catalog.EntryKey, len(rows))
		for i, e := range rows {
			keys[i] = catalog.EntryKey{FeedID: e.FeedID, UID: e.UID}
		}
		for _, a := range actions {
			if _, err := g.s.cat.Mark(g.ctx(), g.user, a, keys, g.now); err != nil {
				g.s.serverError(g.w, g.r, err)
				return
			}
		}
	}
	g.text("OK")
}

// state is the name of a state tag of the user's (read, starred,
// kept-unread...), or "".
func (g *greq) state(tag string) string {
	for _, who := range []string{"user/-/", "user/" + g.user + "/"} {
		if s, ok := strings.CutPrefix(tag, who+"state/com.google/"); ok {
			return s
		}
	}
	return ""
}

// markAllRead is POST /reader/api/0/mark-all-as-read: s= a feed, a label
// or the reading list; ts= only what was first seen up to then
// (microseconds; seconds and milliseconds taken too).
func (g *greq) markAllRead() {
	id := g.form.get("s")
	if id == "" {
		badParam(g.w, g.r, "s", "s is missing: the stream to mark read")
		return
	}
	st, ok := g.streamID(id)
	if !ok {
		return
	}
	until := g.now.Add(time.Millisecond)
	if v := g.form.get("ts"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			badParam(g.w, g.r, "ts", "ts "+strconv.Quote(clip(v))+" is not a time in microseconds since 1970")
			return
		}
		switch {
		case n < 1e11:
			n *= 1e6
		case n < 1e14:
			n *= 1e3
		}
		// Up to and including the item of that time (the catalog keeps
		// milliseconds).
		until = time.UnixMilli(n/1000 + 1)
	}
	var err error
	switch st.Kind {
	case streamFeed:
		_, err = g.s.cat.MarkAllRead(g.ctx(), g.user, st.Feed, until)
	case streamLabel:
		_, err = g.s.cat.MarkLabelRead(g.ctx(), g.user, st.Label, until)
	case streamReadingList:
		_, err = g.s.cat.MarkAllRead(g.ctx(), g.user, "", until)
	default:
		badParam(g.w, g.r, "s", "stream "+strconv.Quote(clip(id))+" cannot be marked read: give a feed, a label or the reading list")
		return
	}
	if err != nil {
		g.s.serverError(g.w, g.r, err)
		return
	}
	g.text("OK")
}

// subscriptionEdit is POST /reader/api/0/subscription/edit: ac=subscribe
// (s=feed/URL, t= its name, a= a label), unsubscribe (s=, one or more),
// or edit (t= renames, a= adds labels, r= removes them); through the
// functions feed-sub uses, which check and refuse alike.
func (g *greq) subscriptionEdit() {
	ac := g.form.get("ac")
	ss := g.form["s"]
	if len(ss) == 0 {
		badParam(g.w, g.r, "s", "s is missing: the feed (feed/URL, or feed/ID as subscription/list gives it)")
		return
	}
	var refs []string
	for _, s := range ss {
		ref, ok := strings.CutPrefix(s, "feed/")
		if !ok || ref == "" {
			badParam(g.w, g.r, "s", "s "+strconv.Quote(clip(s))+" is not a feed: feed/URL or feed/ID")
			return
		}
		refs = append(refs, ref)
	}
	var add, rm []string
	for _, p := range []struct {
		name string
		to   *[]string
	}{{"a", &add}, {"r", &rm}} {
		for _, v := range g.form[p.name] {
			l, ok := labelName(v, g.user)
			if !ok {
				badParam(g.w, g.r, p.name, p.name+" "+strconv.Quote(clip(v))+" is not a label: user/-/label/NAME")
				return
			}
			*p.to = append(*p.to, l)
		}
	}
	var msg bytes.Buffer
	cfg := g.s.subConfig(&msg)
	var err error
	switch ac {
	case "subscribe":
		if len(refs) != 1 {
			badParam(g.w, g.r, "s", "subscribe takes one s")
			return
		}
		_, _, err = sub.Add(cfg, sub.Spec{URL: refs[0], Name: g.form.get("t"), Labels: add})
	case "unsubscribe":
		err = sub.Remove(cfg, refs)
	case "edit":
		c := sub.Changes{AddLabels: add, RmLabels: rm}
		if t, ok := g.form["t"]; ok && len(t) > 0 {
			c.Name = &t[0]
		}
		if c.Name == nil && len(add) == 0 && len(rm) == 0 {
			g.text("OK")
			return
		}
		err = sub.Set(cfg, refs, c)
	default:
		badParam(g.w, g.r, "ac", "ac "+strconv.Quote(clip(ac))+" is not one: subscribe, unsubscribe or edit")
		return
	}
	if err != nil {
		g.s.subError(g.w, g.r, err)
		return
	}
	g.text("OK")
}

// quickAdd is POST /reader/api/0/subscription/quickadd: quickadd=URL
// (or feed/URL) subscribes, as feed-sub add does.
func (g *greq) quickAdd() {
	u := strings.TrimPrefix(g.form.get("quickadd"), "feed/")
	if u == "" {
		badParam(g.w, g.r, "quickadd", "quickadd is missing: the feed's URL")
		return
	}
	var msg bytes.Buffer
	sb, _, err := sub.Add(g.s.subConfig(&msg), sub.Spec{URL: u})
	if err != nil {
		if errors.Is(err, sub.ErrInvalid) {
			g.json(map[string]any{"numResults": 0, "query": u, "error": err.Error()})
			return
		}
		g.s.subError(g.w, g.r, err)
		return
	}
	fs, _, _ := g.s.cat.State(g.ctx(), sb.FeedID)
	g.json(map[string]any{"numResults": 1, "query": u, "streamId": "feed/" + sb.FeedID, "streamName": feedTitle(sb, fs.Title)})
}
