package storage

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// The entry index: for each feed, index/<2 hex>/<feed_id>.seen holds one
// fixed-size binary record per stored entry version (seenRecordSize bytes:
// uid, content hash, first_seen, last_seen, seen_count, checksum), the last
// record of a uid winning. Dedup of a fetch reads only its own feed's small
// file, so its cost does not grow with the store. The index is derived from
// entries/: it is written after the entries it describes are durable, and
// Recover rebuilds whatever a crash kept from being written.
//
// The binary form holds ids as feedpipe makes them (16 lower-case hex
// digits, internal/ids); a record with any other uid or hash, and every
// record an older feedpipe wrote, is a JSON line of index/<2 hex>/<feed_id>.ndjson,
// read first. Across the two files the record with the higher seen_count
// wins (each stored version counts one more), in a tie the binary one.

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

func indexKey(feedID string) string { return indexBase(feedID) + ".ndjson" }

func indexBinKey(feedID string) string { return indexBase(feedID) + ".seen" }

func indexBase(feedID string) string {
	shard := "xx"
	if len(feedID) >= 2 {
		shard = feedID[:2]
	}
	return DirIndex + "/" + shard + "/" + feedID
}

// seenRecordSize is the size of a binary index record: uid, hash (8 bytes
// each), first_seen, last_seen (Unix nanoseconds, 8 each), seen_count (4)
// and the low 32 bits of the xxhash64 of the 36 bytes before (4).
const seenRecordSize = 40

// zeroTime stands for the zero time in a binary record.
const zeroTime = math.MinInt64

// hexID parses an id as feedpipe writes it: 16 lower-case hex digits.
func hexID(s string) (uint64, bool) {
	if len(s) != 16 {
		return 0, false
	}
	var v uint64
	for i := 0; i < 16; i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | uint64(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uint64(c-'a'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

func appendHexID(b []byte, v uint64) []byte {
	const digits = "0123456789abcdef"
	for shift := 60; shift >= 0; shift -= 4 {
		b = append(b, digits[v>>uint(shift)&0xf])
	}
	return b
}

func unixNanos(t ndjson.Time) int64 {
	if t.IsZero() {
		return zeroTime
	}
	return t.UnixNano()
}

func fromNanos(ns int64) ndjson.Time {
	if ns == zeroTime {
		return ndjson.Time{}
	}
	return ndjson.Time{Time: time.Unix(0, ns).UTC()}
}

// binarySeen encodes s as a binary record, if its ids and times allow.
func binarySeen(b []byte, s *Seen) ([]byte, bool) {
	uid, ok1 := hexID(s.UID)
	hash, ok2 := hexID(s.Hash)
	inRange := func(t ndjson.Time) bool { return t.IsZero() || t.Year() >= 1678 && t.Year() < 2262 }
	if !ok1 || !ok2 || s.SeenCount < 0 || s.SeenCount > math.MaxUint32 || !inRange(s.FirstSeen) || !inRange(s.LastSeen) {
		return b, false
	}
	start := len(b)
	b = binary.LittleEndian.AppendUint64(b, uid)
	b = binary.LittleEndian.AppendUint64(b, hash)
	b = binary.LittleEndian.AppendUint64(b, uint64(unixNanos(s.FirstSeen)))
	b = binary.LittleEndian.AppendUint64(b, uint64(unixNanos(s.LastSeen)))
	b = binary.LittleEndian.AppendUint32(b, uint32(s.SeenCount))
	return binary.LittleEndian.AppendUint32(b, uint32(xxhash.Sum64(b[start:]))), true
}

// parseSeen decodes one binary record; false if its checksum fails.
func parseSeen(r []byte, ids []byte) (Seen, []byte, bool) {
	if uint32(xxhash.Sum64(r[:36])) != binary.LittleEndian.Uint32(r[36:]) {
		return Seen{}, ids, false
	}
	start := len(ids)
	ids = appendHexID(ids, binary.LittleEndian.Uint64(r))
	ids = appendHexID(ids, binary.LittleEndian.Uint64(r[8:]))
	both := string(ids[start:]) // one allocation for the two
	return Seen{
		Header:    ndjson.Head(TypeSeen),
		UID:       both[:16],
		Hash:      both[16:],
		FirstSeen: fromNanos(int64(binary.LittleEndian.Uint64(r[16:]))),
		LastSeen:  fromNanos(int64(binary.LittleEndian.Uint64(r[24:]))),
		SeenCount: int(binary.LittleEndian.Uint32(r[32:])),
	}, ids, true
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
	if err != nil {
		return ix, err
	}
	data, err := s.ReadFile(indexBinKey(feedID))
	if errors.Is(err, os.ErrNotExist) {
		return ix, nil
	}
	if err != nil {
		return ix, fmt.Errorf("storage: %w", err)
	}
	fromJSON := len(ix.latest) > 0
	var ids []byte
	// A torn last record (a crash mid-append) is short and left out; one
	// whose checksum fails is skipped.
	for r := data; len(r) >= seenRecordSize; r = r[seenRecordSize:] {
		e, more, ok := parseSeen(r[:seenRecordSize], ids[:0])
		if !ok {
			continue
		}
		ids = more
		if fromJSON {
			if prev, known := ix.latest[e.UID]; known && prev.SeenCount > e.SeenCount {
				ix.versions[[2]string{e.UID, e.Hash}] = true
				continue
			}
		}
		ix.Add(e)
	}
	return ix, nil
}

// PutSeen appends index records for one feed.
func (s *Store) PutSeen(feedID string, seen []Seen, d Durability) error {
	var bin, lines []byte
	for i := range seen {
		seen[i].Header = ndjson.Head(TypeSeen)
		var ok bool
		if bin, ok = binarySeen(bin, &seen[i]); ok {
			continue
		}
		line, err := ndjson.Marshal(&seen[i])
		if err != nil {
			return err
		}
		lines = append(lines, line...)
	}
	if len(lines) > 0 {
		if _, err := s.AppendLines(indexKey(feedID), lines, d); err != nil {
			return err
		}
	}
	if len(bin) > 0 {
		return s.appendRecords(indexBinKey(feedID), bin, seenRecordSize, d)
	}
	return nil
}

// appendRecords is AppendLines for a file of fixed-size records: a torn
// last record is cut off first, and a failed write is taken back.
func (s *Store) appendRecords(key string, data []byte, size int64, d Durability) error {
	f, err := s.openAppend(key)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	end := st.Size() - st.Size()%size
	if end != st.Size() {
		if err := f.Truncate(end); err != nil {
			return fmt.Errorf("storage: cut the torn last record of %s: %w", key, unwrapPathError(err))
		}
	}
	if _, err := f.Write(data); err != nil {
		f.Truncate(end)
		return fmt.Errorf("storage: append to %s: %w", key, unwrapPathError(err))
	}
	if d == Durable {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("storage: sync %s: %w", key, unwrapPathError(err))
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("storage: close %s: %w", key, unwrapPathError(err))
	}
	if end == 0 && d == Durable {
		return s.syncDir(path.Dir(key))
	}
	return nil
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
	b, err := s.ReadFile(checkpointKey)
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
	type stored struct {
		entry ndjson.Entry
		file  string
	}
	var recovered []stored
	indexes := map[string]*FeedIndex{}
	end := cp
	end.File, end.Offset, err = s.ReadLogsSince(DirEntries, cp.File, cp.Offset, func(file string, l ndjson.Line) error {
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
	if end == cp {
		return nil, nil
	}
	if len(recovered) > 0 {
		// Which of them had their event written before the crash?
		have := map[[2]string]bool{}
		end.EventsFile, end.EventsOffset, err = s.ReadLogsSince(DirEvents, cp.EventsFile, cp.EventsOffset, func(_ string, l ndjson.Line) error {
			var ev ndjson.Event
			if l.Decode(&ev) == nil {
				have[[2]string{ev.EntryUID, ev.ContentHash}] = true
			}
			return nil
		})
		if err != nil {
			return nil, err
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
