package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// A store written before the catalog kept its feed states, scheduler
// budget and indexes in files of its own; the first open by a feedpipe
// with a catalog imports them into it (buildFromFiles), once, and removes
// them. The test fixture is testdata/oldstore.

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

// hasOldStore reports whether the store was written before the catalog.
func (c *Catalog) hasOldStore() bool {
	for _, key := range []string{oldStateLog, oldCheckpoint} {
		if _, err := c.st.Stat(key); err == nil {
			return true
		}
	}
	return false
}

// importOldStore imports what the files of a store written before the
// catalog hold that the logs do not: the feed states (the state log, one
// line per update, the last of a feed winning), the scheduler's budget and
// the fetch duration histogram. It returns how far into events/ the old
// store's checkpoint says every stored entry's event was written; ok is
// false when it has none. A store without these files imports nothing.
func (c *Catalog) importOldStore(ctx context.Context) (events Checkpoint, ok bool, err error) {
	st := c.st
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
		return events, false, err
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
			return events, false, err
		}
	}
	for key, meta := range map[string]string{oldBudget: MetaBudget, oldHistogram: MetaHistogram} {
		b, err := st.ReadFile(key)
		var v json.RawMessage
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return events, false, err
		case json.Unmarshal(b, &v) != nil:
			c.log.Warn("skipped a damaged file of the old store", "file", st.Path(key))
			continue
		}
		if err := c.SetMeta(ctx, meta, v); err != nil {
			return events, false, err
		}
	}
	b, err := st.ReadFile(oldCheckpoint)
	if err != nil {
		return events, false, nil
	}
	var oldCP struct {
		EventsFile   string `json:"events_file"`
		EventsOffset int64  `json:"events_offset"`
	}
	json.Unmarshal(b, &oldCP)
	return Checkpoint{File: oldCP.EventsFile, Offset: oldCP.EventsOffset}, true, nil
}

// removeOldStore removes the files of a store written before the catalog,
// once imported.
func (c *Catalog) removeOldStore() error {
	for _, key := range []string{oldStateLog, oldBudget, oldHistogram} {
		if err := c.st.RemoveAll(key); err != nil {
			return err
		}
	}
	for _, dir := range oldDirs {
		if err := c.st.RemoveAll(dir); err != nil {
			return err
		}
	}
	return nil
}
