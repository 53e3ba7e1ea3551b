package storedir

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// RawFile is one stored payload, as the raw store lists it.
type RawFile struct {
	Key     string // raw/YYYY-MM-DD/<sha256>.zst
	Day     string // YYYY-MM-DD
	Size    int64
	ModTime time.Time
}

// RawFiles lists the stored payloads, oldest day first.
func (s *Store) RawFiles() ([]RawFile, error) {
	days, err := s.list(DirRaw)
	if err != nil {
		return nil, err
	}
	var files []RawFile
	for _, day := range days {
		if !ndjson.IsDay(day) {
			continue
		}
		d, err := s.open(DirRaw + "/" + day)
		if err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		list, err := d.ReadDir(-1)
		d.Close()
		if err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
		for _, d := range list {
			if d.IsDir() || !strings.HasSuffix(d.Name(), ".zst") {
				continue
			}
			info, err := d.Info()
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("store: %w", err)
			}
			files = append(files, RawFile{Key: DirRaw + "/" + day + "/" + d.Name(), Day: day, Size: info.Size(), ModTime: info.ModTime()})
		}
	}
	return files, nil
}

// Size is the size in bytes of the file at key; 0 if there is none.
func (s *Store) Size(key string) int64 {
	info, err := s.Stat(key)
	if err != nil {
		return 0
	}
	return info.Size()
}

// Remove deletes the file at key, and its directory if that leaves it
// empty (a day of raw/). A file already gone is not an error.
func (s *Store) Remove(key string) error {
	if err := s.remove(key); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("store: remove %s: %w", key, unwrapPathError(err))
	}
	if dir := path.Dir(key); path.Dir(dir) == DirRaw {
		s.remove(dir) // fails, as it should, unless empty
	}
	return nil
}
