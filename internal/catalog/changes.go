package catalog

import (
	"context"
	"database/sql"
	"slices"
	"strings"
)

// Every write transaction (Update) adds a row to the changes table that
// names the feeds whose rows it changed: a reader that keeps answers
// (feed-serve) asks what committed since it last looked (Changes) and
// makes anew only the answers of those feeds. A pipeline's commit, tens
// a second, changes a few of a store's thousands of feeds, and made anew
// at each, a feed's page of entries was most of a loaded server's work.
//
// A write is taken to change anything (the row's feeds are NULL) unless
// it runs inside the scope of the feeds it changes (Tx.within): only the
// methods that change a feed's rows alone (its entries, their versions
// and links, its state, its fetches) open one, so a write added later
// without a scope costs readers their kept answers, never their truth.
// The rows a reader keeps no answer of (run claims; meta: the taps'
// checkpoints, the scheduler's budget) are written in a scope of no feed.

// changesKept is how many of the newest changes the table keeps (a
// tenth more at most): a reader further behind than that makes every
// answer anew. A variable for a test.
var changesKept int64 = 10000

// changesSchema is the schema version that made the changes table:
// migrations before it record nothing.
const changesSchema = 10

// reach is what a transaction's writes changed.
type reach struct {
	wrote bool
	all   bool                // a write outside any scope: anything
	feeds map[string]struct{} // the feeds of the scopes that wrote
	depth int                 // scopes open
	open  []string            // the feeds of the scopes open
}

// within opens a scope of the feeds ids (none: rows no reader keeps an
// answer of) for the writes until the function it returns is called.
func (t *Tx) within(ids ...string) func() {
	n := len(t.reach.open)
	t.reach.open = append(t.reach.open, ids...)
	t.reach.depth++
	return func() {
		t.reach.depth--
		t.reach.open = t.reach.open[:n]
	}
}

// wrote notes a write: to the feeds of the scopes open, or to anything.
func (t *Tx) wrote() {
	r := &t.reach
	r.wrote = true
	if r.depth == 0 {
		r.all = true
		return
	}
	if r.feeds == nil {
		r.feeds = map[string]struct{}{}
	}
	for _, id := range r.open {
		r.feeds[id] = struct{}{}
	}
}

// recordChange adds the transaction's row to the changes table, and drops
// the oldest now and then.
func (t *Tx) recordChange() error {
	r := &t.reach
	if !r.wrote || t.unrecorded {
		return nil
	}
	var feeds any // NULL: anything
	if !r.all {
		ids := make([]string, 0, len(r.feeds))
		for id := range r.feeds {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		feeds = strings.Join(ids, "\n")
	}
	// The table's own rows: in a scope of no feed, which changes nothing
	// of what the row says.
	defer t.within()()
	var seq int64
	if err := t.writeRow(once, `INSERT INTO changes (feeds) VALUES (?) RETURNING seq`, feeds).Scan(&seq); err != nil {
		return err
	}
	if seq%max(1, changesKept/10) == 0 {
		if _, err := t.write(once, `DELETE FROM changes WHERE seq <= ?`, seq-changesKept); err != nil {
			return err
		}
	}
	return nil
}

// Changes is what committed after a change a reader saw.
type Changes struct {
	Last  int64    // the newest change: where the next look starts
	All   bool     // anything may have changed: a write of unknown reach, or changes no longer kept
	Feeds []string // else the feeds changed (none: nothing a reader keeps)
}

// Changes reads what committed after the change after (0: before the
// reader's first look, when it is All).
func (c *Catalog) Changes(ctx context.Context, after int64) (Changes, error) {
	ch := Changes{Last: after, All: after == 0}
	rows, err := c.read(ctx, kept, `SELECT seq, feeds FROM changes WHERE seq >= ? ORDER BY seq`, after)
	if err != nil {
		return ch, err
	}
	defer rows.Close()
	seen := map[string]bool{}
	first := true
	for rows.Next() {
		var seq int64
		var feeds sql.NullString
		if err := rows.Scan(&seq, &feeds); err != nil {
			return ch, err
		}
		if first && seq != after {
			ch.All = true // the change it saw is no longer kept
		}
		first = false
		ch.Last = seq
		if seq == after {
			continue
		}
		if !feeds.Valid {
			ch.All = true
			continue
		}
		for id := range strings.SplitSeq(feeds.String, "\n") {
			if id != "" && !seen[id] {
				seen[id] = true
				ch.Feeds = append(ch.Feeds, id)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return ch, err
	}
	if first && after != 0 {
		// No row at or after the one it saw: the table was emptied (a
		// catalog made anew).
		ch.All = true
	}
	if ch.All {
		ch.Feeds = nil
	}
	return ch, nil
}
