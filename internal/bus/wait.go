package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// wait is feed-bus wait: it returns once the group has a record for this
// consumer to take (one it holds from a take that was killed, one not yet
// read, or another consumer's idle past the takeover time), so that a
// worker starts its stages when there is work, not a pipeline of idle
// processes each cycle (docs/bus.md, "How fast"). Another worker may take
// the record first: the take that follows then waits as it would have.
// It asks Redis once, then blocks on the stream (XREAD BLOCK) past the
// group's last delivered entry, asking again at least every
// HeartbeatEvery, with the heartbeat of the take it stands in for.
func (b *bus) wait(ctx context.Context) error {
	o := b.cfg.Take
	o.defaults(b.cfg.Node)
	switch {
	case !ndjson.IsBusName(o.Group):
		return fmt.Errorf("bus: wait: group %q: a name is 1 to 64 letters, digits, '.', '_' or '-'", o.Group)
	case !ndjson.IsBusName(o.Consumer):
		return fmt.Errorf("bus: wait: consumer %q: a name is 1 to 64 letters, digits, '.', '_' or '-'", o.Consumer)
	}
	key := b.key(b.cfg.Stream)
	what := fmt.Sprintf("take %s (%s)", b.cfg.Stream, o.Group)
	var beat time.Time
	for ctx.Err() == nil {
		if now := b.cfg.Clock.Now(); now.Sub(beat) >= HeartbeatEvery {
			b.heartbeat(ctx, what, DefaultHeartbeatTTL, nil)
			beat = now
		}
		var (
			ready bool
			after string
		)
		err := b.conn.Do(ctx, "looking for records in "+b.cfg.Stream, func(ctx context.Context) error {
			var err error
			ready, after, err = b.workFor(ctx, key, o)
			return err
		})
		if err != nil || ready {
			return err
		}
		err = b.conn.Do(ctx, "waiting for records in "+b.cfg.Stream, func(ctx context.Context) error {
			err := b.conn.Client.XRead(ctx, &redis.XReadArgs{Streams: []string{key, after}, Count: 1, Block: HeartbeatEvery}).Err()
			if errors.Is(err, redis.Nil) {
				return nil
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil // a signal: the caller starts no take
}

// workFor reports whether the group has a record for consumer o.Consumer,
// and else the id past which a new one would be.
func (b *bus) workFor(ctx context.Context, key string, o TakeOptions) (bool, string, error) {
	rdb := b.conn.Client
	groups, err := rdb.XInfoGroups(ctx, key).Result()
	if err != nil {
		if strings.Contains(err.Error(), "no such key") {
			return false, "0-0", nil // no stream yet: XREAD waits for its first entry
		}
		return false, "", err
	}
	for _, g := range groups {
		if g.Name != o.Group {
			continue
		}
		if g.Lag > 0 {
			return true, "", nil
		}
		if g.Lag < 0 { // Redis cannot tell: is there an entry past the last delivered?
			next, err := rdb.XRangeN(ctx, key, "("+g.LastDeliveredID, "+", 1).Result()
			if err != nil || len(next) > 0 {
				return err == nil, "", err
			}
		}
		if g.Pending > 0 {
			p, err := rdb.XPending(ctx, key, o.Group).Result()
			if err != nil {
				return false, "", err
			}
			if p.Consumers[o.Consumer] > 0 {
				return true, "", nil
			}
			idle, err := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: key, Group: o.Group, Idle: o.Takeover, Start: "-", End: "+", Count: 1}).Result()
			if err != nil || len(idle) > 0 {
				return err == nil, "", err
			}
		}
		return false, g.LastDeliveredID, nil
	}
	// No group yet: take makes it, from the stream's start (--from 0) or
	// its end.
	if o.From == "$" {
		return false, "$", nil
	}
	n, err := rdb.XLen(ctx, key).Result()
	return n > 0, "0-0", err
}
