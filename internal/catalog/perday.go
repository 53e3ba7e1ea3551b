package catalog

import (
	"context"
	"encoding/json"
	"time"
)

// NewPerDay returns, for each of the feeds feedIDs, how many of its
// entries were first seen on each of the days UTC days ending with the
// day of now: counts[id][0] is the oldest day, counts[id][days-1] today.
// Feeds with none are left out. It reads the index by feed and first
// seen time, so it costs the entries of those days of those feeds only
// (feed-serve's web page: a sparkline per feed listed).
func (c *Catalog) NewPerDay(ctx context.Context, feedIDs []string, days int, now time.Time) (map[string][]int, error) {
	out := map[string][]int{}
	if len(feedIDs) == 0 || days <= 0 {
		return out, nil
	}
	start := now.UTC().Truncate(24*time.Hour).AddDate(0, 0, -(days - 1))
	ids, err := json.Marshal(feedIDs)
	if err != nil {
		return nil, err
	}
	rows, err := c.read(ctx, once, `SELECT f.feed_id, (e.first_seen - ?) / 86400000, count(*)
		FROM feeds f JOIN entries e ON e.feed_key = f.key AND e.first_seen >= ?
		WHERE f.feed_id IN (SELECT value FROM json_each(?)) GROUP BY 1, 2`,
		start.UnixMilli(), start.UnixMilli(), string(ids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var day int64
		var n int
		if err := rows.Scan(&id, &day, &n); err != nil {
			return nil, err
		}
		if day < 0 || day >= int64(days) {
			continue // seen after now (a clock moved back)
		}
		if out[id] == nil {
			out[id] = make([]int, days)
		}
		out[id][day] += n
	}
	return out, rows.Err()
}
