package catalog

import (
	"context"
	"encoding/json"
	"fmt"
)

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
	rows, err := c.read(ctx, once, `SELECT `+entryColumns+` FROM json_each(?) u
		JOIN entries e ON e.entry_uid = u.value JOIN feeds f ON f.key = e.feed_key ORDER BY u.key, e.id`, string(list))
	if err != nil {
		return nil, err
	}
	var out []EntryRow
	seen := map[int64]bool{}
	for rows.Next() {
		var r EntryRow
		if err := scanEntry(rows.Scan, &r); err != nil {
			rows.Close()
			return nil, err
		}
		if !seen[r.ID] { // a uid given twice
			seen[r.ID] = true
			out = append(out, r)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
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
