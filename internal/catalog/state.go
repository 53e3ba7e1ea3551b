package catalog

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// FeedState is what feed-store remembers about one feed between fetches,
// and what feed-due schedules from: a row of feed_state. (It is also the
// record type of the state log of stores written before the catalog,
// which Open migrates.)
type FeedState struct {
	ndjson.Header
	FeedID              string            `json:"feed_id"`
	Title               string            `json:"title"`
	Validators          ndjson.Validators `json:"validators"`
	LastFetchAt         ndjson.Time       `json:"last_fetch_at"`
	LastSuccessAt       ndjson.Time       `json:"last_success_at"`
	LastStatus          int               `json:"last_status"`
	LastError           *ndjson.Error     `json:"last_error"`
	ConsecutiveFailures int               `json:"consecutive_failures"`
	IntervalSec         int               `json:"interval_sec"`
	NextFetchAt         ndjson.Time       `json:"next_fetch_at"`
	LastBodySHA256      string            `json:"last_body_sha256"`
	LastContentLength   int64             `json:"last_content_length"`
	NewEntriesLastFetch int               `json:"new_entries_last_fetch"`
	// MovedTo and MovedCount: the URL the last fetches were moved to
	// permanently, and how many in a row.
	MovedTo    string `json:"moved_to"`
	MovedCount int    `json:"moved_count"`
	// LastRunAt is the scheduled_at of the run whose fetch was committed
	// last: feed-fetch does not fetch that run, or an earlier one, again.
	LastRunAt ndjson.Time `json:"last_run_at"`
	// Counts add up everything since the feed was first fetched.
	Counts FeedCounts `json:"counts"`
	// Sched is the scheduler's state (internal/sched, docs/scheduler.md
	// §6); nil before the first decision. NextFetchAt and IntervalSec
	// repeat its next_at and interval_sec.
	Sched *sched.State `json:"sched,omitempty"`
	// Decision is the scheduler's last decision, for feed-due --explain.
	Decision *sched.Decision `json:"decision,omitempty"`
	// What the feed is, as its last body read says (docs/design.md#mapping):
	// rss, atom, json (with the version the document states) or html (a
	// website); the Content-Type it was served with; its publisher.
	Format        string `json:"format,omitempty"`
	FormatVersion string `json:"format_version,omitempty"`
	ContentType   string `json:"content_type,omitempty"`
	Publisher     string `json:"publisher,omitempty"`
	// Link is the site the feed links to (its home page); Warnings are
	// what its last body's parse said it repaired or left out.
	Link     string   `json:"link,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// decision is the decision column as read, when the read left it
	// undecoded (StatesOf) and Decision nil: EncodeState writes it back
	// as it is. SetSched drops it.
	decision []byte
	// key is the feed's key in the catalog, when a read found it
	// (StatesOf): EncodeState passes it on, so that writing the state
	// needs no look-up. A feed's key never changes; a state is only ever
	// written back under the feed id it was read for.
	key int64
}

// TypeFeedState is the record type of the state log of stores written
// before the catalog.
const TypeFeedState = "feed_state"

// FeedCounts add up a feed's fetches, for feed-stats and metrics.
type FeedCounts struct {
	Fetches     int            `json:"fetches"`
	OK          int            `json:"ok"` // 2xx, including unchanged bodies
	NotModified int            `json:"not_modified"`
	Errors      int            `json:"errors"`
	ErrorCodes  map[string]int `json:"error_codes"`
	BytesIn     int64          `json:"bytes_in"`    // bodies received, decoded
	BytesSaved  int64          `json:"bytes_saved"` // bodies 304 answers spared
	DurationMS  int64          `json:"duration_ms"` // summed
	NewEntries  int            `json:"new_entries"`
	Updated     int            `json:"updated"`
}

// Add counts one fetch.
func (c *FeedCounts) Add(f *ndjson.Fetch) {
	c.Fetches++
	c.DurationMS += f.DurationMS
	c.BytesIn += f.ContentLength
	c.BytesSaved += f.BytesSaved
	switch {
	case f.Error != nil:
		c.Errors++
		if c.ErrorCodes == nil {
			c.ErrorCodes = map[string]int{}
		}
		c.ErrorCodes[f.Error.Code]++
	case f.NotModified:
		c.NotModified++
	default:
		c.OK++
	}
}

// SchedState is the feed's scheduler state, zero before its first decision.
func (fs *FeedState) SchedState() sched.State {
	if fs.Sched == nil {
		return sched.State{}
	}
	return *fs.Sched
}

// SetSched keeps the scheduler's new state and decision, and the fields
// feed-due and feed-stats read of them: next_fetch_at and interval_sec.
func (fs *FeedState) SetSched(st sched.State, d sched.Decision) {
	fs.Sched, fs.Decision, fs.decision = &st, &d, nil
	fs.NextFetchAt = st.NextAt
	fs.IntervalSec = st.IntervalSec
}

// stateColumns are the feed_state columns, in the order scanState reads
// them.
const stateColumns = `st.title, st.etag, st.last_modified, st.last_fetch_at, st.last_success_at, st.last_run_at, st.last_status,
	st.last_error, st.consecutive_failures, st.interval_sec, st.next_fetch_at, st.last_body_sha256, st.last_content_length,
	st.new_entries_last_fetch, st.moved_to, st.moved_count, st.counts, st.sched, st.decision, st.format, st.format_version,
	st.content_type, st.publisher, st.link, st.warnings`

// stateRow receives a row of f.feed_id and stateColumns (targets), then
// decodes it.
type stateRow struct {
	fs                          FeedState
	fetched, success, run, next sql.NullInt64
	lastErr                     sql.NullString
	warnings                    string // JSON list, or ""
	// JSON, or JSON packJSON compressed; nil for NULL.
	counts, schedJSON, decJSON []byte
}

func (r *stateRow) targets() []any {
	fs := &r.fs
	return []any{&fs.FeedID, &fs.Title, &fs.Validators.ETag, &fs.Validators.LastModified, &r.fetched, &r.success, &r.run, &fs.LastStatus,
		&r.lastErr, &fs.ConsecutiveFailures, &fs.IntervalSec, &r.next, &fs.LastBodySHA256, &fs.LastContentLength,
		&fs.NewEntriesLastFetch, &fs.MovedTo, &fs.MovedCount, &r.counts, &r.schedJSON, &r.decJSON, &fs.Format, &fs.FormatVersion,
		&fs.ContentType, &fs.Publisher, &fs.Link, &r.warnings}
}

func (r *stateRow) decode(dst *FeedState) error { return r.decodeAll(dst, true) }

// decodeAll is decode, leaving the decision column undecoded in
// FeedState.decision unless decision is set.
func (r *stateRow) decodeAll(dst *FeedState, decision bool) error {
	fs := r.fs
	fs.Header = ndjson.Head(TypeFeedState)
	fs.LastFetchAt, fs.LastSuccessAt = ndjson.At(fromMS(r.fetched)), ndjson.At(fromMS(r.success))
	fs.LastRunAt, fs.NextFetchAt = ndjson.At(fromMS(r.run)), ndjson.At(fromMS(r.next))
	fs.LastError, fs.Sched, fs.Decision = nil, nil, nil
	fs.Counts = FeedCounts{}
	if err := readStateCol(r.counts, &fs.Counts); err != nil {
		return fmt.Errorf("catalog: counts of %s: %w", fs.FeedID, err)
	}
	if r.lastErr.Valid {
		if err := ndjson.Unmarshal([]byte(r.lastErr.String), &fs.LastError); err != nil {
			return fmt.Errorf("catalog: state of %s: %w", fs.FeedID, err)
		}
	}
	fs.Warnings = nil
	if r.warnings != "" {
		if err := ndjson.Unmarshal([]byte(r.warnings), &fs.Warnings); err != nil {
			return fmt.Errorf("catalog: warnings of %s: %w", fs.FeedID, err)
		}
	}
	if r.schedJSON != nil {
		fs.Sched = new(sched.State)
		if err := readStateCol(r.schedJSON, fs.Sched); err != nil {
			return fmt.Errorf("catalog: state of %s: %w", fs.FeedID, err)
		}
	}
	if r.decJSON != nil && !decision {
		fs.decision = r.decJSON
	} else if r.decJSON != nil {
		fs.Decision = new(sched.Decision)
		if err := readStateCol(r.decJSON, fs.Decision); err != nil {
			return fmt.Errorf("catalog: state of %s: %w", fs.FeedID, err)
		}
	}
	*dst = fs
	return nil
}

// readStateCol decodes a counts, sched or decision column into dst: the
// binary layout (statebin.go), or JSON, compressed (statepack.go) or not,
// as rows written before schema version 15 hold it.
func readStateCol(col []byte, dst any) error {
	if len(col) > 0 && col[0] == stateBinV1 {
		return readStateBin(col, dst)
	}
	b, err := unpackJSON(col)
	if err != nil {
		return err
	}
	// ndjson's decoder: encoding/json's rules, in a third of its time.
	return ndjson.Unmarshal(b, dst)
}

// scanState reads a row of f.feed_id and stateColumns.
func scanState(scan func(...any) error, fs *FeedState) error {
	var r stateRow
	if err := scan(r.targets()...); err != nil {
		return err
	}
	return r.decode(fs)
}

// stateOf is the state of a feed.
const stateOf = `SELECT f.feed_id, ` + stateColumns + ` FROM feed_state st JOIN feeds f ON f.key = st.feed_key WHERE f.feed_id = ?`

// State returns the state of feedID; ok is false for a feed never stored.
func (c *Catalog) State(ctx context.Context, feedID string) (fs FeedState, ok bool, err error) {
	return scanStateOf(c.readRow(ctx, kept, stateOf, feedID), feedID)
}

// State is Catalog.State inside the transaction.
func (t *Tx) State(feedID string) (fs FeedState, ok bool, err error) {
	return scanStateOf(t.readRow(kept, stateOf, feedID), feedID)
}

// scanStateOf reads the row of stateOf.
func scanStateOf(row row, feedID string) (fs FeedState, ok bool, err error) {
	switch err := scanState(row.Scan, &fs); {
	case errors.Is(err, sql.ErrNoRows):
		return FeedState{FeedID: feedID}, false, nil
	case err != nil:
		return fs, false, err
	}
	return fs, true, nil
}

// StatesOf returns the states of the feeds feedIDs that have one, read in
// one query: feed-store reads those of a batch's fetches at once, instead
// of a query for each. Their
// Decision is nil: feed-store replaces it with each fetch's, and
// decoding it was a tenth of a 304's CPU; EncodeState writes a state
// that keeps it (a push) with the column as it was.
func (c *Catalog) StatesOf(ctx context.Context, feedIDs []string) (map[string]FeedState, error) {
	states := make(map[string]FeedState, len(feedIDs))
	if len(feedIDs) == 0 {
		return states, nil
	}
	list, err := json.Marshal(feedIDs)
	if err != nil {
		return nil, err
	}
	rows, err := c.read(ctx, kept, `SELECT f.feed_id, `+stateColumns+`, f.key FROM json_each(?) j JOIN feeds f ON f.feed_id = j.value
		JOIN feed_state st ON st.feed_key = f.key`, string(list))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	// One row's targets for every row: Scan sets each of them (a blob
	// to a copy of its own), and decodeAll copies what it keeps.
	var (
		r       stateRow
		key     int64
		targets = append(r.targets(), &key)
	)
	for rows.Next() {
		var fs FeedState
		if err := rows.Scan(targets...); err != nil {
			return nil, err
		}
		if err := r.decodeAll(&fs, false); err != nil {
			return nil, err
		}
		fs.key = key
		states[fs.FeedID] = fs
	}
	return states, rows.Err()
}

// States returns the state of every feed that has one.
func (c *Catalog) States(ctx context.Context) (map[string]FeedState, error) {
	rows, err := c.read(ctx, once, `SELECT f.feed_id, `+stateColumns+` FROM feed_state st JOIN feeds f ON f.key = st.feed_key`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	states := map[string]FeedState{}
	for rows.Next() {
		var fs FeedState
		if err := scanState(rows.Scan, &fs); err != nil {
			return nil, err
		}
		states[fs.FeedID] = fs
	}
	return states, rows.Err()
}

// PutStates writes feed states, each replacing the feed's last.
func (t *Tx) PutStates(states ...FeedState) error {
	for i := range states {
		row, err := EncodeState(&states[i])
		if err != nil {
			return err
		}
		if err := t.PutEncodedStates(row); err != nil {
			return err
		}
	}
	return nil
}

// An EncodedState is a feed state as its row holds it: its JSON
// columns encoded and compressed. EncodeState makes it before the write
// transaction, which then only writes it (PutEncodedStates): another
// process waiting to write waits for less.
type EncodedState struct {
	feedID string
	key    int64 // the feed's key, when the state read had it
	values []any // the columns after feed_key, as putStateSQL lists them
}

// EncodeState encodes fs for its row.
func EncodeState(fs *FeedState) (EncodedState, error) {
	// counts, sched and decision in their binary layout (statebin.go),
	// last_error as JSON text: queries read it (docs/store.md).
	var lastErr, schedCol, decCol any
	counts := appendStateBin(nil, fs.Counts)
	if fs.LastError != nil {
		b, err := json.Marshal(fs.LastError)
		if err != nil {
			return EncodedState{}, err
		}
		lastErr = string(b)
	}
	if fs.Sched != nil {
		schedCol = appendStateBin(nil, *fs.Sched)
	}
	switch {
	case fs.Decision != nil:
		decCol = appendStateBin(nil, *fs.Decision)
	case fs.decision != nil:
		decCol = fs.decision
	}
	var warnings string
	if len(fs.Warnings) > 0 {
		b, err := json.Marshal(fs.Warnings)
		if err != nil {
			return EncodedState{}, err
		}
		warnings = string(b)
	}
	st := fs.SchedState()
	return EncodedState{fs.FeedID, fs.key, []any{fs.Title, fs.Validators.ETag, fs.Validators.LastModified, ms(fs.LastFetchAt.Time), ms(fs.LastSuccessAt.Time), ms(fs.LastRunAt.Time),
		fs.LastStatus, lastErr, fs.ConsecutiveFailures, fs.IntervalSec, ms(fs.NextFetchAt.Time), string(st.Lifecycle), ms(st.RetryUntil.Time),
		fs.LastBodySHA256, fs.LastContentLength, fs.NewEntriesLastFetch, fs.MovedTo, fs.MovedCount, counts, schedCol, decCol,
		appendDemand(nil, st.DemandInputs()), fs.Format, fs.FormatVersion, fs.ContentType, fs.Publisher, fs.Link, warnings}}, nil
}

// stateWriteColumns are the columns of feed_state after feed_key, as
// EncodeState's values list them.
var stateWriteColumns = []string{"title", "etag", "last_modified", "last_fetch_at", "last_success_at", "last_run_at",
	"last_status", "last_error", "consecutive_failures", "interval_sec", "next_fetch_at", "lifecycle", "retry_until", "last_body_sha256",
	"last_content_length", "new_entries_last_fetch", "moved_to", "moved_count", "counts", "sched", "decision", "demand",
	"format", "format_version", "content_type", "publisher", "link", "warnings"}

// putStateSQL writes a feed's state: an upsert, not INSERT OR REPLACE,
// which deletes the row and its index entry and inserts both again at
// every fetch. Every column is set (both lists come from
// stateWriteColumns), so the two write the same row.
var putStateSQL = func() string {
	set := make([]string, len(stateWriteColumns))
	for i, col := range stateWriteColumns {
		set[i] = col + " = excluded." + col
	}
	return `INSERT INTO feed_state (feed_key, ` + strings.Join(stateWriteColumns, ", ") + `)
		VALUES (?` + strings.Repeat(", ?", len(stateWriteColumns)) + `)
		ON CONFLICT (feed_key) DO UPDATE SET ` + strings.Join(set, ", ")
}()

// PutEncodedStates writes feed states EncodeState encoded.
func (t *Tx) PutEncodedStates(rows ...EncodedState) error {
	var ids []string
	for _, r := range rows {
		if r.key != 0 {
			t.keys[r.feedID] = r.key
		} else {
			ids = append(ids, r.feedID)
		}
	}
	end := t.within(ids...)
	err := t.feedKeys(ids)
	end()
	if err != nil {
		return err
	}
	for _, r := range rows {
		if err := t.putState(r); err != nil {
			return err
		}
	}
	return nil
}

func (t *Tx) putState(r EncodedState) error {
	defer t.within(r.feedID)()
	key, err := t.feedKey(r.feedID)
	if err != nil {
		return err
	}
	_, err = t.write(kept, putStateSQL, append([]any{key}, r.values...)...)
	return err
}

// Demands calls fn with the scheduling settings and the demand inputs of
// every enabled subscription, in the list's order: what the adaptive
// policy's budget scale is computed from. It reads a small fixed-size
// projection of each feed's scheduler state (feed_state.demand), not the
// state itself: 100,000 feeds take a fraction of a second.
func (c *Catalog) Demands(ctx context.Context, fn func(o *sched.Overrides, in *sched.DemandInputs)) error {
	rows, err := c.read(ctx, once, `SELECT `+overrideColumns+`, st.demand
		FROM subscriptions s LEFT JOIN feed_state st ON st.feed_key = s.feed_key
		WHERE s.disabled = 0 ORDER BY s.position, s.feed_key`)
	if err != nil {
		return err
	}
	defer rows.Close()
	none := sched.State{}.DemandInputs()
	var demand []byte
	for rows.Next() {
		o, err := scanOverrides(rows.Scan, &demand)
		if err != nil {
			return err
		}
		in, ok := readDemand(demand)
		if !ok {
			in = none
		}
		fn(&o, &in)
	}
	return rows.Err()
}

// overrideColumns are a subscription's scheduling settings
// (sched.Overrides), as scanOverrides reads them.
const overrideColumns = `s.interval_sec, s.cron, s.min_interval_sec, s.max_interval_sec, s.paused_until`

// scanOverrides reads a row of overrideColumns followed by the columns
// into extra.
func scanOverrides(scan func(...any) error, extra ...any) (sched.Overrides, error) {
	var (
		sub    ndjson.Subscription
		paused sql.NullInt64
	)
	if err := scan(append([]any{&sub.IntervalSec, &sub.Cron, &sub.MinIntervalSec, &sub.MaxIntervalSec, &paused}, extra...)...); err != nil {
		return sched.Overrides{}, err
	}
	sub.PausedUntil = ndjson.At(fromMS(paused))
	return sched.OverridesOf(sub), nil
}

// OverridesOf returns the scheduling settings of the feeds feedIDs that
// have a subscription, read in one query: all feed-store reads of a
// batch's subscriptions, where reading them whole (labels, headers and
// the rest, decoded) was a tenth of a 304's CPU.
func (c *Catalog) OverridesOf(ctx context.Context, feedIDs []string) (map[string]sched.Overrides, error) {
	overrides := make(map[string]sched.Overrides, len(feedIDs))
	if len(feedIDs) == 0 {
		return overrides, nil
	}
	list, err := json.Marshal(feedIDs)
	if err != nil {
		return nil, err
	}
	rows, err := c.read(ctx, kept, `SELECT `+overrideColumns+`, f.feed_id FROM json_each(?) j JOIN feeds f ON f.feed_id = j.value
		JOIN subscriptions s ON s.feed_key = f.key`, string(list))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var feedID string
	for rows.Next() {
		o, err := scanOverrides(rows.Scan, &feedID)
		if err != nil {
			return nil, err
		}
		overrides[feedID] = o
	}
	return overrides, rows.Err()
}

// The demand projection, field by field, fixed-size: decoding it for
// 100,000 feeds must take a millisecond or two. TestDemandRoundTrip fills
// every field and checks the round trip, so that a field added to
// sched.DemandInputs cannot be left out here unnoticed.
const demandSize = 1 + 10*8

func appendDemand(b []byte, in sched.DemandInputs) []byte {
	var flags byte
	if in.Disabled {
		flags |= 1
	}
	if in.FetchedZero {
		flags |= 2
	}
	if in.Slot {
		flags |= 4
	}
	b = append(b, flags)
	for _, v := range [...]int64{int64(in.IntervalSec), in.FetchedSec, in.FetchedNsec, int64(in.Window), int64(in.TTLMinutes)} {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	for _, v := range [...]float64{in.RateN, in.RateT, in.BurstN, in.BurstT, in.Peak} {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

func readDemand(b []byte) (in sched.DemandInputs, ok bool) {
	if len(b) != demandSize {
		return in, false
	}
	in.Disabled, in.FetchedZero, in.Slot = b[0]&1 != 0, b[0]&2 != 0, b[0]&4 != 0
	u := func(i int) uint64 { return binary.LittleEndian.Uint64(b[1+8*i:]) }
	in.IntervalSec, in.FetchedSec, in.FetchedNsec, in.Window, in.TTLMinutes = int(u(0)), int64(u(1)), int64(u(2)), int(u(3)), int(u(4))
	f := func(i int) float64 { return math.Float64frombits(u(i)) }
	in.RateN, in.RateT, in.BurstN, in.BurstT, in.Peak = f(5), f(6), f(7), f(8), f(9)
	return in, true
}

// unixMS is t in Unix milliseconds.
func unixMS(t time.Time) int64 { return t.UnixMilli() }
