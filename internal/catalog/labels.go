package catalog

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"sync"
)

// Labels: each subscription's labels, as rows of subscription_labels
// (migration 9), and the feeds of a label, kept while the subscriptions
// are unchanged.

// HasLabel reports whether a subscription has the label.
func (c *Catalog) HasLabel(ctx context.Context, label string) (bool, error) {
	keys, err := c.labelFeeds(ctx, label)
	return len(keys) > 0, err
}

// labelFeeds returns the keys of the feeds subscribed with label
// (subscription_labels, migration 9).
//
// The keys are kept, by label, while the subscriptions are unchanged (a
// feed-serve asks for a label's feeds at each make of its Atom feed, tens
// a second while a pipeline commits): each change of the subscriptions
// table moves the subscription log's checkpoint in the same transaction,
// and the log's size and time tell a log rewritten (compacted, restored)
// whose checkpoint came back to an earlier offset.
func (c *Catalog) labelFeeds(ctx context.Context, label string) ([]int64, error) {
	version, err := c.subscriptionsVersion(ctx)
	if err != nil {
		return nil, err
	}
	if keys, ok := c.labels.get(version, label); ok {
		return keys, nil
	}
	keys, err := c.queryLabelFeeds(ctx, label)
	if err != nil {
		return nil, err
	}
	c.labels.put(version, label, keys)
	return keys, nil
}

// labelCache is labelFeeds' keys of the subscriptions' version.
type labelCache struct {
	mu      sync.Mutex
	version string
	keys    map[string][]int64
}

// labelCacheMax is the most labels kept.
const labelCacheMax = 1024

func (l *labelCache) get(version, label string) ([]int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	keys, ok := l.keys[label]
	if !ok || l.version != version {
		return nil, false
	}
	return keys, true
}

func (l *labelCache) put(version, label string, keys []int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.version != version || len(l.keys) >= labelCacheMax {
		l.version, l.keys = version, map[string][]int64{}
	}
	l.keys[label] = keys
}

// subscriptionsVersion is the subscriptions table's version: the log's
// checkpoint, which every change of the table moves in its transaction,
// and the log file's size and time.
func (c *Catalog) subscriptionsVersion(ctx context.Context) (string, error) {
	var cp sql.NullString
	err := c.readRow(ctx, kept, `SELECT value FROM meta WHERE key = ?`, TapSubscriptions).Scan(&cp)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", err
	}
	v := cp.String + ";"
	if fi, err := c.st.Stat(SubscriptionsFile); err == nil {
		v += strconv.FormatInt(fi.Size(), 10) + "." + strconv.FormatInt(fi.ModTime().UnixNano(), 10)
	}
	return v, nil
}

// queryLabelFeeds is labelFeeds from the catalog.
func (c *Catalog) queryLabelFeeds(ctx context.Context, label string) ([]int64, error) {
	rows, err := c.read(ctx, kept, `SELECT feed_key FROM subscription_labels WHERE label = ? ORDER BY feed_key`, label)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var keys []int64
	for rows.Next() {
		var k int64
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}
