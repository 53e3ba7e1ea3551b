package serve

import (
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/feedpipe/feedpipe/internal/catalog"
)

// The Google Reader API's logins and tokens: ClientLogin's Auth, the
// user it names, the edit token T, and what user-info says of the user.

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
