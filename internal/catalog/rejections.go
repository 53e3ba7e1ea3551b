package catalog

import (
	"context"
	"time"
)

// Rejection is an article of a website that feed-scrape rejected for what
// its page held (no title, say), so that it is not fetched again every
// cycle: the reason, a hash of the scraper configuration it was read with
// (another configuration may read it), and when.
type Rejection struct {
	Reason     string
	ConfigHash string
	At         time.Time
}

// Rejections returns the rejected articles of the feed feedID, by entry
// uid.
func (c *Catalog) Rejections(ctx context.Context, feedID string) (map[string]Rejection, error) {
	rows, err := c.read(ctx, once, `SELECT r.entry_uid, r.reason, r.config_hash, r.rejected_at
		FROM rejections r JOIN feeds f ON f.key = r.feed_key WHERE f.feed_id = ?`, feedID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]Rejection{}
	for rows.Next() {
		var (
			uid string
			r   Rejection
			at  int64
		)
		if err := rows.Scan(&uid, &r.Reason, &r.ConfigHash, &at); err != nil {
			return nil, err
		}
		r.At = time.UnixMilli(at).UTC()
		out[uid] = r
	}
	return out, rows.Err()
}

// PutRejections keeps the rejections of the feed feedID, each replacing
// the entry's last.
func (c *Catalog) PutRejections(ctx context.Context, feedID string, rs map[string]Rejection) error {
	if len(rs) == 0 {
		return nil
	}
	return c.Update(ctx, func(t *Tx) error {
		key, err := t.feedKey(feedID)
		if err != nil {
			return err
		}
		for uid, r := range rs {
			if _, err := t.write(once, `INSERT OR REPLACE INTO rejections (feed_key, entry_uid, reason, config_hash, rejected_at) VALUES (?, ?, ?, ?, ?)`,
				key, uid, r.Reason, r.ConfigHash, unixMS(r.At)); err != nil {
				return err
			}
		}
		return nil
	})
}
