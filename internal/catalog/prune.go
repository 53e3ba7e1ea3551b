package catalog

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
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

// SeenBefore returns, by feed, the entries last seen before t that no
// reader has starred: a star keeps an entry where its reader put it.
func (c *Catalog) SeenBefore(ctx context.Context, t time.Time) (map[string][]string, error) {
	rows, err := c.read(ctx, once, `SELECT f.feed_id, e.entry_uid FROM entries e JOIN feeds f ON f.key = e.feed_key
		WHERE e.last_seen < ? AND (e.feed_key, e.entry_uid) NOT IN (SELECT feed_key, entry_uid FROM marks WHERE starred)
		ORDER BY e.feed_key, e.id`, unixMS(t))
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

// ForgetEntries drops entries from the index, by feed id, with their
// versions, marks and the links they were the first with, and those
// links' aliases (as ForgetEntryDays): if one comes back, it is stored as
// new (the seen ids of docs/design.md#retention: feed-store prune
// --seen-keep). It works forgetChunk entries a transaction, with one
// statement a table: links, aliases and marks are keyed by other columns
// than the entry's, so that each statement reads them whole once, where a
// statement per entry read them whole for every entry forgotten.
func (c *Catalog) ForgetEntries(ctx context.Context, uids map[string][]string) error {
	type pair struct{ feed, uid string }
	var all []pair
	for _, feed := range slices.Sorted(maps.Keys(uids)) {
		for _, uid := range uids[feed] {
			all = append(all, pair{feed, uid})
		}
	}
	for len(all) > 0 {
		chunk := all[:min(len(all), forgetChunk)]
		all = all[len(chunk):]
		err := c.Update(ctx, func(t *Tx) error {
			var ids []string
			for i, p := range chunk {
				if i == 0 || p.feed != chunk[i-1].feed { // in feed order
					ids = append(ids, p.feed)
				}
			}
			if err := t.feedKeys(ids); err != nil {
				return err
			}
			pairs := make([][2]any, len(chunk))
			for i, p := range chunk {
				pairs[i] = [2]any{t.keys[p.feed], p.uid}
			}
			list, err := json.Marshal(pairs)
			if err != nil {
				return err
			}
			const forgotten = `SELECT e.%s FROM json_each(:pairs) j JOIN entries e ON e.feed_key = j.value ->> 0 AND e.entry_uid = j.value ->> 1`
			const forgottenPairs = `SELECT j.value ->> 0, j.value ->> 1 FROM json_each(:pairs) j`
			for _, q := range []string{
				`DELETE FROM entries_fts WHERE rowid IN (` + fmt.Sprintf(forgotten, "search_key") + `)`,
				`DELETE FROM entry_versions WHERE entry_id IN (` + fmt.Sprintf(forgotten, "id") + `)`,
				`DELETE FROM aliases WHERE link_hash IN (SELECT link_hash FROM links WHERE (feed_key, entry_uid) IN (` + forgottenPairs + `))`,
				`DELETE FROM links WHERE (feed_key, entry_uid) IN (` + forgottenPairs + `)`,
				`DELETE FROM marks WHERE (feed_key, entry_uid) IN (` + forgottenPairs + `)`,
				`DELETE FROM entries WHERE id IN (` + fmt.Sprintf(forgotten, "id") + `)`,
			} {
				if _, err := t.write(kept, q, sql.Named("pairs", string(list))); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// forgetChunk bounds the entries ForgetEntries forgets in a transaction:
// each of its statements reads links, aliases or marks whole once. A
// variable for the tests.
var forgetChunk = 10000

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
