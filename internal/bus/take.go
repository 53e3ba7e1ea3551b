package bus

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Defaults of TakeOptions.
const (
	DefaultWindow        = 128
	DefaultCount         = 32
	DefaultIdle          = 2 * time.Second
	DefaultTakeover      = time.Minute
	DefaultMaxDeliveries = 10
	// windowStall is how long a full window may see nothing handed on
	// before the take ends, so that stages holding their output until
	// their input ends (a --window smaller than what they buffer) hand
	// it on. With the default window no stage holds that much.
	windowStall = 30 * time.Second
	// deadMaxLen bounds the dead stream.
	deadMaxLen = 100_000
)

// TakeOptions are feed-bus take's.
type TakeOptions struct {
	Group    string // the consumer group; required
	Consumer string // this consumer's name in the group; default the node's
	// Window bounds the records taken and not yet acknowledged, so that
	// each worker holds only what it is at, and the others get the rest
	// (DefaultWindow; 0: none).
	Window int
	Count  int // records asked for per read; DefaultCount
	// Wait is how long to wait for a first record (0: as long as it
	// takes); Idle ends the take once no record came for that long after
	// one did (DefaultIdle; negative: never, follow the stream); For ends
	// it after that long in all (0: no limit).
	Wait, Idle, For time.Duration
	// UpstreamStream and UpstreamGroup: do not end on Idle while that
	// group has records of that stream unread or unacknowledged, which
	// it will hand on to this stream (the coordinator waits for its
	// workers so).
	UpstreamStream, UpstreamGroup string
	// Takeover is how long another consumer's record must have been idle
	// (its consumer dead) before this one takes it over (XAUTOCLAIM); a
	// live take keeps its own records from going idle.
	Takeover time.Duration
	// MaxDeliveries: a record delivered more often than this without
	// being handed on is moved to the dead stream (DefaultMaxDeliveries).
	MaxDeliveries int
	// StoreFetches checks each fetch record's payload and writes it, and
	// the record, to the store (the coordinator), and writes a bus_ack
	// after each group instead of a bus member in each record.
	StoreFetches bool
	// NoAck takes records without acknowledgement (XREADGROUP NOACK): a
	// reader that hands nothing on, at most once.
	NoAck bool
	// From is where a new group starts: "0" (every record the stream
	// has; the default) or "$" (those put from now on).
	From         string
	MaxBodyBytes int64 // StoreFetches: DefaultMaxBodyBytes
	// MaxRecordBytes refuses a longer record (ndjson.MaxLineBytes, which
	// any stage after it would refuse).
	MaxRecordBytes int
	// Linger is how long, once it stopped taking, the take waits for the
	// next of its records to be handed on before it leaves the rest to be
	// taken over (lingerFloor; Takeover if longer).
	Linger time.Duration
}

func (o *TakeOptions) defaults(node string) {
	if o.Consumer == "" {
		o.Consumer = node
	}
	if o.Window < 0 {
		o.Window = 0
	}
	if o.Count <= 0 {
		o.Count = DefaultCount
	}
	if o.Idle == 0 {
		o.Idle = DefaultIdle
	}
	if o.Takeover <= 0 {
		o.Takeover = DefaultTakeover
	}
	if o.MaxDeliveries <= 0 {
		o.MaxDeliveries = DefaultMaxDeliveries
	}
	if o.From == "" {
		o.From = "0"
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.MaxRecordBytes <= 0 {
		o.MaxRecordBytes = ndjson.MaxLineBytes
	}
	if o.Linger <= 0 {
		o.Linger = lingerFloor
	}
}

// taker is one take's state.
type taker struct {
	b    *bus
	o    TakeOptions
	key  string
	out  *ndjson.Writer
	cat  *catalog.Catalog
	lock string // the consumer lock's key, and its token
	tok  string
	// every is how often keep renews the lock and the records' idle time:
	// a third of the takeover time, at most HeartbeatEvery; the lock
	// lasts three times that unless renewed (a take killed holds it so
	// long).
	every, lockLife time.Duration

	group    *takenGroup // StoreFetches: the group being read
	taken    int         // records written
	refused  int
	lost     int
	sawFirst bool
	lastRead time.Time
	// seen is the greatest ID of the records this take received: any
	// record of this consumer's past it was delivered and never received;
	// unanswered is set once a read of new records failed, which Redis may
	// have answered (xread).
	seen       string
	unanswered bool
}

// takenGroup is a group of records read by take --store-fetches: a feed's
// entries and the fetch record that closes it, and the pages its entries
// came from.
type takenGroup struct {
	ids     []string
	records [][]byte         // to write, in order
	fetches []*checkedFetch  // to store: pages, then the fetch
	bad     error            // why it is refused, if it is
	raw     []redis.XMessage // as read, for the dead stream
}

// take writes the group's share of the stream to cfg.Out.
func (b *bus) take(ctx context.Context) error {
	cfg := b.cfg
	o := cfg.Take
	o.defaults(cfg.Node)
	switch {
	case !ndjson.IsBusName(o.Group):
		return fmt.Errorf("bus: take: group %q: a name is 1 to 64 letters, digits, '.', '_' or '-'", o.Group)
	case !ndjson.IsBusName(o.Consumer):
		return fmt.Errorf("bus: take: consumer %q: a name is 1 to 64 letters, digits, '.', '_' or '-'", o.Consumer)
	case o.UpstreamStream != "" && (!ndjson.IsBusName(o.UpstreamStream) || !ndjson.IsBusName(o.UpstreamGroup)):
		return fmt.Errorf("bus: take: upstream %s:%s is not STREAM:GROUP", o.UpstreamStream, o.UpstreamGroup)
	case o.StoreFetches && cfg.Store == nil:
		return errors.New("bus: take --store-fetches needs the store (--store)")
	case o.StoreFetches && o.NoAck:
		return errors.New("bus: take --store-fetches acknowledges what feed-store stored: it cannot be --no-ack")
	}
	t := &taker{b: b, o: o, key: b.key(cfg.Stream), out: ndjson.NewWriter(cfg.Out)}
	t.every = min(o.Takeover/3, HeartbeatEvery)
	t.lockLife = 3 * t.every
	// Redis calls that must finish even after a signal: the records in
	// hand are written and kept until acknowledged.
	bg := pipe.Drain(ctx)
	if err := b.register(bg, cfg.Stream); err != nil {
		return err
	}
	if err := t.createGroup(bg); err != nil {
		return err
	}
	if o.StoreFetches {
		cat, done, err := catalog.Use(bg, cfg.Catalog, cfg.Store, b.log)
		if err != nil {
			return err
		}
		defer done()
		t.cat = cat
	}
	if !o.NoAck {
		if err := t.lockConsumer(ctx); err != nil {
			return err
		}
		defer t.unlock(bg)
	}
	keepCtx, stopKeeping := context.WithCancel(bg)
	defer stopKeeping()
	go t.keep(keepCtx)

	var fails pipe.Failures
	err := t.run(ctx)
	if err == nil && t.group != nil && len(t.group.ids) > 0 {
		err = t.flushOpenGroup(bg) // records no fetch record closed
	}
	if ferr := t.out.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("write stdout: %w", ferr)
	}
	if cfg.CloseOut != nil {
		cfg.CloseOut()
	}
	if err != nil {
		return err
	}
	if !o.NoAck {
		t.linger(bg)
	}
	if ctx.Err() != nil {
		b.log.Warn("stopped taking on a signal: the records not taken stay on the stream", "stream", cfg.Stream, "group", o.Group)
	}
	b.log.Info("take done", "stream", cfg.Stream, "group", o.Group, "consumer", o.Consumer, "taken", t.taken,
		"refused", t.refused, "lost", t.lost, "cpu_s", cpuTime().Seconds())
	fails.Records = t.refused
	return fails.Err("record", "records")
}

// createGroup makes the consumer group, and the stream, if need be.
func (t *taker) createGroup(ctx context.Context) error {
	return t.b.conn.Do(ctx, "creating the group "+t.o.Group, func(ctx context.Context) error {
		err := t.b.conn.Client.XGroupCreateMkStream(ctx, t.key, t.o.Group, t.o.From).Err()
		if err != nil && redis.HasErrorPrefix(err, "BUSYGROUP") {
			return nil
		}
		return err
	})
}

// lockConsumer holds the consumer's name for this take: two takes of one
// name would each hand out the other's records again. A take killed a
// moment ago holds it for up to lockLife.
func (t *taker) lockConsumer(ctx context.Context) error {
	var tok [16]byte
	if _, err := io.ReadFull(t.b.cfg.Rand, tok[:]); err != nil {
		return err
	}
	t.tok = hex.EncodeToString(tok[:])
	t.lock = t.b.conn.Key("lock", t.b.cfg.Stream, t.o.Group, t.o.Consumer)
	said := false
	for {
		var got int64
		err := t.b.conn.Do(ctx, "taking the consumer's lock", func(ctx context.Context) error {
			var err error
			got, err = refreshLockScript.Run(ctx, t.b.conn.Client, []string{t.lock}, t.tok, t.lockLife.Milliseconds()).Int64()
			return err
		})
		if err != nil {
			return err
		}
		if got == 1 {
			return nil
		}
		if !said {
			t.b.log.Warn("waiting: another feed-bus take uses this consumer name (or one killed a moment ago did, whose hold lapses soon)",
				"stream", t.b.cfg.Stream, "group", t.o.Group, "consumer", t.o.Consumer, "lapses_within", t.lockLife.String())
			said = true
		}
		t.b.sleep(ctx, t.every/3)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

func (t *taker) unlock(ctx context.Context) {
	if t.lock != "" {
		releaseLockScript.Run(ctx, t.b.conn.Client, []string{t.lock}, t.tok)
	}
}

// keep keeps the take's hold on its name and its records while it runs:
// every third of the takeover time (at most 5 s) it renews the lock,
// resets the idle time of the records it took and has not seen
// acknowledged (so that no other consumer takes them over while the
// stages after it work on them), and beats the heartbeat.
func (t *taker) keep(ctx context.Context) {
	every := t.every
	what := fmt.Sprintf("take %s (%s)", t.b.cfg.Stream, t.o.Group)
	for {
		t.b.heartbeat(ctx, what, DefaultHeartbeatTTL, nil)
		if !t.o.NoAck {
			if t.lock != "" {
				refreshLockScript.Run(ctx, t.b.conn.Client, []string{t.lock}, t.tok, t.lockLife.Milliseconds())
			}
			t.refresh(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.b.cfg.Clock.After(every):
		}
	}
}

// refresh resets the idle time of this consumer's pending records, and
// notes how many there are.
func (t *taker) refresh(ctx context.Context) {
	rdb := t.b.conn.Client
	start, n := "-", int64(0)
	for {
		p, err := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: t.key, Group: t.o.Group, Start: start, End: "+", Count: 1000, Consumer: t.o.Consumer}).Result()
		if err != nil || len(p) == 0 {
			break
		}
		ids := make([]string, len(p))
		for i, e := range p {
			ids[i] = e.ID
		}
		n += int64(len(ids))
		rdb.XClaimJustID(ctx, &redis.XClaimArgs{Stream: t.key, Group: t.o.Group, Consumer: t.o.Consumer, MinIdle: 0, Messages: ids})
		if len(p) < 1000 {
			break
		}
		start = "(" + ids[len(ids)-1]
	}
}

// pending is how many records this consumer holds unacknowledged.
func (t *taker) pending(ctx context.Context) (int64, error) {
	var n int64
	err := t.b.conn.Do(ctx, "counting the records in hand", func(ctx context.Context) error {
		p, err := t.b.conn.Client.XPending(ctx, t.key, t.o.Group).Result()
		if err != nil {
			if redis.HasErrorPrefix(err, "NOGROUP") {
				return t.createGroup(ctx)
			}
			return err
		}
		n = p.Consumers[t.o.Consumer]
		return nil
	})
	return n, err
}

// upstreamBusy reports whether the upstream group has records unread or
// unacknowledged.
func (t *taker) upstreamBusy(ctx context.Context) (bool, error) {
	if t.o.UpstreamStream == "" {
		return false, nil
	}
	key := t.b.key(t.o.UpstreamStream)
	var busy bool
	err := t.b.conn.Do(ctx, "looking at "+t.o.UpstreamStream, func(ctx context.Context) error {
		rdb := t.b.conn.Client
		info, err := rdb.XInfoStream(ctx, key).Result()
		if err != nil {
			if strings.Contains(err.Error(), "no such key") {
				busy = false
				return nil
			}
			return err
		}
		groups, err := rdb.XInfoGroups(ctx, key).Result()
		if err != nil {
			return err
		}
		busy = info.Length > 0 // no group yet: no worker has come
		for _, g := range groups {
			if g.Name != t.o.UpstreamGroup {
				continue
			}
			busy = g.Pending > 0 || g.Lag > 0 || g.Lag < 0 && info.Length > 0 && idLess(g.LastDeliveredID, info.LastEntry.ID)
		}
		return nil
	})
	return busy, err
}

// idLess compares two stream ids.
func idLess(a, b string) bool {
	am, as := idParts(a)
	bm, bs := idParts(b)
	return am < bm || am == bm && as < bs
}

func idParts(id string) (ms, seq uint64) {
	m, s, _ := strings.Cut(id, "-")
	ms, _ = strconv.ParseUint(m, 10, 64)
	seq, _ = strconv.ParseUint(s, 10, 64)
	return ms, seq
}

// run takes records until an end condition (TakeOptions) or a signal.
func (t *taker) run(ctx context.Context) error {
	b, o := t.b, t.o
	start := b.cfg.Clock.Now()
	t.lastRead = start
	if !o.NoAck {
		// What this consumer took before and did not hand on (its
		// previous take was killed): first.
		if err := t.readOwn(ctx); err != nil {
			return err
		}
	}
	var (
		nextClaim   time.Time
		fullSince   time.Time // since when the window has been full with nothing handed on
		lastPending int64
	)
	for ctx.Err() == nil {
		now := b.cfg.Clock.Now()
		if o.For > 0 && now.Sub(start) >= o.For {
			b.log.Info("ending: --for has passed", "stream", b.cfg.Stream)
			return nil
		}
		count := o.Count
		if o.Window > 0 && !o.NoAck {
			n, err := t.pending(ctx)
			if err != nil {
				return err
			}
			// It takes again once a read's worth of room is free: the
			// due records go on in batches, which feed-fetch claims in
			// one transaction each, not one by one as they are handed on.
			if room := o.Window - int(n); room < min(o.Count, o.Window) {
				if fullSince.IsZero() || n < lastPending {
					fullSince = now // some were handed on
				}
				lastPending = n
				// The stages after it may hold the records until their
				// input ends (they write in blocks): end, so that they
				// hand them on, rather than wait forever.
				if wait := max(o.Idle, windowStall); now.Sub(fullSince) >= wait {
					b.log.Info("ending: the window is full and nothing was handed on for a while", "stream", b.cfg.Stream, "window", o.Window)
					return nil
				}
				b.sleep(ctx, windowPoll(n, o.Count))
				continue
			}
			fullSince = time.Time{}
			count = min(count, o.Window-int(n))
		}
		if !o.NoAck && !now.Before(nextClaim) {
			n, err := t.claim(ctx, count)
			if err != nil {
				return err
			}
			nextClaim = now.Add(max(o.Takeover/4, time.Second))
			if n > 0 {
				nextClaim = now // there may be more
				continue
			}
		}
		block := time.Second
		if o.Idle > 0 && o.Idle < block {
			block = o.Idle
		}
		n, err := t.read(ctx, ">", count, block)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		now = b.cfg.Clock.Now()
		if n > 0 {
			t.lastRead = now
			continue
		}
		busy, err := t.upstreamBusy(ctx)
		if err != nil {
			return err
		}
		switch {
		case busy:
			t.lastRead = now // the upstream will hand on more
		case o.UpstreamStream != "" || t.sawFirst:
			if o.Idle > 0 && now.Sub(t.lastRead) >= o.Idle {
				return nil
			}
		case o.Wait > 0 && now.Sub(start) >= o.Wait:
			return nil
		}
	}
	return nil
}

// windowPoll is how long a take with a full window waits before it asks
// again how many records it holds: 100 ms for each read's worth in hand,
// at most 500 ms. The stages after it have those to work on meanwhile,
// and each question is a round trip on both sides (with 128 in hand, a
// worker asked 10 times a second through a whole cycle).
func windowPoll(inHand int64, count int) time.Duration {
	return min(max(time.Duration(inHand)*100*time.Millisecond/time.Duration(max(count, 1)), 100*time.Millisecond), 500*time.Millisecond)
}

// readOwn writes the records this consumer took before and never handed
// on, oldest first.
func (t *taker) readOwn(ctx context.Context) error {
	from := "0"
	for ctx.Err() == nil {
		var msgs []redis.XMessage
		err := t.b.conn.Do(ctx, "reading the records this consumer held", func(ctx context.Context) error {
			res, err := t.b.conn.Client.XReadGroup(ctx, &redis.XReadGroupArgs{Group: t.o.Group, Consumer: t.o.Consumer,
				Streams: []string{t.key, from}, Count: int64(t.o.Count), Block: -1}).Result()
			if err != nil {
				if errors.Is(err, redis.Nil) {
					return nil
				}
				if redis.HasErrorPrefix(err, "NOGROUP") {
					return t.createGroup(ctx)
				}
				return err
			}
			if len(res) > 0 {
				msgs = res[0].Messages
			}
			return nil
		})
		if err != nil || len(msgs) == 0 {
			return err
		}
		from = msgs[len(msgs)-1].ID
		t.received(msgs)
		t.sawFirst = true
		t.b.log.Info("taking again the records this consumer held when its last take ended", "stream", t.b.cfg.Stream, "records", len(msgs))
		if err := t.handle(ctx, msgs, nil, true); err != nil {
			return err
		}
	}
	return nil
}

// read reads up to count new records, blocking up to block, and writes
// them; it returns how many came.
func (t *taker) read(ctx context.Context, id string, count int, block time.Duration) (int, error) {
	msgs, err := t.xread(ctx, id, count, block)
	if err != nil || len(msgs) == 0 {
		return 0, err
	}
	if t.o.StoreFetches {
		// The coordinator writes each batch to the store with a sync and
		// a transaction of the catalog: records trickling in from the
		// workers are gathered for a moment into fewer, larger batches.
		deadline := t.b.cfg.Clock.Now().Add(storeLinger)
		for len(msgs) < count && ctx.Err() == nil {
			left := deadline.Sub(t.b.cfg.Clock.Now())
			if left < time.Millisecond {
				break
			}
			more, err := t.xread(ctx, id, count-len(msgs), left)
			if err != nil {
				return 0, err
			}
			msgs = append(msgs, more...)
		}
	}
	t.sawFirst = true
	return len(msgs), t.handle(ctx, msgs, nil, false)
}

// storeLinger is how long the coordinator's take gathers records into one
// batch.
const storeLinger = 500 * time.Millisecond

// xread reads up to count new records, blocking up to block. A read
// whose answer was lost with the connection (Redis killed as it answered,
// a network cut) has made its records this consumer's, past the last one
// the take received, and no read of new records returns them again: after
// such a failure the reads take this consumer's own records from there
// (XREADGROUP with an ID) until none is left, then new ones, so that they
// are handed on in this take, not left until a takeover or the next take.
func (t *taker) xread(ctx context.Context, id string, count int, block time.Duration) ([]redis.XMessage, error) {
	var msgs []redis.XMessage
	err := t.b.conn.Do(ctx, "reading "+t.b.cfg.Stream, func(ctx context.Context) error {
		for {
			from, wait := id, block
			if t.unanswered && id == ">" && !t.o.NoAck {
				from, wait = cmp.Or(t.seen, "0"), -1 // the consumer's own records are there or not
			}
			res, err := t.b.conn.Client.XReadGroup(ctx, &redis.XReadGroupArgs{Group: t.o.Group, Consumer: t.o.Consumer,
				Streams: []string{t.key, from}, Count: int64(count), Block: wait, NoAck: t.o.NoAck}).Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				if redis.HasErrorPrefix(err, "NOGROUP") { // Redis lost it
					return t.createGroup(ctx)
				}
				t.unanswered = t.unanswered || from == ">"
				return err
			}
			msgs = nil
			if len(res) > 0 {
				msgs = res[0].Messages
			}
			if from != ">" && len(msgs) == 0 {
				t.unanswered = false // all taken again: on to new records
				continue
			}
			if loseAnswer != nil && from == ">" && len(msgs) > 0 && loseAnswer() {
				msgs, t.unanswered = nil, true
				return io.ErrUnexpectedEOF
			}
			t.received(msgs)
			return nil
		}
	})
	return msgs, err
}

// received notes records the take received, before it handles them (a
// read may gather several answers first).
func (t *taker) received(msgs []redis.XMessage) {
	for _, m := range msgs {
		if streamIDAfter(m.ID, t.seen) {
			t.seen = m.ID
		}
	}
}

// loseAnswer, set by a test, makes xread drop the records a read of new
// ones returned and fail as a connection cut off would, when it says so.
var loseAnswer func() bool

// claim takes over up to count records other consumers have left idle
// past the takeover time, and writes them.
func (t *taker) claim(ctx context.Context, count int) (int, error) {
	var (
		msgs    []redis.XMessage
		deleted []string
	)
	err := t.b.conn.Do(ctx, "taking over idle records", func(ctx context.Context) error {
		var err error
		msgs, _, deleted, err = t.b.conn.Client.XAutoClaimWithDeleted(ctx, &redis.XAutoClaimArgs{Stream: t.key, Group: t.o.Group,
			Consumer: t.o.Consumer, MinIdle: t.o.Takeover, Start: "0-0", Count: int64(count)}).Result()
		if err != nil && redis.HasErrorPrefix(err, "NOGROUP") {
			return t.createGroup(ctx)
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	for _, id := range deleted {
		t.lost++
		t.b.log.Error("a record was trimmed from the stream before it was handed on: it is lost (see --maxlen)", "stream", t.b.cfg.Stream, "id", id)
	}
	if len(msgs) == 0 {
		return 0, nil
	}
	t.received(msgs)
	t.sawFirst = true
	t.b.log.Warn("taking over records another consumer left idle (it died, or is stuck)", "stream", t.b.cfg.Stream,
		"group", t.o.Group, "records", len(msgs), "idle_at_least", t.o.Takeover.String())
	return len(msgs), t.handle(ctx, msgs, nil, true)
}

// deliveries reads how often each of msgs was delivered.
func (t *taker) deliveries(ctx context.Context, msgs []redis.XMessage) map[string]int64 {
	counts := map[string]int64{}
	p, err := t.b.conn.Client.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: t.key, Group: t.o.Group,
		Start: msgs[0].ID, End: msgs[len(msgs)-1].ID, Count: int64(len(msgs)) * 2, Consumer: t.o.Consumer}).Result()
	if err == nil {
		for _, e := range p {
			counts[e.ID] = e.RetryCount
		}
	}
	return counts
}

// streamIDAfter reports whether the stream entry ID a ("ms-seq") comes
// after b; any ID comes after "".
func streamIDAfter(a, b string) bool {
	if b == "" {
		return true
	}
	am, as, _ := strings.Cut(a, "-")
	bm, bs, _ := strings.Cut(b, "-")
	an, _ := strconv.ParseUint(am, 10, 64)
	bn, _ := strconv.ParseUint(bm, 10, 64)
	if an != bn {
		return an > bn
	}
	asn, _ := strconv.ParseUint(as, 10, 64)
	bsn, _ := strconv.ParseUint(bs, 10, 64)
	return asn > bsn
}
