package bus

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// The coordinator's events reach the events stream from the store's
// events log, not from feed-store's stdout (put --events-log): a cursor
// in Redis says how far the log was put, and moves in the transaction that
// puts the lines past it. An event feed-store committed is thus put once,
// even when the pipeline is killed between feed-store's write and put's
// transaction, or feed-store announces on its next start what an
// interrupted run stored (it writes those to the log too).

// logPut is one transaction's worth of the log: the acknowledgements of
// the bus_ack records that called for it.
type logPut struct {
	acks []ndjson.BusRef
}

// cursorKey is the key of the log's cursor for the stream.
func (p *putter) cursorKey() string { return p.b.conn.Key("cursor", p.stream) }

// startLog reads the cursor; the first put ever starts it at the end of
// the log as it is now, so that history already in the store is not put.
func (p *putter) startLog(ctx context.Context) error {
	st := p.b.cfg.Store
	return p.b.conn.Do(ctx, "reading the events log's cursor", func(ctx context.Context) error {
		cur, err := p.b.conn.Client.Get(ctx, p.cursorKey()).Result()
		if err == nil {
			if _, _, err := parseCursor(cur); err != nil {
				return fmt.Errorf("bus: the events log's cursor %s: %w", p.cursorKey(), err)
			}
			p.cursor = cur
			return nil
		}
		if !errors.Is(err, redis.Nil) {
			return err
		}
		file, off := storedir.DayFile(storedir.DirEvents, p.b.cfg.Clock.Now()), int64(0)
		files, err := st.DayFiles(storedir.DirEvents)
		if err != nil {
			return err
		}
		if len(files) > 0 {
			if file, off, err = st.ReadLogsSince(storedir.DirEvents, files[len(files)-1], 0, func(string, ndjson.Line) error { return nil }); err != nil {
				return err
			}
		}
		start := file + " " + strconv.FormatInt(off, 10)
		if err := p.b.conn.Client.SetNX(ctx, p.cursorKey(), start, 0).Err(); err != nil {
			return err
		}
		p.cursor, err = p.b.conn.Client.Get(ctx, p.cursorKey()).Result()
		p.b.log.Info("putting the store's events log from its end as it is now (the first put of this deployment)", "cursor", p.cursor)
		return err
	})
}

func parseCursor(s string) (file string, off int64, err error) {
	file, o, ok := strings.Cut(s, " ")
	if ok {
		off, err = strconv.ParseInt(o, 10, 64)
	}
	if !ok || err != nil || off < 0 || !ndjson.IsDayFile(file, storedir.DirEvents) {
		return "", 0, fmt.Errorf("%q is not \"events/YYYY-MM-DD.ndjson OFFSET\"", s)
	}
	return file, off, nil
}

// logCall reads the log past the cursor and makes the transactions that
// put it, at most maxLogLines a transaction, the last with lp's
// acknowledgements (one with none to put but acknowledgements to make).
func (p *putter) logCall(lp *logPut) ([]*call, error) {
	file, off, err := parseCursor(p.cursor)
	if err != nil {
		return nil, err
	}
	type chunk struct {
		from, to string
		lines    []any
	}
	var (
		chunks []chunk
		cur    = chunk{from: p.cursor, to: p.cursor}
	)
	_, _, err = p.b.cfg.Store.FollowLogs(storedir.DirEvents, file, off, func(key string, _, end int64, l ndjson.Line) error {
		cur.lines = append(cur.lines, string(l.Raw))
		cur.to = key + " " + strconv.FormatInt(end, 10)
		if len(cur.lines) == maxLogLines {
			chunks = append(chunks, cur)
			cur = chunk{from: cur.to, to: cur.to}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bus: read the events log: %w", err)
	}
	if len(cur.lines) > 0 || len(lp.acks) > 0 || len(chunks) == 0 {
		chunks = append(chunks, cur)
	}
	var calls []*call
	for i, c := range chunks {
		keys := []string{p.key, p.cursorKey()}
		args := []any{c.from, c.to}
		var acks []any
		if i == len(chunks)-1 {
			keys, acks = p.ackArgs(keys, lp.acks)
		}
		args = append(args, len(acks)/3)
		args = append(args, acks...)
		args = append(args, len(c.lines))
		args = append(args, c.lines...)
		if len(c.lines) == 0 && len(acks) == 0 {
			continue
		}
		calls = append(calls, &call{script: putLogScript, keys: keys, args: args})
		p.cursor = c.to
	}
	return calls, nil
}

// logDone reads a log transaction's reply. A cursor found elsewhere than
// where this put read from means another put moved it (or this one did,
// and lost the reply): the put goes on from there.
func (p *putter) logDone(c *call, res []any) {
	to := c.args[1].(string)
	if replyInt(res[0]) == 1 {
		p.counts.events += int(replyInt(res[1]))
		return
	}
	if found := replyString(res[1]); found != to {
		p.b.log.Error("the events log's cursor moved under this put: is another feed-bus put --events-log running for this stream?",
			"stream", p.stream, "cursor", found, "expected", c.args[0])
		p.cursor = found
	}
}
