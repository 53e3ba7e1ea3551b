package httpx

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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
// A request in flight holds a lease in the host's sorted set, renewed
// while it runs, until it ends, or for at most LeaseLife once its process
// died. The limits are one Lua script (hostScript), atomic in Redis, which
// also gives back the leases of this process's requests that ended since
// its last run, at any host: a request costs one round trip when its host
// is free, not a second one to give its slot back (redis_rate,
// github.com/go-redis/redis_rate, keeps a rate, not requests in flight,
// and would need a second round trip and key for them).
//
// The script does not reserve a later start for a caller told to wait:
// the fetcher asks for a host only when it can start a request now, and a
// slot reserved ahead would be held, against the other workers, while
// this one's fetches at a time are all busy (with two workers, a cold
// cycle took a third longer so).
type RedisHosts struct {
	conn     *redisconn.Conn
	perHost  int
	interval time.Duration
	life     time.Duration // LeaseLife
	clock    clock.Clock
	rand     io.Reader
	mu       sync.Mutex        // guards rand, ended and running
	ended    map[string]string // lease -> its host's leases key: requests that ended, not yet given back
	running  int               // leases taken and not given up: requests in flight
}

// LeaseLife is how long a request's slot at a host outlives a worker that
// died holding it: the lease is renewed every LeaseRenew while the request
// runs, and given back when it ends (tried again until it lapses, should
// Redis be away then).
const (
	LeaseLife  = 10 * time.Second
	LeaseRenew = 3 * time.Second
)

// giveBackAfter is how long a lease whose request ended, while others of
// this process are in flight, waits to be given back by the next script
// run (the next request to any host; with a few fetches at a time, one
// comes within tens of milliseconds) before it is given back on its own.
// Another process sees the slot free that much later: at the default rate
// its next start is further away anyway. With none in flight, every lease
// that ended goes back at once.
const giveBackAfter = 100 * time.Millisecond

// NewRedisLimiter returns a Limiter with its limits kept in Redis through
// conn: perHost requests in flight to a host, rps a second (0: no rate
// limit), across every process that uses the same Redis and prefix.
func NewRedisLimiter(conn *redisconn.Conn, perHost int, rps float64, c clock.Clock) *Limiter {
	if c == nil {
		c = clock.Real{}
	}
	r := &RedisHosts{conn: conn, perHost: max(perHost, 1), life: LeaseLife, clock: c, rand: rand.Reader, ended: map[string]string{}}
	if rps > 0 {
		r.interval = time.Duration(float64(time.Second) / rps)
	}
	return NewSharedLimiter(perHost, r, c)
}

// hostScript gives back the leases of requests that ended (at any host),
// then takes a slot at a host if its limits allow one now.
//
//	KEYS[1]  the time (ms, Redis's clock) before which no request may start
//	KEYS[2]  the leases of requests in flight: lease -> its end (ms);
//	         KEYS[3..] other hosts' leases
//	ARGV     requests in flight allowed, the interval (ms), a lease's
//	         life (ms), the lease, then pairs (index into KEYS, lease) of
//	         leases to give back
//	returns  when the slot is the lease's, the host's next start it set
//	         (ms; 0: no rate); else the milliseconds to wait before asking
//	         again, negated
var hostScript = redis.NewScript(`#!lua
for i = 5, #ARGV - 1, 2 do redis.call('ZREM', KEYS[tonumber(ARGV[i])], ARGV[i + 1]) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local nxt = tonumber(redis.call('GET', KEYS[1]) or '0')
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[1]) then
  return -math.max(nxt - now, 50)
end
if now < nxt then return -(nxt - now) end
local life = tonumber(ARGV[3])
redis.call('ZADD', KEYS[2], now + life, ARGV[4])
redis.call('PEXPIRE', KEYS[2], life)
local interval = tonumber(ARGV[2])
if interval == 0 then return 0 end
redis.call('SET', KEYS[1], now + interval, 'PX', interval)
return now + interval
`)

// unsentScript gives a host back the start a slot took (Slot.Unsent),
// unless another slot was taken there since: it drops the host's next
// start if it is still the one the slot set. The start it replaced had
// passed (hostScript takes a slot only then), so none is put back.
//
//	KEYS[1]  the host's next start (hostScript's KEYS[1])
//	ARGV[1]  the start the slot set (ms)
var unsentScript = redis.NewScript(`#!lua
if tonumber(redis.call('GET', KEYS[1]) or '0') ~= tonumber(ARGV[1]) then return 0 end
redis.call('DEL', KEYS[1])
return 1
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
func (r *RedisHosts) Take(ctx context.Context, host string) (release, unsent func(), wait time.Duration, err error) {
	var b [8]byte
	r.mu.Lock()
	_, err = io.ReadFull(r.rand, b[:])
	var ended map[string]string // taken along by this run
	if len(r.ended) > 0 {
		ended, r.ended = r.ended, map[string]string{}
	}
	r.mu.Unlock()
	if err != nil {
		r.giveBack(ended)
		return nil, nil, 0, err
	}
	lease := hex.EncodeToString(b[:])
	next, leases := r.conn.Key("host", host, "next"), r.conn.Key("host", host, "leases")
	keys := []string{next, leases}
	args := make([]any, 0, 4+2*len(ended))
	args = append(args, r.perHost, r.interval.Milliseconds(), r.life.Milliseconds(), lease)
	for l, key := range ended {
		i := slices.Index(keys, key)
		if i < 0 {
			keys, i = append(keys, key), len(keys)
		}
		args = append(args, i+1, l)
	}
	set, err := hostScript.Run(ctx, r.conn.Client, keys, args...).Int64()
	if err != nil {
		r.failed(err)
		r.giveBack(ended)
		return nil, nil, 0, err
	}
	r.conn.Up()
	if set < 0 {
		return nil, nil, time.Duration(-set) * time.Millisecond, nil
	}
	done := make(chan struct{})
	r.mu.Lock()
	r.running++
	r.mu.Unlock()
	go r.renew(leases, lease, done)
	var once, unsentOnce sync.Once
	unsent = func() {
		unsentOnce.Do(func() {
			if set == 0 {
				return // no rate: no start to give back
			}
			ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
			defer cancel()
			// Should Redis not answer, the start stays: the host's next
			// request waits for the rate, as if this one had gone out.
			if err := unsentScript.Run(ctx, r.conn.Client, []string{next}, set).Err(); err != nil {
				r.failed(err)
			}
		})
	}
	return func() {
		once.Do(func() {
			// Noted before the caller can ask for the host's next slot,
			// so that the same script run gives it back.
			r.mu.Lock()
			r.ended[lease] = leases
			r.running--
			var all map[string]string
			if r.running == 0 {
				// Nothing in flight: no script run may come (the fetcher
				// may be about to exit, and a lease not given back would
				// hold its host from the other workers until it lapsed):
				// every lease that ended goes back now.
				all, r.ended = r.ended, map[string]string{}
			}
			r.mu.Unlock()
			close(done)
			if all != nil {
				r.giveBackNow(all)
			}
		})
	}, unsent, 0, nil
}

// failed reports a script run that failed.
func (r *RedisHosts) failed(err error) {
	if redisconn.Unavailable(err) {
		r.conn.Down("keeping per-host limits", err)
	} else {
		r.conn.Log.Error("per-host limits in redis", "error", err)
	}
}

// renew keeps a lease while its request runs, and gives it back when it
// ends (done): with the next request if one comes within giveBackAfter,
// else on its own.
func (r *RedisHosts) renew(leases, lease string, done <-chan struct{}) {
	every := min(r.life/3, LeaseRenew)
	for {
		select {
		case <-done:
			<-r.clock.After(giveBackAfter)
			r.mu.Lock()
			_, left := r.ended[lease]
			delete(r.ended, lease)
			r.mu.Unlock()
			if left { // no script run took it along
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

// giveBackNow gives back leases in one round trip, before it returns; those
// it could not are given back as giveBack does.
func (r *RedisHosts) giveBackNow(ended map[string]string) {
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	_, err := r.conn.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for lease, key := range ended {
			p.ZRem(ctx, key, lease)
		}
		return nil
	})
	if err != nil {
		r.giveBack(ended)
	}
}

// giveBack gives back the leases a failed script run was to take along.
func (r *RedisHosts) giveBack(ended map[string]string) {
	for lease, key := range ended {
		go r.zrem(key, lease)
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
