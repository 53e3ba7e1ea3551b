package storedir

import (
	"bytes"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Placed is where a line was appended: the key of its file, and its
// offset and length there (its newline included).
type Placed struct {
	Key    string
	Offset int64
	Length int64
}

// FetchIndexer indexes the fetch records of fetches/ (the catalog does),
// under the fetch lock: CatchUp indexes what a crash left past its
// checkpoint, before an append; Index indexes the records just appended,
// and moves the checkpoint past them.
type FetchIndexer interface {
	CatchUp() error
	Index(records []*ndjson.Fetch, placed []Placed) error
}

// AppendFetches appends fetch records to their day files in fetches/,
// synced, and has ix index them, all under the fetch lock: feed-fetch and
// feed-scrape (and two pipelines) append to the same files, and the lock
// keeps one from taking another's line in progress for a torn one, and
// the index's checkpoint in step with the files. It first syncs the store,
// so that the payloads the records point at (PutRaw) are on disk before
// any record is: no record ever names a payload a crash lost.
func (s *Store) AppendFetches(records []*ndjson.Fetch, ix FetchIndexer) error {
	lines := make([][]byte, len(records))
	for i, f := range records {
		line, err := ndjson.Marshal(f)
		if err != nil {
			return err
		}
		lines[i] = line
	}
	return s.AppendFetchLines(records, lines, ix)
}

// AppendFetchLines is AppendFetches for records encoded already, so that
// a caller that writes them out too encodes each once: lines[i] is
// records[i] as ndjson.Marshal encodes it.
func (s *Store) AppendFetchLines(records []*ndjson.Fetch, lines [][]byte, ix FetchIndexer) error {
	if len(records) == 0 {
		return nil
	}
	keys := make([]string, len(records)) // the day file of each record
	size := map[string]int{}
	var order []string
	for i, f := range records {
		keys[i] = DayFile(DirFetches, f.FetchedAt.Time)
		if _, ok := size[keys[i]]; !ok {
			order = append(order, keys[i])
		}
		size[keys[i]] += len(lines[i]) + 1
	}
	byDay := make(map[string][]byte, len(order))
	placed := make([]Placed, len(records))
	for i, key := range keys {
		b := byDay[key]
		if b == nil {
			b = make([]byte, 0, size[key])
		}
		placed[i] = Placed{Key: key, Offset: int64(len(b))} // in its day's batch, for now
		b = append(b, lines[i]...)
		if !bytes.HasSuffix(b, []byte{'\n'}) {
			b = append(b, '\n')
		}
		placed[i].Length = int64(len(b)) - placed[i].Offset
		byDay[key] = b
	}
	if err := s.Sync(); err != nil {
		return err
	}
	unlock, err := s.Lock(FetchLock, true, nil)
	if err != nil {
		return err
	}
	defer unlock()
	if err := ix.CatchUp(); err != nil {
		return err
	}
	start := map[string]int64{}
	for _, key := range order {
		off, err := s.AppendLines(key, byDay[key], Durable)
		if err != nil {
			return err
		}
		start[key] = off
	}
	for i := range placed {
		placed[i].Offset += start[placed[i].Key]
	}
	return ix.Index(records, placed)
}
