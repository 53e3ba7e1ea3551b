// Package storage reads and writes feedpipe's store: one directory of NDJSON
// logs, zstd payloads and small index files, laid out by DESIGN.md §3.
package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"
)

// The store's top-level directories.
const (
	DirState   = "state"
	DirRaw     = "raw"
	DirFetches = "fetches"
	DirEntries = "entries"
	DirEvents  = "events"
	DirIndex   = "index"
)

// DayLayout names the date partitions: the UTC day of the event.
const DayLayout = "2006-01-02"

// Day is the partition name for t.
func Day(t time.Time) string { return t.UTC().Format(DayLayout) }

// Store is an open store directory. Its methods are safe for concurrent use
// by one process; across processes, readers never block and writers are
// serialised by the store lock that scripts/feed-loop holds.
type Store struct {
	Root string
	// Created is set when Open made the store directory: a new, empty store.
	Created bool

	zstdOnce sync.Once
	zenc     *zstd.Encoder
	zdec     *zstd.Decoder
	zerr     error
}

// Open opens the store at root, creating it and its directories if they do
// not exist.
func Open(root string) (*Store, error) {
	if root == "" {
		return nil, errors.New("storage: no store directory given (set --store or FEEDPIPE_STORE)")
	}
	_, err := os.Stat(root)
	created := errors.Is(err, fs.ErrNotExist)
	for _, dir := range []string{"", DirState, DirRaw, DirFetches, DirEntries, DirEvents, DirIndex} {
		p := filepath.Join(root, dir)
		if err := os.MkdirAll(p, 0o755); err != nil {
			return nil, fmt.Errorf("storage: cannot create %s: %w", p, unwrapPathError(err))
		}
	}
	return &Store{Root: root, Created: created}, nil
}

// CheckWritable fails when the store cannot be written to (read-only file
// system, no permission), so that a writer learns it before it works, not
// half-way through.
func (s *Store) CheckWritable() error {
	f, err := os.CreateTemp(s.Root, ".writable-*")
	if err != nil {
		return fmt.Errorf("storage: cannot write to the store %s: %w", s.Root, unwrapPathError(err))
	}
	f.Close()
	return os.Remove(f.Name())
}

// Path returns the absolute path of a store key such as
// "entries/2026-11-21.ndjson".
func (s *Store) Path(key string) string { return filepath.Join(s.Root, filepath.FromSlash(key)) }

// DayFile is the key of a date-partitioned log: dir/YYYY-MM-DD.ndjson.
func DayFile(dir string, t time.Time) string { return dir + "/" + Day(t) + ".ndjson" }

// DayFiles lists the keys of a partitioned log's files, oldest first.
func (s *Store) DayFiles(dir string) ([]string, error) {
	matches, err := filepath.Glob(filepath.Join(s.Root, dir, "????-??-??.ndjson"))
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(matches))
	for i, m := range matches {
		keys[i] = dir + "/" + filepath.Base(m) // Glob sorts, and the names sort by date
	}
	return keys, nil
}

func (s *Store) codecs() (*zstd.Encoder, *zstd.Decoder, error) {
	s.zstdOnce.Do(func() {
		// SpeedFastest: half the CPU of SpeedDefault on a feed-sized
		// payload (its tables stay in cache), for 3-5% more bytes, which
		// a payload under 4 KB compressed does not even take on disk.
		s.zenc, s.zerr = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
		if s.zerr != nil {
			return
		}
		s.zdec, s.zerr = zstd.NewReader(nil, zstd.WithDecoderMaxMemory(1<<30))
	})
	return s.zenc, s.zdec, s.zerr
}

// unwrapPathError drops the *fs.PathError wrapper when the message already
// names the path.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
