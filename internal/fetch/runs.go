package fetch

import (
	"context"
	"log/slog"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// runs keeps feed-fetch idempotent per feed and scheduled run
// (docs/design.md#fetching): a due record names its run by feed_id and scheduled_at, and
// feed-fetch claims the run in the catalog before it fetches it, so that
// a run is fetched once whoever asks for it, two pipelines started at once
// included. Only the claiming goroutine uses it.
type runs struct {
	cat     *catalog.Catalog
	taken   map[catalog.Run]bool // runs this process has taken on
	claimed []claimed            // runs it claimed, by when
	skipped int                  // runs fetched and stored already, or being fetched by another pipeline
	resumed int                  // runs fetched but not stored: their record passed on again
}

// claimed are the runs of one claim transaction.
type claimed struct {
	runs []catalog.Run
	at   time.Time
}

// release drops the claims of the runs this process claimed but did not
// fetch (a signal or a full disk stopped it): the next pipeline fetches
// them at once rather than take them for another's. The runs in recorded
// have their fetches indexed, which Unclaim would leave as they are: only
// the others are asked about (in a run that ends normally, none).
func (rs *runs) release(ctx context.Context, recorded map[catalog.Run]bool) error {
	for _, c := range rs.claimed {
		var left []catalog.Run
		for _, r := range c.runs {
			if !recorded[r] {
				left = append(left, r)
			}
		}
		if err := rs.cat.Unclaim(ctx, left, c.at); err != nil {
			return err
		}
	}
	return nil
}

// claim routes a batch of due records: those whose run is this process's
// to fetch go to fetch, the recorded fetch of a run fetched but not
// stored goes to results (in place of a new fetch, so that the run is not
// lost), the others are skipped. A due record without scheduled_at (one
// written by hand) names no run and is always fetched.
func (cfg *Config) claim(ctx context.Context, rs *runs, batch []ndjson.Due, fetch func(ndjson.Due) error, results chan<- result) error {
	var (
		claims []catalog.Run
		of     []int // the batch's index of each claim
	)
	for i, due := range batch {
		if due.ScheduledAt.IsZero() {
			continue
		}
		r := catalog.Run{FeedID: due.FeedID, ScheduledAt: due.ScheduledAt.Time}
		if rs.taken[r] {
			rs.skipped++
			cfg.Log.Info("skipped a repeated due record: this scheduled run is fetched once", "feed_id", due.FeedID, "scheduled_at", due.ScheduledAt)
			batch[i].FeedID = "" // skipped below
			continue
		}
		rs.taken[r] = true
		claims = append(claims, r)
		of = append(of, i)
	}
	got := make([]catalog.ClaimResult, len(batch))
	if len(claims) > 0 {
		at := cfg.Clock.Now()
		res, err := rs.cat.ClaimRuns(ctx, claims, at)
		if err != nil {
			return err
		}
		c := claimed{at: at}
		for j, r := range res {
			got[of[j]] = r
			if r.Claim == catalog.ClaimFetch {
				c.runs = append(c.runs, claims[j])
			}
		}
		rs.claimed = append(rs.claimed, c)
	}
	for i, due := range batch {
		if due.FeedID == "" {
			continue
		}
		// Made only for a line that is logged: With formats its
		// attributes at once, for every due record of a cycle.
		log := func() *slog.Logger { return cfg.Log.With("feed_id", due.FeedID, "scheduled_at", due.ScheduledAt) }
		switch got[i].Claim {
		case catalog.ClaimStored:
			rs.skipped++
			log().Info("skipped: this scheduled run was fetched and stored already")
		case catalog.ClaimBusy:
			if due.Bus != nil {
				// A bus hands a run to one worker at a time: the claim is
				// this worker's own, left by a take that was killed, and
				// the bus handed the run out again (docs/bus.md).
				log().Info("fetching a run this store claimed and did not fetch: the bus handed it out again")
				if err := fetch(due); err != nil {
					return err
				}
				continue
			}
			rs.skipped++
			log().Info("skipped: another pipeline is fetching this scheduled run")
		case catalog.ClaimFetched:
			line, err := rs.cat.Line(storedir.DirFetches, got[i].Fetch.Location)
			if err != nil {
				// Its record cannot be read: fetch it again.
				log().Warn("fetching again: the stored fetch record of this run cannot be read", "error", err)
				if err := fetch(due); err != nil {
					return err
				}
				continue
			}
			rs.resumed++
			log().Info("not fetched again: passing on the stored fetch record of this scheduled run, not yet stored by feed-store", "fetch_id", got[i].Fetch.FetchID)
			results <- result{raw: line}
		default:
			if err := fetch(due); err != nil {
				return err
			}
		}
	}
	return nil
}

// claimBatch is how many due records are claimed in one transaction, and
// claimLinger how long the claimer waits for more to come. Each claim
// takes the catalog's write lock, which feed-store holds while it
// commits a batch: fewer, larger claims wait for it less often (a cycle
// of 10,000 feeds claims in 10 transactions, not 40).
const (
	claimBatch  = 1024
	claimLinger = 5 * time.Millisecond
)

// claimer claims the due records of dues in batches and hands each on.
// Once ctx is done (a signal) it claims no more: the runs not claimed stay
// due.
func (cfg *Config) claimer(ctx context.Context, rs *runs, dues <-chan ndjson.Due, fetch func(ndjson.Due) error, results chan<- result) error {
	var err error
	for first := range dues {
		batch := pipe.Batch(first, dues, claimBatch, claimLinger)
		if err == nil && ctx.Err() == nil {
			// Archive pages first, by their URLs (spool.go); then runs.
			if err = cfg.claimArchives(ctx, rs, batch, fetch, results); err == nil {
				err = cfg.claim(ctx, rs, batch, fetch, results)
			}
			if ctx.Err() != nil {
				err = nil // the claim transaction was cut short by the signal, and rolled back
			}
		}
	}
	return err
}
