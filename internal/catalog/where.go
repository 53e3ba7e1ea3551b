package catalog

import (
	"database/sql"
	"strconv"
	"strings"
)

// The parts queries are built of where their conditions vary: a where of
// conditions, the set of feeds a query is about, and lists of numbers as
// one argument. Each condition names its parameters (sql.Named, :name in
// the SQL), so that none is counted by hand (?N) and one named twice is
// bound once. The statements run for every row of a batch, of fixed text
// with their values in column order (INSERT ... VALUES), keep positional
// parameters: SQLite binds those without a name to look up and allocate
// for each parameter of each row.

// where is the conditions of a query and their arguments, added filter
// by filter and joined with AND, after Miniflux's EntryQueryBuilder. Each
// condition names its parameters (:since, :reader): none is counted, and
// one that two conditions name is bound once.
type where struct {
	conds []string
	args  []any // sql.NamedArg each
}

// and adds the condition cond (one term: an OR in parentheses), and those
// of its arguments (sql.Named) no condition before named.
func (w *where) and(cond string, args ...any) {
	w.conds = append(w.conds, cond)
	for _, a := range args {
		if !w.binds(a.(sql.NamedArg).Name) {
			w.args = append(w.args, a)
		}
	}
}

// binds reports whether a condition names the parameter name.
func (w *where) binds(name string) bool {
	for _, a := range w.args {
		if a.(sql.NamedArg).Name == name {
			return true
		}
	}
	return false
}

// sql is the conditions, joined.
func (w *where) sql() string { return strings.Join(w.conds, " AND ") }

// feedScope is a set of feeds: all, one, or some by key (a label's).
type feedScope struct {
	in    func(col string) string // the condition that the feed key col is in the set (:feed, :feeds)
	args  []any                   // its argument, named
	feeds int                     // how many: 0 for all
}

var allFeeds = feedScope{in: func(string) string { return "1" }}

func oneFeed(feedID string) feedScope {
	return feedScope{in: func(col string) string { return col + ` = (SELECT key FROM feeds WHERE feed_id = :feed)` },
		args: []any{sql.Named("feed", feedID)}, feeds: 1}
}

func keyFeeds(keys []int64) feedScope {
	var list jsonInts
	for _, k := range keys {
		list.add(k)
	}
	return feedScope{in: func(col string) string { return col + ` IN (SELECT value FROM json_each(:feeds))` },
		args: []any{sql.Named("feeds", list.String())}, feeds: len(keys)}
}

// jsonInts is a JSON array of integers made one at a time, which a query
// reads back with json_each: a list of any length as one argument, and
// one statement for any number of them.
type jsonInts []byte

func (l *jsonInts) add(n int64) {
	if len(*l) == 0 {
		*l = append(*l, '[')
	} else {
		*l = append(*l, ',')
	}
	*l = strconv.AppendInt(*l, n, 10)
}

func (l jsonInts) String() string {
	if len(l) == 0 {
		return "[]"
	}
	return string(l) + "]"
}
