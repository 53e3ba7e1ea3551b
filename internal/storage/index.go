package storage

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// The entry index: for each feed, index/<2 hex>/<feed_id>.ndjson holds one
// line per stored entry version, the last line of a uid winning. Dedup of a
// fetch reads only its own feed's small file, so its cost does not grow with
// the store. The index is derived from entries/: it is written after the
// entries it describes are durable, and CatchUpIndex rebuilds whatever a
// crash kept from being written.

// TypeSeen is the record type of an index line.
const TypeSeen = "seen"

// Seen is the index's record of one stored entry.
type Seen struct {
	ndjson.Header
	UID       string      `json:"uid"`
	Hash      string      `json:"hash"`
	FirstSeen ndjson.Time `json:"first_seen"`
	LastSeen  ndjson.Time `json:"last_seen"`
	SeenCount int         `json:"seen_count"`
}

func indexKey(feedID string) string {
	shard := "xx"
	if len(feedID) >= 2 {
		shard = feedID[:2]
	}
	return DirIndex + "/" + shard + "/" + feedID + ".ndjson"
}

// FeedIndex is the index of one feed: every entry version stored, and the
// latest version of each entry.
type FeedIndex struct {
	latest   map[string]Seen    // uid -> its latest version
	versions map[[2]string]bool // (uid, content hash) of every version stored
}

// NewFeedIndex returns an empty index.
func NewFeedIndex() *FeedIndex {
	return &FeedIndex{latest: map[string]Seen{}, versions: map[[2]string]bool{}}
}

// Add records a stored version (in memory; PutSeen writes it).
func (ix *FeedIndex) Add(s Seen) {
	ix.latest[s.UID] = s
	ix.versions[[2]string{s.UID, s.Hash}] = true
}

// Len is the number of entries (not versions).
func (ix *FeedIndex) Len() int { return len(ix.latest) }

// Latest returns the latest stored version of an entry.
func (ix *FeedIndex) Latest(uid string) (Seen, bool) {
	s, ok := ix.latest[uid]
	return s, ok
}

// Judge says what storing this version of an entry would be:
// ndjson.StatusNew for an entry never stored, ndjson.StatusUpdated for a
// new version of a stored one, "" for a version stored already. A version
// is stored once, whenever it comes back: a replay of old fetches, or a
// publisher reverting an edit, announces nothing.
func (ix *FeedIndex) Judge(uid, hash string) string {
	switch _, known := ix.latest[uid]; {
	case ix.versions[[2]string{uid, hash}]:
		return ""
	case known:
		return ndjson.StatusUpdated
	default:
		return ndjson.StatusNew
	}
}

// SeenEntries returns the index of one feed.
func (s *Store) SeenEntries(feedID string) (*FeedIndex, error) {
	ix := NewFeedIndex()
	_, _, err := s.ReadLog(indexKey(feedID), 0, func(l ndjson.Line) error {
		var e Seen
		if l.Type == TypeSeen && l.Decode(&e) == nil && e.UID != "" {
			ix.Add(e)
		}
		return nil
	})
	return ix, err
}

// PutSeen appends index records for one feed.
func (s *Store) PutSeen(feedID string, seen []Seen, d Durability) error {
	for i := range seen {
		seen[i].Header = ndjson.Head(TypeSeen)
	}
	data, err := encodeLines(seen)
	if err != nil {
		return err
	}
	_, err = s.AppendLines(indexKey(feedID), data, d)
	return err
}

// IndexCheckpoint is how far into entries/ and events/ the index and the
// events are known to be complete and durable.
type IndexCheckpoint struct {
	File         string `json:"file"` // in entries/
	Offset       int64  `json:"offset"`
	EventsFile   string `json:"events_file"`
	EventsOffset int64  `json:"events_offset"`
}

const checkpointKey = DirIndex + "/checkpoint.json"

// Checkpoint returns the index checkpoint; zero if there is none.
func (s *Store) Checkpoint() (IndexCheckpoint, error) {
	var cp IndexCheckpoint
	b, err := os.ReadFile(s.Path(checkpointKey))
	if errors.Is(err, os.ErrNotExist) {
		return cp, nil
	}
	if err != nil {
		return cp, fmt.Errorf("storage: %w", err)
	}
	if json.Unmarshal(b, &cp) != nil {
		return IndexCheckpoint{}, nil // unreadable: rebuild from the start
	}
	return cp, nil
}

// SetCheckpoint records that the index and events cover entries up to cp.
func (s *Store) SetCheckpoint(cp IndexCheckpoint) error {
	b, err := json.Marshal(cp)
	if err != nil {
		return err
	}
	return s.WriteFileAtomic(checkpointKey, append(b, '\n'))
}

// Recover finishes what a run interrupted by a crash left undone. Entries
// are made durable in entries/ first, and only then indexed and announced
// in events/, so after a crash the entries past the checkpoint may lack
// their index records or their events. Recover adds both, makes them
// durable and moves the checkpoint to the end, and returns the events it
// had to write (their consumers never saw them). The caller holds the
// store lock.
func (s *Store) Recover(now time.Time) (announced []ndjson.Event, err error) {
	cp, err := s.Checkpoint()
	if err != nil {
		return nil, err
	}
	files, err := s.DayFiles(DirEntries)
	if err != nil {
		return nil, err
	}
	type stored struct {
		entry ndjson.Entry
		file  string
	}
	var recovered []stored
	indexes := map[string]*FeedIndex{}
	end := cp
	for _, file := range files {
		if file < cp.File {
			continue
		}
		from := int64(0)
		if file == cp.File {
			from = cp.Offset
		}
		off, _, err := s.ReadLog(file, from, func(l ndjson.Line) error {
			var e ndjson.Entry
			if l.Type != ndjson.TypeEntry || l.Decode(&e) != nil {
				return nil
			}
			idx, ok := indexes[e.FeedID]
			if !ok {
				loaded, err := s.SeenEntries(e.FeedID)
				if err != nil {
					return err
				}
				idx, indexes[e.FeedID] = loaded, loaded
			}
			if idx.Judge(e.EntryUID, e.ContentHash) == "" {
				return nil
			}
			rec := Seen{UID: e.EntryUID, Hash: e.ContentHash, FirstSeen: e.FirstSeen, LastSeen: e.LastSeen, SeenCount: e.SeenCount}
			idx.Add(rec)
			recovered = append(recovered, stored{e, file})
			return s.PutSeen(e.FeedID, []Seen{rec}, Lazy)
		})
		if err != nil {
			return nil, err
		}
		end.File, end.Offset = file, off
	}
	if end == cp {
		return nil, nil
	}
	if len(recovered) > 0 {
		// Which of them had their event written before the crash?
		have := map[[2]string]bool{}
		evFiles, err := s.DayFiles(DirEvents)
		if err != nil {
			return nil, err
		}
		for _, file := range evFiles {
			if file < cp.EventsFile {
				continue
			}
			from := int64(0)
			if file == cp.EventsFile {
				from = cp.EventsOffset
			}
			off, _, err := s.ReadLog(file, from, func(l ndjson.Line) error {
				var ev ndjson.Event
				if l.Decode(&ev) == nil {
					have[[2]string{ev.EntryUID, ev.ContentHash}] = true
				}
				return nil
			})
			if err != nil {
				return nil, err
			}
			end.EventsFile, end.EventsOffset = file, off
		}
		var lines []byte
		for _, r := range recovered {
			if have[[2]string{r.entry.EntryUID, r.entry.ContentHash}] {
				continue
			}
			ev := ndjson.EventFor(&r.entry, ndjson.At(now), r.file)
			line, err := ndjson.Marshal(ev)
			if err != nil {
				return nil, err
			}
			lines = append(lines, line...)
			announced = append(announced, ev)
		}
		if len(lines) > 0 {
			key := DayFile(DirEvents, now)
			off, err := s.AppendLines(key, lines, Lazy)
			if err != nil {
				return nil, err
			}
			end.EventsFile, end.EventsOffset = key, off+int64(len(lines))
		}
	}
	if err := s.Sync(); err != nil {
		return nil, err
	}
	return announced, s.SetCheckpoint(end)
}
