package bus

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// refused is a stream entry take will not hand out, and why.
type refused struct {
	msg    redis.XMessage
	reason string
}

// handle writes a batch of records read from the stream. again says they
// were delivered before (to this consumer, or to one that died): those
// delivered more than MaxDeliveries times are refused.
func (t *taker) handle(ctx context.Context, msgs []redis.XMessage, _ any, again bool) error {
	var counts map[string]int64
	if again && len(msgs) > 0 {
		counts = t.deliveries(ctx, msgs)
	}
	if t.o.StoreFetches {
		return t.handleStore(ctx, msgs, counts)
	}
	var (
		dead []refused
		lost []string
	)
	for _, m := range msgs {
		if m.Values == nil {
			lost = append(lost, m.ID)
			continue
		}
		if n := counts[m.ID]; n > int64(t.o.MaxDeliveries) {
			dead = append(dead, refused{m, fmt.Sprintf("delivered %d times and never handed on (--max-deliveries %d)", n, t.o.MaxDeliveries)})
			continue
		}
		rec, ok := m.Values["record"].(string)
		if !ok {
			dead = append(dead, refused{m, "the entry has no record field"})
			continue
		}
		if len(rec) > t.o.MaxRecordBytes {
			dead = append(dead, refused{m, t.tooLong(len(rec))})
			continue
		}
		l, err := ndjson.ParseLine([]byte(rec))
		if err != nil {
			dead = append(dead, refused{m, lineErr(err)})
			continue
		}
		line := l.Raw
		ref := &ndjson.BusRef{Stream: t.b.cfg.Stream, Group: t.o.Group, ID: m.ID}
		switch {
		case l.Type == ndjson.TypeBusAck:
			dead = append(dead, refused{m, "a bus_ack record on a stream (only feed-bus take writes them, for its own pipeline)"})
			continue
		case l.Type == ndjson.TypeDue:
			var d ndjson.Due
			if err := l.Decode(&d); err != nil {
				dead = append(dead, refused{m, lineErr(err)})
				continue
			}
			if !t.o.NoAck {
				// The reference appended last wins over one the record
				// had (AppendBusRef), as in any other record.
				line = ndjson.AppendBusRef(line, ref)
				break
			}
			d.Bus = nil
			b, err := ndjson.Marshal(&d)
			if err != nil {
				dead = append(dead, refused{m, err.Error()})
				continue
			}
			line = bytes.TrimSuffix(b, []byte{'\n'})
		case !t.o.NoAck:
			line = ndjson.AppendBusRef(line, ref)
		}
		if err := t.out.WriteRaw(line); err != nil {
			return fmt.Errorf("write stdout: %w", err)
		}
		t.taken++
	}
	if err := t.out.Flush(); err != nil {
		return fmt.Errorf("write stdout: %w", err)
	}
	return t.settle(ctx, dead, lost)
}

// settle moves refused records to the dead stream, acknowledging them in
// the same step, and acknowledges those trimmed away, with a line each.
func (t *taker) settle(ctx context.Context, dead []refused, lost []string) error {
	if len(lost) > 0 {
		for _, id := range lost {
			t.b.log.Error("a record was trimmed from the stream before it was handed on: it is lost (see put --maxlen)", "stream", t.b.cfg.Stream, "id", id)
		}
		t.lost += len(lost)
		err := t.b.conn.Do(ctx, "acknowledging lost records", func(ctx context.Context) error {
			return t.b.conn.Client.XAck(ctx, t.key, t.o.Group, lost...).Err()
		})
		if err != nil {
			return err
		}
	}
	if len(dead) == 0 {
		return nil
	}
	deadKey := t.b.key(DeadStream)
	var calls []*call
	for _, d := range dead {
		t.refused++
		t.b.log.Error("refused a record: "+d.reason, "stream", t.b.cfg.Stream, "id", d.msg.ID, "moved_to", DeadStream)
		fields := []any{"stream", t.b.cfg.Stream, "group", t.o.Group, "id", d.msg.ID, "reason", d.reason}
		if rec, ok := d.msg.Values["record"].(string); ok {
			if len(rec) > 1<<20 {
				rec = rec[:1<<20] // a huge one is kept in part
			}
			fields = append(fields, "record", rec)
		}
		args := []any{1, 2, t.o.Group, d.msg.ID, 1, len(fields) / 2}
		if t.o.NoAck {
			args = []any{0, 1, len(fields) / 2}
		}
		calls = append(calls, &call{script: handOnScript, keys: []string{deadKey, t.key}, args: append(args, fields...)})
	}
	calls = append(calls, &call{script: trimScript, keys: []string{deadKey}, args: []any{deadMaxLen}})
	if err := t.b.exec(ctx, "moving refused records to "+DeadStream, calls); err != nil {
		return err
	}
	return t.b.register(ctx, DeadStream)
}

// handleStore is handle for take --store-fetches: records are gathered by
// group; a group whose fetch records and payloads pass the checks has its
// payloads and fetch records written to the store (synced), then its
// records written out, and a bus_ack for all of them after the batch's
// last complete group. A group that fails is refused whole, and the
// others go on.
func (t *taker) handleStore(ctx context.Context, msgs []redis.XMessage, counts map[string]int64) error {
	var (
		ready []*takenGroup
		lost  []string
	)
	for _, m := range msgs {
		if m.Values == nil {
			lost = append(lost, m.ID)
			continue
		}
		if t.group == nil {
			t.group = &takenGroup{}
		}
		g := t.group
		g.ids, g.raw = append(g.ids, m.ID), append(g.raw, m)
		closes := true
		switch rec, ok := m.Values["record"].(string); {
		case !ok:
			g.fail(refuse("the entry has no record field"))
		case len(rec) > t.o.MaxRecordBytes:
			g.fail(refuse("%s", t.tooLong(len(rec))))
		case counts[m.ID] > int64(t.o.MaxDeliveries):
			g.fail(refuse("delivered %d times and never handed on (--max-deliveries %d)", counts[m.ID], t.o.MaxDeliveries))
		default:
			l, err := ndjson.ParseLine([]byte(rec))
			switch {
			case err != nil:
				g.fail(refuse("%s", lineErr(err)))
			case l.Type == ndjson.TypeEntry:
				closes = false
				g.records = append(g.records, []byte(rec))
			case l.Type == ndjson.TypeBusAck:
				g.fail(refuse("a bus_ack record on a stream (only feed-bus take writes them, for its own pipeline)"))
			case l.Type == ndjson.TypeFetch:
				fetchLine, _ := m.Values["fetch"].(string)
				body, _ := m.Values["body"].(string)
				cf, err := checkFetch([]byte(rec), bytesOrNil(fetchLine, m.Values["fetch"]), bytesOrNil(body, m.Values["body"]), t.o.MaxBodyBytes)
				if err != nil {
					g.fail(err)
					break
				}
				g.fetches = append(g.fetches, cf)
				if cf.page {
					closes = false // a page's record goes to the store only
					break
				}
				g.records = append(g.records, []byte(rec))
			default:
				g.records = append(g.records, []byte(rec))
			}
		}
		if closes {
			ready = append(ready, g)
			t.group = nil
		}
	}
	return t.storeGroups(ctx, ready, lost)
}

// tooLong is the refusal of a record longer than a line may be.
func (t *taker) tooLong(n int) string {
	return fmt.Sprintf("a record of %d bytes, over the limit of %d (--max-record-bytes)", n, t.o.MaxRecordBytes)
}

func bytesOrNil(s string, v any) []byte {
	if v == nil {
		return nil
	}
	return []byte(s)
}

func (g *takenGroup) fail(err error) {
	if g.bad == nil {
		g.bad = err
	}
}

// storeGroups writes the payloads and fetch records of the complete
// groups to the store, then their records to stdout with a bus_ack.
func (t *taker) storeGroups(ctx context.Context, ready []*takenGroup, lost []string) error {
	st := t.b.cfg.Store
	var (
		recs  []*ndjson.Fetch
		lines [][]byte
		dead  []refused
		good  []*takenGroup // the groups whose payloads are stored
	)
	for _, g := range ready {
		if g.bad == nil {
			for _, cf := range g.fetches {
				if err := t.storePayload(cf); err != nil {
					var r *refusal
					if !errors.As(err, &r) {
						return err // the store cannot be written
					}
					g.fail(err)
					break
				}
			}
		}
		if g.bad != nil {
			for _, m := range g.raw {
				dead = append(dead, refused{m, g.bad.Error()})
			}
			continue
		}
		good = append(good, g)
	}
	var fetchIDs []string
	for _, g := range good {
		for _, cf := range g.fetches {
			fetchIDs = append(fetchIDs, cf.rec.FetchID)
		}
	}
	known, err := t.cat.KnownFetches(ctx, fetchIDs)
	if err != nil {
		return err
	}
	for _, g := range good {
		for _, cf := range g.fetches {
			if !known[cf.rec.FetchID] { // not a group taken again
				recs, lines = append(recs, cf.stored), append(lines, cf.line)
			}
		}
	}
	if err := st.AppendFetchLines(recs, lines, t.cat.FetchIndexer(ctx)); err != nil {
		return err
	}
	var ids []string
	for _, g := range good {
		for _, r := range g.records {
			if err := t.out.WriteRaw(r); err != nil {
				return fmt.Errorf("write stdout: %w", err)
			}
			t.taken++
		}
		ids = append(ids, g.ids...)
	}
	if len(ids) > 0 {
		if err := t.out.Write(&ndjson.BusAck{Header: ndjson.Head(ndjson.TypeBusAck), Stream: t.b.cfg.Stream, Group: t.o.Group, IDs: ids}); err != nil {
			return fmt.Errorf("write stdout: %w", err)
		}
	}
	if err := t.out.Flush(); err != nil {
		return fmt.Errorf("write stdout: %w", err)
	}
	return t.settle(ctx, dead, lost)
}

// storePayload writes a checked fetch record's payload to the store, at
// the key the record names; a payload that did not come must be there
// already.
func (t *taker) storePayload(cf *checkedFetch) error {
	ref := cf.rec.BodyRef
	if ref == nil {
		return nil
	}
	st := t.b.cfg.Store
	if cf.body == nil {
		if _, err := st.Stat(ref.Key); err != nil {
			return refuse("no payload came with it, and the store has none at %s", ref.Key)
		}
		return nil
	}
	// checkFetch found that it decodes to the body the key names: the
	// worker's file, stored as it came, is what PutRaw would write.
	return st.PutRawEncoded(ref.Key, cf.zst)
}

// flushOpenGroup writes the records of a group no fetch record closed
// (not written by feedpipe's stages, which close every group), at the end
// of the take.
func (t *taker) flushOpenGroup(ctx context.Context) error {
	g := t.group
	t.group = nil
	return t.storeGroups(ctx, []*takenGroup{g}, nil)
}

// lingerFloor is the least time linger waits for the next record to be
// handed on before it leaves the rest: a healthy worker's stages may hand
// on nothing for as long as a fetch may take (60 s, redirects included)
// plus the wait for a host whose slot a dead worker held (its lease's
// life).
const lingerFloor = 2 * time.Minute

// linger keeps the take's records its own (keep) until they are
// acknowledged, once it has stopped taking and closed its output, as long
// as the stages after it hand some on at least every lingerFloor (or
// --takeover, if longer): stages that stopped doing so are dead or stuck,
// and the records are left for another consumer (or this one's next
// take) to take over.
func (t *taker) linger(ctx context.Context) {
	patience := max(t.o.Takeover, t.o.Linger)
	last, since := int64(-1), t.b.cfg.Clock.Now()
	for {
		n, err := t.pending(ctx)
		if err != nil || n == 0 {
			return
		}
		now := t.b.cfg.Clock.Now()
		if n != last {
			last, since = n, now
		}
		if now.Sub(since) >= patience {
			t.b.log.Warn("ending with records not handed on, none for "+patience.String()+": another consumer takes them over, or this one at its next take",
				"stream", t.b.cfg.Stream, "records", n)
			return
		}
		t.b.sleep(ctx, 100*time.Millisecond)
	}
}
