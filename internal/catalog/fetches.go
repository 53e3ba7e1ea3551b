package catalog

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/storedir"

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
	return t.IndexFetches([]*ndjson.Fetch{f}, []Location{loc})
}

// IndexFetches is IndexFetch for records[i] at locs[i], in a few
// statements for the whole batch rather than three for each record: the
// feeds' keys are looked up in one query, the records go in with one
// multi-row INSERT, and their runs get their fetches with one UPDATE
// (feed-fetch indexes a batch of up to 512 records in one transaction).
func (t *Tx) IndexFetches(records []*ndjson.Fetch, locs []Location) error {
	if len(records) == 0 {
		return nil
	}
	ids := make([]string, 0, len(records))
	for _, f := range records {
		ids = append(ids, f.Due.FeedID)
	}
	defer t.within(ids...)()
	if err := t.feedKeys(ids); err != nil {
		return err
	}
	type run struct {
		key, at int64
	}
	var (
		rows    = make([]any, 0, 8*len(records))
		fetched = map[run]string{} // the run's fetch: the last record's, as one at a time
		order   []run
	)
	for i, f := range records {
		key := t.keys[f.Due.FeedID]
		var body any
		if f.BodyRef != nil {
			body = f.BodyRef.Key
		}
		loc := locs[i]
		rows = append(rows, f.FetchID, key, unixMS(f.FetchedAt.Time), f.HTTPStatus, body, loc.Day, loc.Offset, loc.Length)
		if f.Page != nil || f.Due.ScheduledAt.IsZero() {
			continue
		}
		r := run{key, unixMS(f.Due.ScheduledAt.Time)}
		if _, ok := fetched[r]; !ok {
			order = append(order, r)
		}
		fetched[r] = f.FetchID
	}
	// INSERT OR IGNORE of a multi-row VALUES takes its rows in order: a
	// fetch id given twice keeps its first, as one statement a record did.
	err := t.writeRows(`INSERT OR IGNORE INTO fetches (fetch_id, feed_key, fetched_at, http_status, body_key, day, offset, length) VALUES `, ``, 8, rows)
	if err != nil || len(order) == 0 {
		return err
	}
	rows = rows[:0]
	for _, r := range order {
		rows = append(rows, fetched[r], r.key, r.at)
	}
	// Each run is looked up by its key (SQLite joins the VALUES table as
	// the outer loop: a search of runs' primary key per run).
	return t.writeRows(`WITH v(fetch_id, feed_key, scheduled_at) AS (VALUES `,
		`) UPDATE runs SET fetch_id = v.fetch_id FROM v WHERE runs.feed_key = v.feed_key AND runs.scheduled_at = v.scheduled_at`, 3, rows)
}

// maxRowsPerStatement bounds the rows of one multi-row statement
// (writeRows, readRows): 8 columns of 256 rows are 2,048 variables, far
// under SQLite's limit of 32,766 (https://sqlite.org/limits.html, 9), and
// a statement of one of a few sizes.
const maxRowsPerStatement = 256

// writeRows runs head + "(?, ...), ..." + tail, the VALUES list of rows
// of width values each taken from args, in statements of at most
// maxRowsPerStatement rows.
func (t *Tx) writeRows(head, tail string, width int, args []any) error {
	for len(args) > 0 {
		n := min(len(args)/width, maxRowsPerStatement)
		if _, err := t.write(rowsPrep(n), head+valuesList(n, width)+tail, args[:n*width]...); err != nil {
			return err
		}
		args = args[n*width:]
	}
	return nil
}

// rowsPrep keeps the statements of a full chunk and of one row (a record
// at a time: the catch-up, reindexing), the sizes run again and again;
// the last chunk of a batch, of any size, is run once.
func rowsPrep(n int) prep {
	if n == 1 || n == maxRowsPerStatement {
		return kept
	}
	return once
}

// valuesList is the VALUES list of n rows of width variables.
func valuesList(n, width int) string {
	row := "(?" + strings.Repeat(", ?", width-1) + ")"
	var b strings.Builder
	b.Grow(n * (len(row) + 2))
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(row)
	}
	return b.String()
}

// feedKeys looks up the keys of the feeds ids in one query a chunk, into
// the transaction's keys; feedKey makes those of feeds the catalog does
// not know yet.
func (t *Tx) feedKeys(ids []string) error {
	var ask []any
	for _, id := range ids {
		if _, ok := t.keys[id]; !ok {
			ask = append(ask, id)
		}
	}
	for len(ask) > 0 {
		n := min(len(ask), 8*maxRowsPerStatement)
		rows, err := t.read(rowsPrep(n), `SELECT feed_id, key FROM feeds WHERE feed_id IN (?`+strings.Repeat(", ?", n-1)+`)`, ask[:n]...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var (
				id  string
				key int64
			)
			if err := rows.Scan(&id, &key); err != nil {
				rows.Close()
				return err
			}
			t.keys[id] = key
		}
		if err := rows.Close(); err != nil {
			return err
		}
		ask = ask[n:]
	}
	for _, id := range ids {
		if _, err := t.feedKey(id); err != nil {
			return err
		}
	}
	return nil
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

// KnownFetches returns which of the fetch ids the catalog has, in one
// query: feed-bus take asks it of each batch of fetch records it stores
// (a query per record was about a tenth of the coordinator's take, cold:
// docs/bench/2026-11-29-bus-cpu.md).
func (c *Catalog) KnownFetches(ctx context.Context, ids []string) (map[string]bool, error) {
	if len(ids) == 0 {
		return map[string]bool{}, nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	return c.readSet(ctx, kept, `SELECT x.fetch_id FROM json_each(?) j JOIN fetches x ON x.fetch_id = j.value`, string(list))
}

// feedFetchesSQL is Fetches's statement, a constant so that
// TestIndexesEarnTheirWrites reads its plan.
const feedFetchesSQL = `SELECT ` + fetchColumns + ` FROM fetches x JOIN feeds f ON f.key = x.feed_key
		WHERE x.feed_key = (SELECT key FROM feeds WHERE feed_id = ?) AND x.fetched_at >= ?
		ORDER BY x.fetched_at DESC, x.fetch_id DESC LIMIT ?`

// Fetches returns the fetches of a feed at or after since, newest first,
// at most limit of them (0: all).
func (c *Catalog) Fetches(ctx context.Context, feedID string, since time.Time, limit int) ([]FetchRef, error) {
	if limit <= 0 {
		limit = -1
	}
	rows, err := c.read(ctx, once, feedFetchesSQL, feedID, unixMS(since), limit)
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
	err := c.Update(ctx, func(t *Tx) error { return t.claimRuns(runs, now, out) })
	return out, err
}

// claimRuns is claim for each of runs, into out, in a few statements for
// the whole batch: one query a chunk reads what claim reads of each run
// (its feed's key and last run, the feed's latest run claimed at or after
// it), and one multi-row INSERT claims the runs nobody has claimed, the
// common case. The other cases, and a feed's second run of the batch,
// which must see its first's claim, go through claim, in the batch's order.
func (t *Tx) claimRuns(runs []Run, now time.Time, out []ClaimResult) error {
	defer t.within()() // claims: no reader keeps an answer of them
	var (
		first   = make(map[string]int, len(runs)) // the index of each feed's first run
		ask     []any                             // i, feed id, scheduled_at of each run asked for
		slow    []int                             // the runs left to claim
		inserts []any                             // feed key, scheduled_at, claimed_at of each run claimed
		nowMS   = unixMS(now)
	)
	for i, r := range runs {
		if _, ok := first[r.FeedID]; ok {
			slow = append(slow, i)
			continue
		}
		first[r.FeedID] = i
		ask = append(ask, i, r.FeedID, unixMS(r.ScheduledAt))
	}
	answered := make([]bool, len(runs))
	for len(ask) > 0 {
		n := min(len(ask)/3, maxRowsPerStatement)
		rows, err := t.read(rowsPrep(n), `WITH c(i, feed_id, at) AS (VALUES `+valuesList(n, 3)+`)
			SELECT c.i, c.at, f.key, s.last_run_at, r.scheduled_at, r.claimed_at, r.fetch_id
			FROM c JOIN feeds f ON f.feed_id = c.feed_id
			LEFT JOIN feed_state s ON s.feed_key = f.key
			LEFT JOIN runs r ON r.feed_key = f.key
				AND r.scheduled_at = (SELECT max(scheduled_at) FROM runs x WHERE x.feed_key = f.key AND x.scheduled_at >= c.at)`,
			ask[:n*3]...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var (
				i                       int
				at, key                 int64
				lastRun, runAt, claimed sql.NullInt64
				fetchID                 sql.NullString
			)
			if err := rows.Scan(&i, &at, &key, &lastRun, &runAt, &claimed, &fetchID); err != nil {
				rows.Close()
				return err
			}
			answered[i] = true
			t.keys[runs[i].FeedID] = key
			switch {
			case lastRun.Valid && lastRun.Int64 >= at:
				out[i] = ClaimResult{Claim: ClaimStored}
			case !runAt.Valid:
				out[i] = ClaimResult{Claim: ClaimFetch}
				inserts = append(inserts, key, at, nowMS)
			case !fetchID.Valid && now.Sub(time.UnixMilli(claimed.Int64)) < ClaimStale:
				out[i] = ClaimResult{Claim: ClaimBusy}
			default: // a fetch to read, or a stale claim to take over
				slow = append(slow, i)
			}
		}
		if err := rows.Close(); err != nil {
			return err
		}
		ask = ask[n*3:]
	}
	for i := range runs {
		if !answered[i] && first[runs[i].FeedID] == i {
			// A feed the catalog does not know (claim gives it a key);
			// its later runs are in slow already.
			slow = append(slow, i)
		}
	}
	if err := t.writeRows(`INSERT INTO runs (feed_key, scheduled_at, claimed_at) VALUES `, ``, 3, inserts); err != nil {
		return err
	}
	slices.Sort(slow)
	for _, i := range slow {
		res, err := t.claim(runs[i], now)
		if err != nil {
			return err
		}
		out[i] = res
	}
	return nil
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
// storedir.AppendFetches.
func (c *Catalog) FetchIndexer(ctx context.Context) storedir.FetchIndexer {
	return fetchIndexer{ctx: ctx, c: c}
}

type fetchIndexer struct {
	ctx context.Context
	c   *Catalog
}

func (x fetchIndexer) CatchUp() error { return x.c.CatchUpFetches(x.ctx) }

func (x fetchIndexer) Index(records []*ndjson.Fetch, placed []storedir.Placed) error {
	return x.c.Update(x.ctx, func(t *Tx) error {
		var end Checkpoint
		locs := make([]Location, len(records))
		for i, p := range placed {
			locs[i] = Location{Day: storedir.KeyDay(p.Key), Offset: p.Offset, Length: p.Length}
			if p.Key > end.File || p.Key == end.File && p.Offset+p.Length > end.Offset {
				end = Checkpoint{File: p.Key, Offset: p.Offset + p.Length}
			}
		}
		if err := t.IndexFetches(records, locs); err != nil {
			return err
		}
		return t.setCheckpoint(TapFetches, end)
	})
}
