package httpx

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedpipe/feedpipe/internal/bus/redisconn"
	"github.com/feedpipe/feedpipe/internal/clock"
)

// RedisHosts keeps per-host politeness in Redis, for every process that
// shares it (the workers of a bus: docs/bus.md, "Politeness"): at most
// perHost requests in flight to a host, and their starts 1/rps apart, by
// Redis's clock, so that the machines' clocks need not agree.
//
// A request holds a lease in the host's sorted set from the moment its
// slot is granted, renewed while it runs, until it ends, or for at most
// LeaseLife past its start once its process died. The limits are one Lua
// script (hostScript), atomic in Redis, which reserves the next start the
// rate allows rather than saying "ask again later": a request costs one
// round trip, which also gives back the host's lease that ended before it
// (redis_rate, github.com/go-redis/redis_rate, keeps a rate, not requests
// in flight, and would need a second round trip and key for them).
type RedisHosts struct {
	conn     *redisconn.Conn
	perHost  int
	interval time.Duration
	life     time.Duration // LeaseLife
	clock    clock.Clock
	rand     io.Reader
	mu       sync.Mutex          // guards rand and ended
	ended    map[string][]string // host -> leases whose request ended, not yet given back
}

// LeaseLife is how long a request's slot at a host outlives a worker that
// died holding it: the lease is renewed every LeaseRenew while the request
// runs, and given back when it ends (tried again until it lapses, should
// Redis be away then).
const (
	LeaseLife  = 10 * time.Second
	LeaseRenew = 3 * time.Second
)

// giveBackAfter is how long a lease whose request ended waits to be given
// back with the host's next request (in the same script run) before it is
// given back on its own.
const giveBackAfter = 50 * time.Millisecond

// NewRedisLimiter returns a Limiter with its limits kept in Redis through
// conn: perHost requests in flight to a host, rps a second (0: no rate
// limit), across every process that uses the same Redis and prefix.
func NewRedisLimiter(conn *redisconn.Conn, perHost int, rps float64, c clock.Clock) *Limiter {
	if c == nil {
		c = clock.Real{}
	}
	r := &RedisHosts{conn: conn, perHost: max(perHost, 1), life: LeaseLife, clock: c, rand: rand.Reader, ended: map[string][]string{}}
	if rps > 0 {
		r.interval = time.Duration(float64(time.Second) / rps)
	}
	return NewSharedLimiter(perHost, r, c)
}

// hostScript gives back the leases of requests that ended, then reserves
// the next start at a host that its limits allow: now, or when the rate
// allows the next, if fewer than the requests in flight allowed are
// running or reserved.
//
//	KEYS[1]  the time (ms, Redis's clock) before which no request may start
//	KEYS[2]  the leases of requests in flight or reserved: lease -> its
//	         end (ms)
//	ARGV     requests in flight allowed, the interval (ms), a lease's
//	         life (ms), the lease, then leases to give back
//	returns  {1, ms}: the slot is the lease's, from ms from now (0: now);
//	         {0, ms}: none is free, ask again in ms
var hostScript = redis.NewScript(`#!lua
for i = 5, #ARGV do redis.call('ZREM', KEYS[2], ARGV[i]) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local nxt = tonumber(redis.call('GET', KEYS[1]) or '0')
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[1]) then
  return {0, math.max(nxt - now, 50)}
end
local start = math.max(now, nxt)
local life = tonumber(ARGV[3])
redis.call('ZADD', KEYS[2], start + life, ARGV[4])
redis.call('PEXPIRE', KEYS[2], start - now + life)
local interval = tonumber(ARGV[2])
if interval > 0 then redis.call('SET', KEYS[1], start + interval, 'PX', start - now + interval) end
return {1, start - now}
`)

// renewScript pushes a lease's end LeaseLife past now, by Redis's clock,
// if the lease is still there, and never back (GT: a slot reserved ahead
// ends LeaseLife past its start).
var renewScript = redis.NewScript(`#!lua flags=allow-oom
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if redis.call('ZADD', KEYS[1], 'XX', 'GT', 'CH', now + tonumber(ARGV[1]), ARGV[2]) == 1 then
  if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
end
return 0
`)

// Take is Shared.Take.
func (r *RedisHosts) Take(ctx context.Context, host string) (release func(), wait time.Duration, err error) {
	var b [8]byte
	r.mu.Lock()
	_, err = io.ReadFull(r.rand, b[:])
	ended := r.ended[host]
	delete(r.ended, host)
	r.mu.Unlock()
	if err != nil {
		r.giveBack(host, ended)
		return nil, 0, err
	}
	lease := hex.EncodeToString(b[:])
	next, leases := r.conn.Key("host", host, "next"), r.conn.Key("host", host, "leases")
	args := make([]any, 0, 4+len(ended))
	args = append(args, r.perHost, r.interval.Milliseconds(), r.life.Milliseconds(), lease)
	for _, e := range ended {
		args = append(args, e)
	}
	res, err := hostScript.Run(ctx, r.conn.Client, []string{next, leases}, args...).Int64Slice()
	if err == nil && len(res) != 2 {
		err = fmt.Errorf("per-host limits: unexpected reply %v", res)
	}
	if err != nil {
		if redisconn.Unavailable(err) {
			r.conn.Down("keeping per-host limits", err)
		} else {
			r.conn.Log.Error("per-host limits in redis", "error", err)
		}
		r.giveBack(host, ended)
		return nil, 0, err
	}
	r.conn.Up()
	ms := time.Duration(res[1]) * time.Millisecond
	if res[0] == 0 {
		return nil, ms, nil
	}
	done := make(chan struct{})
	go r.renew(host, leases, lease, done)
	var once sync.Once
	return func() {
		once.Do(func() {
			// Noted before the caller can ask for the host's next slot,
			// so that the same script run gives it back.
			r.mu.Lock()
			r.ended[host] = append(r.ended[host], lease)
			r.mu.Unlock()
			close(done)
		})
	}, ms, nil
}

// renew keeps a lease while its request waits for its start and runs, and
// gives it back when it ends (done): with the host's next request if one
// comes within giveBackAfter, else on its own.
func (r *RedisHosts) renew(host, leases, lease string, done <-chan struct{}) {
	every := min(r.life/3, LeaseRenew)
	for {
		select {
		case <-done:
			<-r.clock.After(giveBackAfter)
			r.mu.Lock()
			left := r.ended[host]
			i := slices.Index(left, lease)
			if i >= 0 {
				left = slices.Delete(left, i, i+1)
				if len(left) == 0 {
					delete(r.ended, host)
				} else {
					r.ended[host] = left
				}
			}
			r.mu.Unlock()
			if i >= 0 { // no request to the host took it along
				r.zrem(leases, lease)
			}
			return
		case <-r.clock.After(every):
			ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
			renewScript.Run(ctx, r.conn.Client, []string{leases}, r.life.Milliseconds(), lease)
			cancel()
		}
	}
}

// giveBack gives back leases that a failed script run was to take along.
func (r *RedisHosts) giveBack(host string, leases []string) {
	key := r.conn.Key("host", host, "leases")
	for _, l := range leases {
		go r.zrem(key, l)
	}
}

// zrem removes a lease, trying again while Redis is away, until the lease
// would have lapsed anyway.
func (r *RedisHosts) zrem(leases, lease string) {
	deadline := r.clock.Now().Add(r.life)
	for wait := 100 * time.Millisecond; ; wait = min(wait*2, time.Second) {
		ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
		err := r.conn.Client.ZRem(ctx, leases, lease).Err()
		cancel()
		if err == nil || !redisconn.Unavailable(err) || r.clock.Now().Add(wait).After(deadline) {
			return
		}
		<-r.clock.After(wait)
	}
}
