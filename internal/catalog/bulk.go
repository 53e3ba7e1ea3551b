package catalog

import (
	"context"

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
func (c *Catalog) LoadEntries(ctx context.Context, next func() ([]Located, error)) error {
	// A large page cache for the index builds' sorts; its writes, outside
	// any feed's scope, make the transaction's change one of anything
	// (changes.go).
	return c.bulkUpdate(ctx, 262144, func(t *Tx) error { return t.loadEntries(next) })
}

func (t *Tx) loadEntries(next func() ([]Located, error)) error {
	rows, err := t.read(once, `SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'entries' AND sql IS NOT NULL`)
	if err != nil {
		return err
	}
	var indexes [][2]string
	for rows.Next() {
		var name, create string
		if err := rows.Scan(&name, &create); err != nil {
			rows.Close()
			return err
		}
		indexes = append(indexes, [2]string{name, create})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, ix := range indexes {
		if _, err := t.write(once, `DROP INDEX "`+ix[0]+`"`); err != nil {
			return err
		}
	}
	keepLinks, err := t.LinksKept()
	if err != nil {
		return err
	}
	if _, err := t.write(once, `CREATE TEMP TABLE load (id INTEGER NOT NULL, feed_key INTEGER NOT NULL, entry_uid TEXT NOT NULL,
		content_hash TEXT NOT NULL, first_seen INTEGER NOT NULL, last_seen INTEGER NOT NULL, seen_count INTEGER NOT NULL,
		published INTEGER NOT NULL, day TEXT NOT NULL, offset INTEGER NOT NULL, length INTEGER NOT NULL, link_hash TEXT)`); err != nil {
		return err
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
			key, err := t.feedKey(e.FeedID)
			if err != nil {
				return err
			}
			id, err := t.nextEntryID(key)
			if err != nil {
				return err
			}
			var link any
			if h, ok := LinkHash(e.CanonicalLink); ok && keepLinks {
				link = h
			}
			if _, err := t.write(kept, `INSERT INTO load VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, id, key, e.EntryUID, e.ContentHash,
				unixMS(e.FirstSeen.Time), unixMS(e.LastSeen.Time), e.SeenCount, unixMS(publishedOr(e)), loc.Day, loc.Offset, loc.Length, link); err != nil {
				return err
			}
		}
	}
	for _, q := range []string{
		`INSERT INTO entries (id, feed_key, entry_uid, content_hash, versions, first_seen, last_seen, seen_count, published, day, offset, length, stored_at)
			SELECT id, feed_key, entry_uid, content_hash, 1, first_seen, last_seen, seen_count, published, day, offset, length, last_seen FROM load ORDER BY id`,
		// The first entry stored with a link keeps it, as AddLink does
		// (when the catalog keeps links: LinksKept).
		`INSERT OR IGNORE INTO links (link_hash, feed_key, entry_uid)
			SELECT link_hash, feed_key, entry_uid FROM load WHERE link_hash IS NOT NULL ORDER BY link_hash, rowid`,
		`DROP TABLE temp.load`,
	} {
		if _, err := t.write(once, q); err != nil {
			return err
		}
	}
	for _, ix := range indexes {
		if _, err := t.write(once, ix[1]); err != nil {
			return err
		}
	}
	return nil
}
