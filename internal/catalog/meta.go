package catalog

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// The catalog's checkpoints: how far into each of the store's logs its
// rows are complete. A writer appends to a log durably, then commits the
// rows and the checkpoint in one transaction; what a crash left between is
// indexed by the next writer from the checkpoint on.
const (
	TapSubscriptions = "tap:subscriptions"
	TapEntries       = "tap:entries"
	TapEvents        = "tap:events"
	TapAliases       = "tap:aliases"
	TapFetches       = "tap:fetches"
)

// The meta keys of what the store's stages keep in the catalog besides
// their tables.
const (
	MetaBudget    = "budget"    // the scheduler's budget loop (feed-store)
	MetaHistogram = "histogram" // the fetch duration histogram (feed-store, metrics)
	MetaHeartbeat = "heartbeat" // feed-loop's last cycle (feed-store heartbeat; feed-stats, metrics)
	MetaScale     = "scale"     // the adaptive scale, as last computed (feed-store)
)

// Checkpoint is a position in a log: a file (a store key) and an offset in
// it; past it come that file's later lines and the later day files.
type Checkpoint struct {
	File   string `json:"file"`
	Offset int64  `json:"offset"`
}

// Checkpoint returns the checkpoint of the log tap; zero when there is none.
func (c *Catalog) Checkpoint(ctx context.Context, tap string) (Checkpoint, error) {
	var cp Checkpoint
	_, err := c.Meta(ctx, tap, &cp)
	return cp, err
}

func (t *Tx) setCheckpoint(tap string, cp Checkpoint) error { return t.SetMeta(tap, cp) }

// Meta reads the value of key into v; ok is false when there is none.
func (c *Catalog) Meta(ctx context.Context, key string, v any) (ok bool, err error) {
	return scanMeta(c.readRow(ctx, kept, `SELECT value FROM meta WHERE key = ?`, key), key, v)
}

// Meta is Catalog.Meta inside the transaction.
func (t *Tx) Meta(key string, v any) (ok bool, err error) {
	return scanMeta(t.readRow(kept, `SELECT value FROM meta WHERE key = ?`, key), key, v)
}

func scanMeta(row row, key string, v any) (bool, error) {
	var s string
	switch err := row.Scan(&s); {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, err
	}
	if err := json.Unmarshal([]byte(s), v); err != nil {
		return false, fmt.Errorf("catalog: meta %s: %w", key, err)
	}
	return true, nil
}

// SetMeta keeps v, as JSON, under key.
func (t *Tx) SetMeta(key string, v any) error {
	// The stages' bookkeeping (checkpoints, the scheduler's budget, the
	// last cycle): no reader keeps an answer of it (changes.go).
	defer t.within()()
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = t.write(kept, `INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)`, key, string(b))
	return err
}

// SetMeta is Tx.SetMeta in a transaction of its own.
func (c *Catalog) SetMeta(ctx context.Context, key string, v any) error {
	return c.Update(ctx, func(t *Tx) error { return t.SetMeta(key, v) })
}
