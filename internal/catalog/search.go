package catalog

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
)

// How a page of a search (EntryQuery.Text) is found, by what each costs:
// the matches of the search index in the order of their search keys (by
// published time, fts.go) or the entries of the query, each looked up.
type searchPlan int

const (
	// searchFetch fetches every match by its key and sorts them: a search
	// that matches few entries (fewer than searchFetchAt; by first_seen,
	// searchManyAt).
	searchFetch searchPlan = iota
	// searchWalk reads the index's matches newest first (or oldest),
	// keeping those the query keeps, until a page: for a search with many
	// matches over all feeds or a large share of them, a page of rows.
	searchWalk
	// searchCheck reads the query's entries newest first, looking each up
	// in the index, until a page: for a search with many matches in a
	// few feeds, or in a reader's starred or unread ones after mark-all.
	searchCheck
	// searchFilter reads the query's entries newest first, keeping those
	// in the list of matches it made first: for a search with more than
	// searchManyAt matches by first_seen, which the keys do not order. It
	// costs about a microsecond a match and one an entry read (a look-up
	// of searchCheck, 50): where the matches are among the entries does
	// not make it slow, as it does the look-ups (the newest match of a
	// word two thirds of the entries back, looked up entry by entry, at
	// ten million entries: minutes).
	searchFilter
)

// searchFetchAt is how many matches a search may have for its page to be
// found by fetching and sorting them all (searchFetch); by first_seen,
// searchManyAt.
var (
	searchFetchAt = 10_000
	searchManyAt  = 200_000
)

// checkCost is how many rows of a searchWalk cost as much as one look-up
// of a searchCheck (measured at 10 million entries: about 1.5 µs against
// 50 to 110 µs, the more words the more).
const checkCost = 50

// searchBounds is what searchEntries needs of the query entries built.
type searchBounds struct {
	col      string // the time listed by
	from, to int64  // the times of col the page is within, in ms, both included
	limit    int
	few      bool // the entries are those of a short list of ids
}

// searchEntries returns up to limit+1 entries that w keeps (on e) whose
// latest version matches q.Text, newest first (q.Oldest: oldest), the
// order of entries.
func (c *Catalog) searchEntries(ctx context.Context, sc feedScope, w where, q EntryQuery, b searchBounds) ([]EntryRow, error) {
	m := ftsMatch(q.Text)
	if m == "" {
		return nil, fmt.Errorf("catalog: %w: search %q has no word to look for (letters or digits)", ErrBadQuery, q.Text)
	}
	plan, err := planSearch(c, ctx, sc, m, b)
	var found []EntryRow
	if err == nil {
		dir := "DESC"
		if q.Oldest {
			dir = "ASC"
		}
		match := sql.Named("match", m)
		switch plan {
		case searchWalk:
			found, err = c.searchWalk(ctx, w, match, dir, b)
		case searchCheck:
			w.and(`EXISTS (SELECT 1 FROM entries_fts WHERE entries_fts MATCH :match AND rowid = e.search_key)`, match)
		case searchFilter:
			// The unary + keeps SQLite from fetching the matches by key.
			w.and(`+e.search_key IN (SELECT rowid FROM entries_fts WHERE entries_fts MATCH :match)`, match)
		default:
			w.and(`e.search_key IN (SELECT rowid FROM entries_fts WHERE entries_fts MATCH :match)`, match)
		}
		if plan != searchWalk {
			found, err = c.entryRows(ctx, kept, `SELECT `+entryColumns+` FROM entries e JOIN feeds f ON f.key = e.feed_key
				WHERE `+w.sql()+` ORDER BY `+b.col+` `+dir+`, e.id `+dir+` LIMIT :limit`, append(w.args, sql.Named("limit", b.limit+1))...)
		}
	}
	if err != nil && strings.Contains(err.Error(), "fts5:") {
		// A character SQLite's tokenizer splits where ftsMatch did not.
		return nil, fmt.Errorf("catalog: %w: search %q: write it with plain words (letters and digits)", ErrBadQuery, q.Text)
	}
	return found, err
}

// planSearch is how searchEntries chooses (tests try every plan).
var planSearch = (*Catalog).choosePlan

// choosePlan chooses how to find a page of the search m.
func (c *Catalog) choosePlan(ctx context.Context, sc feedScope, m string, b searchBounds) (searchPlan, error) {
	byKey := b.col == "e.published" // the keys' order
	switch {
	case b.few:
		return searchCheck, nil
	case byKey && sc.feeds == 0:
		return searchWalk, nil
	}
	upTo := searchFetchAt
	if !byKey {
		upTo = searchManyAt
	}
	var matches int
	err := c.readRow(ctx, once, `SELECT count(*) FROM (SELECT 1 FROM entries_fts WHERE entries_fts MATCH ? LIMIT ?)`, m, upTo).Scan(&matches)
	if err != nil {
		return 0, err
	}
	switch {
	case matches < upTo:
		return searchFetch, nil
	case !byKey:
		return searchFilter, nil
	}
	// The walk reads about limit × feeds / the scope's feeds matches before
	// it has a page; the check looks up at most every entry of the scope.
	var feeds int64
	if err := c.readRow(ctx, once, `SELECT coalesce(max(key), 0) FROM feeds`).Scan(&feeds); err != nil {
		return 0, err
	}
	walk := int64(b.limit+1) * feeds / int64(sc.feeds)
	var entries int64
	err = c.readRow(ctx, once, `SELECT count(*) FROM (SELECT 1 FROM entries e WHERE `+sc.in("e.feed_key")+` LIMIT :limit)`,
		append([]any{sql.Named("limit", walk/checkCost+1)}, sc.args...)...).Scan(&entries)
	if err != nil {
		return 0, err
	}
	if entries*checkCost <= walk {
		return searchCheck, nil
	}
	return searchWalk, nil
}

// searchWalk reads the matches of the search match (:match) in the search
// index in the order of their keys (dir), which is by published time, and
// each one's entry, keeping those w keeps, until it has b.limit+1 and
// every entry of the last one's millisecond; it returns them in the order
// of entries (time, then id).
func (c *Catalog) searchWalk(ctx context.Context, w where, match sql.NamedArg, dir string, b searchBounds) ([]EntryRow, error) {
	rows, err := c.read(ctx, kept, `SELECT `+entryColumns+`, s.rowid FROM entries_fts s CROSS JOIN entries e ON e.search_key = s.rowid
		JOIN feeds f ON f.key = e.feed_key
		WHERE `+w.sql()+` AND s.entries_fts MATCH :match AND s.rowid BETWEEN :low AND :high ORDER BY s.rowid `+dir,
		append(w.args, match, sql.Named("low", searchGroup(b.from)), sql.Named("high", searchGroup(b.to)+searchKeyLast))...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var found []EntryRow
	var lastGroup int64
	for rows.Next() {
		var r EntryRow
		var key int64
		if err := scanEntry(func(dest ...any) error { return rows.Scan(append(dest, &key)...) }, &r); err != nil {
			return nil, err
		}
		// The keys of one millisecond are in the order they were given,
		// not by id: the page ends after the whole millisecond.
		group := key >> searchKeyBits
		if len(found) > b.limit && group != lastGroup {
			break
		}
		found, lastGroup = append(found, r), group
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(found, func(x, y EntryRow) int {
		o := cmp.Or(x.Published.Compare(y.Published), cmp.Compare(x.ID, y.ID))
		if dir == "DESC" {
			return -o
		}
		return o
	})
	return found[:min(len(found), b.limit+1)], nil
}
