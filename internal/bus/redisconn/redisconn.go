// Package redisconn connects feedpipe to Redis: a client from a URL, the
// keys of one deployment (under one hash tag), and the waiting out of a
// Redis that is down, restarting or full, with backoff, said once.
package redisconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedpipe/feedpipe/internal/clock"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// DefaultURL is the Redis feed-bus and the Redis limiter use unless told.
const DefaultURL = "redis://127.0.0.1:6379/0"

// DefaultPrefix names a deployment's keys unless told.
const DefaultPrefix = "feedpipe"

// Backoff bounds: the first wait after a failure, and the longest.
const (
	MinBackoff = 100 * time.Millisecond
	MaxBackoff = 5 * time.Second
)

// Conn is one deployment's connection to Redis.
type Conn struct {
	Client redis.UniversalClient
	// Prefix names the deployment: every key is "{Prefix}:...", so that
	// several deployments share one Redis, and all of one deployment's
	// keys are in one hash slot of a Redis Cluster (the hash tag), which
	// a transaction over two streams needs.
	Prefix string
	Addr   string // for messages
	Log    *slog.Logger
	Clock  clock.Clock

	mu        sync.Mutex
	downSince time.Time // zero while Redis answers
}

// quiet is go-redis's logger: silent. Its lines (a pool that cannot dial,
// again and again) would repeat what Conn says once.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

var quietOnce sync.Once

// Dial returns a Conn for the Redis at rawURL (redis://, rediss:// or
// unix://; a redis:// URL with addr= parameters names the nodes of a
// Redis Cluster, as go-redis reads it). It does not connect yet.
func Dial(rawURL, prefix string, log *slog.Logger, clk clock.Clock) (*Conn, error) {
	quietOnce.Do(func() { redis.SetLogger(quiet{}) })
	if !ndjson.IsBusName(prefix) {
		return nil, fmt.Errorf("redis: prefix %q: it must be 1 to 64 letters, digits, '.', '_' or '-'", prefix)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if clk == nil {
		clk = clock.Real{}
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("redis: %q is not a URL: %w", rawURL, err)
	}
	c := &Conn{Prefix: prefix, Log: log, Clock: clk, Addr: redact(u)}
	if u.Query().Has("addr") {
		opt, err := redis.ParseClusterURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("redis: %s: %w", c.Addr, err)
		}
		opt.MaxRetries = -1 // Do retries, knowing what is safe to repeat
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = 3*time.Second, 10*time.Second, 10*time.Second
		c.Client = redis.NewClusterClient(opt)
		return c, nil
	}
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("redis: %s: %w", c.Addr, err)
	}
	opt.MaxRetries = -1
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = 3*time.Second, 10*time.Second, 10*time.Second
	c.Client = redis.NewClient(opt)
	return c, nil
}

// redact is the URL without its password, for messages.
func redact(u *url.URL) string {
	v := *u
	if _, ok := v.User.Password(); ok {
		v.User = url.UserPassword(v.User.Username(), "xxxxx")
	}
	return v.String()
}

// Close closes the client.
func (c *Conn) Close() error { return c.Client.Close() }

// Key is the deployment's key made of parts joined by ':'. A stream's key
// is Key(name), whose one part has no ':' (ndjson.IsBusName), so no other
// key (all of two parts or more) can be a stream's.
func (c *Conn) Key(parts ...string) string {
	return "{" + c.Prefix + "}:" + strings.Join(parts, ":")
}

// Do runs fn until it succeeds or fails for another reason than Redis
// being unavailable (down, restarting, loading its data, out of memory),
// or ctx ends. While it is unavailable, fn is tried again after waits
// that double from MinBackoff to MaxBackoff; the first failure is logged
// once, with what was being done, and the recovery once.
//
// fn must be safe to run again after a failure in which Redis may have
// done it (a reply lost with the connection): feedpipe's writes are
// scripts that check first (the acknowledgement they make, a run's key).
func (c *Conn) Do(ctx context.Context, what string, fn func(context.Context) error) error {
	delay := MinBackoff
	for {
		err := fn(ctx)
		if err == nil || !Unavailable(err) {
			c.Up()
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		c.Down(what, err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.Clock.After(delay):
		}
		delay = min(delay*2, MaxBackoff)
	}
}

// Down records a failure of what for Redis being unavailable, and says so
// once per outage.
func (c *Conn) Down(what string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.downSince.IsZero() {
		return
	}
	c.downSince = c.Clock.Now()
	c.Log.Warn("redis is unavailable: waiting for it, retrying with backoff (nothing is lost meanwhile)",
		"redis", c.Addr, "doing", what, "error", err)
}

// Up records that Redis answered, and says so once after an outage.
func (c *Conn) Up() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.downSince.IsZero() {
		return
	}
	c.Log.Warn("redis is back", "redis", c.Addr, "down_for", c.Clock.Now().Sub(c.downSince).Round(time.Millisecond).String())
	c.downSince = time.Time{}
}

// IsDown reports whether the last call found Redis unavailable.
func (c *Conn) IsDown() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.downSince.IsZero()
}

// Unavailable reports whether err means that Redis could not do the
// command now but may later: no connection, a connection lost, a server
// loading its data after a restart, out of memory (maxmemory reached with
// the noeviction policy), a replica, a cluster in flux. Any other error
// (a wrong type, a script error) is not worth waiting for.
func Unavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrPoolExhausted) {
		return true
	}
	for _, prefix := range []string{"LOADING ", "OOM ", "BUSY ", "READONLY ", "MASTERDOWN ", "TRYAGAIN ", "CLUSTERDOWN ", "NOREPLICAS ", "MISCONF "} {
		if redis.HasErrorPrefix(err, prefix) {
			return true
		}
	}
	// Messages of a connection cut under us, as the standard library
	// words them.
	msg := err.Error()
	return strings.Contains(msg, "use of closed network connection") || strings.Contains(msg, "connection reset") ||
		strings.Contains(msg, "broken pipe") || strings.Contains(msg, "i/o timeout")
}
