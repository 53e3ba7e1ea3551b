package catalog

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"time"
)

// Web sessions: a browser signed in to feed-serve's web page (docs/
// store.md, "web_sessions"). Each sign-in makes a new random token, kept
// only as its SHA-256, which the browser holds in a cookie: signing out
// ends that browser's session alone, and a rotated API token ends them
// all. A session of user "" was opened with the API token; any other,
// with that user's password.

// WebSessionTTL is how long a web session lasts from its sign-in.
const WebSessionTTL = 30 * 24 * time.Hour

// WebSession is a signed-in browser.
type WebSession struct {
	User string // "" when signed in with the API token
	Role string // the user's role; RoleAdmin for the API token's
}

// NewWebSession opens a session for user ("" for the API token's
// holder, who must not be a user's name) and returns its token.
func (c *Catalog) NewWebSession(ctx context.Context, user string, now time.Time) (string, error) {
	b := make([]byte, 32)
	rand.Read(b)
	token := hex.EncodeToString(b)
	err := c.Update(ctx, func(t *Tx) error {
		if _, err := t.write(once, `DELETE FROM web_sessions WHERE expires_at <= ?`, now.UnixMilli()); err != nil {
			return err
		}
		return t.writeUser(user, `INSERT INTO web_sessions (token_hash, user, created_at, expires_at)
			SELECT :token, :user, :at, :expires WHERE :user = '' OR EXISTS (SELECT 1 FROM users WHERE name = :user)`,
			sql.Named("token", tokenHash(token)), sql.Named("user", user), sql.Named("at", now.UnixMilli()),
			sql.Named("expires", now.Add(WebSessionTTL).UnixMilli()))
	})
	if err != nil {
		return "", err
	}
	return token, nil
}

// WebSessionOf returns the session of token; ok is false when there is
// none or it expired.
func (c *Catalog) WebSessionOf(ctx context.Context, token string, now time.Time) (s WebSession, ok bool, err error) {
	if token == "" || len(token) > 256 {
		return WebSession{}, false, nil
	}
	err = c.readRow(ctx, once, `SELECT w.user, CASE WHEN w.user = '' THEN 'admin' ELSE u.role END
		FROM web_sessions w LEFT JOIN users u ON u.name = w.user
		WHERE w.token_hash = ? AND w.expires_at > ? AND (w.user = '' OR u.name IS NOT NULL)`,
		tokenHash(token), now.UnixMilli()).Scan(&s.User, &s.Role)
	if errors.Is(err, sql.ErrNoRows) {
		return WebSession{}, false, nil
	}
	if err != nil {
		return WebSession{}, false, err
	}
	return s, true, nil
}

// EndWebSession ends the session of token (signing out).
func (c *Catalog) EndWebSession(ctx context.Context, token string) error {
	return c.Update(ctx, func(t *Tx) error {
		_, err := t.write(once, `DELETE FROM web_sessions WHERE token_hash = ?`, tokenHash(token))
		return err
	})
}

// EndTokenSessions ends every session opened with the API token: it
// changed (feed-serve token rotate).
func (c *Catalog) EndTokenSessions(ctx context.Context) error {
	return c.Update(ctx, func(t *Tx) error {
		_, err := t.write(once, `DELETE FROM web_sessions WHERE user = ''`)
		return err
	})
}
