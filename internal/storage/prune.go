package storage

import (
	"errors"
	"fmt"
	"os"
	"path"
	"sort"
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
			return nil, fmt.Errorf("storage: %w", err)
		}
		list, err := d.ReadDir(-1)
		d.Close()
		if err != nil {
			return nil, fmt.Errorf("storage: %w", err)
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
				return nil, fmt.Errorf("storage: %w", err)
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
		return fmt.Errorf("storage: remove %s: %w", key, unwrapPathError(err))
	}
	if dir := path.Dir(key); path.Dir(dir) == DirRaw {
		s.remove(dir) // fails, as it should, unless empty
	}
	return nil
}

// IndexedFeeds lists the feeds that have an entry index, sorted.
func (s *Store) IndexedFeeds() ([]string, error) {
	var feeds []string
	seen := map[string]bool{}
	for _, ext := range []string{".seen", ".ndjson"} {
		keys, err := s.glob(DirIndex + "/*/*" + ext)
		if err != nil {
			return nil, err
		}
		for _, key := range keys {
			id := strings.TrimSuffix(path.Base(key), ext)
			if !seen[id] {
				seen[id] = true
				feeds = append(feeds, id)
			}
		}
	}
	sort.Strings(feeds)
	return feeds, nil
}

// SeenBefore lists the entries whose latest version was last seen before
// t; an entry with no last_seen is not listed.
func (ix *FeedIndex) SeenBefore(t time.Time) []string {
	var uids []string
	for uid, s := range ix.latest {
		if !s.LastSeen.IsZero() && s.LastSeen.Before(t) {
			uids = append(uids, uid)
		}
	}
	sort.Strings(uids)
	return uids
}

// ForgetSeen rewrites the entry index of a feed without the records of
// the entries in forget (every version of each): the seen-ids TTL of
// feed-store prune --seen-keep. Each file is replaced whole, so a reader
// sees it before or after, and one emptied is removed. The files are not
// synced: the caller syncs the store. The caller holds the store lock.
func (s *Store) ForgetSeen(feedID string, forget map[string]bool) error {
	binKey := indexBinKey(feedID)
	data, err := s.ReadFile(binKey)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("storage: %w", err)
	}
	if err == nil {
		kept := make([]byte, 0, len(data))
		for r := data; len(r) >= seenRecordSize; r = r[seenRecordSize:] {
			e, _, ok := parseSeen(r[:seenRecordSize], nil)
			if ok && !forget[e.UID] {
				kept = append(kept, r[:seenRecordSize]...)
			}
		}
		if err := s.replaceIndexFile(binKey, kept, len(kept) != len(data)); err != nil {
			return err
		}
	}
	key := indexKey(feedID)
	var kept []byte
	changed := false
	if _, _, err := s.ReadLog(key, 0, func(l ndjson.Line) error {
		var e Seen
		if l.Type == TypeSeen && l.Decode(&e) == nil && forget[e.UID] {
			changed = true
			return nil
		}
		kept = append(append(kept, l.Raw...), '\n')
		return nil
	}); err != nil {
		return err
	}
	return s.replaceIndexFile(key, kept, changed)
}

func (s *Store) replaceIndexFile(key string, data []byte, changed bool) error {
	switch {
	case !changed:
		return nil
	case len(data) == 0:
		return s.Remove(key)
	default:
		return s.writeFileAtomic(key, data, Lazy)
	}
}
