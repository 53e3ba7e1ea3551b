// Package bus is feed-bus: it carries the pipeline's NDJSON records
// between machines over Redis Streams, so that a pipe between two stages
// can be a stream between two machines (docs/bus.md).
package bus

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedpipe/feedpipe/internal/bus/redisconn"
	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/clock"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Commands of feed-bus (Config.Command).
const (
	CmdPut       = "put"
	CmdTake      = "take"
	CmdStatus    = "status"
	CmdHeartbeat = "heartbeat"
	CmdWait      = "wait"
)

// DeadStream is the stream take moves the records it refuses to, with the
// reason, so that they can be looked at (XRANGE) rather than lost.
const DeadStream = "dead"

// Config is everything feed-bus touches. Nil fields take the documented
// defaults.
type Config struct {
	In  io.Reader // put: the records to append
	Out io.Writer // take: the records taken (flushed after each batch); status: its report
	// CloseOut, if set, ends the output: take calls it when it stops
	// taking, so that the stages after it see the end of their input and
	// hand on what they hold, while it stays to keep its records its own
	// until they are acknowledged.
	CloseOut func() error
	Log      *slog.Logger
	Conn     *redisconn.Conn // the deployment's Redis
	// Store is the store payloads come from (put, on a worker: its
	// scratch store) or go to (take --store-fetches, on the coordinator),
	// and whose events log put --events-log puts; nil for none.
	Store   *storedir.Store
	Catalog *catalog.Catalog // Store's catalog; nil: opened when needed
	Clock   clock.Clock      // default the wall clock
	Rand    io.Reader        // the token of a take's consumer lock; default crypto/rand
	// Node names this machine in heartbeats (default: the host name), and
	// Role says what it is (coordinator, worker, ...; "" for none).
	Node, Role string
	Version    string // feedpipe's version, shown in heartbeats

	Command string // CmdPut, CmdTake, CmdStatus, CmdHeartbeat or CmdWait
	Stream  string // put, take, wait: the stream, without the prefix

	Put       PutOptions
	Take      TakeOptions // take, and wait (Group, Consumer, Takeover, From)
	Status    StatusOptions
	Heartbeat HeartbeatOptions
}

func (cfg *Config) defaults() error {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	if cfg.Node == "" {
		h, err := os.Hostname()
		if err != nil || !ndjson.IsBusName(h) {
			h = "node"
		}
		cfg.Node = h
	}
	if cfg.Conn == nil {
		return errors.New("bus: no Redis connection")
	}
	if cfg.Command == CmdPut || cfg.Command == CmdTake || cfg.Command == CmdWait {
		if !ndjson.IsBusName(cfg.Stream) {
			return fmt.Errorf("bus: stream %q: a name is 1 to 64 letters, digits, '.', '_' or '-'", cfg.Stream)
		}
	}
	return nil
}

// Run runs cfg.Command.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.defaults(); err != nil {
		return err
	}
	b := &bus{cfg: &cfg, conn: cfg.Conn, log: cfg.Log}
	switch cfg.Command {
	case CmdPut:
		return b.put(ctx)
	case CmdTake:
		return b.take(ctx)
	case CmdStatus:
		return b.status(ctx)
	case CmdHeartbeat:
		return b.heartbeatOnce(ctx)
	case CmdWait:
		return b.wait(ctx)
	}
	return fmt.Errorf("bus: unknown command %q", cfg.Command)
}

// bus is one run's state.
type bus struct {
	cfg  *Config
	conn *redisconn.Conn
	log  *slog.Logger
}

// key is the Redis key of stream name.
func (b *bus) key(name string) string { return b.conn.Key(name) }

// call is one script run of a batch, and its reply.
type call struct {
	script *redis.Script
	keys   []string
	args   []any
	res    any
}

// exec runs calls in order, each atomic in Redis, and all of them in one
// MULTI/EXEC transaction, each with its script's source (EVAL: a Redis
// restarted with an empty script cache runs them all, and a Redis Cluster
// routes them by their keys, all in the deployment's slot). A transaction
// that fails for Redis being unavailable (down, loading, full: a script
// that would grow Redis is refused before it is queued, and the whole
// transaction with it) is tried again once Redis answers (redisconn.Do).
// One that ran and whose reply was lost is run again: the scripts make
// that safe (acknowledgements first, a run's key, the events log's
// cursor).
func (b *bus) exec(ctx context.Context, what string, calls []*call) error {
	return b.conn.Do(ctx, what, func(ctx context.Context) error {
		pipe := b.conn.Client.TxPipeline()
		cmds := make([]*redis.Cmd, len(calls))
		for i, c := range calls {
			cmds[i] = c.script.Eval(ctx, pipe, c.keys, c.args...)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			for _, cmd := range cmds {
				if cmd.Err() != nil && !redis.HasErrorPrefix(cmd.Err(), "EXECABORT") {
					return cmd.Err()
				}
			}
			return err
		}
		for i, cmd := range cmds {
			calls[i].res = cmd.Val()
		}
		return nil
	})
}

// ints reads a script's reply as a list of integers and strings.
func replyList(v any) []any {
	l, _ := v.([]any)
	return l
}

func replyInt(v any) int64 {
	n, _ := v.(int64)
	return n
}

func replyString(v any) string {
	s, _ := v.(string)
	return s
}

// sleep waits d on the clock, or less if ctx ends.
func (b *bus) sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-b.cfg.Clock.After(d):
	}
}
