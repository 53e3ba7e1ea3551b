package catalog

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Located is an entry and where its line is in entries/.
type Located struct {
	Entry *ndjson.Entry
	Loc   Location
}

// LoadEntries indexes entries the catalog does not hold yet, one version
// each, as StoreVersion and AddLink would one by one, but millions at
// once: for building a large catalog from scratch (tools/benchstore).
// next returns the entries batch by batch, in the order they were stored,
// and an empty batch at the end. They go to a temporary table first, then
// into the catalog's tables in key order, and the entries table's indexes
// are dropped before and made again after: a sort each, instead of
// millions of inserts at random places in B-trees larger than the page
// cache. It is all one transaction: an error (an entry the catalog holds
// already, say) leaves the catalog as it was.
func (c *Catalog) LoadEntries(ctx context.Context, next func() ([]Located, error)) (err error) {
	conn, err := c.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	defer conn.Close()
	var cacheSize int64
	if err := conn.QueryRowContext(ctx, `PRAGMA cache_size`).Scan(&cacheSize); err != nil {
		return c.damaged(fmt.Errorf("catalog: %w", err))
	}
	// A large page cache for the index builds' sorts, for this connection
	// only, which goes back to the pool as it was.
	if _, err := conn.ExecContext(ctx, `PRAGMA cache_size = -262144`); err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf(`PRAGMA cache_size = %d`, cacheSize))
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return c.damaged(fmt.Errorf("catalog: begin: %w", err))
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	l := &loader{ctx: ctx, tx: tx, keys: map[string]int64{}, ids: map[int64]int64{}}
	if err := l.load(next); err != nil {
		return c.damaged(err)
	}
	// A change of anything, for readers that keep answers (changes.go).
	if err := l.exec(`INSERT INTO changes (feeds) VALUES (NULL)`); err != nil {
		return c.damaged(err)
	}
	if err := tx.Commit(); err != nil {
		return c.damaged(fmt.Errorf("catalog: commit: %w", err))
	}
	// The load passed through the WAL: give its space back.
	if _, err := conn.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return c.damaged(fmt.Errorf("catalog: checkpoint: %w", err))
	}
	return nil
}

type loader struct {
	ctx  context.Context
	tx   *sql.Tx
	keys map[string]int64 // feed id -> key
	ids  map[int64]int64  // feed key -> its last entry id
}

func (l *loader) exec(query string, args ...any) error {
	if _, err := l.tx.ExecContext(l.ctx, query, args...); err != nil {
		return fmt.Errorf("catalog: load entries: %w", err)
	}
	return nil
}

func (l *loader) load(next func() ([]Located, error)) error {
	rows, err := l.tx.QueryContext(l.ctx, `SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'entries' AND sql IS NOT NULL`)
	if err != nil {
		return fmt.Errorf("catalog: load entries: %w", err)
	}
	var indexes [][2]string
	for rows.Next() {
		var name, create string
		if err := rows.Scan(&name, &create); err != nil {
			rows.Close()
			return fmt.Errorf("catalog: load entries: %w", err)
		}
		indexes = append(indexes, [2]string{name, create})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("catalog: load entries: %w", err)
	}
	for _, ix := range indexes {
		if err := l.exec(`DROP INDEX "` + ix[0] + `"`); err != nil {
			return err
		}
	}
	if err := l.exec(`CREATE TEMP TABLE load (id INTEGER NOT NULL, feed_key INTEGER NOT NULL, entry_uid TEXT NOT NULL,
		content_hash TEXT NOT NULL, first_seen INTEGER NOT NULL, last_seen INTEGER NOT NULL, seen_count INTEGER NOT NULL,
		published INTEGER NOT NULL, day TEXT NOT NULL, offset INTEGER NOT NULL, length INTEGER NOT NULL, link_hash TEXT)`); err != nil {
		return err
	}
	ins, err := l.tx.PrepareContext(l.ctx, `INSERT INTO load VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("catalog: load entries: %w", err)
	}
	for {
		batch, err := next()
		if err != nil {
			return err
		}
		if len(batch) == 0 {
			break
		}
		for _, b := range batch {
			e, loc := b.Entry, b.Loc
			key, err := l.feedKey(e.FeedID)
			if err != nil {
				return err
			}
			id, err := l.nextID(key)
			if err != nil {
				return err
			}
			var link any
			if h, ok := LinkHash(e.CanonicalLink); ok {
				link = h
			}
			if _, err := ins.ExecContext(l.ctx, id, key, e.EntryUID, e.ContentHash, unixMS(e.FirstSeen.Time), unixMS(e.LastSeen.Time),
				e.SeenCount, unixMS(publishedOr(e)), loc.Day, loc.Offset, loc.Length, link); err != nil {
				return fmt.Errorf("catalog: load entry %s: %w", e.EntryUID, err)
			}
		}
	}
	for _, q := range []string{
		`INSERT INTO entries (id, feed_key, entry_uid, content_hash, versions, first_seen, last_seen, seen_count, published, day, offset, length)
			SELECT id, feed_key, entry_uid, content_hash, 1, first_seen, last_seen, seen_count, published, day, offset, length FROM load ORDER BY id`,
		`INSERT INTO entry_versions (entry_id, version, content_hash, stored_at, day, offset, length)
			SELECT id, 1, content_hash, last_seen, day, offset, length FROM load ORDER BY id`,
		// The first entry stored with a link keeps it, as AddLink does.
		`INSERT OR IGNORE INTO links (link_hash, feed_key, entry_uid)
			SELECT link_hash, feed_key, entry_uid FROM load WHERE link_hash IS NOT NULL ORDER BY link_hash, rowid`,
		`DROP TABLE temp.load`,
	} {
		if err := l.exec(q); err != nil {
			return err
		}
	}
	for _, ix := range indexes {
		if err := l.exec(ix[1]); err != nil {
			return err
		}
	}
	return nil
}

// nextID is the id of the feed key's next entry (entriesPerFeed).
func (l *loader) nextID(key int64) (int64, error) {
	return nextEntryID(l.ids, key, func(query string, args ...any) *sql.Row {
		return l.tx.QueryRowContext(l.ctx, query, args...)
	})
}

func (l *loader) feedKey(feedID string) (int64, error) {
	if k, ok := l.keys[feedID]; ok {
		return k, nil
	}
	var k int64
	err := l.tx.QueryRowContext(l.ctx, `INSERT INTO feeds(feed_id) VALUES (?) ON CONFLICT(feed_id) DO UPDATE SET feed_id = excluded.feed_id RETURNING key`, feedID).Scan(&k)
	if err != nil {
		return 0, fmt.Errorf("catalog: feed key of %s: %w", feedID, err)
	}
	l.keys[feedID] = k
	return k, nil
}
