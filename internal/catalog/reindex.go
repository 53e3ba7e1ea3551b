package catalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// ReindexSummary counts what Reindex built.
type ReindexSummary struct {
	Subscriptions int
	Entries       int // entries indexed
	Versions      int // their versions
	Aliases       int
	Fetches       int
	// StatesRebuilt is set when the feed states were rebuilt from the
	// fetch records (the catalog was missing or damaged): counts, last
	// fetch and error; the scheduler learns each feed's pace again, and
	// the first fetch of each is unconditional.
	StatesRebuilt bool
	States        int
	// Damaged names where a damaged catalog was moved aside; "" for none.
	Damaged string
}

// Reindex rebuilds the store's catalog from the store's files alone: the
// subscription log, entries/, aliases/, fetches/ and media/. Feed states, which
// the files do not hold whole, are kept when the catalog can be read, and
// rebuilt from the fetch records when it cannot (deleted, or damaged: then
// it is moved aside, with a log line, and a new one made). The caller
// holds the store's lock and the fetch lock: no stage may write
// meanwhile.
func Reindex(ctx context.Context, st *storedir.Store, log *slog.Logger) (sum ReindexSummary, err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	_, err = os.Stat(st.Path(File))
	missing := errors.Is(err, os.ErrNotExist) // Open builds it from the files, states and all
	c, err := Open(ctx, st, log)
	if errors.Is(err, ErrDamaged) {
		aside := st.Path(File) + ".damaged-" + time.Now().UTC().Format("20060102T150405")
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if err := os.Rename(st.Path(File)+suffix, aside+suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				return sum, fmt.Errorf("catalog: move the damaged catalog aside: %w", err)
			}
		}
		sum.Damaged, missing = aside, true
		log.Warn("the catalog is damaged: moved aside, a new one is built from the store's files", "damaged", aside)
		c, err = Open(ctx, st, log)
	}
	if err != nil {
		return sum, err
	}
	defer c.Close()
	unlock, err := st.Lock(subsLock, true, nil)
	if err != nil {
		return sum, err
	}
	defer unlock()
	var states int
	if err := c.readRow(ctx, once, `SELECT count(*) FROM feed_state`).Scan(&states); err != nil {
		return sum, err
	}
	sum.StatesRebuilt = states == 0 || missing
	err = c.Update(ctx, func(t *Tx) error {
		for _, q := range []string{`DELETE FROM subscriptions`, `DELETE FROM entries`, `DELETE FROM entry_versions`, `DELETE FROM links`,
			`DELETE FROM aliases`, `DELETE FROM fetches`, `DELETE FROM runs`, `DELETE FROM meta WHERE key LIKE 'tap:%'`} {
			if _, err := t.write(once, q); err != nil {
				return err
			}
		}
		return t.clearFTS()
	})
	if err != nil {
		return sum, err
	}
	if err := c.catchUpSubscriptionsLocked(ctx); err != nil {
		return sum, err
	}
	if err := c.indexLogs(ctx); err != nil { // the rows of the media queue stay; the records' files follow them
		return sum, err
	}
	// Every stored entry's event was written, or was announced since.
	evFile, evOff, err := st.ReadLogsSince(storedir.DirEvents, "", 0, func(string, ndjson.Line) error { return nil })
	if err != nil {
		return sum, err
	}
	if err := c.SetMeta(ctx, TapEvents, Checkpoint{File: evFile, Offset: evOff}); err != nil {
		return sum, err
	}
	if states == 0 {
		if sum.States, err = c.rebuildStates(ctx); err != nil {
			return sum, err
		}
	}
	for _, q := range []struct {
		sql string
		n   *int
	}{{`SELECT count(*) FROM subscriptions`, &sum.Subscriptions}, {`SELECT count(*) FROM aliases`, &sum.Aliases},
		{`SELECT count(*) FROM entries`, &sum.Entries}, {`SELECT count(*) FROM stored_versions`, &sum.Versions},
		{`SELECT count(*) FROM fetches`, &sum.Fetches}, {`SELECT count(*) FROM feed_state`, &sum.States}} {
		if err := c.readRow(ctx, once, q.sql).Scan(q.n); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

// buildFromFiles fills a new catalog from the store's files, when the
// store has some: a store written before the catalog (imported once:
// importOldStore; its old files then go), or one whose catalog was deleted
// (the feed states rebuilt from the fetch records, as feed-store reindex
// does). Then the subscription log, and the entries, aliases and fetch
// records of the logs, as a catch-up from their start.
func (c *Catalog) buildFromFiles(ctx context.Context) error {
	st := c.st
	old, files := c.hasOldStore(), false
	for _, dir := range []string{storedir.DirEntries, storedir.DirFetches} {
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
	if !old {
		if _, err := c.rebuildStates(ctx); err != nil {
			return err
		}
	}
	events, ok, err := c.importOldStore(ctx)
	if err != nil {
		return err
	}
	// The logs, from their start. Every stored entry's event was written
	// (an old store's checkpoint says how far; what a crash left is
	// announced by feed-store's next run, as the old store did).
	if !ok {
		if events.File, events.Offset, err = st.ReadLogsSince(storedir.DirEvents, "", 0, func(string, ndjson.Line) error { return nil }); err != nil {
			return err
		}
	}
	if err := c.SetMeta(ctx, TapEvents, events); err != nil {
		return err
	}
	if err := c.indexLogs(ctx); err != nil {
		return err
	}
	if err := c.removeOldStore(); err != nil {
		return err
	}
	c.log.Info("the catalog is built", "elapsed_ms", time.Since(start).Milliseconds())
	return nil
}

// rebuildStates makes each fetched feed's state from its fetch records, in
// the order they were fetched: counts, the last fetch, success and error,
// the last run. No validators (whether a body was read is not in the
// records) and no scheduler state: the next fetch of each feed is whole,
// and the scheduler starts learning its pace again.
func (c *Catalog) rebuildStates(ctx context.Context) (int, error) {
	states := map[string]*FeedState{}
	_, _, err := c.st.ReadLogsSince(storedir.DirFetches, "", 0, func(_ string, l ndjson.Line) error {
		var f ndjson.Fetch
		if l.Type != ndjson.TypeFetch || l.Decode(&f) != nil || f.Page != nil {
			return nil
		}
		fs := states[f.Due.FeedID]
		if fs == nil {
			fs = &FeedState{FeedID: f.Due.FeedID}
			states[f.Due.FeedID] = fs
		}
		if !f.FetchedAt.After(fs.LastFetchAt.Time) {
			return nil
		}
		fs.LastFetchAt, fs.LastStatus = f.FetchedAt, f.HTTPStatus
		if f.Due.ScheduledAt.After(fs.LastRunAt.Time) {
			fs.LastRunAt = f.Due.ScheduledAt
		}
		if f.Error == nil {
			fs.LastSuccessAt, fs.ConsecutiveFailures, fs.LastError = f.FetchedAt, 0, nil
			if f.BodySHA256 != "" {
				fs.LastBodySHA256, fs.LastContentLength = f.BodySHA256, f.ContentLength
			}
			if f.HasBody() && f.ContentType != "" {
				fs.ContentType = f.ContentType
			}
		} else {
			fs.ConsecutiveFailures++
			fs.LastError = f.Error
		}
		fs.MovedTo, fs.MovedCount = f.MovedTo, f.MovedCount
		fs.Counts.Add(&f)
		return nil
	})
	if err != nil {
		return 0, err
	}
	ids := slices.Sorted(maps.Keys(states))
	for chunk := range slices.Chunk(ids, followChunk) {
		if err := c.Update(ctx, func(t *Tx) error {
			for _, id := range chunk {
				if err := t.PutStates(*states[id]); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return 0, err
		}
	}
	return len(states), nil
}
