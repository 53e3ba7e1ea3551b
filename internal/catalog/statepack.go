package catalog

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Since schema version 6 the JSON columns of feed_state that every fetch
// rewrites (counts, sched, decision: 1.2 KB of the row's 1.5 KB) hold
// their JSON compressed: a zstd frame made with stateDict, a fixed
// dictionary of the keys and the usual values of those records, which
// takes a row to about 650 bytes. A fetched feed writes its state row's
// page, twice (the WAL, then the checkpoint): a small row is what lets a
// catalog with small pages (pageSize) write one small page per feed. A
// value written before version 6 is JSON text, read as it is: zstd's
// magic number is no way for JSON to begin.
//
// stateDictID names the dictionary in each frame. The dictionary of an
// id must never change: the rows written with it could not be read. A
// better one gets the next id, and unpackJSON keeps reading the old.
const stateDictID = 1

// stateDict is the dictionary of id stateDictID: a scheduler state, a
// decision and counts as feed-store writes them (zstd finds the longest
// matches in it, so the keys, their order and the enumerated values are
// what count; numbers hardly compress).
const stateDict = `{"fetches":0,"ok":0,"not_modified":0,"errors":0,"error_codes":null,"bytes_in":0,"bytes_saved":0,"duration_ms":0,"new_entries":0,"updated":0}` +
	`{"fetches":0,"ok":0,"not_modified":0,"errors":1,"error_codes":{"http_503":1},"bytes_in":0,"bytes_saved":0,"duration_ms":0,"new_entries":0,"updated":0}` +
	`{"state":"backoff","reason":"http_error","interval_sec":3600,"next_at":"2026-01-01T00:00:00Z","decided_at":"2026-01-01T00:00:00.000Z","fetched_at":"2026-01-01T00:00:00.000Z","retry_until":"2026-01-01T00:00:00Z",` +
	`"ewma_sec":3600,"pub":[1700000000,1700000000],"rate_n":1.0,"rate_t":1.0,"burst_n":1.0,"burst_t":1.0,"hours":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"days":[0,0,0,0,0,0,0],` +
	`"peak":1.0,"window":20,"withheld":0,"runs":[[1700000000,1700000000,1]],"failures":1,"backoff_step":1,"successes":1,"errors_spent":1,"last_error":"http_503","hints":{"ttl_minutes":60,"skip_hours":[0],"skip_days":["Sunday"]},` +
	`"disabled_reason":"","disabled_at":"2026-01-01T00:00:00Z","ttl_minutes":60}` +
	`{"state":"cooling_down","reason":"retry_after"}{"state":"paused","reason":"paused"}{"state":"disabled","reason":"feed_disabled"}` +
	`{"decision":"backoff","reason":"http_error","at":"2026-01-01T00:00:00.000Z","next_at":"2026-01-01T00:00:00Z","until":"2026-01-01T00:00:00Z","state":"backoff","event":"circuit_open",` +
	`"inputs":{"policy":"adaptive","override":"interval 1h","outcome":"error","http_status":503,"not_modified":true,"truncated":true,"error_class":"transient","error_code":"http_503","new_entries":0,"items":20,` +
	`"interval_before_sec":3600,"interval_after_sec":3600,"min_sec":300,"max_sec":86400,"ewma_secs":3600,"rate_per_day":1.0,"scale":7200,"base_sec":3600,"profile_factor":1.0,"tail_cap_sec":3600,"window_cap_sec":3600,` +
	`"slot":"00:00","cron_next_at":"2026-01-01T00:00:00Z","cron_error":"","ttl_sec":3600,"max_age_sec":3600,"floor_sec":300,"retry_after_secs":3600,"skip_hours":[0],"skip_days":["Sunday"],"skip_moved_from":"","skip_ignored":"",` +
	`"backoff_step":0,"backoff_sec":0,"jitter_sec":0,"consecutive_failures":0,"error_budget":5,"error_budget_size":5,"probe":true}}` +
	`{"decision":"fetch_now","reason":"new_feed","until":null,"state":"new"}{"decision":"pause","reason":"manual","state":"paused"}{"decision":"defer","reason":"posting_rate","until":null,"state":"healthy","inputs":{"policy":"seed","outcome":"not_modified"}}` +
	`{"decision":"defer","reason":"daily_slot","state":"healthy"}{"reason":"no_new_entries"}{"reason":"new_entries"}{"reason":"not_modified"}{"reason":"ewma_stable"}{"reason":"budget_exceeded"}{"reason":"parse_error"}{"reason":"address_refused"}{"reason":"fixed"}{"reason":"cron"}` +
	`{"decision":"defer","reason":"posting_rate","at":"2026-01-01T00:00:00.000Z","next_at":"2026-01-01T00:00:00Z","until":null,"state":"healthy","inputs":{"policy":"adaptive","outcome":"fetch","http_status":200,"new_entries":0,"items":20,` +
	`"interval_before_sec":3600,"interval_after_sec":3600,"min_sec":300,"max_sec":86400,"ewma_secs":3600,"rate_per_day":1.0,"scale":7200,"base_sec":3600,"backoff_step":0,"jitter_sec":0,"consecutive_failures":0,"error_budget":5,"error_budget_size":5}}` +
	`{"state":"healthy","reason":"posting_rate","interval_sec":3600,"next_at":"2026-01-01T00:00:00.000Z","decided_at":"2026-01-01T00:00:00.000Z","fetched_at":"2026-01-01T00:00:00.000Z","ewma_sec":3600,"pub":[1700000000,1700000000,1700000000,1700000000],` +
	`"rate_n":1.0,"rate_t":1.0,"burst_n":1.0,"burst_t":1.0,"hours":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"days":[0,0,0,0,0,0,0],"window":20,"runs":[[1700000000,1700000000,1],[1700000000,1700000000,1]]}` +
	`{"fetches":100,"ok":100,"not_modified":0,"errors":0,"error_codes":null,"bytes_in":100000,"bytes_saved":100000,"duration_ms":10000,"new_entries":100,"updated":0}`

// zstdMagic begins every zstd frame.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

var (
	packOnce sync.Once
	packEnc  *zstd.Encoder
	packDec  *zstd.Decoder
	packErr  error
)

// packers makes the encoder and decoder once, when a state is first read
// or written: both are safe for concurrent use (EncodeAll, DecodeAll).
func packers() (*zstd.Encoder, *zstd.Decoder, error) {
	packOnce.Do(func() {
		// SpeedFastest: the encoder of SpeedDefault copies its whole
		// dictionary tables back at every EncodeAll (a fifth of a 304's
		// CPU in feed-store); the fastest copies what the last state
		// touched, at half the time and no larger output (10 against 21
		// µs, 117.5 against 118.7 B a column, on the bench store's states).
		packEnc, packErr = zstd.NewWriter(nil, zstd.WithEncoderDictRaw(stateDictID, []byte(stateDict)),
			zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true))
		if packErr != nil {
			return
		}
		packDec, packErr = zstd.NewReader(nil, zstd.WithDecoderDictRaw(stateDictID, []byte(stateDict)),
			zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(1<<20))
	})
	return packEnc, packDec, packErr
}

// packJSON compresses the JSON b for a feed_state column.
func packJSON(b []byte) ([]byte, error) {
	enc, _, err := packers()
	if err != nil {
		return nil, fmt.Errorf("catalog: state compressor: %w", err)
	}
	return enc.EncodeAll(b, make([]byte, 0, len(b)/2+16)), nil
}

// unpackJSON is the JSON of a feed_state column packJSON wrote, or the
// column as it is when it holds JSON text (written before version 6).
func unpackJSON(v []byte) ([]byte, error) {
	if !bytes.HasPrefix(v, zstdMagic) {
		return v, nil
	}
	_, dec, err := packers()
	if err != nil {
		return nil, fmt.Errorf("state decompressor: %w", err)
	}
	b, err := dec.DecodeAll(v, nil)
	if err != nil {
		return nil, fmt.Errorf("compressed state: %w", err)
	}
	return b, nil
}

// packStates compresses the counts, sched and decision of every state
// row written before schema version 6 (migration 6), a thousand rows at a
// time so that memory holds a thousand: 100,000 feeds took 7.5 s of CPU
// here, and 50 s in all on a busy machine (the table is rewritten), once.
func packStates(t *Tx) error {
	return rewriteStates(t, "compressing the feed states (catalog schema version 6), once", func(_ int, col []byte) (any, error) {
		if bytes.HasPrefix(col, zstdMagic) {
			return col, nil
		}
		return packJSON(col)
	})
}

// rewriteStates sets each non-NULL counts, sched and decision column
// (i = 0, 1, 2) of every state row to what convert makes of it, packChunk
// rows at a time so that memory holds that many: a migration's Go step
// (packStates, binStates), saying msg in the log first when there are rows.
func rewriteStates(t *Tx, msg string, convert func(i int, col []byte) (any, error)) error {
	var n int
	if err := t.readRow(once, `SELECT count(*) FROM feed_state`).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	t.c.log.Info(msg, "feeds", n)
	type row struct {
		key  int64
		cols [3]any
	}
	todo := make([]row, 0, packChunk)
	for after := int64(-1 << 63); ; {
		rows, err := t.read(once, `SELECT feed_key, counts, sched, decision FROM feed_state WHERE feed_key > ? ORDER BY feed_key LIMIT ?`, after, packChunk)
		if err != nil {
			return err
		}
		todo = todo[:0]
		for rows.Next() {
			var r row
			var cols [3][]byte
			if err := rows.Scan(&r.key, &cols[0], &cols[1], &cols[2]); err != nil {
				rows.Close()
				return err
			}
			for i, col := range cols {
				if col == nil {
					continue // NULL stays NULL
				}
				if r.cols[i], err = convert(i, col); err != nil {
					rows.Close()
					return fmt.Errorf("catalog: state of feed %d: %w", r.key, err)
				}
			}
			todo = append(todo, r)
		}
		if err := rows.Err(); err != nil {
			rows.Close()
			return err
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if len(todo) == 0 {
			return nil
		}
		for _, r := range todo {
			if _, err := t.write(kept, `UPDATE feed_state SET counts = ?, sched = ?, decision = ? WHERE feed_key = ?`, r.cols[0], r.cols[1], r.cols[2], r.key); err != nil {
				return err
			}
		}
		after = todo[len(todo)-1].key
	}
}

// packChunk is how many state rows packStates reads at a time.
const packChunk = 1000
