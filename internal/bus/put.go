package bus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Defaults of PutOptions.
const (
	// DefaultMaxLen bounds a stream's length: past it, the oldest records
	// go even unacknowledged (reported). Acknowledged ones go sooner.
	DefaultMaxLen = 1_000_000
	// DefaultRunTimeout is how long a run put on a stream is not put
	// again once taken, while the pipeline that took it hands it on and
	// the coordinator stores it.
	DefaultRunTimeout = time.Hour
)

// PutOptions are feed-bus put's.
type PutOptions struct {
	MaxLen     int64         // DefaultMaxLen; -1: none
	RunTimeout time.Duration // DefaultRunTimeout
	// EventsLog puts the store's events log (events/YYYY-MM-DD.ndjson)
	// from where the last put left it, instead of the events on stdin,
	// which feed-store wrote there first (docs/bus.md).
	EventsLog bool
}

// Batches: at most putBatch records a pipeline of transactions, gathered
// for at most putLinger after the first.
const (
	putBatch  = 512
	putLinger = 5 * time.Millisecond
	// trimEvery spaces the trims of a busy stream.
	trimEvery = 500 * time.Millisecond
	// maxLogLines bounds the events log lines of one transaction.
	maxLogLines = 2000
)

// item is one input record made ready to append, or a bus_ack.
type item struct {
	fields    []any // "record", line[, "fetch", line][, "body", payload]
	pages     [][]any
	closes    bool            // ends a group: anything but an entry
	acks      []ndjson.BusRef // the entries it answers
	run       *runRef         // a due record's run, put once
	fromLog   bool            // an event the events log carries (EventsLog)
	marker    bool            // a bus_ack: acknowledgements only
	fetchLine bool            // a fetch record whose payload and line were attached
}

// runRef names a run: its feed and the time it was due.
type runRef struct {
	feedID string
	at     int64 // Unix milliseconds
}

// putCounts are what a put did.
type putCounts struct {
	appended, groups, takenOver, runsSkipped, events int
}

// put appends each record of cfg.In to the stream, group by group (a
// feed's entries with the record that closes them), each group in one
// transaction with the acknowledgement of the entries it answers.
func (b *bus) put(ctx context.Context) error {
	cfg := b.cfg
	if cfg.Put.MaxLen == 0 {
		cfg.Put.MaxLen = DefaultMaxLen
	}
	if cfg.Put.RunTimeout <= 0 {
		cfg.Put.RunTimeout = DefaultRunTimeout
	}
	if cfg.Put.EventsLog && cfg.Store == nil {
		return errors.New("bus: put --events-log needs the store (--store)")
	}
	// A signal does not stop a put: it appends all it reads, to the end of
	// its input, which ends once the stages upstream have stopped.
	ctx = pipe.Drain(ctx)
	if err := b.register(ctx, cfg.Stream); err != nil {
		return err
	}
	beatCtx, stopBeat := context.WithCancel(ctx)
	defer stopBeat()
	go b.beat(beatCtx, "put "+cfg.Stream)

	p := &putter{b: b, stream: cfg.Stream, key: b.key(cfg.Stream)}
	defer p.closePayloads()
	if cfg.Put.EventsLog {
		if err := p.startLog(ctx); err != nil {
			return err
		}
	}
	var fails pipe.Failures
	items := make(chan item, putBatch)
	readErr := make(chan error, 1)
	go func() {
		defer close(items)
		readErr <- pipe.Each(ctx, cfg.In, b.log, &fails, func(line ndjson.Line) error {
			it, err := p.prepare(ctx, line)
			if err != nil {
				var le *ndjson.LineError
				if errors.As(err, &le) {
					fails.Records++
					b.log.Error("skipping a record", "line", line.Num, "error", le.Err)
					return nil
				}
				return err
			}
			items <- it
			return nil
		})
	}()
	var putErr error
	for first := range items {
		if putErr != nil {
			continue // drain, so the reader can finish
		}
		putErr = p.batch(ctx, pipe.Batch(first, items, putBatch, putLinger), false)
	}
	if putErr == nil {
		putErr = p.batch(ctx, nil, true) // the last group, and the log's end
	}
	if putErr == nil {
		putErr = p.trim(ctx, true)
	}
	if err := <-readErr; putErr == nil {
		putErr = err
	}
	if putErr != nil {
		return putErr
	}
	c := p.counts
	b.log.Info("put done", "stream", cfg.Stream, "appended", c.appended, "events_from_log", c.events,
		"handed_on_already", c.takenOver, "runs_put_already", c.runsSkipped, "cpu_s", cpuTime().Seconds())
	return fails.Err("record", "records")
}

// putter is one put's state.
type putter struct {
	b         *bus
	stream    string
	key       string
	open      []item // the group so far: entries waiting for the record that closes it
	counts    putCounts
	lastTrim  time.Time
	sinceTrim int
	cursor    string // EventsLog: where the events log was put up to ("file offset")
	payloads  *payloads
	ackedIn   map[string]bool // the streams it acknowledged entries of, trimmed too
}

// acked notes a stream this put acknowledged entries of: what every group
// acknowledged there is trimmed, by its puts and by this one.
func (p *putter) acked(stream string) {
	if p.ackedIn == nil {
		p.ackedIn = map[string]bool{}
	}
	p.ackedIn[stream] = true
}

// peek is what put reads of a record: enough to know what it answers.
type peek struct {
	Type        string          `json:"type"`
	Bus         *ndjson.BusRef  `json:"bus"`
	FeedID      string          `json:"feed_id"`
	ScheduledAt ndjson.Time     `json:"scheduled_at"`
	FetchID     string          `json:"fetch_id"`
	BodyRef     *ndjson.BlobRef `json:"body_ref"`
	Due         *struct {
		Bus *ndjson.BusRef `json:"bus"`
	} `json:"due"`
	RawRef *struct {
		FetchID string `json:"fetch_id"`
	} `json:"raw_ref"`
}

// The members put looks for without decoding a record.
var (
	busMember    = []byte(`"bus":{`)
	rawRefMember = []byte(`"raw_ref":{"fetch_id":"`)
)

// logTypes are the records feed-store writes to the events log.
var logTypes = map[string]bool{ndjson.TypeNewEntry: true, ndjson.TypeUpdatedEntry: true, ndjson.TypeBackfilledEntry: true,
	ndjson.TypeFeedDisabled: true, ndjson.TypeFeedReenabled: true}

// prepare reads what put needs of a record; a *ndjson.LineError refuses
// it.
func (p *putter) prepare(ctx context.Context, line ndjson.Line) (item, error) {
	if line.Type == ndjson.TypeBusAck {
		var a ndjson.BusAck
		if err := line.Decode(&a); err != nil {
			return item{}, err
		}
		it := item{marker: true, closes: true}
		for _, id := range a.IDs {
			it.acks = append(it.acks, ndjson.BusRef{Stream: a.Stream, Group: a.Group, ID: id})
		}
		return it, nil
	}
	if line.Type == ndjson.TypeEntry && !bytes.Contains(line.Raw, busMember) {
		// Most records are entries, which answer nothing: of them only
		// the fetch they came from is read, from the member the strict
		// writer puts after their text (a quote inside a string is
		// escaped, so the pattern is the member itself).
		it := item{fields: []any{"record", string(line.Raw)}}
		if p.b.cfg.Store != nil {
			if i := bytes.LastIndex(line.Raw, rawRefMember); i >= 0 {
				rest := line.Raw[i+len(rawRefMember):]
				if end := bytes.IndexByte(rest, '"'); end >= 0 {
					p.notePage(string(rest[:end]))
				}
			}
		}
		return it, nil
	}
	if p.b.cfg.Put.EventsLog && logTypes[line.Type] && !bytes.Contains(line.Raw, busMember) {
		// An event the log carries, answering no record of its own (the
		// coordinator's 10 a new feed): skipped undecoded, as the log's
		// copy of it is what goes on the stream.
		return item{fromLog: true}, nil
	}
	var pk peek
	if err := ndjson.Unmarshal(line.Raw, &pk); err != nil {
		return item{}, &ndjson.LineError{Line: line.Num, Err: fmt.Errorf("bad %s record: %w", strconv.Quote(line.Type), err)}
	}
	raw := line.Raw
	// An entry that answers a record of its own (a stage-2 worker's, such
	// as feed-scrape --events on the events stream) is a group by itself:
	// no fetch record follows it.
	it := item{closes: line.Type != ndjson.TypeEntry || pk.Bus != nil}
	if pk.Bus != nil {
		if err := checkRef(pk.Bus, "bus"); err != nil {
			return item{}, &ndjson.LineError{Line: line.Num, Err: err}
		}
		it.acks = append(it.acks, *pk.Bus)
		raw = stripBusRef(raw)
	}
	if line.Type == ndjson.TypeFetch && pk.Due != nil && pk.Due.Bus != nil {
		if err := checkRef(pk.Due.Bus, "due.bus"); err != nil {
			return item{}, &ndjson.LineError{Line: line.Num, Err: err}
		}
		it.acks = append(it.acks, *pk.Due.Bus)
	}
	if line.Type == ndjson.TypeDue && pk.Bus == nil && pk.FeedID != "" && !pk.ScheduledAt.IsZero() {
		it.run = &runRef{feedID: pk.FeedID, at: pk.ScheduledAt.UnixMilli()}
		if !ndjson.IsFeedID(pk.FeedID) {
			return item{}, &ndjson.LineError{Line: line.Num, Err: &ndjson.FieldError{Record: ndjson.TypeDue, Field: "feed_id", Value: pk.FeedID, Want: "a feed id (a UUID in lower case)"}}
		}
	}
	if p.b.cfg.Put.EventsLog && logTypes[line.Type] && pk.Bus == nil {
		return item{fromLog: true}, nil
	}
	it.fields = []any{"record", string(raw)}
	if line.Type == ndjson.TypeFetch && pk.BodyRef != nil && p.b.cfg.Store != nil {
		if err := p.attach(ctx, &it, pk.FetchID); err != nil {
			return item{}, err
		}
	}
	if line.Type == ndjson.TypeEntry && pk.RawRef != nil && pk.RawRef.FetchID != "" && p.b.cfg.Store != nil {
		p.notePage(pk.RawRef.FetchID)
	}
	return it, nil
}

func checkRef(r *ndjson.BusRef, field string) error {
	switch {
	case !ndjson.IsBusName(r.Stream):
		return fmt.Errorf("%s.stream %q is not a stream's name", field, r.Stream)
	case !ndjson.IsBusName(r.Group):
		return fmt.Errorf("%s.group %q is not a group's name", field, r.Group)
	case !ndjson.IsStreamID(r.ID):
		return fmt.Errorf("%s.id %q is not a stream entry id", field, r.ID)
	}
	return nil
}

// stripBusRef removes the bus member take appended, last, to a record
// that came through the stages unchanged: it named the stream the record
// left, not the one it goes to.
func stripBusRef(line []byte) []byte {
	const member = `,"bus":{"stream":`
	i := bytes.LastIndex(line, []byte(member))
	if i < 0 || !bytes.HasSuffix(line, []byte("}}")) || bytes.IndexByte(line[i+len(member):len(line)-2], '}') >= 0 {
		return line
	}
	var r struct {
		Bus *ndjson.BusRef `json:"bus"`
	}
	if ndjson.Unmarshal(append([]byte("{"), line[i+1:]...), &r) != nil || r.Bus == nil {
		return line
	}
	out := make([]byte, 0, i+1)
	return append(append(out, line[:i]...), '}')
}

// batch appends a batch of records: a transaction per group that closes,
// pipelined; the open group waits for the next batch unless last.
func (p *putter) batch(ctx context.Context, items []item, last bool) error {
	var (
		calls []*call
		kinds []*item // the item each call closes, nil for a log call
		log   *logPut
	)
	flushLog := func() error {
		if log == nil {
			return nil
		}
		c, err := p.logCall(log)
		if err != nil {
			return err
		}
		calls, kinds = append(calls, c...), append(kinds, make([]*item, len(c))...)
		log = nil
		return nil
	}
	for i := range items {
		it := &items[i]
		switch {
		case it.fromLog:
			continue
		case it.marker && p.b.cfg.Put.EventsLog:
			if log == nil {
				log = &logPut{}
			}
			log.acks = append(log.acks, it.acks...)
			continue
		}
		if err := flushLog(); err != nil {
			return err
		}
		if !it.closes {
			p.open = append(p.open, *it)
			continue
		}
		group := append(p.open, *it)
		p.open = nil
		calls = append(calls, p.groupCall(group))
		kinds = append(kinds, it)
	}
	if last {
		if len(p.open) > 0 {
			calls = append(calls, p.groupCall(p.open))
			kinds = append(kinds, &p.open[len(p.open)-1])
			p.open = nil
		}
		if p.b.cfg.Put.EventsLog && log == nil {
			log = &logPut{}
		}
	}
	if err := flushLog(); err != nil {
		return err
	}
	if len(calls) == 0 {
		return nil
	}
	if err := p.b.exec(ctx, "appending to "+p.stream, calls); err != nil {
		return fmt.Errorf("bus: put %s: %w", p.stream, err)
	}
	for i, c := range calls {
		res := replyList(c.res)
		switch {
		case c.script == putLogScript:
			p.logDone(c, res)
		case kinds[i] != nil && kinds[i].run != nil && c.script == putRunScript:
			if replyInt(res[0]) == 1 {
				p.counts.appended++
			} else {
				p.counts.runsSkipped++
				p.b.log.Debug("not put again: this run was put on the bus already and is not stored yet", "feed_id", kinds[i].run.feedID)
			}
		default:
			if replyInt(res[0]) == 0 {
				p.counts.takenOver++
				p.b.log.Info("not appended: these records were handed on already (by a consumer that took them over, or by this put before its connection was lost)",
					"stream", p.stream, "acks", len(kinds[i].acks))
				continue
			}
			p.counts.appended += len(res) - 1
			p.counts.groups++
		}
	}
	p.sinceTrim += len(calls)
	return p.trim(ctx, false)
}

// groupCall is the transaction of one group.
func (p *putter) groupCall(group []item) *call {
	last := group[len(group)-1]
	if len(group) == 1 && last.run != nil && len(last.acks) == 0 {
		return &call{script: putRunScript, keys: []string{p.key, p.b.conn.Key("run", last.run.feedID)},
			args: append([]any{last.run.at, p.b.cfg.Put.RunTimeout.Milliseconds()}, last.fields...)}
	}
	var refs []ndjson.BusRef
	for _, it := range group {
		refs = append(refs, it.acks...)
	}
	keys, acks := p.ackArgs([]string{p.key}, refs)
	args := append([]any{len(acks) / 3}, acks...)
	var records [][]any
	for _, it := range group {
		if it.fromLog || it.marker {
			continue
		}
		records = append(records, it.pages...)
		records = append(records, it.fields)
	}
	args = append(args, len(records))
	for _, r := range records {
		args = append(args, len(r)/2)
		args = append(args, r...)
	}
	return &call{script: handOnScript, keys: keys, args: args}
}

// trim bounds the stream (trimScript), at most every trimEvery unless
// now, and reports what it dropped unacknowledged.
func (p *putter) trim(ctx context.Context, now bool) error {
	if p.sinceTrim == 0 || !now && p.b.cfg.Clock.Now().Sub(p.lastTrim) < trimEvery {
		return nil
	}
	p.sinceTrim, p.lastTrim = 0, p.b.cfg.Clock.Now()
	limit := max(p.b.cfg.Put.MaxLen, 0)
	c := &call{script: trimScript, keys: []string{p.key}, args: []any{limit}}
	calls := []*call{c}
	for stream := range p.ackedIn {
		if stream != p.stream { // what was acknowledged there, only
			calls = append(calls, &call{script: trimScript, keys: []string{p.b.key(stream)}, args: []any{0}})
		}
	}
	if err := p.b.exec(ctx, "trimming "+p.stream, calls); err != nil {
		return fmt.Errorf("bus: trim %s: %w", p.stream, err)
	}
	res := replyList(c.res)
	for i := 1; i+1 < len(res); i += 2 {
		lost := replyInt(res[i+1])
		what := strconv.FormatInt(lost, 10)
		if lost < 0 {
			what = "some"
		}
		p.b.log.Warn(fmt.Sprintf("trimmed %s to about %d records (--maxlen): %s records were dropped before group %s had them acknowledged, and are lost", p.stream, limit, what, replyString(res[i])),
			"stream", p.stream, "group", replyString(res[i]), "lost", lost)
	}
	return nil
}

// ackArgs appends to keys the key of each stream refs acknowledge entries
// of, once, and returns them with the scripts' acknowledgement arguments:
// for each ref, the 1-based index of its stream's key, its group and its
// entry's id.
func (p *putter) ackArgs(keys []string, refs []ndjson.BusRef) ([]string, []any) {
	index := map[string]int{}
	var acks []any
	for _, a := range refs {
		k := p.b.key(a.Stream)
		n, ok := index[k]
		if !ok {
			keys = append(keys, k)
			n = len(keys)
			index[k] = n
			p.acked(a.Stream)
		}
		acks = append(acks, n, a.Group, a.ID)
	}
	return keys, acks
}
