package storage

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/cespare/xxhash/v2"
)

// Snapshots. The subscription list and the state log are NDJSON, and they
// stay the store's truth, but decoding 100,000 lines of JSON takes seconds,
// and every feed-due and feed-store run needs all of them. A snapshot is a
// binary copy (snapcodec.go) of what a load decoded,
// index/<name>.snapshot, that the next load takes instead of the JSON it
// covers, reading only the lines added since. It is derived data: written
// by whichever process loaded or rewrote the file (best effort, not
// synced; a read-only store simply has none), checked against its file
// and its record type on every use, and ignored, then rewritten, when
// either does not match (the file was rewritten, the type has a new
// field) or it is torn. Deleting one loses nothing. Files under
// SnapshotMinBytes get none: they decode fast enough as they are. A
// snapshot also carries an index of its records (snapindex.go), for loads
// that need only some of them, and the state log's is kept as a chain of
// deltas (state.go).

// SnapshotMinBytes is the smallest file that gets a snapshot.
var SnapshotMinBytes int64 = 1 << 20

const (
	snapshotMagic   = "feedpipe-snapshot-v4\n"
	snapshotWindow  = 64 << 10 // bytes at the end of what a snapshot covers, hashed to recognise the file
	snapshotMaxTail = 4096     // lines past a snapshot worth rewriting it for (plus 1/64 of the records)
)

// snapshotHead says which bytes of which file a snapshot stands for.
type snapshotHead struct {
	Shape   uint64 // xxhash64 of the record type's shape
	Inode   uint64
	Covered int64    // bytes of the file covered: whole lines
	Window  uint64   // xxhash64 of the snapshotWindow bytes before Covered
	Lines   int      // records covered (the state log's lines, for compaction)
	Bad     int      // malformed lines covered
	Chunks  []int    // byte length of each chunk of records, in the order they come
	Counts  []int    // records in each chunk
	Sums    []uint64 // xxhash64 of each chunk
	// ID names the snapshot, at random, for the deltas that follow it
	// (state.go): a delta holds the records of the lines from From to
	// Covered, and Prev is the ID of the snapshot it continues (0: none,
	// a whole snapshot, From 0).
	ID   uint64
	Prev uint64
	From int64
	// Index is the byte length of the index after the chunks
	// (snapindex.go), IndexSum its xxhash64 and IndexShape the shape of
	// its projections; 0: no index.
	Index      int64
	IndexSum   uint64
	IndexShape uint64
}

// snapshotChunk is how many records a chunk holds: a load reads and
// decodes a chunk at a time (a few MB), and several at once.
const snapshotChunk = 4096

func snapshotKey(name string) string { return DirIndex + "/" + name + ".snapshot" }

var (
	headCodec = mustCodec[snapshotHead]()
	shapes    sync.Map // reflect.Type -> uint64
)

func mustCodec[T any]() *codec {
	c, err := codecFor(reflect.TypeFor[T]())
	if err != nil {
		panic(err)
	}
	return c
}

func shapeOf(t reflect.Type) uint64 {
	if h, ok := shapes.Load(t); ok {
		return h.(uint64)
	}
	h := xxhash.Sum64String(shape(t, map[reflect.Type]bool{}))
	shapes.Store(t, h)
	return h
}

// fileWindow identifies the first covered bytes of the open file f: its
// inode and a hash of the window before covered. A log only ever grows by
// appends (a torn tail is cut, but covered ends on a whole line) or is
// replaced by a rename, which changes the inode; a file rewritten in place
// would change the window.
func fileWindow(f *os.File, covered int64) (inode, window uint64, ok bool) {
	fi, err := f.Stat()
	if err != nil || fi.Size() < covered {
		return 0, 0, false
	}
	if st, isUnix := fi.Sys().(*syscall.Stat_t); isUnix {
		inode = uint64(st.Ino)
	}
	n := min(covered, snapshotWindow)
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, covered-n); err != nil {
		return 0, 0, false
	}
	return inode, xxhash.Sum64(buf), true
}

// snapshot is a snapshot found to match its file: its head and where its
// chunks and its index are, in the open snapshot file.
type snapshot struct {
	head     snapshotHead
	codec    *codec
	file     *os.File
	offs     []int64 // of each chunk
	indexOff int64
}

func (snap snapshot) close() { snap.file.Close() }

// loadSnapshot opens the snapshot at key if it covers the open file f up
// to its Covered and holds records of type T; the caller closes it.
func loadSnapshot[T any](s *Store, key string, f *os.File) (snap snapshot, ok bool) {
	t := reflect.TypeFor[T]()
	c, err := codecFor(t)
	if err != nil {
		return snap, false
	}
	sf, err := s.open(key)
	if err != nil {
		return snap, false
	}
	defer func() {
		if !ok {
			sf.Close()
		}
	}()
	// The magic, the chunks, the head, and the head's length.
	fi, err := sf.Stat()
	size := int64(0)
	if err == nil {
		size = fi.Size()
	}
	magic := make([]byte, len(snapshotMagic))
	var hl [4]byte
	if size < int64(len(magic))+4 || readAt(sf, magic, 0) != nil || string(magic) != snapshotMagic || readAt(sf, hl[:], size-4) != nil {
		return snap, false
	}
	n := int64(binary.LittleEndian.Uint32(hl[:]))
	bodyEnd := size - 4 - n
	if bodyEnd < int64(len(magic)) {
		return snap, false
	}
	hb := make([]byte, n)
	if readAt(sf, hb, bodyEnd) != nil {
		return snap, false
	}
	heads, err := decodeRecords[snapshotHead](headCodec, string(hb))
	if err != nil || len(heads) != 1 {
		return snap, false
	}
	head := heads[0]
	if head.Shape != shapeOf(t) || len(head.Counts) != len(head.Chunks) || len(head.Sums) != len(head.Chunks) ||
		head.Index < 0 || head.Index > bodyEnd-int64(len(magic)) || head.From < 0 || head.From > head.Covered {
		return snap, false
	}
	indexOff := bodyEnd - head.Index
	offs := make([]int64, len(head.Chunks))
	off := int64(len(magic))
	for i, c := range head.Chunks {
		if c < 0 || head.Counts[i] < 0 || head.Counts[i] > c || int64(c) > indexOff-off {
			return snap, false
		}
		offs[i] = off
		off += int64(c)
	}
	if off != indexOff {
		return snap, false
	}
	inode, window, found := fileWindow(f, head.Covered)
	if !found || inode != head.Inode || window != head.Window {
		return snap, false
	}
	return snapshot{head: head, codec: c, file: sf, offs: offs, indexOff: indexOff}, true
}

func readAt(f *os.File, b []byte, off int64) error {
	_, err := f.ReadAt(b, off)
	return err
}

// chunk reads chunk i into buf, checks it, and returns it as a string
// sharing buf's bytes: decoding copies what it keeps, so buf can be
// reused once it is decoded.
func (snap snapshot) chunk(i int, buf *[]byte) (string, error) {
	n := snap.head.Chunks[i]
	if cap(*buf) < n {
		*buf = make([]byte, n)
	}
	b := (*buf)[:n]
	if err := readAt(snap.file, b, snap.offs[i]); err != nil {
		return "", err
	}
	if xxhash.Sum64(b) != snap.head.Sums[i] {
		return "", errSnapshotData
	}
	return unsafe.String(unsafe.SliceData(b), n), nil
}

// snapshotRecords decodes the snapshot's records, several chunks at once,
// into one slice with room for extra more.
func snapshotRecords[T any](snap snapshot, extra int) ([]T, error) {
	offs := make([]int, len(snap.head.Counts)+1)
	for i, n := range snap.head.Counts {
		offs[i+1] = offs[i] + n
	}
	all := make([]T, offs[len(offs)-1], offs[len(offs)-1]+extra)
	var (
		wg   sync.WaitGroup
		next atomic.Int64
		errs = make([]error, runtime.GOMAXPROCS(0))
	)
	for w := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for {
				i := int(next.Add(1)) - 1
				if i >= len(snap.offs) || errs[w] != nil {
					return
				}
				part, err := snap.chunk(i, &buf)
				if err == nil {
					err = decodeInto(snap.codec, part, all[offs[i]:offs[i+1]])
				}
				errs[w] = err
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return all, nil
}

// eachSnapshotRecord decodes the snapshot's records one by one into one
// value and calls fn with it.
func eachSnapshotRecord[T any](snap snapshot, fn func(*T)) error {
	var (
		v   T
		buf []byte
	)
	for i := range snap.offs {
		part, err := snap.chunk(i, &buf)
		if err != nil {
			return err
		}
		if err := eachRecord(snap.codec, part, func(int) *T { return &v }, fn); err != nil {
			return err
		}
	}
	return nil
}

// snapshotSpec says what a snapshot covers: the file up to covered, with
// lines records and bad malformed lines in all; for a delta, from where
// (the end of the snapshot prev, whose ID it names).
type snapshotSpec struct {
	covered    int64
	lines, bad int
	prev       uint64
	from       int64
}

// writeSnapshot saves the count records of all, and their index when ix
// is not nil, as the snapshot at key of the open file f, streaming them to
// the file: a snapshot costs no more memory than a buffer and its index.
// It returns the head written; ok is false when nothing was (failures are
// otherwise ignored: the next load reads the JSON).
func writeSnapshot[T any](s *Store, key string, f *os.File, spec snapshotSpec, count int, all iter.Seq[*T], ix *indexer[T]) (head snapshotHead, ok bool) {
	c, err := codecFor(reflect.TypeFor[T]())
	if err != nil {
		return head, false
	}
	var (
		buf, proj []byte
		ixShape   uint64
	)
	if ix != nil {
		ixShape = ix.shape
	}
	recs := func(yield func(rawRecord) bool) {
		for r := range all {
			buf = c.enc(buf[:0], unsafe.Pointer(r))
			rec := rawRecord{b: buf}
			if ix != nil {
				proj = ix.proj(proj[:0], r)
				rec.key, rec.proj = ix.key(r), proj
			}
			if !yield(rec) {
				return
			}
		}
	}
	return writeSnapshotRaw(s, key, f, shapeOf(reflect.TypeFor[T]()), spec, count, recs, ix != nil, ixShape)
}

// rawRecord is a record as the codec writes it, with its key and
// projection for the index.
type rawRecord struct {
	b, proj []byte
	key     string
}

// writeSnapshotRaw is writeSnapshot of records encoded already, of the
// type whose shape is shape; with indexed, an index of projections of
// shape ixShape.
func writeSnapshotRaw(s *Store, key string, f *os.File, shape uint64, spec snapshotSpec, count int, recs iter.Seq[rawRecord], indexed bool, ixShape uint64) (head snapshotHead, ok bool) {
	if spec.covered < SnapshotMinBytes {
		return head, false
	}
	inode, window, ok := fileWindow(f, spec.covered)
	if !ok {
		return head, false
	}
	tmp, tmpKey, err := s.createTemp(key)
	if err != nil {
		return head, false
	}
	defer s.remove(tmpKey) // after the rename, there is nothing to remove
	tmp.Chmod(0o644)       // readable by whoever may read the store's files
	w := bufio.NewWriterSize(tmp, 1<<20)
	w.WriteString(snapshotMagic)
	head = snapshotHead{Shape: shape, Inode: inode, Covered: spec.covered, Window: window, Lines: spec.lines, Bad: spec.bad,
		ID: newSnapshotID(), Prev: spec.prev, From: spec.from}
	h := xxhash.New()
	var (
		buf []byte
		ib  indexBuilder
		pos = int64(len(snapshotMagic)) // where buf starts in the file
	)
	emit := func() {
		w.Write(buf)
		h.Write(buf)
		head.Chunks[len(head.Chunks)-1] += len(buf)
		pos += int64(len(buf))
		buf = buf[:0]
	}
	i := 0
	for r := range recs {
		if i == count {
			i++ // more than promised: give up
			break
		}
		if i%snapshotChunk == 0 {
			if len(head.Chunks) > 0 {
				emit()
				head.Sums = append(head.Sums, h.Sum64())
				h.Reset()
			}
			n := min(snapshotChunk, count-i)
			head.Chunks, head.Counts = append(head.Chunks, 0), append(head.Counts, n)
			buf = appendLen(buf, n, false)
		}
		if indexed {
			ib.add(pos+int64(len(buf)), r.b, r.key, r.proj)
		}
		buf = append(buf, r.b...)
		if len(buf) > 256<<10 {
			emit()
		}
		i++
	}
	if i != count {
		tmp.Close()
		return head, false
	}
	if len(head.Chunks) > 0 {
		emit()
		head.Sums = append(head.Sums, h.Sum64())
	}
	if indexed {
		if n, sum, ok := ib.writeTo(w); ok {
			head.Index, head.IndexSum, head.IndexShape = n, sum, ixShape
		}
	}
	hb := encodeRecords(headCodec, nil, []snapshotHead{head})
	w.Write(hb)
	w.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(hb))))
	if w.Flush() != nil || tmp.Close() != nil {
		return head, false
	}
	if s.rename(tmpKey, key) != nil {
		return head, false
	}
	return head, true
}

// newSnapshotID is a random, non-zero snapshot ID.
func newSnapshotID() uint64 {
	for {
		if id := rand.Uint64(); id != 0 {
			return id
		}
	}
}

// sliceRecords yields pointers to the elements of records.
func sliceRecords[T any](records []T) iter.Seq[*T] {
	return func(yield func(*T) bool) {
		for i := range records {
			if !yield(&records[i]) {
				return
			}
		}
	}
}

// openLog opens the file at key for a load; nil, nil if there is none.
func (s *Store) openLog(key string) (*os.File, error) {
	f, err := s.open(key)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	return f, nil
}
