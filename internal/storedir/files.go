package storedir

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Durability says whether a write must be on disk before the call returns.
type Durability bool

const (
	Durable Durability = true  // synced before the call returns
	Lazy    Durability = false // on disk after the next Store.Sync
)

// AppendLines appends data, which must be whole '\n'-terminated lines, to the
// file at key in a single write, synced if d is Durable. It returns the
// offset at which data begins. If a crash left the file ending in a torn
// line, the torn fragment is cut off first: no reader ever meets a broken
// line. The caller must hold the lock of the files it appends to (Lock):
// with another writer at work, a line it is writing would look torn.
func (s *Store) AppendLines(key string, data []byte, d Durability) (offset int64, err error) {
	f, err := s.openAppend(key)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	size, err := cutTornTail(f, key)
	if err != nil {
		return 0, err
	}
	if _, err := f.Write(data); err != nil {
		// A write cut short (a full disk) leaves part of data behind:
		// take it back, so that the file is as it was.
		f.Truncate(size)
		return 0, fmt.Errorf("store: append to %s: %w", key, unwrapPathError(err))
	}
	if d == Durable {
		if err := f.Sync(); err != nil {
			return 0, fmt.Errorf("store: sync %s: %w", key, unwrapPathError(err))
		}
	}
	if err := f.Close(); err != nil {
		return 0, fmt.Errorf("store: close %s: %w", key, unwrapPathError(err))
	}
	if size == 0 && d == Durable {
		// A new file: make its name durable too.
		if err := s.syncDir(path.Dir(key)); err != nil {
			return 0, err
		}
	}
	return size, nil
}

// openAppend opens the file at key for appending (and reading back its
// tail), creating it and its directory if need be. The directory is made
// only when the open says it is missing: a cycle appends to thousands of
// files whose directories exist, and a stat for each was a tenth of the
// cost.
func (s *Store) openAppend(key string) (*os.File, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	const flags = os.O_RDWR | os.O_APPEND | os.O_CREATE
	f, err := s.root.OpenFile(key, flags, 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		if err = s.root.MkdirAll(path.Dir(key), 0o755); err == nil {
			f, err = s.root.OpenFile(key, flags, 0o644)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	return f, nil
}

// cutTornTail truncates the file after its last newline, if anything
// follows it, and returns the size it leaves.
func cutTornTail(f *os.File, key string) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("store: %w", err)
	}
	size := st.Size()
	if size == 0 {
		return 0, nil
	}
	buf := make([]byte, min(size, 64<<10))
	end := size
	for end > 0 {
		n := min(int64(len(buf)), end)
		if _, err := f.ReadAt(buf[:n], end-n); err != nil {
			return 0, fmt.Errorf("store: read end of %s: %w", key, err)
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			end = end - n + int64(i) + 1
			break
		}
		end -= n
	}
	if end == size {
		return size, nil
	}
	if err := f.Truncate(end); err != nil {
		return 0, fmt.Errorf("store: cut the torn last line of %s: %w", key, unwrapPathError(err))
	}
	return end, nil
}

// WriteFileAtomic replaces the file at key with data: write to a temporary
// file beside it, sync, rename over the old one, sync the directory. A
// reader sees the old file or the new one, never a mix.
func (s *Store) WriteFileAtomic(key string, data []byte) error {
	return s.writeFileAtomic(key, data, Durable)
}

func (s *Store) writeFileAtomic(key string, data []byte, d Durability) error {
	return s.writeAtomic(key, d, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// writeAtomic is writeFileAtomic for a file that fill writes as a stream.
func (s *Store) writeAtomic(key string, d Durability, fill func(io.Writer) error) error {
	if err := checkKey(key); err != nil {
		return err
	}
	dir := path.Dir(key)
	if err := s.root.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	tmp, name, err := s.createTemp(key)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	fail := func(err error) error {
		tmp.Close()
		s.root.Remove(name)
		return fmt.Errorf("store: write %s: %w", key, unwrapPathError(err))
	}
	if err := fill(tmp); err != nil {
		return fail(err)
	}
	if d == Durable {
		if err := tmp.Sync(); err != nil {
			return fail(err)
		}
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if err := s.root.Rename(name, key); err != nil {
		s.root.Remove(name)
		return fmt.Errorf("store: %w", err)
	}
	if d == Durable {
		return s.syncDir(dir)
	}
	return nil
}

func (s *Store) syncDir(dir string) error {
	d, err := s.root.Open(dir)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("store: sync directory %s: %w", s.Path(dir), unwrapPathError(err))
	}
	return nil
}

// ReadLog calls fn for every complete record of the NDJSON file at key, from
// byte offset from. A missing file has no records. A torn last line (no
// newline: a crash mid-append, or a writer still at work) is not a record.
// Malformed lines are counted in bad and skipped. It returns the offset just
// past the last complete line.
func (s *Store) ReadLog(key string, from int64, fn func(ndjson.Line) error) (end int64, bad int, err error) {
	f, err := s.open(key)
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("store: %w", err)
	}
	defer f.Close()
	return readLog(f, key, from, func(_, _ int64, l ndjson.Line) error { return fn(l) })
}

// FollowLogs is ReadLogsSince for a reader that needs where each line is:
// fn gets the key of its file and the offsets of its start and of its end
// (past the newline).
func (s *Store) FollowLogs(dir, file string, offset int64, fn func(key string, start, end int64, l ndjson.Line) error) (endFile string, endOffset int64, err error) {
	files, err := s.DayFiles(dir)
	if err != nil {
		return "", 0, err
	}
	endFile, endOffset = file, offset
	for _, key := range files {
		if key < file {
			continue
		}
		from := int64(0)
		if key == file {
			from = offset
		}
		f, err := s.open(key)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", 0, fmt.Errorf("store: %w", err)
		}
		off, _, err := readLog(f, key, from, func(start, end int64, l ndjson.Line) error { return fn(key, start, end, l) })
		f.Close()
		if err != nil {
			return "", 0, err
		}
		endFile, endOffset = key, off
	}
	return endFile, endOffset, nil
}

// ReadAt reads length bytes at offset of the file at key: a line whose
// place an index keeps.
func (s *Store) ReadAt(key string, offset, length int64) ([]byte, error) {
	f, err := s.open(key)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	defer f.Close()
	b := make([]byte, length)
	if _, err := f.ReadAt(b, offset); err != nil {
		return nil, fmt.Errorf("store: read %s at %d: %w", key, offset, err)
	}
	return b, nil
}

// ReadLogsSince reads the day files of dir from a position on: the rest
// of file from offset, then every later day file whole, calling fn with
// each complete line and the key of its file. It returns the position just
// past the last complete line: (file, offset) again when nothing is past it.
func (s *Store) ReadLogsSince(dir, file string, offset int64, fn func(key string, l ndjson.Line) error) (endFile string, endOffset int64, err error) {
	return s.FollowLogs(dir, file, offset, func(key string, _, _ int64, l ndjson.Line) error { return fn(key, l) })
}

// readLog is ReadLog on an open file; fn also gets where each line starts
// and ends.
func readLog(f *os.File, key string, from int64, fn func(start, end int64, l ndjson.Line) error) (end int64, bad int, err error) {
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return 0, 0, fmt.Errorf("store: %w", err)
	}
	cr := &countingReader{r: f}
	rd := ndjson.NewReader(cr)
	end = from
	for {
		line, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return end, bad, nil
		}
		var le *ndjson.LineError
		if err != nil && !errors.As(err, &le) {
			return end, bad, fmt.Errorf("store: read %s: %w", key, err)
		}
		if line.Unterminated {
			return end, bad, nil
		}
		start := end
		end = from + cr.n - int64(rd.Buffered())
		if le != nil {
			bad++
			continue
		}
		if err := fn(start, end, line); err != nil {
			return end, bad, err
		}
	}
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// ReadLogLines is ReadLog for a reader that needs where each line is: fn
// gets the offsets of its start and of its end (past the newline).
func (s *Store) ReadLogLines(key string, fn func(start, end int64, l ndjson.Line) error) error {
	f, err := s.open(key)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer f.Close()
	_, _, err = readLog(f, key, 0, fn)
	return err
}
