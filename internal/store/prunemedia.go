package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// pruneMedia deletes the media of the entries that left the index
// (docs/design.md#retention): their rows, then the stored files no row
// names any longer (a file the entries of two feeds share goes when
// neither has it) and the partial files of downloads no row queues. It
// holds the media lock, so that no download gives a file a new use
// meanwhile (feed-media run commits under it). A dry run counts the media
// of the entries of the entries/ files before the day before too, which
// the run would have taken.
func pruneMedia(ctx context.Context, cfg PruneConfig, sum *PruneSummary, before string) error {
	st, cat := cfg.Store, cfg.Catalog
	unlock, err := st.Lock(storedir.MediaLock, true, func() {
		cfg.Log.Info("waiting for the media lock: feed-media run is storing a file", "lock", st.Path(storedir.MediaLock))
	})
	if err != nil {
		return err
	}
	defer unlock()
	if !cfg.DryRun {
		// Rows a crash left behind their records first: a file stored
		// then must not look unused.
		if err := cat.CatchUpMedia(ctx); err != nil {
			return err
		}
	}
	if sum.MediaForgotten, err = cat.PruneMedia(ctx, cfg.DryRun, before); err != nil {
		return err
	}
	used, queued, err := cat.MediaInUse(ctx, cfg.DryRun, before)
	if err != nil {
		return err
	}
	del := func(key string, size int64, remove func() error) error {
		if _, err := fmt.Fprintln(cfg.Out, key); err != nil {
			return err
		}
		sum.Bytes += size
		if cfg.DryRun {
			return nil
		}
		return remove()
	}
	files, err := st.MediaFiles()
	if err != nil {
		return err
	}
	for _, f := range files {
		if used[f.SHA256] {
			continue
		}
		sum.MediaFiles++
		if err := del(f.Key, f.Size, func() error { return st.RemoveMedia(f.Key) }); err != nil {
			return err
		}
	}
	ids, err := st.Partials()
	if err != nil {
		return err
	}
	for _, id := range ids {
		if queued[id] {
			continue
		}
		key := storedir.DirMedia + "/partial/" + strconv.FormatInt(id, 10)
		sum.MediaFiles++
		if err := del(key, st.Size(key), func() error { return st.RemovePartial(id) }); err != nil {
			return err
		}
	}
	return nil
}

// pruneMediaRecords trims the media/ day files before cutoff (those past
// the checkpoint's file excepted: the catalog's catch-up reads them): the
// records of files stored stay as long as their rows, which a catalog
// built anew makes from them; the others (refused, failed, retrying) are
// metadata, and go. A file left with no record goes.
func pruneMediaRecords(ctx context.Context, cfg PruneConfig, sum *PruneSummary, cutoff, today string) error {
	st, cat := cfg.Store, cfg.Catalog
	unlock, err := st.Lock(storedir.MediaLock, true, nil)
	if err != nil {
		return err
	}
	defer unlock()
	cp, err := cat.Checkpoint(ctx, catalog.TapMedia)
	if err != nil {
		return err
	}
	files, err := st.DayFiles(storedir.DirMedia)
	if err != nil {
		return err
	}
	rows := map[[2]string]map[string]string{} // entry -> its stored files' URLs -> SHA-256
	for _, f := range files {
		if !deletableDay(f, cutoff, today, cp.File) {
			continue
		}
		var keep []byte
		dropped := 0
		if _, _, err := st.ReadLog(f, 0, func(l ndjson.Line) error {
			var m ndjson.Media
			if l.Type != ndjson.TypeMedia || l.Decode(&m) != nil || m.Status != ndjson.MediaStored {
				dropped++
				return nil
			}
			k := [2]string{m.FeedID, m.EntryUID}
			if _, ok := rows[k]; !ok {
				files, err := cat.EntryMedia(ctx, m.FeedID, m.EntryUID)
				if err != nil {
					return err
				}
				rows[k] = map[string]string{}
				for _, x := range files {
					rows[k][x.URL] = x.SHA256
				}
			}
			if rows[k][m.URL] == m.SHA256 {
				keep = append(append(keep, l.Raw...), '\n')
			} else {
				dropped++
			}
			return nil
		}); err != nil {
			return err
		}
		if dropped == 0 {
			continue
		}
		sum.MediaRecords += dropped
		if len(keep) == 0 {
			if _, err := fmt.Fprintln(cfg.Out, f); err != nil {
				return err
			}
			sum.Bytes += st.Size(f)
			if !cfg.DryRun {
				if err := st.Remove(f); err != nil {
					return err
				}
			}
			continue
		}
		sum.Bytes += st.Size(f) - int64(len(keep))
		cfg.Log.Info("media records kept for the stored files they name", "file", f, "deleted", dropped)
		if !cfg.DryRun {
			if err := st.WriteFileAtomic(f, keep); err != nil {
				return err
			}
		}
	}
	return nil
}
