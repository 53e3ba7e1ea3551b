package storage

import (
	"bytes"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// AppendFetches appends fetch records to their day files in fetches/,
// synced, each append under the fetch lock: feed-fetch and feed-scrape
// (and two pipelines) append to the same files, and the lock keeps one
// from taking another's line in progress for a torn one. It first syncs the
// store, so that the payloads the records point at (PutRaw) are on disk
// before any record is: no record ever names a payload a crash lost. Then,
// still under the lock, it notes each record's scheduled run in the run
// ledger (ledger.go).
func (s *Store) AppendFetches(records []*ndjson.Fetch) error {
	lines := make([][]byte, len(records))
	for i, f := range records {
		line, err := ndjson.Marshal(f)
		if err != nil {
			return err
		}
		lines[i] = line
	}
	return s.AppendFetchLines(records, lines)
}

// AppendFetchLines is AppendFetches for records encoded already, so that
// a caller that writes them out too encodes each once: lines[i] is
// records[i] as ndjson.Marshal encodes it.
func (s *Store) AppendFetchLines(records []*ndjson.Fetch, lines [][]byte) error {
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
	within := make([]int64, len(records)) // offset of each record in its day's batch
	for i, key := range keys {
		b := byDay[key]
		if b == nil {
			b = make([]byte, 0, size[key])
		}
		within[i] = int64(len(b))
		b = append(b, lines[i]...)
		if !bytes.HasSuffix(b, []byte{'\n'}) {
			b = append(b, '\n')
		}
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
	start := map[string]int64{}
	for _, key := range order {
		off, err := s.AppendLines(key, byDay[key], Durable)
		if err != nil {
			return err
		}
		start[key] = off
	}
	offsets := make([]int64, len(records))
	for i := range records {
		offsets[i] = start[keys[i]] + within[i]
	}
	return s.recordRuns(records, offsets)
}
