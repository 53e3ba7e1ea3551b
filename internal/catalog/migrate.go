package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"time"

	"github.com/feedpipe/feedpipe/internal/storage"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// The files of stores written before the catalog, which it replaces.
const (
	oldStateLog   = "state/feeds.ndjson"
	oldBudget     = "state/sched-budget.json"
	oldHistogram  = "state/fetch-durations.json"
	oldCheckpoint = "index/checkpoint.json"
)

// oldDirs hold the old store's indexes: the entry index and the state
// snapshots (index/), the URL index (urls/), the run ledgers (ledger/).
var oldDirs = []string{"index", "urls", "ledger"}

// The meta keys of what the store's stages keep in the catalog besides
// their tables.
const (
	MetaBudget    = "budget"    // the scheduler's budget loop (feed-store)
	MetaHistogram = "histogram" // the fetch duration histogram (feed-store, metrics)
	MetaHeartbeat = "heartbeat" // feed-loop's last cycle (feed-store heartbeat; feed-stats, metrics)
	MetaScale     = "scale"     // the adaptive scale, as last computed (feed-store)
)

// buildFromFiles fills a new catalog from the store's files, when the
// store has some: a store written before the catalog (migrated once: its
// feed states from its state log, its budget and histogram files; its old
// index files then go), or one whose catalog was deleted (the feed states
// rebuilt from the fetch records, as feed-store reindex does). Then the
// subscription log, and the entries, aliases and fetch records of the
// logs, as a catch-up from their start.
func (c *Catalog) buildFromFiles(ctx context.Context) error {
	st := c.st
	old, files := false, false
	for _, key := range []string{oldStateLog, oldCheckpoint} {
		if _, err := st.Stat(key); err == nil {
			old = true
		}
	}
	for _, dir := range []string{storage.DirEntries, storage.DirFetches} {
		if names, _ := st.DayFiles(dir); len(names) > 0 {
			files = true
		}
	}
	if _, err := st.Stat(SubscriptionsFile); err == nil {
		files = true
	}
	if !old && !files {
		return nil // a new store
	}
	start := time.Now()
	if old {
		c.log.Info("migrating the store to its catalog, once: the subscriptions, feed states and indexes move into " + c.path)
	} else {
		c.log.Info("the store has no catalog: building " + c.path + " from the store's files")
	}
	if err := c.catchUpSubscriptions(ctx); err != nil {
		return err
	}
	// The state log: one line per update, the last of a feed winning.
	states := map[string]FeedState{}
	var order []string
	if _, _, err := st.ReadLog(oldStateLog, 0, func(l ndjson.Line) error {
		var fs FeedState
		if l.Type != TypeFeedState || l.Decode(&fs) != nil || !ndjson.IsFeedID(fs.FeedID) {
			return nil
		}
		if _, ok := states[fs.FeedID]; !ok {
			order = append(order, fs.FeedID)
		}
		states[fs.FeedID] = fs
		return nil
	}); err != nil {
		return err
	}
	if !old {
		if _, err := c.rebuildStates(ctx); err != nil {
			return err
		}
	}
	for len(order) > 0 {
		n := min(len(order), followChunk)
		chunk := order[:n]
		order = order[n:]
		if err := c.Update(ctx, func(t *Tx) error {
			for _, id := range chunk {
				fs := states[id]
				// The old store kept no run: the last fetch stands for it.
				fs.LastRunAt = fs.LastFetchAt
				if err := t.PutStates(fs); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	for key, meta := range map[string]string{oldBudget: MetaBudget, oldHistogram: MetaHistogram} {
		b, err := st.ReadFile(key)
		var v json.RawMessage
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return err
		case json.Unmarshal(b, &v) != nil:
			c.log.Warn("skipped a damaged file of the old store", "file", st.Path(key))
			continue
		}
		if err := c.SetMeta(ctx, meta, v); err != nil {
			return err
		}
	}
	// The logs, from their start. Every stored entry's event was written
	// (the old checkpoint says how far; what a crash left is announced by
	// feed-store's next run, as the old store did).
	events := Checkpoint{}
	if b, err := st.ReadFile(oldCheckpoint); err == nil {
		var oldCP struct {
			EventsFile   string `json:"events_file"`
			EventsOffset int64  `json:"events_offset"`
		}
		json.Unmarshal(b, &oldCP)
		events = Checkpoint{File: oldCP.EventsFile, Offset: oldCP.EventsOffset}
	} else if events.File, events.Offset, err = st.ReadLogsSince(storage.DirEvents, "", 0, func(string, ndjson.Line) error { return nil }); err != nil {
		return err
	}
	if err := c.SetMeta(ctx, TapEvents, events); err != nil {
		return err
	}
	idx := c.logIndex()
	if err := c.follow(ctx, TapEntries, storage.DirEntries, func(t *Tx, _ string, loc Location, l ndjson.Line) error {
		_, _, err := t.indexEntry(ctx, idx, loc, l)
		return err
	}); err != nil {
		return err
	}
	if err := c.follow(ctx, TapAliases, storage.DirAliases, indexAlias); err != nil {
		return err
	}
	if err := c.CatchUpFetches(ctx); err != nil {
		return err
	}
	for _, key := range []string{oldStateLog, oldBudget, oldHistogram} {
		if err := st.RemoveAll(key); err != nil {
			return err
		}
	}
	for _, dir := range oldDirs {
		if err := st.RemoveAll(dir); err != nil {
			return err
		}
	}
	c.log.Info("the catalog is built", "elapsed_ms", time.Since(start).Milliseconds())
	return nil
}
