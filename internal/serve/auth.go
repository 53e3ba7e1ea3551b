package serve

import (
	"crypto/subtle"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
)

// Who a request comes from (docs/serve.md, "Security"). The API token
// (Authorization: Bearer, or a web page session opened with it) may do
// everything. A user of the Google Reader API (its GoogleLogin token, or
// a web page session opened with their password) reads and marks as
// their own reader; an admin user also changes the subscriptions. Anyone
// else reads what is open (every read, unless --auth reads) and the
// default reader's marks, but not another reader's marks, nor the
// messages of fetch errors (they can name addresses of the server's
// network).

// caller is who a request comes from.
type caller struct {
	token bool   // it holds the API token
	user  string // the user whose session it carries; "" for none
	role  string // the user's role; "" for none
}

// mayRead reports whether the caller may see the marks of reader.
func (c caller) mayRead(reader string) bool {
	return reader == "" || reader == catalog.DefaultReader || c.token || c.user != "" && c.user == reader
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

// bearer is the token of the request's Authorization: Bearer header.
func bearer(r *http.Request) (string, bool) {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	return strings.TrimSpace(token), strings.EqualFold(scheme, "Bearer")
}

// holdsToken reports whether the request carries the API token in its
// Authorization header.
func (s *Server) holdsToken(r *http.Request) bool {
	token, ok := bearer(r)
	return ok && s.isToken(token)
}

// isToken compares token with the server's, in constant time; no token
// matches when the server has none.
func (s *Server) isToken(token string) bool {
	want := s.token.current()
	return want != "" && subtle.ConstantTimeCompare([]byte(token), []byte(want)) == 1
}

// callerKey keeps a request's caller in its context, once worked out.
type callerKey struct{}

// callerOf works out who the request comes from: its bearer token, its
// GoogleLogin token, or its web page session, in that order.
func (s *Server) callerOf(r *http.Request) (caller, error) {
	if c, ok := r.Context().Value(callerKey{}).(caller); ok {
		return c, nil
	}
	if s.holdsToken(r) {
		return caller{token: true}, nil
	}
	scheme, rest, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if auth, ok := strings.CutPrefix(strings.TrimSpace(rest), "auth="); ok && strings.EqualFold(scheme, "GoogleLogin") {
		u, ok, err := s.cat.SessionUser(r.Context(), auth, catalog.SessionAuth)
		if err != nil || !ok {
			return caller{}, err
		}
		return caller{user: u.Name, role: u.Role}, nil
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return caller{}, nil
	}
	ws, ok, err := s.cat.WebSessionOf(r.Context(), c.Value, s.cfg.Now())
	if err != nil || !ok {
		return caller{}, err
	}
	if ws.User == "" {
		// Opened with the API token: it lasts as long as that token.
		return caller{token: s.token.current() != ""}, nil
	}
	return caller{user: ws.User, role: ws.Role}, nil
}

// readerAllowed answers a request for the marks of reader that its caller
// may not see, and reports whether it may go on.
func (s *Server) readerAllowed(w http.ResponseWriter, r *http.Request, reader string) bool {
	if reader == "" || reader == catalog.DefaultReader || catalog.CheckReader(reader) != nil {
		return true // the default reader's, or a bad name the handler refuses
	}
	c, err := s.callerOf(r)
	if err != nil {
		s.serverError(w, r, err)
		return false
	}
	if c.mayRead(reader) {
		return true
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="feedpipe"`)
	problem(w, r, http.StatusUnauthorized, "not your marks", "the marks of reader "+reader+" are theirs: send their "+
		"Google Reader API token (Authorization: GoogleLogin auth=...) or the API token (Authorization: Bearer TOKEN)")
	return false
}

// tokenSource is the server's API token, read again from its file when
// the file changes (feed-serve token rotate), looked at once a second at
// most.
type tokenSource struct {
	file string // "" : the token never changes

	mu      sync.Mutex
	token   string
	checked time.Time
	stat    os.FileInfo
	onError func(error)
}

func newTokenSource(token, file string, onError func(error)) *tokenSource {
	t := &tokenSource{token: token, file: file, onError: onError}
	if file != "" {
		t.stat, _ = os.Stat(file)
		t.checked = time.Now()
	}
	return t
}

// current is the token now; "" when there is none (or its file became
// unreadable: then nothing is let in).
func (t *tokenSource) current() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.file == "" || time.Since(t.checked) < time.Second {
		return t.token
	}
	t.checked = time.Now()
	st, err := os.Stat(t.file)
	if err == nil && t.stat != nil && os.SameFile(st, t.stat) && st.ModTime().Equal(t.stat.ModTime()) && st.Size() == t.stat.Size() {
		return t.token
	}
	t.stat = st
	token, _, err := readToken(t.file)
	if err != nil {
		t.onError(err)
		token = ""
	}
	t.token = token
	return token
}
