package catalog

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/feedpipe/feedpipe/internal/storage"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// FetchRef is what the catalog holds of a fetch record: whose it is, when,
// what came, and where its line is in fetches/.
type FetchRef struct {
	FetchID    string
	FeedID     string
	FetchedAt  time.Time
	HTTPStatus int
	BodyKey    string // the payload's key in raw/; "" for none
	Location
}

// IndexFetch records the fetch record f, whose line is at loc in fetches/,
// and notes it as the fetch of its run (ClaimRuns). A record indexed
// already is left as it is.
func (t *Tx) IndexFetch(f *ndjson.Fetch, loc Location) error {
	defer t.within(f.Due.FeedID)()
	key, err := t.feedKey(f.Due.FeedID)
	if err != nil {
		return err
	}
	var body any
	if f.BodyRef != nil {
		body = f.BodyRef.Key
	}
	if _, err := t.write(kept, `INSERT OR IGNORE INTO fetches (fetch_id, feed_key, fetched_at, http_status, body_key, day, offset, length)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, f.FetchID, key, unixMS(f.FetchedAt.Time), f.HTTPStatus, body, loc.Day, loc.Offset, loc.Length); err != nil {
		return err
	}
	if f.Page != nil || f.Due.ScheduledAt.IsZero() {
		return nil
	}
	_, err = t.write(kept, `UPDATE runs SET fetch_id = ? WHERE feed_key = ? AND scheduled_at = ?`, f.FetchID, key, unixMS(f.Due.ScheduledAt.Time))
	return err
}

// IndexParse keeps the parse section of the fetch record f (what feed-store
// receives: fetches/ holds the record as written before its parse).
func (t *Tx) IndexParse(f *ndjson.Fetch) error {
	if f.Parse == nil {
		return nil
	}
	defer t.within(f.Due.FeedID)()
	b, err := ndjson.Marshal(f.Parse)
	if err != nil {
		return err
	}
	_, err = t.write(kept, `UPDATE fetches SET parse = ? WHERE fetch_id = ?`, string(bytes.TrimSpace(b)), f.FetchID)
	return err
}

const fetchColumns = `x.fetch_id, f.feed_id, x.fetched_at, x.http_status, coalesce(x.body_key, ''), x.day, x.offset, x.length`

func scanFetch(scan func(...any) error, r *FetchRef) error {
	var at int64
	if err := scan(&r.FetchID, &r.FeedID, &at, &r.HTTPStatus, &r.BodyKey, &r.Day, &r.Offset, &r.Length); err != nil {
		return err
	}
	r.FetchedAt = time.UnixMilli(at).UTC()
	return nil
}

// Fetch returns what the catalog holds of the fetch fetchID; ok is false
// for one it does not know.
func (c *Catalog) Fetch(ctx context.Context, fetchID string) (r FetchRef, ok bool, err error) {
	row := c.readRow(ctx, kept, `SELECT `+fetchColumns+` FROM fetches x JOIN feeds f ON f.key = x.feed_key WHERE x.fetch_id = ?`, fetchID)
	switch err := scanFetch(row.Scan, &r); {
	case errors.Is(err, sql.ErrNoRows):
		return r, false, nil
	case err != nil:
		return r, false, err
	}
	return r, true, nil
}

// Fetches returns the fetches of a feed at or after since, newest first,
// at most limit of them (0: all).
func (c *Catalog) Fetches(ctx context.Context, feedID string, since time.Time, limit int) ([]FetchRef, error) {
	if limit <= 0 {
		limit = -1
	}
	rows, err := c.read(ctx, once, `SELECT `+fetchColumns+` FROM fetches x JOIN feeds f ON f.key = x.feed_key
		WHERE x.feed_key = (SELECT key FROM feeds WHERE feed_id = ?) AND x.fetched_at >= ?
		ORDER BY x.fetched_at DESC, x.fetch_id DESC LIMIT ?`, feedID, unixMS(since), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []FetchRef
	for rows.Next() {
		var r FetchRef
		if err := scanFetch(rows.Scan, &r); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// A run is one scheduled fetch of a feed, named by the feed and the time
// it was scheduled for (a due record's scheduled_at). feed-fetch claims a
// run before it fetches it, in a transaction on the runs table's key, so
// that two pipelines started at once never fetch one run twice; feed-store
// releases it when it commits the fetch, and moves the feed's last_run_at
// past it, so that a replay never fetches it again.

// Run names a run.
type Run struct {
	FeedID      string
	ScheduledAt time.Time
}

// Claim is what ClaimRuns found of a run.
type Claim int

const (
	// ClaimFetch: the run is this process's to fetch.
	ClaimFetch Claim = iota
	// ClaimStored: it (or a later run of the feed) was fetched and
	// stored already: nothing to do.
	ClaimStored
	// ClaimFetched: it was fetched but is not stored yet (the pipeline
	// that fetched it stopped): its fetch record, at Fetch, is to be
	// passed on again in place of a new fetch.
	ClaimFetched
	// ClaimBusy: another pipeline claimed it a moment ago and is
	// fetching it.
	ClaimBusy
)

// ClaimStale is how long a claim without a fetch holds: past it, the
// pipeline that made it is taken to have died, and the run is claimed
// again.
const ClaimStale = 15 * time.Minute

// ClaimResult is one run's claim, and for ClaimFetched the fetch to pass
// on.
type ClaimResult struct {
	Claim Claim
	Fetch FetchRef
}

// ClaimRuns claims runs at now, in one transaction.
func (c *Catalog) ClaimRuns(ctx context.Context, runs []Run, now time.Time) ([]ClaimResult, error) {
	out := make([]ClaimResult, len(runs))
	err := c.Update(ctx, func(t *Tx) error {
		for i, r := range runs {
			res, err := t.claim(r, now)
			if err != nil {
				return err
			}
			out[i] = res
		}
		return nil
	})
	return out, err
}

func (t *Tx) claim(r Run, now time.Time) (ClaimResult, error) {
	defer t.within()() // claims: no reader keeps an answer of them
	key, err := t.feedKey(r.FeedID)
	if err != nil {
		return ClaimResult{}, err
	}
	at := unixMS(r.ScheduledAt)
	var lastRun sql.NullInt64
	err = t.readRow(kept, `SELECT last_run_at FROM feed_state WHERE feed_key = ?`, key).Scan(&lastRun)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return ClaimResult{}, err
	}
	if lastRun.Valid && lastRun.Int64 >= at {
		return ClaimResult{Claim: ClaimStored}, nil
	}
	// This run, or a later one, claimed already?
	var (
		runAt, claimedAt int64
		fetchID          sql.NullString
	)
	err = t.readRow(kept, `SELECT scheduled_at, claimed_at, fetch_id FROM runs WHERE feed_key = ? AND scheduled_at >= ?
		ORDER BY scheduled_at DESC LIMIT 1`, key, at).Scan(&runAt, &claimedAt, &fetchID)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		_, err := t.write(kept, `INSERT INTO runs (feed_key, scheduled_at, claimed_at) VALUES (?, ?, ?)`, key, at, unixMS(now))
		return ClaimResult{Claim: ClaimFetch}, err
	case err != nil:
		return ClaimResult{}, err
	}
	if fetchID.Valid {
		var ref FetchRef
		err := scanFetch(t.readRow(kept, `SELECT `+fetchColumns+` FROM fetches x JOIN feeds f ON f.key = x.feed_key WHERE x.fetch_id = ?`,
			fetchID.String).Scan, &ref)
		if err == nil {
			return ClaimResult{Claim: ClaimFetched, Fetch: ref}, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return ClaimResult{}, err
		}
		// Its record is gone (pruned): fetch it again.
	} else if now.Sub(time.UnixMilli(claimedAt)) < ClaimStale {
		return ClaimResult{Claim: ClaimBusy}, nil
	}
	_, err = t.write(kept, `UPDATE runs SET claimed_at = ?, fetch_id = NULL WHERE feed_key = ? AND scheduled_at = ?`, unixMS(now), key, runAt)
	return ClaimResult{Claim: ClaimFetch}, err
}

// Unclaim drops the claims this process made at claimedAt (ClaimRuns'
// now) of runs it did not fetch after all (a signal stopped it first), so
// that the next pipeline fetches them rather than wait ClaimStale for
// them. A run with a fetch recorded keeps its claim; so does one claimed
// again since.
func (c *Catalog) Unclaim(ctx context.Context, runs []Run, claimedAt time.Time) error {
	if len(runs) == 0 {
		return nil
	}
	return c.Update(ctx, func(t *Tx) error {
		defer t.within()() // claims: no reader keeps an answer of them
		for _, r := range runs {
			key, err := t.feedKey(r.FeedID)
			if err != nil {
				return err
			}
			_, err = t.write(once, `DELETE FROM runs WHERE feed_key = ? AND scheduled_at = ? AND claimed_at = ? AND fetch_id IS NULL`,
				key, unixMS(r.ScheduledAt), unixMS(claimedAt))
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// ReleaseRuns drops the claims of a feed's runs up to at (feed-store
// committed the fetch of the run at at).
func (t *Tx) ReleaseRuns(feedID string, at time.Time) error {
	defer t.within()() // claims: no reader keeps an answer of them
	key, err := t.feedKey(feedID)
	if err != nil {
		return err
	}
	_, err = t.write(kept, `DELETE FROM runs WHERE feed_key = ? AND scheduled_at <= ?`, key, unixMS(at))
	return err
}

// FetchIndexer is the catalog as the index of fetches/, for
// storage.AppendFetches.
func (c *Catalog) FetchIndexer(ctx context.Context) storage.FetchIndexer {
	return fetchIndexer{ctx: ctx, c: c}
}

type fetchIndexer struct {
	ctx context.Context
	c   *Catalog
}

func (x fetchIndexer) CatchUp() error { return x.c.CatchUpFetches(x.ctx) }

func (x fetchIndexer) Index(records []*ndjson.Fetch, placed []storage.Placed) error {
	return x.c.Update(x.ctx, func(t *Tx) error {
		var end Checkpoint
		for i, f := range records {
			p := placed[i]
			if err := t.IndexFetch(f, Location{Day: storage.KeyDay(p.Key), Offset: p.Offset, Length: p.Length}); err != nil {
				return err
			}
			if p.Key > end.File || p.Key == end.File && p.Offset+p.Length > end.Offset {
				end = Checkpoint{File: p.Key, Offset: p.Offset + p.Length}
			}
		}
		return t.setCheckpoint(TapFetches, end)
	})
}
