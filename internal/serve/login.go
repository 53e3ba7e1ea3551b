package serve

import (
	"errors"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
)

// Password checks (ClientLogin, the web page's sign-in) are slow on
// purpose (PBKDF2, catalog.PasswordIterations), so they are rationed: two
// at once, a short line behind them and 429 beyond it, so that a flood
// cannot take every CPU nor hold a right password behind it for long; and
// after freeLoginFailures wrong passwords in a row, from one client
// address or for one user, each further try of that address or user
// waits a doubling time from a second (up to maxLoginWait), answered 429
// with Retry-After meanwhile without checking anything. A right password
// clears both counts.

// Login limits.
const (
	loginSlots        = 2
	maxLoginQueue     = 8
	freeLoginFailures = 5
	maxLoginWait      = 15 * time.Minute
	maxLoginKeys      = 10_000 // addresses and users remembered at once
)

// errBusy is a login refused because too many are in line.
var errBusy = errors.New("too many logins at once")

type loginFailures struct {
	count int
	until time.Time // no try before
}

// loginLimiter rations password checks (above).
type loginLimiter struct {
	slots   chan struct{}
	mu      sync.Mutex
	waiting int
	fails   map[string]*loginFailures
}

func newLoginLimiter() *loginLimiter {
	return &loginLimiter{slots: make(chan struct{}, loginSlots), fails: map[string]*loginFailures{}}
}

// wait is how long the keys must wait before their next try; 0: none.
func (l *loginLimiter) wait(now time.Time, keys ...string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var d time.Duration
	for _, k := range keys {
		if f := l.fails[k]; f != nil && f.until.After(now) {
			d = max(d, f.until.Sub(now))
		}
	}
	return d
}

// enter takes a slot to check a password, waiting in line while one
// frees; errBusy when the line is full.
func (l *loginLimiter) enter(r *http.Request) error {
	select {
	case l.slots <- struct{}{}:
		return nil
	default:
	}
	l.mu.Lock()
	if l.waiting >= maxLoginQueue {
		l.mu.Unlock()
		return errBusy
	}
	l.waiting++
	l.mu.Unlock()
	defer func() { l.mu.Lock(); l.waiting--; l.mu.Unlock() }()
	select {
	case l.slots <- struct{}{}:
		return nil
	case <-r.Context().Done():
		return r.Context().Err()
	}
}

func (l *loginLimiter) leave() { <-l.slots }

// record counts a try of the keys: a failure adds to each key's count
// (and, past freeLoginFailures, its wait), a success clears them.
func (l *loginLimiter) record(now time.Time, ok bool, keys ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ok {
		for _, k := range keys {
			delete(l.fails, k)
		}
		return
	}
	if len(l.fails) >= maxLoginKeys {
		for k, f := range l.fails {
			if !f.until.After(now) {
				delete(l.fails, k)
			}
		}
		if len(l.fails) >= maxLoginKeys {
			l.fails = map[string]*loginFailures{} // a flood of addresses: start again
		}
	}
	for _, k := range keys {
		f := l.fails[k]
		if f == nil {
			f = &loginFailures{}
			l.fails[k] = f
		}
		f.count++
		if over := f.count - freeLoginFailures; over >= 0 {
			wait := time.Duration(math.Min(float64(time.Second)*math.Pow(2, float64(over)), float64(maxLoginWait)))
			f.until = now.Add(wait)
		}
	}
}

// checkLogin checks the password pw of the user name within the limits
// above. wait above 0 means the try was refused without a check, until
// then (a line too long: a second); else ok says whether the password is
// right. (feedpipe_http_requests_total counts the 429s by route.)
func (s *Server) checkLogin(r *http.Request, name, pw string) (ok bool, wait time.Duration, err error) {
	now := s.cfg.Now()
	client := s.clientAddr(r)
	keys := []string{"addr " + client, "user " + name}
	if d := s.logins.wait(now, keys...); d > 0 {
		return false, d, nil
	}
	if err := s.logins.enter(r); err != nil {
		return false, time.Second, nil
	}
	err = s.cat.CheckPassword(r.Context(), name, pw)
	s.logins.leave()
	if err != nil && !errors.Is(err, catalog.ErrBadPassword) {
		return false, 0, err
	}
	s.logins.record(now, err == nil, keys...)
	if err != nil {
		s.cfg.Log.Info("login refused: wrong password", "user", clip(name), "client", client)
	}
	return err == nil, 0, nil
}
