package fetch

import (
	"github.com/feedpipe/feedpipe/internal/storage"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// runs keeps feed-fetch idempotent per feed and scheduled run (seed 000
// §15): a due record names its run by feed_id and scheduled_at, and a run
// the store's ledger says was fetched is not fetched again. Only the
// goroutine reading the input uses it.
type runs struct {
	ledger  *storage.Ledger
	taken   map[runKey]bool // runs this process has taken on
	skipped int             // runs fetched and stored already
	resumed int             // runs fetched but not stored: their record passed on again
}

type runKey struct {
	feedID string
	at     int64
}

func newRuns(s *storage.Store) *runs {
	return &runs{ledger: s.Ledger(false), taken: map[runKey]bool{}}
}

// check says what to do with a due record: fetch it (fetch true), or not
// because its run was fetched already. In that case record is the stored
// fetch record of the run when feed-store has not committed it yet, to be
// passed on in place of a new fetch so that the run is not lost; nil when
// it is committed, and there is nothing to do. A due record without
// scheduled_at (one written by hand) names no run and is always fetched.
func (cfg *Config) check(rs *runs, due ndjson.Due) (fetch bool, record []byte, err error) {
	if due.ScheduledAt.IsZero() {
		return true, nil, nil
	}
	k := runKey{due.FeedID, due.ScheduledAt.UnixNano()}
	if rs.taken[k] {
		rs.skipped++
		cfg.Log.Info("skipped a repeated due record: this scheduled run is fetched once", "feed_id", due.FeedID, "scheduled_at", due.ScheduledAt)
		return false, nil, nil
	}
	rs.taken[k] = true
	last, ok, err := rs.ledger.LastRun(due.FeedID)
	if err != nil || !ok || last.ScheduledAt.Before(due.ScheduledAt.Time) {
		return err == nil, nil, err
	}
	// This run, or a later one, was fetched.
	log := cfg.Log.With("feed_id", due.FeedID, "scheduled_at", due.ScheduledAt, "fetch_id", last.FetchID)
	committed, err := rs.ledger.IsCommitted(due.FeedID, last.FetchID, last.FetchedAt)
	if err != nil {
		return false, nil, err
	}
	if committed {
		rs.skipped++
		log.Info("skipped: this scheduled run was fetched and stored already")
		return false, nil, nil
	}
	record, ok, err = cfg.Store.RecordedFetch(last)
	if err != nil || !ok {
		// Its record is gone (pruned): fetch it again.
		return err == nil, nil, err
	}
	rs.resumed++
	log.Info("not fetched again: passing on the stored fetch record of this scheduled run, not yet stored by feed-store")
	return false, record, nil
}
