package catalog

import (
	"context"
	"time"
)

// What feed-store prune asks of the catalog: forget what the files it
// deletes held, and tell it what is old.

// ForgetEntryDays drops from the index the entry versions whose lines are
// in the entries/ day files before day, which prune deletes: an entry
// whose every version goes leaves the index, and with it the link it was
// the first with (so that the next entry with that link is stored, not
// made an alias of nothing), and that link's aliases. It returns how many
// entries and links go; with dry it only counts.
func (c *Catalog) ForgetEntryDays(ctx context.Context, day string, dry bool) (entries, links int, err error) {
	count := func(q string) (int, error) {
		var n int
		err := c.readRow(ctx, once, q, day).Scan(&n)
		return n, err
	}
	gone := `SELECT feed_key, entry_uid FROM entries WHERE day < ?`
	if entries, err = count(`SELECT count(*) FROM entries WHERE day < ?`); err != nil {
		return 0, 0, err
	}
	if links, err = count(`SELECT count(*) FROM links WHERE (feed_key, entry_uid) IN (` + gone + `)`); err != nil {
		return 0, 0, err
	}
	if dry || entries == 0 && links == 0 {
		if !dry {
			err = c.Update(ctx, func(t *Tx) error {
				_, err := t.write(once, `DELETE FROM entry_versions WHERE day < ?`, day)
				return err
			})
		}
		return entries, links, err
	}
	err = c.Update(ctx, func(t *Tx) error {
		for _, q := range []string{
			`DELETE FROM aliases WHERE link_hash IN (SELECT link_hash FROM links WHERE (feed_key, entry_uid) IN (` + gone + `))`,
			`DELETE FROM links WHERE (feed_key, entry_uid) IN (` + gone + `)`,
			`DELETE FROM marks WHERE (feed_key, entry_uid) IN (` + gone + `)`,
			`DELETE FROM entries_fts WHERE rowid IN (SELECT search_key FROM entries WHERE day < ? AND search_key IS NOT NULL)`,
			`DELETE FROM entry_versions WHERE entry_id IN (SELECT id FROM entries WHERE day < ?)`,
			`DELETE FROM entry_versions WHERE day < ?`,
			`DELETE FROM entries WHERE day < ?`,
		} {
			if _, err := t.write(once, q, day); err != nil {
				return err
			}
		}
		return nil
	})
	return entries, links, err
}

// SeenBefore returns, by feed, the entries last seen before t.
func (c *Catalog) SeenBefore(ctx context.Context, t time.Time) (map[string][]string, error) {
	rows, err := c.read(ctx, once, `SELECT f.feed_id, e.entry_uid FROM entries e JOIN feeds f ON f.key = e.feed_key
		WHERE e.last_seen < ? ORDER BY e.feed_key, e.id`, unixMS(t))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	old := map[string][]string{}
	for rows.Next() {
		var feed, uid string
		if err := rows.Scan(&feed, &uid); err != nil {
			return nil, err
		}
		old[feed] = append(old[feed], uid)
	}
	return old, rows.Err()
}

// ForgetEntries drops entries of a feed from the index, with their
// versions and the links they were the first with: if one comes back, it
// is stored as new (the seen ids of docs/design.md#retention: feed-store
// prune --seen-keep).
func (c *Catalog) ForgetEntries(ctx context.Context, feedID string, uids []string) error {
	return c.Update(ctx, func(t *Tx) error {
		key, err := t.feedKey(feedID)
		if err != nil {
			return err
		}
		for _, uid := range uids {
			for _, q := range []string{
				`DELETE FROM entries_fts WHERE rowid = (SELECT search_key FROM entries WHERE feed_key = ? AND entry_uid = ?)`,
				`DELETE FROM entry_versions WHERE entry_id = (SELECT id FROM entries WHERE feed_key = ? AND entry_uid = ?)`,
				`DELETE FROM links WHERE feed_key = ? AND entry_uid = ?`,
				`DELETE FROM marks WHERE feed_key = ? AND entry_uid = ?`,
				`DELETE FROM entries WHERE feed_key = ? AND entry_uid = ?`,
			} {
				if _, err := t.write(once, q, key, uid); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// LatestPayload returns the newest fetch of a feed that stored a payload
// with a 2xx status; ok is false when there is none.
func (c *Catalog) LatestPayload(ctx context.Context, feedID string) (r FetchRef, ok bool, err error) {
	rows, err := c.read(ctx, once, `SELECT `+fetchColumns+` FROM fetches x JOIN feeds f ON f.key = x.feed_key
		WHERE x.feed_key = (SELECT key FROM feeds WHERE feed_id = ?) AND x.body_key IS NOT NULL AND x.http_status BETWEEN 200 AND 299
		ORDER BY x.fetched_at DESC LIMIT 1`, feedID)
	if err != nil {
		return r, false, err
	}
	defer rows.Close()
	if rows.Next() {
		if err := scanFetch(rows.Scan, &r); err != nil {
			return r, false, err
		}
		ok = true
	}
	return r, ok, rows.Err()
}

// DanglingLinks counts the links whose first entry is not in the index: a
// consistency check (there are none unless a bug put them there).
func (c *Catalog) DanglingLinks(ctx context.Context) (int, error) {
	var n int
	err := c.readRow(ctx, once, `SELECT count(*) FROM links l
		WHERE NOT EXISTS (SELECT 1 FROM entries e WHERE e.feed_key = l.feed_key AND e.entry_uid = l.entry_uid)`).Scan(&n)
	return n, err
}
