package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"sync"
	"syscall"

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
// SnapshotMinBytes get none: they decode fast enough as they are.

// SnapshotMinBytes is the smallest file that gets a snapshot.
var SnapshotMinBytes int64 = 1 << 20

const (
	snapshotMagic   = "feedpipe-snapshot-v1\n"
	snapshotWindow  = 64 << 10 // bytes at the end of what a snapshot covers, hashed to recognise the file
	snapshotMaxTail = 4096     // lines past a snapshot worth rewriting it for (plus 1/64 of the records)
)

// snapshotHead says which bytes of which file a snapshot stands for.
type snapshotHead struct {
	Shape   uint64 // xxhash64 of the record type's shape
	Inode   uint64
	Covered int64  // bytes of the file covered: whole lines
	Window  uint64 // xxhash64 of the snapshotWindow bytes before Covered
	Lines   int    // records covered (the state log's lines, for compaction)
	Bad     int    // malformed lines covered
	Chunks  []int  // byte length of each chunk of records that follows
	Sum     uint64 // xxhash64 of the chunks
}

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

// loadSnapshot decodes the snapshot called name if it covers the start of
// the open file f, into one []T per chunk.
func loadSnapshot[T any](s *Store, name string, f *os.File) (head snapshotHead, chunks [][]T, ok bool) {
	t := reflect.TypeFor[T]()
	c, err := codecFor(t)
	if err != nil {
		return head, nil, false
	}
	data, err := os.ReadFile(s.Path(snapshotKey(name)))
	if err != nil {
		return head, nil, false
	}
	rest, found := bytes.CutPrefix(data, []byte(snapshotMagic))
	if !found || len(rest) < 4 {
		return head, nil, false
	}
	n := binary.LittleEndian.Uint32(rest)
	if uint64(n) > uint64(len(rest)-4) {
		return head, nil, false
	}
	heads, err := decodeRecords[snapshotHead](headCodec, string(rest[4:4+n]))
	if err != nil || len(heads) != 1 {
		return head, nil, false
	}
	head = heads[0]
	body := rest[4+n:]
	total := 0
	for _, c := range head.Chunks {
		if c < 0 || c > len(body) {
			return head, nil, false
		}
		total += c
	}
	if head.Shape != shapeOf(t) || total != len(body) || xxhash.Sum64(body) != head.Sum {
		return head, nil, false
	}
	inode, window, found := fileWindow(f, head.Covered)
	if !found || inode != head.Inode || window != head.Window {
		return head, nil, false
	}
	// One string holds every string of the records; the chunks decode in
	// parallel.
	text := string(body)
	chunks = make([][]T, len(head.Chunks))
	errs := make([]error, len(head.Chunks))
	var wg sync.WaitGroup
	off := 0
	for i, n := range head.Chunks {
		wg.Add(1)
		go func(i int, part string) {
			defer wg.Done()
			chunks[i], errs[i] = decodeRecords[T](c, part)
		}(i, text[off:off+n])
		off += n
	}
	wg.Wait()
	if errors.Join(errs...) != nil {
		return head, nil, false
	}
	return head, chunks, true
}

// writeSnapshot saves records as the snapshot called name of the open file
// f up to covered. Failures are ignored: the next load reads the JSON.
func writeSnapshot[T any](s *Store, name string, f *os.File, covered int64, lines, bad int, records []T) {
	t := reflect.TypeFor[T]()
	c, err := codecFor(t)
	if covered < SnapshotMinBytes || err != nil {
		return
	}
	inode, window, ok := fileWindow(f, covered)
	if !ok {
		return
	}
	n := max(1, min(runtime.GOMAXPROCS(0), len(records)/1024))
	parts := make([][]byte, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			parts[i] = encodeRecords(c, nil, records[i*len(records)/n:(i+1)*len(records)/n])
		}(i)
	}
	wg.Wait()
	head := snapshotHead{Shape: shapeOf(t), Inode: inode, Covered: covered, Window: window, Lines: lines, Bad: bad}
	h := xxhash.New()
	for _, p := range parts {
		head.Chunks = append(head.Chunks, len(p))
		h.Write(p)
	}
	head.Sum = h.Sum64()
	hb := encodeRecords(headCodec, nil, []snapshotHead{head})
	out := make([]byte, 0, len(snapshotMagic)+4+len(hb)+int(covered/4))
	out = append(out, snapshotMagic...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(hb)))
	out = append(out, hb...)
	for _, p := range parts {
		out = append(out, p...)
	}
	writeFileAtomic(s.Path(snapshotKey(name)), out, Lazy)
}

// openLog opens the file at key for a load; nil, nil if there is none.
func (s *Store) openLog(key string) (*os.File, error) {
	f, err := os.Open(s.Path(key))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	return f, nil
}
