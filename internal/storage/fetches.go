package storage

import (
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// AppendFetches appends fetch records to their day files in fetches/,
// synced, each append under the fetch lock: feed-fetch and feed-scrape
// (and two pipelines) append to the same files, and the lock keeps one
// from taking another's line in progress for a torn one. It first syncs the
// store, so that the payloads the records point at (PutRaw) are on disk
// before any record is: no record ever names a payload a crash lost.
func (s *Store) AppendFetches(records []*ndjson.Fetch) error {
	byDay := map[string][]byte{}
	var order []string
	for _, f := range records {
		key := DayFile(DirFetches, f.FetchedAt.Time)
		line, err := ndjson.Marshal(f)
		if err != nil {
			return err
		}
		if _, ok := byDay[key]; !ok {
			order = append(order, key)
		}
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
	for _, key := range order {
		if _, err := s.AppendLines(key, byDay[key], Durable); err != nil {
			return err
		}
	}
	return nil
}
