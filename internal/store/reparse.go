package store

import (
	"time"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// maxHeld bounds the entries held for a fetch record that does not come
// (a stream of entries alone, such as feed-parse FILE...).
const maxHeld = 4 * maxBatch

// hold decides when each entry of a batch was seen: the fetched_at of the
// fetch record that closes its feed's group, which follows the entries
// (DESIGN.md §2). That time is in the data, so a replay of the same fetch
// records stores byte-identical entries. An entry whose fetch record has not
// arrived yet is held back to a later batch; at the end of the input
// (c.final), or past maxHeld, the entries still held were seen now. It
// returns the items to commit, in input order, and the time of each entry.
func (c *committer) hold(batch []item, now time.Time) ([]item, map[*ndjson.Entry]time.Time) {
	all := batch
	if len(c.held) > 0 {
		all = append(c.held, batch...)
		c.held = nil
	}
	seenAt := make(map[*ndjson.Entry]time.Time)
	closing := map[string]time.Time{} // feed id -> fetched_at of its next fetch record
	release := c.final || len(all) > maxHeld
	keep := make([]bool, len(all))
	for i := len(all) - 1; i >= 0; i-- {
		it := all[i]
		switch {
		case it.fetch != nil && it.fetch.Page == nil && !it.fetch.FetchedAt.IsZero():
			closing[it.fetch.Due.FeedID] = it.fetch.FetchedAt.Time
			keep[i] = true
		case it.entry != nil:
			if at, ok := closing[it.entry.FeedID]; ok {
				seenAt[it.entry], keep[i] = at, true
			} else if release {
				seenAt[it.entry], keep[i] = now, true
			}
		default:
			keep[i] = true
		}
	}
	ready := make([]item, 0, len(all))
	for i, it := range all {
		if keep[i] {
			ready = append(ready, it)
		} else {
			c.held = append(c.held, it)
		}
	}
	return ready, seenAt
}
