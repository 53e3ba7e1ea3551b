package storedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// The media of entries (feed-media, docs/store.md): each file stored once,
// named by its SHA-256, at media/<its first two hex digits>/<sha256>, beside
// the day files of media records; a download under way is a partial file,
// media/partial/<id>, that becomes a stored file only whole, synced and
// checked, by a rename: no reader ever sees a file half-written.
const (
	DirMedia    = "media"
	dirPartials = DirMedia + "/partial"
)

// MediaLock is held by feed-media while it commits a file and its records,
// and by prune while it deletes media: a file prune finds unused is never
// one a download is giving a new use meanwhile.
const MediaLock = "lock.media"

// MediaRunLock is held by a feed-media run for as long as it downloads: one
// run per store.
const MediaRunLock = "lock.media-run"

// partialKey is the key of the partial file of download id.
func partialKey(id int64) string { return dirPartials + "/" + strconv.FormatInt(id, 10) }

// OpenPartial opens the partial file of download id (a positive number,
// the catalog's), creating it empty if there is none, to read what it
// holds and append to it.
func (s *Store) OpenPartial(id int64) (*os.File, error) {
	if id <= 0 {
		return nil, fmt.Errorf("store: %d is no download's id", id)
	}
	key := partialKey(id)
	f, err := s.root.OpenFile(key, os.O_RDWR|os.O_CREATE, 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		if err := s.root.MkdirAll(dirPartials, 0o755); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		f, err = s.root.OpenFile(key, os.O_RDWR|os.O_CREATE, 0o644)
	}
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	return f, nil
}

// RemovePartial deletes the partial file of download id, if there is one.
func (s *Store) RemovePartial(id int64) error {
	if err := s.remove(partialKey(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("store: remove %s: %w", partialKey(id), unwrapPathError(err))
	}
	return nil
}

// Partials lists the ids of the partial files there are.
func (s *Store) Partials() ([]int64, error) {
	names, err := s.list(dirPartials)
	if err != nil {
		return nil, err
	}
	var ids []int64
	for _, n := range names {
		if id, err := strconv.ParseInt(n, 10, 64); err == nil && id > 0 && strconv.FormatInt(id, 10) == n {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// CommitMedia makes the partial file f of download id, whose content's
// SHA-256 is sum (the caller checked it), the stored file
// media/ab/<sum>: synced, renamed, its directory synced. A file stored
// already with that content is kept, and the partial deleted. It returns
// the file's key; f is closed.
func (s *Store) CommitMedia(f *os.File, id int64, sum string) (string, error) {
	defer f.Close()
	if !ndjson.IsSHA256(sum) {
		return "", fmt.Errorf("store: %q is no SHA-256: %w", sum, ErrBadKey)
	}
	key := ndjson.MediaKey(sum)
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("store: sync %s: %w", partialKey(id), unwrapPathError(err))
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("store: close %s: %w", partialKey(id), unwrapPathError(err))
	}
	dir := path.Dir(key)
	if _, err := s.root.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := s.root.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("store: %w", err)
		}
		if err := s.syncDir(DirMedia); err != nil {
			return "", err
		}
	}
	if _, err := s.root.Stat(key); err == nil {
		return key, s.RemovePartial(id) // the same bytes, stored already
	}
	if err := s.root.Rename(partialKey(id), key); err != nil {
		return "", fmt.Errorf("store: %w", err)
	}
	return key, s.syncDir(dir)
}

// OpenMedia opens the stored file whose SHA-256 is sum, for reading.
func (s *Store) OpenMedia(sum string) (*os.File, error) {
	if !ndjson.IsSHA256(sum) {
		return nil, fmt.Errorf("store: %q is no SHA-256: %w", sum, ErrBadKey)
	}
	return s.root.Open(ndjson.MediaKey(sum))
}

// MediaFile is one stored media file.
type MediaFile struct {
	Key    string // media/ab/<sha256>
	SHA256 string
	Size   int64
}

// MediaFiles lists the stored media files, by key.
func (s *Store) MediaFiles() ([]MediaFile, error) {
	dirs, err := s.list(DirMedia)
	if err != nil {
		return nil, err
	}
	var out []MediaFile
	for _, d := range dirs {
		if len(d) != 2 || strings.Trim(d, "0123456789abcdef") != "" {
			continue // the day files, partial/
		}
		names, err := s.list(DirMedia + "/" + d)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			key := DirMedia + "/" + d + "/" + n
			if !ndjson.IsMediaKey(key) {
				continue
			}
			info, err := s.root.Stat(key)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("store: %w", err)
			}
			out = append(out, MediaFile{Key: key, SHA256: n, Size: info.Size()})
		}
	}
	return out, nil
}

// RemoveMedia deletes the stored media file at key, and its directory if
// that leaves it empty. A file already gone is not an error.
func (s *Store) RemoveMedia(key string) error {
	if !ndjson.IsMediaKey(key) {
		return fmt.Errorf("store: %q is not the key of a media file: %w", key, ErrBadKey)
	}
	if err := s.remove(key); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("store: remove %s: %w", key, unwrapPathError(err))
	}
	s.remove(path.Dir(key)) // fails, as it should, unless empty
	return nil
}
