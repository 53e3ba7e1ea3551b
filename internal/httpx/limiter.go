package httpx

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/feedpipe/feedpipe/internal/clock"
)

// Politeness defaults (docs/design.md#fetching): one request at a time, one a
// second, per host.
const (
	DefaultHostConcurrency = 1
	DefaultHostRPS         = 1.0
)

// HostKey is the key per-host limits are kept under: scheme, host and
// port, so that http and https, or two ports, of one name are apart
// (docs/design.md#fetching).
func HostKey(rawURL string) string {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil || u.Host == "" {
		return rawURL
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// Limiter keeps per-host politeness: at most PerHost requests in flight to
// a host, and request starts to it at least 1/RPS apart. One slow or
// rate-limited host holds back only its own requests. A Limiter with a
// Shared store (NewSharedLimiter) keeps these limits across every
// process that shares it, as the workers of a bus do.
type Limiter struct {
	perHost  int
	interval time.Duration
	clock    clock.Clock
	shared   Shared // nil: the limits are this process's

	mu      sync.Mutex
	hosts   map[string]*hostState
	release chan struct{} // closed and replaced when a slot frees
}

type hostState struct {
	inFlight int
	next     time.Time // earliest start of the next request
	taken    uint64    // slots taken so far
}

// NewLimiter returns a Limiter. perHost < 1 means 1; rps <= 0 means no
// rate limit; a nil clock is the wall clock.
func NewLimiter(perHost int, rps float64, c clock.Clock) *Limiter {
	l := &Limiter{perHost: max(perHost, 1), clock: c, hosts: map[string]*hostState{}, release: make(chan struct{})}
	if rps > 0 {
		l.interval = time.Duration(float64(time.Second) / rps)
	}
	if l.clock == nil {
		l.clock = clock.Real{}
	}
	return l
}

// Shared keeps per-host limits where several processes see them (a
// Redis: RedisHosts). Take takes a request slot at host for this process
// if the limits allow one now, with the functions that give it back and
// that give back the start it took (Slot.Unsent); else it says how long
// to wait before asking again. An error means the store could not be
// asked (the caller waits SharedRetry, and asks again: no request goes
// out unaccounted for).
type Shared interface {
	Take(ctx context.Context, host string) (release, unsent func(), wait time.Duration, err error)
}

// SharedRetry is how long a Limiter waits to ask its Shared store again
// after it failed to answer.
const SharedRetry = time.Second

// sharedTimeout bounds one question to a Shared store.
const sharedTimeout = 5 * time.Second

// NewSharedLimiter returns a Limiter whose limits are kept in s, across
// the processes that share it; this process's requests in flight are also
// counted here, so that one waits for its own to end without asking.
func NewSharedLimiter(perHost int, s Shared, c clock.Clock) *Limiter {
	l := NewLimiter(perHost, 0, c)
	l.shared = s
	return l
}

// TryAcquire takes a request slot for host if one is free now. If not, ok
// is false and wait says how long until the rate allows the next request
// (0 when the host is waiting for a request in flight to end instead).
func (l *Limiter) TryAcquire(host string) (release func(), wait time.Duration, ok bool) {
	s, wait, ok := l.TryTake(host)
	return s.Release, wait, ok
}

// Slot is a request slot at a host, taken by TryTake.
type Slot struct {
	// Release gives the slot back when its request has ended (it may be
	// called again).
	Release func()
	// Unsent says the request never went out: the host's address was
	// refused before any connection. It gives the host back the start the
	// slot took, so that its next request need not wait for the rate,
	// unless another slot was taken there since.
	Unsent func()
}

// TryTake is TryAcquire with the slot's Unsent.
func (l *Limiter) TryTake(host string) (s Slot, wait time.Duration, ok bool) {
	if l.shared != nil {
		return l.tryShared(host)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.hosts[host]
	if h == nil {
		h = &hostState{}
		l.hosts[host] = h
	}
	if h.inFlight >= l.perHost {
		return Slot{}, 0, false
	}
	now := l.clock.Now()
	if now.Before(h.next) {
		return Slot{}, h.next.Sub(now), false
	}
	h.inFlight++
	h.taken++
	h.next = now.Add(l.interval)
	taken := h.taken
	var once sync.Once
	return Slot{
		Release: func() { once.Do(func() { l.done(host) }) },
		// The start the slot replaced had passed (a slot is taken only
		// then): giving its own back frees the host now.
		Unsent: func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if h.taken == taken {
				h.next = time.Time{}
			}
		},
	}, 0, true
}

// Shared reports whether the limits are kept beyond this process
// (NewSharedLimiter).
func (l *Limiter) Shared() bool { return l.shared != nil }

// tryShared is TryTake with the limits kept in l.shared.
func (l *Limiter) tryShared(host string) (s Slot, wait time.Duration, ok bool) {
	l.mu.Lock()
	h := l.hosts[host]
	if h == nil {
		h = &hostState{}
		l.hosts[host] = h
	}
	full := h.inFlight >= l.perHost
	l.mu.Unlock()
	if full {
		return Slot{}, 0, false // one of ours ends first
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	rel, unsent, wait, err := l.shared.Take(ctx, host)
	switch {
	case err != nil:
		return Slot{}, SharedRetry, false
	case rel == nil:
		return Slot{}, max(wait, time.Millisecond), false
	}
	l.mu.Lock()
	h.inFlight++
	l.mu.Unlock()
	var once sync.Once
	return Slot{
		Release: func() {
			once.Do(func() {
				l.done(host)
				rel()
			})
		},
		Unsent: unsent,
	}, 0, true
}

func (l *Limiter) done(host string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hosts[host].inFlight--
	close(l.release)
	l.release = make(chan struct{})
}

// Acquire waits until a slot for host is free, for callers with one
// request to make.
func (l *Limiter) Acquire(ctx context.Context, host string) (release func(), err error) {
	s, err := l.Take(ctx, host)
	return s.Release, err
}

// Take is Acquire with the slot's Unsent.
func (l *Limiter) Take(ctx context.Context, host string) (Slot, error) {
	for {
		l.mu.Lock()
		freed := l.release
		l.mu.Unlock()
		s, wait, ok := l.TryTake(host)
		if ok {
			return s, nil
		}
		var timer <-chan time.Time
		if wait > 0 {
			timer = l.clock.After(wait)
		}
		select {
		case <-ctx.Done():
			return Slot{}, ctx.Err()
		case <-freed:
		case <-timer:
		}
	}
}
