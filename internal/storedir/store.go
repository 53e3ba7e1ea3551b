// Package storedir reads and writes feedpipe's store: one directory of NDJSON
// logs, zstd payloads and small index files, laid out as docs/store.md
// says (docs/design.md#store).
package storedir

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// The store's top-level directories: the payloads, and the logs by day
// (docs/store.md). The catalog, catalog.db, is beside them.
const (
	DirRaw     = "raw"
	DirFetches = "fetches"
	DirEntries = "entries"
	DirEvents  = "events"
	DirAliases = "aliases"
	// DirDecisions holds the scheduler's decisions, a tap for people and
	// tools: nothing is rebuilt from it.
	DirDecisions = "decisions"
)

// DayLayout names the date partitions: the UTC day of the event.
const DayLayout = "2006-01-02"

// Day is the partition name for t.
func Day(t time.Time) string { return t.UTC().Format(DayLayout) }

// KeyDay is the day of a day file's key: "2026-11-21" of
// "fetches/2026-11-21.ndjson".
func KeyDay(key string) string { return strings.TrimSuffix(path.Base(key), ".ndjson") }

// Store is an open store directory. Its methods are safe for concurrent use
// by one process; across processes, readers never block and writers are
// serialised by the store lock that scripts/feed-loop holds.
//
// Every file is reached through an os.Root of the store directory, by a
// key checked by checkKey: no key, and no symbolic link planted in the
// store, can make it read or write a file outside.
type Store struct {
	Root string
	// Created is set when Open made the store directory: a new, empty store.
	Created bool

	root *os.Root

	zstdOnce sync.Once
	zenc     *zstd.Encoder
	zdec     *zstd.Decoder
	zerr     error
}

// Open opens the store at root, creating it and its directories if they do
// not exist.
func Open(root string) (*Store, error) {
	if root == "" {
		return nil, errors.New("store: no store directory given (set --store or FEEDPIPE_STORE)")
	}
	_, err := os.Stat(root)
	created := errors.Is(err, fs.ErrNotExist)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("store: cannot create %s: %w", root, unwrapPathError(err))
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("store: cannot open the store %s: %w", root, unwrapPathError(err))
	}
	s := &Store{Root: root, Created: created, root: r}
	for _, dir := range []string{DirRaw, DirFetches, DirEntries, DirEvents} {
		if err := r.MkdirAll(dir, 0o755); err != nil {
			r.Close()
			return nil, fmt.Errorf("store: cannot create %s: %w", s.Path(dir), unwrapPathError(err))
		}
	}
	return s, nil
}

// Close lets go of the store directory.
func (s *Store) Close() error { return s.root.Close() }

// ErrBadKey is returned for a key that is not a plain relative path inside
// the store.
var ErrBadKey = errors.New("not a key of a file in the store")

// checkKey accepts only a plain, slash-separated path below the store
// root: no "..", no ".", no empty or absolute part, no backslash or NUL.
// Keys are made by this package from checked parts; this is the last
// guard, should one ever not be.
func checkKey(key string) error {
	if key == "" || !filepath.IsLocal(key) || path.Clean(key) != key || strings.ContainsAny(key, "\\\x00") {
		return fmt.Errorf("store: %q: %w", key, ErrBadKey)
	}
	return nil
}

// CheckWritable fails when the store cannot be written to (read-only file
// system, no permission), so that a writer learns it before it works, not
// half-way through.
func (s *Store) CheckWritable() error {
	f, name, err := s.createTemp(".writable")
	if err != nil {
		return fmt.Errorf("cannot write to the store %s: %w", s.Root, unwrapPathError(err))
	}
	f.Close()
	return s.root.Remove(name)
}

// Path returns the path of a store key such as "entries/2026-11-21.ndjson",
// for messages: files are opened through the store's methods.
func (s *Store) Path(key string) string { return filepath.Join(s.Root, filepath.FromSlash(key)) }

// DayFile is the key of a date-partitioned log: dir/YYYY-MM-DD.ndjson.
func DayFile(dir string, t time.Time) string { return dir + "/" + Day(t) + ".ndjson" }

// DayFiles lists the keys of a partitioned log's files, oldest first.
func (s *Store) DayFiles(dir string) ([]string, error) {
	names, err := s.list(dir)
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, name := range names { // sorted, and the names sort by date
		if key := dir + "/" + name; ndjson.IsDayFile(key, dir) {
			keys = append(keys, key)
		}
	}
	return keys, nil
}

// list returns the names in the directory at key, sorted; none for a
// directory that does not exist.
func (s *Store) list(key string) ([]string, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	d, err := s.root.Open(key)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("store: list %s: %w", key, unwrapPathError(err))
	}
	slices.Sort(names)
	return names, nil
}

// ReadFile returns the content of the file at key.
func (s *Store) ReadFile(key string) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	return s.root.ReadFile(key)
}

// open opens the file at key for reading.
func (s *Store) open(key string) (*os.File, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	return s.root.Open(key)
}

// Open opens the file at key for reading, below the store's root: for a
// reader that reads many lines of one file (ReadAt on it, concurrently).
func (s *Store) Open(key string) (*os.File, error) {
	f, err := s.open(key)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	return f, nil
}

// Stat describes the file at key.
func (s *Store) Stat(key string) (fs.FileInfo, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	return s.root.Stat(key)
}

// createTemp creates a new file named after base (a key) with a random
// suffix, beside it, for the caller to fill and rename or remove. As
// os.CreateTemp, it makes the file readable by its owner only.
func (s *Store) createTemp(base string) (*os.File, string, error) {
	dir, file := path.Split(base)
	for range 100 {
		name := dir + "." + strings.TrimPrefix(file, ".") + ".tmp-" + strconv.FormatUint(rand.Uint64(), 36)
		f, err := s.root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, name, err
	}
	return nil, "", fmt.Errorf("store: no free temporary name beside %s", base)
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

// The store's other file operations, each on checked keys through the
// root.

func (s *Store) remove(key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	return s.root.Remove(key)
}

// RemoveAll deletes the file or directory tree at key; one that is not
// there is no error.
func (s *Store) RemoveAll(key string) error {
	if err := s.removeAll(key); err != nil {
		return fmt.Errorf("store: remove %s: %w", key, unwrapPathError(err))
	}
	return nil
}

func (s *Store) removeAll(key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	return s.root.RemoveAll(key)
}

// CreatePrivate creates an empty file at key readable by its owner only,
// unless there is one: for the files that hold credentials (the
// subscriptions, the catalog), which are then appended to or opened.
func (s *Store) CreatePrivate(key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	f, err := s.root.OpenFile(key, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: create %s: %w", key, unwrapPathError(err))
	}
	return f.Close()
}
