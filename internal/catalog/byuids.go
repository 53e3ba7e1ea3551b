package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// entriesByUIDSQL is EntriesByUID's statement, a constant so that
// TestIndexesEarnTheirWrites reads its plan.
const entriesByUIDSQL = `SELECT ` + entryColumns + ` FROM entries e JOIN feeds f ON f.key = e.feed_key WHERE e.entry_uid = ? ORDER BY e.id`

// EntriesByUID returns the stored entries with the uid entry_uid (one, but
// for a collision of two feeds' uids), each with its versions, oldest
// first.
func (c *Catalog) EntriesByUID(ctx context.Context, uid string) ([]EntryRow, [][]Version, error) {
	found, err := c.entryRows(ctx, kept, entriesByUIDSQL, uid)
	if err != nil {
		return nil, nil, err
	}
	versions := make([][]Version, len(found))
	for i, r := range found {
		vs, err := c.versions(ctx, r.ID)
		if err != nil {
			return nil, nil, err
		}
		versions[i] = vs
	}
	return found, versions, nil
}

func (c *Catalog) versions(ctx context.Context, entryID int64) ([]Version, error) {
	rows, err := c.read(ctx, kept, `SELECT version, content_hash, stored_at, day, offset, length FROM stored_versions WHERE entry_id = ? ORDER BY version`, entryID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Version
	for rows.Next() {
		var v Version
		var at int64
		if err := rows.Scan(&v.Version, &v.Hash, &at, &v.Day, &v.Offset, &v.Length); err != nil {
			return nil, err
		}
		v.StoredAt = time.UnixMilli(at).UTC()
		out = append(out, v)
	}
	return out, rows.Err()
}

// MaxUIDs is the most uids EntriesByUIDs takes at once.
const MaxUIDs = 1000

// EntriesByUIDs returns the stored entries whose uid is one of uids
// (several for a uid two feeds share), in the order of uids, each with
// reader's marks (none when reader is ""): the entries a Google Reader
// client names by item id.
func (c *Catalog) EntriesByUIDs(ctx context.Context, uids []string, reader string) ([]EntryRow, error) {
	if len(uids) == 0 {
		return nil, nil
	}
	if len(uids) > MaxUIDs {
		return nil, fmt.Errorf("catalog: %w: %d uids, at most %d at once", ErrBadQuery, len(uids), MaxUIDs)
	}
	list, err := json.Marshal(uids)
	if err != nil {
		return nil, err
	}
	found, err := c.entryRows(ctx, once, `SELECT `+entryColumns+` FROM json_each(?) u
		JOIN entries e ON e.entry_uid = u.value JOIN feeds f ON f.key = e.feed_key ORDER BY u.key, e.id`, string(list))
	if err != nil {
		return nil, err
	}
	var out []EntryRow
	seen := map[int64]bool{}
	for _, r := range found {
		if !seen[r.ID] { // a uid given twice
			seen[r.ID] = true
			out = append(out, r)
		}
	}
	if reader != "" {
		if err := CheckReader(reader); err != nil {
			return nil, fmt.Errorf("catalog: %w", err)
		}
		marks, err := c.MarksOf(ctx, reader, out)
		if err != nil {
			return nil, err
		}
		for i := range out {
			out[i].Marks = marks[out[i].ID]
		}
	}
	return out, nil
}
