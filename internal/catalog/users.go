package catalog

import (
	"context"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Users: the people the Google Reader API of feed-serve lets in (docs/
// store.md, "users, sessions"). A user's name is also their reader name:
// the marks they make through the API are the marks of that reader. A
// password is kept only as a PBKDF2-SHA256 hash; a session token only as
// its SHA-256.

// PasswordIterations is PBKDF2's iteration count for new passwords: what
// OWASP's password storage cheat sheet asks of PBKDF2-HMAC-SHA256 (2023).
// Hashes made with another count are still checked with theirs.
const PasswordIterations = 600_000

// passwordIterations is PasswordIterations but in tests (SetTestIterations).
var passwordIterations atomic.Int64

func init() { passwordIterations.Store(PasswordIterations) }

// SetTestIterations makes the passwords hashed from now on, in this
// process, cost n iterations, and returns what undoes it: for tests only,
// which would spend most of their time hashing (seconds each with -race).
func SetTestIterations(n int) (restore func()) {
	old := passwordIterations.Swap(int64(n))
	return func() { passwordIterations.Store(old) }
}

// Session kinds: ClientLogin's Auth token, and the short token the API's
// writes carry (T=).
const (
	SessionAuth = "auth"
	SessionEdit = "edit"
)

// Errors of users and sessions.
var (
	ErrNoSuchUser   = errors.New("no such user")
	ErrUserExists   = errors.New("user exists")
	ErrBadPassword  = errors.New("wrong password")
	ErrWeakPassword = errors.New("password unusable")
)

// User is a user of the Google Reader API.
type User struct {
	Name    string
	Role    string // RoleAdmin or RoleReader
	Created time.Time
}

// Roles: what a user may do through the Google Reader API and the web
// page. A reader reads and marks; an admin also changes the
// subscriptions (quickadd, unsubscribe, rename, labels).
const (
	RoleReader = "reader"
	RoleAdmin  = "admin"
)

// ErrBadRole is returned for a role that is neither.
var ErrBadRole = errors.New("no such role")

func checkRole(role string) error {
	if role != RoleReader && role != RoleAdmin {
		return fmt.Errorf("catalog: %w: %q (it is %s or %s)", ErrBadRole, role, RoleReader, RoleAdmin)
	}
	return nil
}

// MaxPasswordBytes caps a password: PBKDF2 hashes any length, but a
// request's form should not make it hash megabytes.
const MaxPasswordBytes = 1024

// MinPasswordChars is the shortest password a user may be given: a
// password that logs in from anywhere a network reaches must not fall to
// guessing (NIST SP 800-63B asks at least 8; OWASP's authentication
// cheat sheet, 12 without other factors).
const MinPasswordChars = 12

// checkPassword refuses a password nobody should use: too short, or too
// long.
func checkPassword(pw string) error {
	switch {
	case utf8.RuneCountInString(pw) < MinPasswordChars:
		return fmt.Errorf("catalog: %w: it has fewer than %d characters", ErrWeakPassword, MinPasswordChars)
	case len(pw) > MaxPasswordBytes:
		return fmt.Errorf("catalog: %w: it is over %d bytes", ErrWeakPassword, MaxPasswordBytes)
	}
	return nil
}

// hashPassword hashes pw with a new random salt: pbkdf2-sha256$ITER$SALT$HASH.
func hashPassword(pw string, iter int) (string, error) {
	salt := make([]byte, 16)
	rand.Read(salt)
	key, err := pbkdf2.Key(sha256.New, pw, salt, iter, sha256.Size)
	if err != nil {
		return "", fmt.Errorf("catalog: hash password: %w", err)
	}
	enc := base64.RawStdEncoding
	return "pbkdf2-sha256$" + strconv.Itoa(iter) + "$" + enc.EncodeToString(salt) + "$" + enc.EncodeToString(key), nil
}

// newPasswordHash checks the password pw (checkPassword) and returns the
// hash it is kept as.
func newPasswordHash(pw string) (string, error) {
	if err := checkPassword(pw); err != nil {
		return "", err
	}
	return hashPassword(pw, int(passwordIterations.Load()))
}

// passwordMatches reports whether pw hashes to stored (hashPassword's
// form), comparing in constant time.
func passwordMatches(stored, pw string) bool {
	parts := strings.Split(stored, "$")
	if len(parts) != 4 || parts[0] != "pbkdf2-sha256" {
		return false
	}
	iter, err := strconv.Atoi(parts[1])
	if err != nil || iter < 1 || iter > 10_000_000 {
		return false
	}
	enc := base64.RawStdEncoding
	salt, err1 := enc.DecodeString(parts[2])
	want, err2 := enc.DecodeString(parts[3])
	if err1 != nil || err2 != nil || len(want) == 0 {
		return false
	}
	got, err := pbkdf2.Key(sha256.New, pw, salt, iter, len(want))
	return err == nil && subtle.ConstantTimeCompare(got, want) == 1
}

// AddUser adds the user name (a reader name: CheckReader) with the
// password pw and the role (RoleReader, RoleAdmin).
func (c *Catalog) AddUser(ctx context.Context, name, pw, role string, now time.Time) error {
	if err := CheckReader(name); err != nil {
		return fmt.Errorf("catalog: user: %w", err)
	}
	if err := checkRole(role); err != nil {
		return err
	}
	h, err := newPasswordHash(pw)
	if err != nil {
		return err
	}
	return c.Update(ctx, func(t *Tx) error {
		r, err := t.write(once, `INSERT INTO users (name, password, role, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`, name, h, role, now.UnixMilli())
		if err != nil {
			return err
		}
		if n, _ := r.RowsAffected(); n == 0 {
			return fmt.Errorf("catalog: %w: %s (change the password with feed-serve user passwd %s)", ErrUserExists, name, name)
		}
		return nil
	})
}

// SetPassword changes the password of the user name, and ends their
// sessions: every client logs in again.
func (c *Catalog) SetPassword(ctx context.Context, name, pw string) error {
	h, err := newPasswordHash(pw)
	if err != nil {
		return err
	}
	return c.Update(ctx, func(t *Tx) error {
		if err := t.writeUser(name, `UPDATE users SET password = ? WHERE name = ?`, h, name); err != nil {
			return err
		}
		return t.endSessions(name)
	})
}

// SetRole gives the user name the role (RoleReader, RoleAdmin).
func (c *Catalog) SetRole(ctx context.Context, name, role string) error {
	if err := checkRole(role); err != nil {
		return err
	}
	return c.Update(ctx, func(t *Tx) error {
		return t.writeUser(name, `UPDATE users SET role = ? WHERE name = ?`, role, name)
	})
}

// writeUser runs q, which writes the row of the user name, or a row of
// theirs: an error wraps ErrNoSuchUser when it writes none.
func (t *Tx) writeUser(name, q string, args ...any) error {
	r, err := t.write(once, q, args...)
	if err != nil {
		return err
	}
	if n, _ := r.RowsAffected(); n == 0 {
		return fmt.Errorf("catalog: %w: %q", ErrNoSuchUser, name)
	}
	return nil
}

// endSessions ends every session of the user name: the Google Reader
// API's and the web page's.
func (t *Tx) endSessions(name string) error {
	if _, err := t.write(once, `DELETE FROM sessions WHERE user = ?`, name); err != nil {
		return err
	}
	_, err := t.write(once, `DELETE FROM web_sessions WHERE user = ?`, name)
	return err
}

// RemoveUser removes the user name and their sessions; their marks stay
// (they are the reader's, which feed-read may still use).
func (c *Catalog) RemoveUser(ctx context.Context, name string) error {
	return c.Update(ctx, func(t *Tx) error {
		if err := t.writeUser(name, `DELETE FROM users WHERE name = ?`, name); err != nil {
			return err
		}
		return t.endSessions(name)
	})
}

// Users returns the users, by name.
func (c *Catalog) Users(ctx context.Context) ([]User, error) {
	rows, err := c.read(ctx, once, `SELECT name, role, created_at FROM users ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []User
	for rows.Next() {
		var u User
		var at int64
		if err := rows.Scan(&u.Name, &u.Role, &at); err != nil {
			return nil, err
		}
		u.Created = time.UnixMilli(at).UTC()
		out = append(out, u)
	}
	return out, rows.Err()
}

// HasUsers reports whether there is a user at all: the Google Reader API
// is off until there is.
func (c *Catalog) HasUsers(ctx context.Context) (bool, error) {
	var n int
	err := c.readRow(ctx, once, `SELECT count(*) FROM (SELECT 1 FROM users LIMIT 1)`).Scan(&n)
	return n > 0, err
}

// CheckPassword returns nil when pw is the password of the user name,
// ErrBadPassword when it is not or there is no such user (the caller
// cannot tell which, nor by the time it takes: an unknown user costs a
// hash too).
func (c *Catalog) CheckPassword(ctx context.Context, name, pw string) error {
	var stored string
	err := c.readRow(ctx, once, `SELECT password FROM users WHERE name = ?`, name).Scan(&stored)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if errors.Is(err, sql.ErrNoRows) {
		stored = dummyHash()
	}
	if !passwordMatches(stored, pw) || errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("catalog: %w", ErrBadPassword)
	}
	return nil
}

// dummyHash is checked against when the user is unknown, so that the
// answer takes as long as for a known one.
var dummyHash = sync.OnceValue(func() string {
	h, _ := hashPassword("-", int(passwordIterations.Load()))
	return h
})

// MaxSessions is how many sessions of each kind a user keeps: a new one
// ends the oldest beyond it. Clients ask for a new edit token before
// each change, and log in at each start.
const MaxSessions = 50

// NewSession gives the user name a new token of kind (SessionAuth,
// SessionEdit): 32 random bytes in hex, kept only as its SHA-256.
func (c *Catalog) NewSession(ctx context.Context, name, kind string, now time.Time) (string, error) {
	if kind != SessionAuth && kind != SessionEdit {
		return "", fmt.Errorf("catalog: session kind %q: it is %s or %s", kind, SessionAuth, SessionEdit)
	}
	b := make([]byte, 32)
	rand.Read(b)
	token := hex.EncodeToString(b)
	err := c.Update(ctx, func(t *Tx) error {
		err := t.writeUser(name, `INSERT INTO sessions (token_hash, user, kind, created_at) SELECT ?, name, ?, ? FROM users WHERE name = ?`,
			tokenHash(token), kind, now.UnixMilli(), name)
		if err != nil {
			return err
		}
		_, err = t.write(once, `DELETE FROM sessions WHERE user = ? AND kind = ? AND token_hash NOT IN
			(SELECT token_hash FROM sessions WHERE user = ? AND kind = ? ORDER BY created_at DESC LIMIT ?)`,
			name, kind, name, kind, MaxSessions)
		return err
	})
	if err != nil {
		return "", err
	}
	return token, nil
}

// SessionUser returns the user of the token of kind (Created unset); ok
// is false when no session has it.
func (c *Catalog) SessionUser(ctx context.Context, token, kind string) (u User, ok bool, err error) {
	if token == "" || len(token) > 256 {
		return User{}, false, nil
	}
	err = c.readRow(ctx, once, `SELECT u.name, u.role FROM sessions s JOIN users u ON u.name = s.user WHERE s.token_hash = ? AND s.kind = ?`,
		tokenHash(token), kind).Scan(&u.Name, &u.Role)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, false, nil
	}
	if err != nil {
		return User{}, false, err
	}
	return u, true, nil
}

// tokenHash is how a token is kept: its SHA-256 in hex. The lookup by it
// is an index lookup of a hash, which tells an attacker nothing of the
// token.
func tokenHash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}
