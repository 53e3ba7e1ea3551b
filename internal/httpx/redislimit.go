package httpx

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
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
// A request in flight holds a lease in the host's sorted set, renewed
// while it runs, until it ends, or for at most LeaseLife once its process
// died. The limits are one
// Lua script (hostScript), atomic in Redis, one round trip per request.
// (github.com/go-redis/redis_rate keeps a rate, not requests in flight,
// and would need a second round trip and a second key for them, with a
// window between the two where a slot is taken and not used.)
type RedisHosts struct {
	conn     *redisconn.Conn
	perHost  int
	interval time.Duration
	life     time.Duration // LeaseLife
	clock    clock.Clock
	rand     io.Reader
	mu       sync.Mutex // guards rand
}

// LeaseLife is how long a request's slot at a host outlives a worker that
// died holding it: the lease is renewed every LeaseRenew while the request
// runs, and given back when it ends (tried again until it lapses, should
// Redis be away then).
const (
	LeaseLife  = 10 * time.Second
	LeaseRenew = 3 * time.Second
)

// NewRedisLimiter returns a Limiter with its limits kept in Redis through
// conn: perHost requests in flight to a host, rps a second (0: no rate
// limit), across every process that uses the same Redis and prefix.
func NewRedisLimiter(conn *redisconn.Conn, perHost int, rps float64, c clock.Clock) *Limiter {
	if c == nil {
		c = clock.Real{}
	}
	r := &RedisHosts{conn: conn, perHost: max(perHost, 1), life: LeaseLife, clock: c, rand: rand.Reader}
	if rps > 0 {
		r.interval = time.Duration(float64(time.Second) / rps)
	}
	return NewSharedLimiter(perHost, r, c)
}

// hostScript takes a slot at a host if its limits allow it now.
//
//	KEYS[1]  the time (ms, Redis's clock) before which no request may start
//	KEYS[2]  the leases of requests in flight: lease -> its end (ms)
//	ARGV     requests in flight allowed, the interval (ms), a lease's
//	         life (ms), the lease
//	returns  0 when the slot is taken, else the milliseconds to wait
var hostScript = redis.NewScript(`#!lua
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local nxt = tonumber(redis.call('GET', KEYS[1]) or '0')
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[1]) then
  return math.max(nxt - now, 50)
end
if now < nxt then return nxt - now end
local life = tonumber(ARGV[3])
redis.call('ZADD', KEYS[2], now + life, ARGV[4])
redis.call('PEXPIRE', KEYS[2], life)
local interval = tonumber(ARGV[2])
if interval > 0 then redis.call('SET', KEYS[1], now + interval, 'PX', interval) end
return 0
`)

// renewScript pushes a lease's end LeaseLife past now, by Redis's clock,
// if the lease is still there.
var renewScript = redis.NewScript(`#!lua flags=allow-oom
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if redis.call('ZSCORE', KEYS[1], ARGV[2]) then
  redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[1]), ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return 0
`)

// Take is Shared.Take.
func (r *RedisHosts) Take(ctx context.Context, host string) (release func(), wait time.Duration, err error) {
	var b [8]byte
	r.mu.Lock()
	_, err = io.ReadFull(r.rand, b[:])
	r.mu.Unlock()
	if err != nil {
		return nil, 0, err
	}
	lease := hex.EncodeToString(b[:])
	next, leases := r.conn.Key("host", host, "next"), r.conn.Key("host", host, "leases")
	ms, err := hostScript.Run(ctx, r.conn.Client, []string{next, leases}, r.perHost, r.interval.Milliseconds(), r.life.Milliseconds(), lease).Int64()
	if err != nil {
		if redisconn.Unavailable(err) {
			r.conn.Down("keeping per-host limits", err)
		} else {
			r.conn.Log.Error("per-host limits in redis", "error", err)
		}
		return nil, 0, err
	}
	r.conn.Up()
	if ms > 0 {
		return nil, time.Duration(ms) * time.Millisecond, nil
	}
	done := make(chan struct{})
	go r.renew(leases, lease, done)
	return func() { close(done) }, 0, nil
}

// renew keeps a lease while its request runs, and gives it back when it
// ends (done), trying again while Redis is away, until the lease would
// have lapsed anyway.
func (r *RedisHosts) renew(leases, lease string, done <-chan struct{}) {
	every := min(r.life/3, LeaseRenew)
	for {
		select {
		case <-done:
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
		case <-r.clock.After(every):
			ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
			renewScript.Run(ctx, r.conn.Client, []string{leases}, r.life.Milliseconds(), lease)
			cancel()
		}
	}
}
