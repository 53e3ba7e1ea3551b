package catalog

import (
	"context"
	"time"

	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// The catalog follows the store's logs: a writer appends lines to a log
// and syncs them, then commits their rows and the log's checkpoint in one
// transaction. A crash between leaves lines past the checkpoint, which
// the next writer indexes (the CatchUp functions, idempotent) before it
// writes anything; feed-store reindex indexes every log from its start.

// followChunk is how many lines are indexed in one transaction when a
// catalog is built from the logs: enough to amortize the commit, few enough
// to keep a transaction's memory small.
const followChunk = 20000

// follow reads the log dir from the catalog's checkpoint tap on and calls
// apply for each line in transactions of at most followChunk lines, each
// of which moves the checkpoint past its lines.
func (c *Catalog) follow(ctx context.Context, tap, dir string, apply func(t *Tx, key string, loc Location, l ndjson.Line) error) error {
	cp, err := c.Checkpoint(ctx, tap)
	if err != nil {
		return err
	}
	type pending struct {
		key        string
		start, end int64
		line       ndjson.Line
	}
	var batch []pending
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		last := batch[len(batch)-1]
		err := c.Update(ctx, func(t *Tx) error {
			for _, p := range batch {
				if err := apply(t, p.key, Location{Day: storedir.KeyDay(p.key), Offset: p.start, Length: p.end - p.start}, p.line); err != nil {
					return err
				}
			}
			return t.setCheckpoint(tap, Checkpoint{File: last.key, Offset: last.end})
		})
		batch = batch[:0]
		return err
	}
	_, _, err = c.st.FollowLogs(dir, cp.File, cp.Offset, func(key string, start, end int64, l ndjson.Line) error {
		l.Raw = append([]byte(nil), l.Raw...) // the reader reuses its buffer
		batch = append(batch, pending{key, start, end, l})
		if len(batch) >= followChunk {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// CatchUpEntries indexes the entries and aliases the store holds past the
// catalog's checkpoints, then writes to events/ the events of the entries
// it indexed that events/ lacks (a crash between the steps of a commit),
// and returns them: their consumers never saw them. The caller holds the
// store lock.
func (c *Catalog) CatchUpEntries(ctx context.Context, now time.Time) (announced []ndjson.Event, err error) {
	type stored struct {
		entry ndjson.Entry
		file  string
	}
	var recovered []stored
	idx := c.logIndex()
	err = c.follow(ctx, TapEntries, storedir.DirEntries, func(t *Tx, key string, loc Location, l ndjson.Line) error {
		e, ok, err := t.indexEntry(ctx, idx, loc, l)
		if ok {
			recovered = append(recovered, stored{e, key})
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := c.follow(ctx, TapAliases, storedir.DirAliases, indexAlias); err != nil {
		return nil, err
	}
	// Which of the entries indexed now had their event written before the
	// crash?
	have := map[[2]string]bool{}
	cp, err := c.Checkpoint(ctx, TapEvents)
	if err != nil {
		return nil, err
	}
	evFile, evOff, err := c.st.ReadLogsSince(storedir.DirEvents, cp.File, cp.Offset, func(_ string, l ndjson.Line) error {
		var ev ndjson.Event
		if (l.Type == ndjson.TypeNewEntry || l.Type == ndjson.TypeUpdatedEntry || l.Type == ndjson.TypeBackfilledEntry) && l.Decode(&ev) == nil {
			have[[2]string{ev.EntryUID, ev.ContentHash}] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var lines []byte
	for _, r := range recovered {
		if have[[2]string{r.entry.EntryUID, r.entry.ContentHash}] {
			continue
		}
		ev := ndjson.EventFor(&r.entry, ndjson.At(now), r.file)
		ef, err := c.EventFeed(ctx, r.entry.FeedID)
		if err != nil {
			return nil, err
		}
		ef.Fill(&ev)
		line, err := ndjson.Marshal(ev)
		if err != nil {
			return nil, err
		}
		lines = append(lines, line...)
		announced = append(announced, ev)
	}
	if len(lines) > 0 {
		key := storedir.DayFile(storedir.DirEvents, now)
		off, err := c.st.AppendLines(key, lines, storedir.Durable)
		if err != nil {
			return nil, err
		}
		evFile, evOff = key, off+int64(len(lines))
	}
	if evFile != cp.File || evOff != cp.Offset {
		if err := c.SetMeta(ctx, TapEvents, Checkpoint{File: evFile, Offset: evOff}); err != nil {
			return nil, err
		}
	}
	return announced, nil
}

// indexLogs indexes the store's logs from their checkpoints (from their
// start in a catalog made anew): aliases/ first, so that a store that
// recorded an alias keeps its link index (keepLinksOfAliases), then
// entries/ with their links, fetches/ and media/.
func (c *Catalog) indexLogs(ctx context.Context) error {
	if err := c.follow(ctx, TapAliases, storedir.DirAliases, indexAlias); err != nil {
		return err
	}
	if err := c.Update(ctx, keepLinksOfAliases); err != nil {
		return err
	}
	idx := c.logIndex()
	if err := c.follow(ctx, TapEntries, storedir.DirEntries, func(t *Tx, _ string, loc Location, l ndjson.Line) error {
		_, _, err := t.indexEntry(ctx, idx, loc, l)
		return err
	}); err != nil {
		return err
	}
	if err := c.CatchUpFetches(ctx); err != nil {
		return err
	}
	return c.CatchUpMedia(ctx)
}

// indexEntry indexes the entry line l at loc unless its version is in the
// index already; ok reports that it was not.
func (t *Tx) indexEntry(ctx context.Context, idx *Index, loc Location, l ndjson.Line) (e ndjson.Entry, ok bool, err error) {
	if l.Type != ndjson.TypeEntry || l.Decode(&e) != nil {
		return e, false, nil
	}
	status, err := idx.Judge(ctx, e.FeedID, e.EntryUID, e.ContentHash)
	if err != nil || status == "" {
		return e, false, err
	}
	if err := t.StoreVersion(&e, loc); err != nil {
		return e, false, err
	}
	idx.Add(e.FeedID, Seen{UID: e.EntryUID, Hash: e.ContentHash, FirstSeen: e.FirstSeen, LastSeen: e.LastSeen, SeenCount: e.SeenCount})
	if h, ok := LinkHash(e.CanonicalLink); ok {
		if err := t.AddLink(h, ndjson.EntryRef{FeedID: e.FeedID, EntryUID: e.EntryUID}); err != nil {
			return e, false, err
		}
	}
	return e, true, nil
}

func indexAlias(t *Tx, _ string, loc Location, l ndjson.Line) error {
	var a ndjson.Alias
	if l.Type != ndjson.TypeAlias || l.Decode(&a) != nil {
		return nil
	}
	return t.AddAlias(&a, loc.Day)
}

// CatchUpFetches indexes the fetch records fetches/ holds past the
// catalog's checkpoint. The caller holds the fetch lock.
func (c *Catalog) CatchUpFetches(ctx context.Context) error {
	return c.follow(ctx, TapFetches, storedir.DirFetches, func(t *Tx, _ string, loc Location, l ndjson.Line) error {
		var f ndjson.Fetch
		if l.Type != ndjson.TypeFetch || l.Decode(&f) != nil {
			return nil
		}
		return t.IndexFetch(&f, loc)
	})
}

// SetFetchesCheckpoint records that the catalog indexes fetches/ up to
// end (a key and an offset), inside the transaction that indexes them.
func (t *Tx) SetFetchesCheckpoint(cp Checkpoint) error { return t.setCheckpoint(TapFetches, cp) }

// SetEntriesCheckpoint records that the catalog indexes entries/ up to
// cp, and that events/ holds their events up to events.
func (t *Tx) SetEntriesCheckpoint(cp, events Checkpoint) error {
	if err := t.setCheckpoint(TapEntries, cp); err != nil {
		return err
	}
	return t.setCheckpoint(TapEvents, events)
}

// SetAliasesCheckpoint records that the catalog indexes aliases/ up to cp.
func (t *Tx) SetAliasesCheckpoint(cp Checkpoint) error { return t.setCheckpoint(TapAliases, cp) }

// ReindexFetchFile indexes the fetch records of one fetches/ day file
// again, after feed-store prune rewrote it with fewer records: their
// places changed, and the records it dropped leave the catalog.
func (c *Catalog) ReindexFetchFile(ctx context.Context, key string) error {
	type line struct {
		f   ndjson.Fetch
		loc Location
	}
	var lines []line
	err := c.st.ReadLogLines(key, func(start, end int64, l ndjson.Line) error {
		var f ndjson.Fetch
		if l.Type == ndjson.TypeFetch && l.Decode(&f) == nil {
			lines = append(lines, line{f, Location{Day: storedir.KeyDay(key), Offset: start, Length: end - start}})
		}
		return nil
	})
	if err != nil {
		return err
	}
	return c.Update(ctx, func(t *Tx) error {
		if _, err := t.write(once, `DELETE FROM fetches WHERE day = ?`, storedir.KeyDay(key)); err != nil {
			return err
		}
		for i := range lines {
			if err := t.IndexFetch(&lines[i].f, lines[i].loc); err != nil {
				return err
			}
		}
		return nil
	})
}
