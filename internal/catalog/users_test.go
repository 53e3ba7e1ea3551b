package catalog

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestUsers: users added, listed, checked, their password changed and
// removed, each step refused where it should be, and their sessions with
// them.
func TestUsers(t *testing.T) {
	defer SetTestIterations(1000)()
	c := openTemp(t)
	if on, err := c.HasUsers(ctx); on || err != nil {
		t.Fatalf("a new catalog has users: %v %v", on, err)
	}
	steps := []struct {
		name string
		do   func() error
		want error // nil, or the error it must wrap
	}{
		{"add alice", func() error { return c.AddUser(ctx, "alice", "correct horse", RoleAdmin, t0) }, nil},
		{"add bob", func() error { return c.AddUser(ctx, "bob", "b0b b0b b0b b0b", RoleReader, t0) }, nil},
		{"add alice again", func() error { return c.AddUser(ctx, "alice", "other other other", RoleReader, t0) }, ErrUserExists},
		{"add a bad name", func() error { return c.AddUser(ctx, "Alice Smith", "a long password", RoleReader, t0) }, ErrBadReader},
		{"add a slash", func() error { return c.AddUser(ctx, "a/b", "a long password", RoleReader, t0) }, ErrBadReader},
		{"add no password", func() error { return c.AddUser(ctx, "carol", "", RoleReader, t0) }, ErrWeakPassword},
		{"add a short password", func() error { return c.AddUser(ctx, "carol", "elevenchars", RoleReader, t0) }, ErrWeakPassword},
		{"add 12 characters, fewer bytes in UTF-8 than...", func() error { return c.AddUser(ctx, "dave", "ééééééééééé", RoleReader, t0) }, ErrWeakPassword},
		{"add no role", func() error { return c.AddUser(ctx, "carol", "a long password", "root", t0) }, ErrBadRole},
		{"make bob an admin", func() error { return c.SetRole(ctx, "bob", RoleAdmin) }, nil},
		{"make bob a reader", func() error { return c.SetRole(ctx, "bob", RoleReader) }, nil},
		{"role of no one", func() error { return c.SetRole(ctx, "mallory", RoleAdmin) }, ErrNoSuchUser},
		{"role of no kind", func() error { return c.SetRole(ctx, "bob", "owner") }, ErrBadRole},
		{"add a huge password", func() error { return c.AddUser(ctx, "carol", strings.Repeat("x", MaxPasswordBytes+1), RoleReader, t0) }, ErrWeakPassword},
		{"alice's password", func() error { return c.CheckPassword(ctx, "alice", "correct horse") }, nil},
		{"a wrong password", func() error { return c.CheckPassword(ctx, "alice", "correct horse ") }, ErrBadPassword},
		{"bob's password for alice", func() error { return c.CheckPassword(ctx, "alice", "b0b b0b b0b b0b") }, ErrBadPassword},
		{"an unknown user", func() error { return c.CheckPassword(ctx, "mallory", "-") }, ErrBadPassword},
		{"passwd of an unknown user", func() error { return c.SetPassword(ctx, "mallory", "a long password") }, ErrNoSuchUser},
		{"passwd empty", func() error { return c.SetPassword(ctx, "bob", "") }, ErrWeakPassword},
		{"remove an unknown user", func() error { return c.RemoveUser(ctx, "mallory") }, ErrNoSuchUser},
	}
	for _, s := range steps {
		err := s.do()
		if s.want == nil && err != nil || s.want != nil && !errors.Is(err, s.want) {
			t.Errorf("%s: %v, want %v", s.name, err, s.want)
		}
	}
	users, err := c.Users(ctx)
	if err != nil || len(users) != 2 || users[0].Name != "alice" || users[1].Name != "bob" || !users[0].Created.Equal(t0) ||
		users[0].Role != RoleAdmin || users[1].Role != RoleReader {
		t.Fatalf("users %+v %v", users, err)
	}
	// Stored as a hash of the documented form, never as given.
	var stored string
	c.db.QueryRow(`SELECT password FROM users WHERE name = 'alice'`).Scan(&stored)
	if p := strings.Split(stored, "$"); len(p) != 4 || p[0] != "pbkdf2-sha256" || p[1] != "1000" || strings.Contains(stored, "horse") {
		t.Fatalf("stored password %q", stored)
	}

	// Sessions: a token per kind, kept as its hash, ended by passwd and
	// remove.
	auth, err := c.NewSession(ctx, "alice", SessionAuth, t0)
	if err != nil || len(auth) != 64 {
		t.Fatalf("token %q %v", auth, err)
	}
	edit, _ := c.NewSession(ctx, "alice", SessionEdit, t0)
	bobs, _ := c.NewSession(ctx, "bob", SessionAuth, t0)
	if _, err := c.NewSession(ctx, "mallory", SessionAuth, t0); !errors.Is(err, ErrNoSuchUser) {
		t.Errorf("a session for no user: %v", err)
	}
	if _, err := c.NewSession(ctx, "alice", "root", t0); err == nil {
		t.Errorf("a session of no kind")
	}
	var n int
	c.db.QueryRow(`SELECT count(*) FROM sessions WHERE token_hash = ? OR token_hash = ?`, auth, edit).Scan(&n)
	if n != 0 {
		t.Errorf("a token kept as it is")
	}
	for _, tc := range []struct {
		token, kind, user string
	}{
		{auth, SessionAuth, "alice"},
		{edit, SessionEdit, "alice"},
		{auth, SessionEdit, ""}, // an auth token is no edit token
		{edit, SessionAuth, ""},
		{bobs, SessionAuth, "bob"},
		{"", SessionAuth, ""},
		{strings.ToUpper(auth), SessionAuth, ""},
	} {
		user, ok, err := c.SessionUser(ctx, tc.token, tc.kind)
		if err != nil || user.Name != tc.user || ok != (tc.user != "") {
			t.Errorf("session %.8s %s: %q %v %v, want %q", tc.token, tc.kind, user.Name, ok, err, tc.user)
		}
		if want := map[string]string{"alice": RoleAdmin, "bob": RoleReader}[tc.user]; user.Role != want {
			t.Errorf("session %.8s %s: role %q, want %q", tc.token, tc.kind, user.Role, want)
		}
	}
	if err := c.SetPassword(ctx, "alice", "battery staple"); err != nil {
		t.Fatal(err)
	}
	if c.CheckPassword(ctx, "alice", "correct horse") == nil || c.CheckPassword(ctx, "alice", "battery staple") != nil {
		t.Errorf("the new password is not the one checked")
	}
	if _, ok, _ := c.SessionUser(ctx, auth, SessionAuth); ok {
		t.Errorf("a session outlived a new password")
	}
	if err := c.RemoveUser(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := c.SessionUser(ctx, bobs, SessionAuth); ok {
		t.Errorf("a session outlived its user")
	}
	if users, _ := c.Users(ctx); len(users) != 1 {
		t.Errorf("users %+v", users)
	}
}

// TestSessionsBounded: a user keeps MaxSessions sessions of a kind, the
// newest.
func TestSessionsBounded(t *testing.T) {
	defer SetTestIterations(1000)()
	c := openTemp(t)
	if err := c.AddUser(ctx, "alice", "a long password", RoleReader, t0); err != nil {
		t.Fatal(err)
	}
	var tokens []string
	for i := range MaxSessions + 5 {
		tok, err := c.NewSession(ctx, "alice", SessionEdit, t0.Add(time.Duration(i)*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, tok)
	}
	var n int
	c.db.QueryRow(`SELECT count(*) FROM sessions`).Scan(&n)
	if n != MaxSessions {
		t.Errorf("%d sessions kept", n)
	}
	if _, ok, _ := c.SessionUser(ctx, tokens[0], SessionEdit); ok {
		t.Errorf("the oldest session kept")
	}
	if _, ok, _ := c.SessionUser(ctx, tokens[len(tokens)-1], SessionEdit); !ok {
		t.Errorf("the newest session dropped")
	}
}

// TestPasswordHash: the hash's form is checked before any work, and
// other iteration counts still verify.
func TestPasswordHash(t *testing.T) {
	h, err := hashPassword("pw", 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		stored, pw string
		ok         bool
	}{
		{h, "pw", true},
		{h, "pW", false},
		{"pbkdf2-sha256$1000$$", "pw", false},
		{"plain", "plain", false},
		{"pbkdf2-sha1" + h[len("pbkdf2-sha256"):], "pw", false},
		{strings.Replace(h, "$1000$", "$999999999$", 1), "pw", false},
		{strings.Replace(h, "$1000$", "$1001$", 1), "pw", false},
	} {
		if got := passwordMatches(tc.stored, tc.pw); got != tc.ok {
			t.Errorf("%q %q: %v", tc.stored, tc.pw, got)
		}
	}
}

// TestPasswordCost: a password is hashed at PasswordIterations, and
// matches (the one test that pays the real cost: seconds with -race).
func TestPasswordCost(t *testing.T) {
	c := openTemp(t)
	if err := c.AddUser(ctx, "alice", "a long password", RoleReader, t0); err != nil {
		t.Fatal(err)
	}
	var stored string
	c.db.QueryRow(`SELECT password FROM users WHERE name = 'alice'`).Scan(&stored)
	if p := strings.Split(stored, "$"); len(p) != 4 || p[1] != "600000" {
		t.Fatalf("stored password %q", stored)
	}
	if !passwordMatches(stored, "a long password") {
		t.Fatal("the password does not match its hash")
	}
}

// TestWebSessions: a session per sign-in, for the token's holder or a
// user, ended by signing out, by its user's new password or removal, by
// a rotated token (those of the token only), and by time.
func TestWebSessions(t *testing.T) {
	defer SetTestIterations(1000)()
	c := openTemp(t)
	if err := c.AddUser(ctx, "alice", "a long password", RoleAdmin, t0); err != nil {
		t.Fatal(err)
	}
	if err := c.AddUser(ctx, "bob", "a long password", RoleReader, t0); err != nil {
		t.Fatal(err)
	}
	open := func(user string) string {
		t.Helper()
		tok, err := c.NewWebSession(ctx, user, t0)
		if err != nil || len(tok) != 64 {
			t.Fatalf("web session of %q: %q %v", user, tok, err)
		}
		return tok
	}
	admin1, admin2, alice, bob := open(""), open(""), open("alice"), open("bob")
	if _, err := c.NewWebSession(ctx, "mallory", t0); !errors.Is(err, ErrNoSuchUser) {
		t.Errorf("a session of no user: %v", err)
	}
	is := func(tok string, at time.Time, want WebSession, live bool) {
		t.Helper()
		got, ok, err := c.WebSessionOf(ctx, tok, at)
		if err != nil || ok != live || got != want {
			t.Errorf("session %.8s at %s: %+v %v %v, want %+v %v", tok, at, got, ok, err, want, live)
		}
	}
	is(admin1, t0, WebSession{Role: RoleAdmin}, true)
	is(alice, t0, WebSession{User: "alice", Role: RoleAdmin}, true)
	is(bob, t0, WebSession{User: "bob", Role: RoleReader}, true)
	is(strings.ToUpper(bob), t0, WebSession{}, false)
	is("", t0, WebSession{}, false)
	is(bob, t0.Add(WebSessionTTL), WebSession{}, false)
	var n int
	c.db.QueryRow(`SELECT count(*) FROM web_sessions WHERE token_hash = ?`, bob).Scan(&n)
	if n != 0 {
		t.Errorf("a token kept as it is")
	}
	if err := c.EndWebSession(ctx, admin1); err != nil {
		t.Fatal(err)
	}
	is(admin1, t0, WebSession{}, false)
	is(admin2, t0, WebSession{Role: RoleAdmin}, true)
	if err := c.SetRole(ctx, "alice", RoleReader); err != nil {
		t.Fatal(err)
	}
	is(alice, t0, WebSession{User: "alice", Role: RoleReader}, true)
	if err := c.SetPassword(ctx, "alice", "another long one"); err != nil {
		t.Fatal(err)
	}
	is(alice, t0, WebSession{}, false)
	if err := c.EndTokenSessions(ctx); err != nil {
		t.Fatal(err)
	}
	is(admin2, t0, WebSession{}, false)
	is(bob, t0, WebSession{User: "bob", Role: RoleReader}, true)
	if err := c.RemoveUser(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	is(bob, t0, WebSession{}, false)
	// Expired sessions go at the next sign-in.
	open("")
	c.NewWebSession(ctx, "", t0.Add(2*WebSessionTTL))
	c.db.QueryRow(`SELECT count(*) FROM web_sessions`).Scan(&n)
	if n != 1 {
		t.Errorf("%d sessions kept, want the one not expired", n)
	}
}
