package storage

import (
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
	byDay := map[string][]byte{}
	within := make([]int64, len(records)) // offset of each record in its day's batch
	var order []string
	for i, f := range records {
		key := DayFile(DirFetches, f.FetchedAt.Time)
		line, err := ndjson.Marshal(f)
		if err != nil {
			return err
		}
		if _, ok := byDay[key]; !ok {
			order = append(order, key)
		}
		within[i] = int64(len(byDay[key]))
		byDay[key] = append(byDay[key], line...)
	}
	if len(order) == 0 {
		return nil
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
	for i, f := range records {
		offsets[i] = start[DayFile(DirFetches, f.FetchedAt.Time)] + within[i]
	}
	return s.recordRuns(records, offsets)
}
