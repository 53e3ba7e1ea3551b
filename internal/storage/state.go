package storage

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// StateFile is the key of the feed state log.
const StateFile = DirState + "/feeds.ndjson"

// TypeFeedState is the record type of a state log line.
const TypeFeedState = "feed_state"

// FeedState is what feed-store remembers about one feed between fetches, and
// what feed-due schedules from. The state log holds one line per update; the
// last line of a feed wins.
type FeedState struct {
	ndjson.Header
	FeedID              string            `json:"feed_id"`
	Title               string            `json:"title"`
	Validators          ndjson.Validators `json:"validators"`
	LastFetchAt         ndjson.Time       `json:"last_fetch_at"`
	LastSuccessAt       ndjson.Time       `json:"last_success_at"`
	LastStatus          int               `json:"last_status"`
	LastError           *ndjson.Error     `json:"last_error"`
	ConsecutiveFailures int               `json:"consecutive_failures"`
	IntervalSec         int               `json:"interval_sec"`
	NextFetchAt         ndjson.Time       `json:"next_fetch_at"`
	LastBodySHA256      string            `json:"last_body_sha256"`
	LastContentLength   int64             `json:"last_content_length"`
	NewEntriesLastFetch int               `json:"new_entries_last_fetch"`
	// MovedTo and MovedCount: the URL the last fetches were moved to
	// permanently, and how many in a row.
	MovedTo    string `json:"moved_to"`
	MovedCount int    `json:"moved_count"`
	// Counts add up everything since the feed was first fetched.
	Counts FeedCounts `json:"counts"`
	// Sched is the scheduler's state (internal/sched, docs/scheduler.md
	// §6); nil before the first decision. NextFetchAt and IntervalSec
	// repeat its next_at and interval_sec.
	Sched *sched.State `json:"sched,omitempty"`
	// Decision is the scheduler's last decision, for feed-due --explain.
	Decision *sched.Decision `json:"decision,omitempty"`
}

// FeedCounts add up a feed's fetches, for feed-stats and metrics.
type FeedCounts struct {
	Fetches     int            `json:"fetches"`
	OK          int            `json:"ok"` // 2xx, including unchanged bodies
	NotModified int            `json:"not_modified"`
	Errors      int            `json:"errors"`
	ErrorCodes  map[string]int `json:"error_codes"`
	BytesIn     int64          `json:"bytes_in"`    // bodies received, decoded
	BytesSaved  int64          `json:"bytes_saved"` // bodies 304 answers spared
	DurationMS  int64          `json:"duration_ms"` // summed
	NewEntries  int            `json:"new_entries"`
	Updated     int            `json:"updated"`
}

// Add counts one fetch.
func (c *FeedCounts) Add(f *ndjson.Fetch) {
	c.Fetches++
	c.DurationMS += f.DurationMS
	c.BytesIn += f.ContentLength
	c.BytesSaved += f.BytesSaved
	switch {
	case f.Error != nil:
		c.Errors++
		if c.ErrorCodes == nil {
			c.ErrorCodes = map[string]int{}
		}
		c.ErrorCodes[f.Error.Code]++
	case f.NotModified:
		c.NotModified++
	default:
		c.OK++
	}
}

// States is the state of every feed, from the state log.
//
// Store.States loads every feed's state into ByFeed. Store.OpenStates
// loads them lazily, for feed-store, which needs the whole state of only
// the feeds in its input: it reads the index of the state snapshot and its
// deltas (snapindex.go) and the JSON lines after them, and Get reads one
// feed's record when asked. Then ByFeed holds only the states read or
// changed so far, and Load fills it when everything is needed after all
// (compaction, a whole snapshot, metrics).
//
// The snapshot is kept by the writer as a chain: a whole snapshot of the
// log, then deltas (index/states.snapshot.1, .2, ...), each the states of
// the lines after the one before, named by its ID, and checked against the
// log like the whole one. Put writes a delta of the feeds it and the lines
// since the chain's end changed, and a whole snapshot again when the
// deltas have grown past maxDeltas files or 1/8 of the feeds: a writer
// that holds only a few feeds' states can keep the snapshot current
// without loading the others every run, and a load decodes at most about
// one record in eight twice instead of a cycle's worth of JSON. A delta
// that does not follow the chain's end (torn, lost, of another chain) ends
// the chain there, and the lines after it are read as JSON.
type States struct {
	s      *Store
	ByFeed map[string]FeedState
	lines  int
	// snapLines is how many of the lines the last whole snapshot written
	// or read covers: the rule for a log without a chain (Put).
	snapLines int

	// The chain's end: the ID of its last snapshot (0: no chain) and the
	// log offset it covers up to; its deltas and their records; the feeds
	// with lines past its end, whose states the next delta holds.
	tipID     uint64
	tipEnd    int64
	deltas    int
	deltaRecs int
	pending   map[string]bool
	// unindexed is set when a lazy load found the chain without a usable
	// index (a snapshot written before indexes, or for another
	// DemandInputs): the first Put then writes a whole snapshot, so that
	// the next load is lazy again.
	unindexed bool

	// Lazy only (chain not nil): the indexes of the chain's snapshots, in
	// order; how many feeds there are; the feeds counted in that number
	// that the chain does not hold.
	chain []*snapIndex
	feeds int
	extra map[string]bool
}

// maxDeltas is the most deltas a chain has: each costs a load a file.
const maxDeltas = 32

// States loads every feed's state: from the snapshot chain (see
// SnapshotMinBytes) and the lines appended since, or from the log alone.
func (s *Store) States() (*States, error) { return s.loadStates(false) }

// OpenStates loads the feed states lazily (see States), or every one of
// them when the snapshot has no usable index. The caller closes it.
func (s *Store) OpenStates() (*States, error) { return s.loadStates(true) }

func (s *Store) loadStates(lazy bool) (*States, error) {
	st := &States{s: s, ByFeed: map[string]FeedState{}, pending: map[string]bool{}}
	f, err := s.openLog(StateFile)
	if err != nil || f == nil {
		return st, err
	}
	defer f.Close()
	if !lazy || !st.openChain(f) {
		st.loadChain(f)
		st.unindexed = lazy && st.tipID != 0
	}
	tail := 0
	end, _, err := readLog(f, StateFile, st.tipEnd, func(_, _ int64, l ndjson.Line) error {
		var fs FeedState
		if l.Type != TypeFeedState || l.Decode(&fs) != nil || fs.FeedID == "" {
			return nil
		}
		st.lines++
		tail++
		st.count(fs.FeedID)
		st.ByFeed[fs.FeedID] = fs
		st.pending[fs.FeedID] = true
		return nil
	})
	if err == nil && st.chain == nil && tail > snapshotMaxTail+len(st.ByFeed)/64 {
		// A reader's fallback, for a log whose writer did not keep the
		// snapshot (an older feedpipe, a failed write): a whole one.
		// Only a writer, holding the store lock, writes deltas.
		st.writeWhole(f, end)
	}
	return st, err
}

// snapshotStates names the state log's snapshot.
const snapshotStates = "states"

func deltaKey(k int) string { return snapshotKey(snapshotStates) + "." + strconv.Itoa(k) }

// loadChain decodes the snapshot chain of the open log f into ByFeed,
// as far as it is sound.
func (st *States) loadChain(f *os.File) {
	snap, ok := loadSnapshot[FeedState](st.s, snapshotKey(snapshotStates), f)
	if !ok {
		return
	}
	defer snap.close()
	if snap.head.Prev != 0 {
		return
	}
	st.ByFeed = make(map[string]FeedState, snap.head.Lines+snap.head.Lines/8)
	if err := eachSnapshotRecord(snap, func(fs *FeedState) { st.ByFeed[fs.FeedID] = *fs }); err != nil {
		st.ByFeed = map[string]FeedState{}
		return
	}
	st.lines, st.snapLines, st.tipID, st.tipEnd = snap.head.Lines, snap.head.Lines, snap.head.ID, snap.head.Covered
	for k := 1; k <= maxDeltas; k++ {
		d, ok := st.nextDelta(f, k)
		if !ok {
			return
		}
		// A delta whose records fail half-way ends the chain before it;
		// the records it gave are states of the lines after the chain's
		// end, which the JSON read after it gives again, or later ones.
		err := eachSnapshotRecord(d, func(fs *FeedState) { st.ByFeed[fs.FeedID] = *fs })
		d.close()
		if err != nil {
			return
		}
		st.follow(d.head)
	}
}

// nextDelta opens delta k if it follows the chain's end.
func (st *States) nextDelta(f *os.File, k int) (snapshot, bool) {
	d, ok := loadSnapshot[FeedState](st.s, deltaKey(k), f)
	if !ok {
		return d, false
	}
	if d.head.Prev != st.tipID || d.head.From != st.tipEnd {
		d.close()
		return d, false
	}
	return d, true
}

// follow moves the chain's end past the delta with head h.
func (st *States) follow(h snapshotHead) {
	st.lines, st.tipID, st.tipEnd = h.Lines, h.ID, h.Covered
	st.deltas++
	st.deltaRecs += countOf(h.Counts)
}

// openChain opens the indexes of the snapshot chain of the open log f,
// for a lazy load; false if the whole snapshot has none that fits.
func (st *States) openChain(f *os.File) bool {
	snap, ok := loadSnapshot[FeedState](st.s, snapshotKey(snapshotStates), f)
	if !ok {
		return false
	}
	if snap.head.Prev != 0 {
		snap.close()
		return false
	}
	x, err := snap.readIndex(stateIndexer.shape)
	if err != nil {
		snap.close()
		return false
	}
	st.chain, st.extra = []*snapIndex{x}, map[string]bool{}
	st.feeds = x.n // a whole snapshot holds each feed once
	st.lines, st.snapLines, st.tipID, st.tipEnd = x.head.Lines, x.head.Lines, x.head.ID, x.head.Covered
	for k := 1; k <= maxDeltas; k++ {
		d, ok := st.nextDelta(f, k)
		if !ok {
			break
		}
		dx, err := d.readIndex(stateIndexer.shape)
		if err != nil {
			d.close()
			break
		}
		for i := range dx.n {
			if k := dx.key(i); !st.inChain(k) {
				st.count(strings.Clone(k)) // kept past the index's mapping
			}
		}
		st.chain = append(st.chain, dx)
		st.follow(d.head)
	}
	return true
}

// count counts feedID among the feeds if it is new (lazy only).
func (st *States) count(feedID string) {
	if st.chain == nil || st.extra[feedID] || st.inChain(feedID) {
		return
	}
	st.extra[feedID] = true
	st.feeds++
}

func (st *States) inChain(feedID string) bool {
	for _, x := range st.chain {
		if _, ok := x.find(feedID); ok {
			return true
		}
	}
	return false
}

// numFeeds is how many feeds have a state.
func (st *States) numFeeds() int {
	if st.chain != nil {
		return st.feeds
	}
	return len(st.ByFeed)
}

// Lazy reports whether ByFeed holds only some of the states (OpenStates).
func (st *States) Lazy() bool { return st.chain != nil }

// Get returns the state of feedID; ok is false for a feed never stored.
func (st *States) Get(feedID string) (fs FeedState, ok bool, err error) {
	if fs, ok := st.ByFeed[feedID]; ok || st.chain == nil {
		return fs, ok, nil
	}
	for k := len(st.chain) - 1; k >= 0; k-- {
		x := st.chain[k]
		i, found := x.find(feedID)
		if !found {
			continue
		}
		if err := x.record(i, unsafe.Pointer(&fs)); err != nil || fs.FeedID != feedID {
			// The record is not as the index says (the snapshot was
			// damaged after it was checked): everything from the log
			// and what is sound of the snapshots, then.
			if err := st.Load(); err != nil {
				return FeedState{}, false, err
			}
			fs, ok = st.ByFeed[feedID]
			return fs, ok, nil
		}
		st.ByFeed[feedID] = fs
		return fs, true, nil
	}
	return FeedState{}, false, nil
}

// Load makes ByFeed hold every feed's state, if it does not yet. The
// states of this run (read, or changed and maybe not yet stored) win over
// the ones on disk.
func (st *States) Load() error {
	if st.chain == nil {
		return nil
	}
	full, err := st.s.States()
	if err != nil {
		return err
	}
	for id, fs := range st.ByFeed {
		full.ByFeed[id] = fs
	}
	st.Close()
	st.ByFeed, st.lines, st.snapLines = full.ByFeed, full.lines, full.snapLines
	st.tipID, st.tipEnd, st.deltas, st.deltaRecs = full.tipID, full.tipEnd, full.deltas, full.deltaRecs
	for id := range full.pending {
		st.pending[id] = true
	}
	return nil
}

// Close lets go of the snapshot files a lazy load keeps open.
func (st *States) Close() {
	for _, x := range st.chain {
		x.close()
	}
	st.chain, st.extra, st.feeds = nil, nil, 0
}

// Put records new states. When the log has grown to more than twice the
// number of feeds it is rewritten, durably, with one line per feed. The
// caller holds the store lock.
func (st *States) Put(d Durability, states ...FeedState) error {
	if len(states) == 0 {
		return nil
	}
	for i := range states {
		states[i].Header = ndjson.Head(TypeFeedState)
		st.count(states[i].FeedID)
		st.ByFeed[states[i].FeedID] = states[i]
	}
	if st.lines+len(states) > 2*st.numFeeds()+1024 {
		return st.compact(states)
	}
	data, err := encodeLines(states)
	if err != nil {
		return err
	}
	off, err := st.s.AppendLines(StateFile, data, d)
	if err != nil {
		return err
	}
	st.lines += len(states)
	for i := range states {
		st.pending[states[i].FeedID] = true
	}
	st.upkeep(off + int64(len(data)))
	return nil
}

// upkeep keeps the snapshot close behind the log, whose end is now end,
// so that no load decodes more than a few lines of JSON: a delta of the
// feeds changed since the chain's end, or a whole snapshot when the
// deltas are too many. A log without a chain gets a whole snapshot
// whenever 1,024 + 1/256 of the feeds in lines were appended since the
// last one.
func (st *States) upkeep(end int64) {
	f, err := st.s.openLog(StateFile)
	if err != nil || f == nil {
		return
	}
	defer f.Close()
	switch {
	case st.unindexed:
		st.unindexed = false
		if st.Load() == nil {
			st.writeWhole(f, end)
		}
	case st.tipID == 0:
		if st.lines-st.snapLines > 1024+st.numFeeds()/256 {
			st.writeWhole(f, end)
		}
	case st.deltas >= maxDeltas || st.deltaRecs+len(st.pending) > 4096+st.numFeeds()/8:
		if st.chain != nil && st.mergeWhole(f, end) {
			return
		}
		if st.Load() == nil {
			st.writeWhole(f, end)
		}
	default:
		recs := make([]*FeedState, 0, len(st.pending))
		for id := range st.pending {
			fs := st.ByFeed[id]
			recs = append(recs, &fs)
		}
		spec := snapshotSpec{covered: end, lines: st.lines, prev: st.tipID, from: st.tipEnd}
		if head, ok := writeSnapshot(st.s, deltaKey(st.deltas+1), f, spec, len(recs), slices.Values(recs), stateIndexer); ok {
			st.follow(head)
			clear(st.pending)
		}
	}
}

// writeWhole saves every state (ByFeed holds them all) as the whole
// snapshot of the open log f up to covered, which starts a new chain. The
// records go in feed id order, the index's, so that the next whole
// snapshot can be merged from this one reading it straight through
// (mergeWhole).
func (st *States) writeWhole(f *os.File, covered int64) {
	ids := make([]string, 0, len(st.ByFeed))
	for id := range st.ByFeed {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	inOrder := func(yield func(*FeedState) bool) {
		for _, id := range ids {
			fs := st.ByFeed[id]
			if !yield(&fs) {
				return
			}
		}
	}
	head, ok := writeSnapshot(st.s, snapshotKey(snapshotStates), f, snapshotSpec{covered: covered, lines: st.lines}, len(ids), inOrder, stateIndexer)
	st.started(head, ok)
}

// started notes a whole snapshot written (ok) or not, which ends the
// chain before it either way.
func (st *States) started(head snapshotHead, ok bool) {
	st.snapLines = st.lines
	st.tipID, st.tipEnd, st.deltas, st.deltaRecs = 0, 0, 0, 0
	if !ok {
		return
	}
	st.tipID, st.tipEnd = head.ID, head.Covered
	clear(st.pending)
	// The deltas of the chain before are of no use now (and follow
	// nothing): a reader that has the old whole snapshot open stops at a
	// missing one, or at one of the new chain, which does not follow it.
	ents, _ := st.s.list(DirIndex)
	prefix := path.Base(snapshotKey(snapshotStates)) + "."
	for _, name := range ents {
		if strings.HasPrefix(name, prefix) {
			st.s.remove(DirIndex + "/" + name)
		}
	}
}

// mergeWhole writes the whole snapshot of the open log f up to covered
// for a lazy load, without loading every state: the records of the chain's
// whole snapshot and of its deltas are copied as they are (each checked
// against its index's checksum), in feed id order, the newest of each
// feed, with ByFeed's states (the lines after the chain, and this run's)
// encoded in their place. It costs a read and a write of the snapshot, not
// a load of every state (a quarter of a gigabyte at 100,000 feeds) and an
// encoding of each. false if it could not: the caller then loads them all.
func (st *States) mergeWhole(f *os.File, covered int64) bool {
	type version struct {
		key string
		x   *snapIndex // its record at place j, or
		j   int
		fs  *FeedState // ByFeed's
	}
	newest := map[string]version{}
	for _, x := range st.chain[1:] {
		for j := range x.n {
			newest[x.key(j)] = version{x: x, j: j}
		}
	}
	for id := range st.ByFeed {
		fs := st.ByFeed[id]
		newest[id] = version{fs: &fs}
	}
	over := make([]version, 0, len(newest))
	for k, v := range newest {
		v.key = k
		over = append(over, v)
	}
	slices.SortFunc(over, func(a, b version) int { return strings.Compare(a.key, b.key) })
	// Merged with the whole snapshot's, in key order; of records with one
	// key, the last.
	base := st.chain[0]
	all := make([]version, 0, base.n+len(over))
	for j, o := 0, 0; j < base.n || o < len(over); {
		if j < base.n && (o == len(over) || base.key(j) <= over[o].key) {
			k := base.key(j)
			for j+1 < base.n && base.key(j+1) == k {
				j++
			}
			if o < len(over) && over[o].key == k {
				all = append(all, over[o])
				o++
			} else {
				all = append(all, version{key: k, x: base, j: j})
			}
			j++
			continue
		}
		all = append(all, over[o])
		o++
	}
	c := stateIndexer
	codec, err := codecFor(reflect.TypeFor[FeedState]())
	if err != nil {
		return false
	}
	readers := map[*snapIndex]*recordReader{}
	failed := false
	var enc, proj []byte
	recs := func(yield func(rawRecord) bool) {
		for _, v := range all {
			var r rawRecord
			if v.fs != nil {
				enc = codec.enc(enc[:0], unsafe.Pointer(v.fs))
				proj = c.proj(proj[:0], v.fs)
				r = rawRecord{b: enc, key: v.key, proj: proj}
			} else {
				rd := readers[v.x]
				if rd == nil {
					rd = newRecordReader(v.x)
					readers[v.x] = rd
				}
				b, err := rd.read(v.j)
				if err != nil {
					failed = true
					return
				}
				r = rawRecord{b: b, key: v.key, proj: v.x.proj(v.j)}
			}
			if !yield(r) {
				return
			}
		}
	}
	head, ok := writeSnapshotRaw(st.s, snapshotKey(snapshotStates), f, shapeOf(reflect.TypeFor[FeedState]()),
		snapshotSpec{covered: covered, lines: st.lines}, len(all), recs, true, c.shape)
	if failed || !ok {
		return false
	}
	// The chain's indexes stay open for this run's lookups: their records
	// are the new snapshot's.
	st.started(head, true)
	return true
}

// compact rewrites the state log with one line per feed, its latest, with
// the states of this Put (changed, not in the log yet), and a whole
// snapshot of it. It streams: the log is read twice (which line is each
// feed's last; then those lines, copied as they are) and the snapshot is
// made from the new log a state at a time, so its memory is an index of
// the feeds, not their states: loading every state, as it did, took some
// 300 MB at 100,000 feeds, over a stage's budget.
func (st *States) compact(changed []FeedState) error {
	old, err := st.s.openLog(StateFile)
	if err != nil {
		return err
	}
	var latest map[int]string // line number -> the feed it is the last line of
	if old != nil {
		defer old.Close()
		if latest, err = latestLines(old); err != nil {
			return err
		}
	}
	isChanged := make(map[string]bool, len(changed))
	for i := range changed {
		isChanged[changed[i].FeedID] = true
	}
	at := map[string][2]int64{} // feed -> offset and length of its line in the new log
	var end int64
	err = st.s.writeAtomic(StateFile, Durable, func(out io.Writer) error {
		w := bufio.NewWriterSize(out, 1<<20)
		put := func(id string, line []byte) {
			at[id] = [2]int64{end, int64(len(line))}
			w.Write(line)
			w.WriteByte('\n')
			end += int64(len(line)) + 1
		}
		if old != nil {
			if _, _, err := readLog(old, StateFile, 0, func(_, _ int64, l ndjson.Line) error {
				if id, ok := latest[l.Num]; ok && !isChanged[id] {
					put(id, l.Raw)
				}
				return nil
			}); err != nil {
				return err
			}
		}
		for i := range changed {
			changed[i].Header = ndjson.Head(TypeFeedState)
			line, err := ndjson.Marshal(&changed[i])
			if err != nil {
				return err
			}
			put(changed[i].FeedID, line[:len(line)-1])
		}
		return w.Flush()
	})
	if err != nil {
		return fmt.Errorf("storage: compact state: %w", err)
	}
	st.lines = len(at)
	st.tipID, st.tipEnd = 0, 0
	clear(st.pending)
	if f, err := st.s.openLog(StateFile); err == nil && f != nil {
		st.writeCompacted(f, at, end)
		f.Close()
	}
	if st.chain != nil {
		// A lazy load's indexes are of the snapshots of the old log: start
		// again from the new one and its snapshot, as the next run will.
		fresh, err := st.s.OpenStates()
		if err != nil {
			return err
		}
		st.Close()
		*st = *fresh
	}
	return nil
}

// latestLines reads the state log f and returns, by line number, the lines
// that hold a feed's latest state: the last line of each feed that decodes
// (a line that does not is skipped, as a load skips it).
func latestLines(f *os.File) (map[int]string, error) {
	last := map[string]int{}
	if _, _, err := readLog(f, StateFile, 0, func(_, _ int64, l ndjson.Line) error {
		var fs FeedState
		if l.Type == TypeFeedState && l.Decode(&fs) == nil && fs.FeedID != "" {
			last[fs.FeedID] = l.Num
		}
		return nil
	}); err != nil {
		return nil, err
	}
	byLine := make(map[int]string, len(last))
	for id, n := range last {
		byLine[n] = id
	}
	return byLine, nil
}

// writeCompacted saves the compacted log f (its lines at the spans in at,
// end bytes long) as the whole snapshot, decoding one state at a time in
// feed id order.
func (st *States) writeCompacted(f *os.File, at map[string][2]int64, end int64) {
	ids := make([]string, 0, len(at))
	for id := range at {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var buf []byte
	inOrder := func(yield func(*FeedState) bool) {
		for _, id := range ids {
			span := at[id]
			buf = slices.Grow(buf[:0], int(span[1]))[:span[1]]
			var fs FeedState
			if _, err := f.ReadAt(buf, span[0]); err != nil || ndjson.Unmarshal(buf, &fs) != nil {
				return // the snapshot comes out short, and is not used
			}
			if !yield(&fs) {
				return
			}
		}
	}
	head, ok := writeSnapshot(st.s, snapshotKey(snapshotStates), f, snapshotSpec{covered: end, lines: st.lines}, len(ids), inOrder, stateIndexer)
	st.started(head, ok)
}
