package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"reflect"
	"slices"
	"time"
	"unsafe"

	"github.com/cespare/xxhash/v2"

	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// A snapshot's index. feed-store needs, at start-up, every feed's
// scheduling inputs (for the budget scale, sched.ScaleFor) but the whole
// state and subscription of only the few feeds in its input. Decoding
// every record of both snapshots for that was most of its start-up (0.6 s
// of CPU at 100,000 feeds), so each snapshot also carries an index, after
// its records: per record, its feed id, where its bytes are in the file
// and their checksum, and a small fixed projection of what the scale
// reads (sched.DemandInputs of a state; Disabled and sched.Overrides of a
// subscription), plus the records' order by feed id. A lazy load
// (OpenStates, OpenSubscriptions) reads only the index, about a tenth of
// the snapshot, and a lookup reads and decodes one record, after checking
// its checksum. The index is part of the snapshot: checked with it
// against the file it stands for, checksummed as a whole, and shaped by
// the projection's type (a new field in DemandInputs retires every index
// written before).
//
// Layout, little-endian, everything in the order of the records' keys
// (stable: records with the same key in their own order), so that a
// lookup is a binary search and two indexes join in one pass: n (u32);
// per record, its number in the snapshot (u32), its offset in the file
// (u64), length (u32) and xxhash64 (u64); the end of each key in the keys
// blob and of each projection in the projections blob (u32 each); the two
// blobs.

// indexer says what a snapshot of T indexes.
type indexer[T any] struct {
	key   func(*T) string
	proj  func(b []byte, r *T) []byte // appends r's projection
	shape uint64
}

var (
	stateIndexer = &indexer[FeedState]{
		key:   func(fs *FeedState) string { return fs.FeedID },
		proj:  func(b []byte, fs *FeedState) []byte { return appendDemandInputs(b, stateDemandInputs(fs)) },
		shape: projShape[sched.DemandInputs](),
	}
	subIndexer = &indexer[ndjson.Subscription]{
		key:   func(s *ndjson.Subscription) string { return s.FeedID },
		proj:  func(b []byte, s *ndjson.Subscription) []byte { return appendSubSched(b, subSchedOf(s)) },
		shape: projShape[SubSched](),
	}
)

// projShape is the shape of a projection type, with the version of its
// encoding below: a field added to the type, or a change here, makes
// earlier indexes unreadable, and they are rebuilt.
func projShape[P any]() uint64 {
	const encoding = "1"
	return xxhash.Sum64String(encoding + shape(reflect.TypeFor[P](), map[reflect.Type]bool{}))
}

// stateDemandInputs is the projection of a feed's state the budget scale
// reads: its scheduler state's, a zero State's when it has none.
func stateDemandInputs(fs *FeedState) sched.DemandInputs {
	if fs.Sched == nil {
		return sched.State{}.DemandInputs()
	}
	return fs.Sched.DemandInputs()
}

// SubSched is what the budget scale reads of a subscription.
type SubSched struct {
	Disabled  bool
	Overrides sched.Overrides
}

// subSchedOf is s's SubSched.
func subSchedOf(s *ndjson.Subscription) SubSched {
	return SubSched{Disabled: s.Disabled, Overrides: sched.OverridesOf(*s)}
}

// The projections are written field by field, fixed-size: decoding them
// for 100,000 feeds has to take a millisecond or two, not the tens the
// record codec would. TestIndexProjectionsKeepEveryField fills every field
// and checks the round trip, so a field added to either type cannot be
// left out here unnoticed.

const demandInputsSize = 1 + 10*8

func appendDemandInputs(b []byte, in sched.DemandInputs) []byte {
	var flags byte
	if in.Disabled {
		flags |= 1
	}
	if in.FetchedZero {
		flags |= 2
	}
	if in.Slot {
		flags |= 4
	}
	b = append(b, flags)
	for _, v := range [...]int64{int64(in.IntervalSec), in.FetchedSec, in.FetchedNsec, int64(in.Window), int64(in.TTLMinutes)} {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	for _, v := range [...]float64{in.RateN, in.RateT, in.BurstN, in.BurstT, in.Peak} {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

func readDemandInputs(b []byte) (in sched.DemandInputs, ok bool) {
	if len(b) != demandInputsSize {
		return in, false
	}
	in.Disabled, in.FetchedZero, in.Slot = b[0]&1 != 0, b[0]&2 != 0, b[0]&4 != 0
	u := func(i int) uint64 { return binary.LittleEndian.Uint64(b[1+8*i:]) }
	in.IntervalSec, in.FetchedSec, in.FetchedNsec, in.Window, in.TTLMinutes = int(u(0)), int64(u(1)), int64(u(2)), int(u(3)), int(u(4))
	f := func(i int) float64 { return math.Float64frombits(u(i)) }
	in.RateN, in.RateT, in.BurstN, in.BurstT, in.Peak = f(5), f(6), f(7), f(8), f(9)
	return in, true
}

// A SubSched's projection: flags, five numbers, then the cron expression
// to the end.
const subSchedFixed = 1 + 5*8

func appendSubSched(b []byte, s SubSched) []byte {
	var flags byte
	if s.Disabled {
		flags |= 1
	}
	paused := s.Overrides.PausedUntil
	if paused.IsZero() {
		flags |= 2
	}
	b = append(b, flags)
	var sec, nsec int64
	if !paused.IsZero() {
		sec, nsec = paused.Unix(), int64(paused.Nanosecond())
	}
	for _, v := range [...]int64{int64(s.Overrides.Interval), int64(s.Overrides.Min), int64(s.Overrides.Max), sec, nsec} {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	return append(b, s.Overrides.Cron...)
}

func readSubSched(b []byte) (s SubSched, ok bool) {
	return s, readSubSchedInto(&s, b)
}

// readSubSchedInto decodes b into s field by field, writing the fields
// that hold pointers (the cron expression, the pause's time) only when
// they change: SchedInputs decodes 100,000 of them into one SubSched, and
// copying a whole one each time cost a GC write barrier each.
func readSubSchedInto(s *SubSched, b []byte) bool {
	if len(b) < subSchedFixed {
		return false
	}
	u := func(i int) int64 { return int64(binary.LittleEndian.Uint64(b[1+8*i:])) }
	s.Disabled = b[0]&1 != 0
	ov := &s.Overrides
	ov.Interval, ov.Min, ov.Max = time.Duration(u(0)), time.Duration(u(1)), time.Duration(u(2))
	switch {
	case b[0]&2 == 0:
		ov.PausedUntil = time.Unix(u(3), u(4)).UTC()
	case !ov.PausedUntil.IsZero():
		ov.PausedUntil = time.Time{}
	}
	if cron := b[subSchedFixed:]; string(cron) != ov.Cron {
		ov.Cron = string(cron)
	}
	return true
}

// indexBuilder collects a snapshot's index while its records are written.
type indexBuilder struct {
	offs        []uint64
	lens        []uint32
	sums        []uint64
	keyEnd      []uint32
	projEnd     []uint32
	keys, projs []byte
	tooBig      bool
}

func (ib *indexBuilder) add(off int64, rec []byte, key string, proj []byte) {
	ib.offs = append(ib.offs, uint64(off))
	ib.lens = append(ib.lens, uint32(len(rec)))
	ib.sums = append(ib.sums, xxhash.Sum64(rec))
	ib.keys = append(ib.keys, key...)
	ib.projs = append(ib.projs, proj...)
	if len(rec) > math.MaxUint32 || len(ib.keys) > math.MaxUint32 || len(ib.projs) > math.MaxUint32 {
		ib.tooBig = true
		return
	}
	ib.keyEnd = append(ib.keyEnd, uint32(len(ib.keys)))
	ib.projEnd = append(ib.projEnd, uint32(len(ib.projs)))
}

// writeTo writes the index section to w, streaming it: at 100,000
// feeds it is some 15 MB, which a copy in memory would double. It returns
// its length and xxhash64; ok is false if it cannot be written (an
// index over 4 GB), and then nothing was.
func (ib *indexBuilder) writeTo(w io.Writer) (n int64, sum uint64, ok bool) {
	count := len(ib.offs)
	if ib.tooBig || count > math.MaxUint32 {
		return 0, 0, false
	}
	span := func(ends []uint32, i uint32) (uint32, uint32) {
		if i == 0 {
			return 0, ends[0]
		}
		return ends[i-1], ends[i]
	}
	keyOf := func(i uint32) []byte {
		a, b := span(ib.keyEnd, i)
		return ib.keys[a:b]
	}
	perm := make([]uint32, count)
	for i := range perm {
		perm[i] = uint32(i)
	}
	slices.SortStableFunc(perm, func(a, b uint32) int { return bytes.Compare(keyOf(a), keyOf(b)) })
	h := xxhash.New()
	out := io.MultiWriter(w, h)
	var buf []byte
	flush := func(force bool) {
		if len(buf) >= 64<<10 || force && len(buf) > 0 {
			out.Write(buf)
			n += int64(len(buf))
			buf = buf[:0]
		}
	}
	buf = binary.LittleEndian.AppendUint32(buf, uint32(count))
	for _, field := range []func(i uint32){
		func(i uint32) { buf = binary.LittleEndian.AppendUint32(buf, i) },
		func(i uint32) { buf = binary.LittleEndian.AppendUint64(buf, ib.offs[i]) },
		func(i uint32) { buf = binary.LittleEndian.AppendUint32(buf, ib.lens[i]) },
		func(i uint32) { buf = binary.LittleEndian.AppendUint64(buf, ib.sums[i]) },
	} {
		for _, i := range perm {
			field(i)
			flush(false)
		}
	}
	for _, ends := range [][]uint32{ib.keyEnd, ib.projEnd} {
		end := uint32(0)
		for _, i := range perm {
			a, z := span(ends, i)
			end += z - a
			buf = binary.LittleEndian.AppendUint32(buf, end)
			flush(false)
		}
	}
	for _, blob := range []struct {
		data []byte
		ends []uint32
	}{{ib.keys, ib.keyEnd}, {ib.projs, ib.projEnd}} {
		for _, i := range perm {
			a, z := span(blob.ends, i)
			buf = append(buf, blob.data[a:z]...)
			flush(false)
		}
	}
	flush(true)
	return n, h.Sum64(), true
}

// snapIndex is a snapshot's index, read and checked, with the snapshot
// file kept open for the records it points to: a snapshot renamed over
// this one meanwhile does not change what this one says. Places j are in
// key order.
type snapIndex struct {
	head  snapshotHead
	file  *os.File
	codec *codec
	// b is the index, mapped (snapmap_unix.go) until close: nothing may
	// keep a string or slice of it past that.
	b     []byte
	unmap func()
	n     int
	// Where the arrays and blobs start in b.
	recAt, offsAt, lensAt, sumsAt, keyEndAt, projEndAt, keysAt, projsAt int
	// arena holds the strings of the records decoded from it.
	arena []byte
}

var errSnapshotIndex = errors.New("storage: malformed snapshot index")

// readIndex reads and checks the snapshot's index; the snapshot's file now
// belongs to the index.
func (snap snapshot) readIndex(shape uint64) (*snapIndex, error) {
	h := snap.head
	if h.Index < 4 || h.IndexShape != shape {
		return nil, errSnapshotIndex
	}
	b, unmap, err := mapRegion(snap.file, snap.indexOff, h.Index)
	if err != nil {
		return nil, err
	}
	x := &snapIndex{head: h, file: snap.file, codec: snap.codec, b: b, unmap: unmap}
	if err := x.check(); err != nil {
		unmap()
		return nil, err
	}
	return x, nil
}

// readRegion reads n bytes of f from off.
func readRegion(f *os.File, off, n int64) (b []byte, unmap func(), err error) {
	b = make([]byte, n)
	if err := readAt(f, b, off); err != nil {
		return nil, nil, err
	}
	return b, func() {}, nil
}

// check checks the index against its checksum and its own bounds, and
// finds its parts.
func (x *snapIndex) check() error {
	b, h := x.b, x.head
	if xxhash.Sum64(b) != h.IndexSum {
		return errSnapshotIndex
	}
	n := int(binary.LittleEndian.Uint32(b))
	x.n = n
	x.recAt = 4
	x.offsAt = x.recAt + 4*n
	x.lensAt = x.offsAt + 8*n
	x.sumsAt = x.lensAt + 4*n
	x.keyEndAt = x.sumsAt + 8*n
	x.projEndAt = x.keyEndAt + 4*n
	x.keysAt = x.projEndAt + 4*n
	if x.keysAt > len(b) || n != countOf(h.Counts) {
		return errSnapshotIndex
	}
	keys, projs := 0, 0
	if n > 0 {
		keys, projs = int(x.u32(x.keyEndAt, n-1)), int(x.u32(x.projEndAt, n-1))
	}
	x.projsAt = x.keysAt + keys
	if x.projsAt+projs != len(b) {
		return errSnapshotIndex
	}
	// The checksum says the index is the one written; bounds are checked
	// anyway, so that no index, however made, can make a lookup panic.
	prevK, prevP := uint32(0), uint32(0)
	for j := range n {
		k, p := x.u32(x.keyEndAt, j), x.u32(x.projEndAt, j)
		if k < prevK || p < prevP || int(x.u32(x.recAt, j)) >= n {
			return errSnapshotIndex
		}
		prevK, prevP = k, p
	}
	return nil
}

func countOf(counts []int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

func (x *snapIndex) close() {
	x.unmap()
	x.file.Close()
}

func (x *snapIndex) u32(at, j int) uint32 { return binary.LittleEndian.Uint32(x.b[at+4*j:]) }
func (x *snapIndex) u64(at, j int) uint64 { return binary.LittleEndian.Uint64(x.b[at+8*j:]) }

func (x *snapIndex) blob(at, endAt, j int) []byte {
	start := uint32(0)
	if j > 0 {
		start = x.u32(endAt, j-1)
	}
	return x.b[at+int(start) : at+int(x.u32(endAt, j))]
}

// key is the key at place j; it shares the index's bytes, so it must not
// be kept past close (strings.Clone it).
func (x *snapIndex) key(j int) string {
	k := x.blob(x.keysAt, x.keyEndAt, j)
	return unsafe.String(unsafe.SliceData(k), len(k))
}

// proj is the projection of the record at place j.
func (x *snapIndex) proj(j int) []byte { return x.blob(x.projsAt, x.projEndAt, j) }

// rec is the number, in the snapshot, of the record at place j.
func (x *snapIndex) rec(j int) int { return int(x.u32(x.recAt, j)) }

// find returns the place of the last record (in record order) whose key
// is key.
func (x *snapIndex) find(key string) (int, bool) {
	// The first place whose key is greater than key; the place before it
	// holds the last record with key, if any.
	lo, hi := 0, x.n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if x.key(m) <= key {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 || x.key(lo-1) != key {
		return 0, false
	}
	return lo - 1, true
}

// record decodes the record at place j into p, a *T of the snapshot's
// record type, after checking its bytes.
func (x *snapIndex) record(j int, p unsafe.Pointer) error {
	off, n := int64(x.u64(x.offsAt, j)), int(x.u32(x.lensAt, j))
	buf := make([]byte, n)
	if err := readAt(x.file, buf, off); err != nil {
		return err
	}
	if xxhash.Sum64(buf) != x.u64(x.sumsAt, j) {
		return errSnapshotData
	}
	d := &decoder{s: unsafe.String(unsafe.SliceData(buf), n), arena: x.arena}
	x.codec.dec(d, p)
	x.arena = d.arena
	if d.bad || d.i != n {
		return errSnapshotData
	}
	return nil
}

// recordReader reads the records of an index's snapshot in place order:
// a block at a time when they lie in that order in the file (a whole
// snapshot written in key order), else one by one; each is checked
// against the index's checksum. What read returns is good until the next
// call.
type recordReader struct {
	x       *snapIndex
	inOrder bool
	block   []byte
	at      int64 // the file offset of block
}

func newRecordReader(x *snapIndex) *recordReader {
	r := &recordReader{x: x, inOrder: true}
	for j := 1; j < x.n && r.inOrder; j++ {
		r.inOrder = x.u64(x.offsAt, j) > x.u64(x.offsAt, j-1)
	}
	return r
}

func (r *recordReader) read(j int) ([]byte, error) {
	off, n := int64(r.x.u64(r.x.offsAt, j)), int64(r.x.u32(r.x.lensAt, j))
	if off < r.at || off+n > r.at+int64(len(r.block)) {
		size := n
		if r.inOrder {
			size = max(n, 1<<20)
		}
		if int64(cap(r.block)) < size {
			r.block = make([]byte, size)
		}
		got, err := r.x.file.ReadAt(r.block[:size], off)
		if int64(got) < n {
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		r.block, r.at = r.block[:got], off
	}
	b := r.block[off-r.at : off-r.at+n]
	if xxhash.Sum64(b) != r.x.u64(r.x.sumsAt, j) {
		return nil, errSnapshotData
	}
	return b, nil
}
