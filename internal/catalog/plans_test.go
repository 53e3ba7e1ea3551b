package catalog

import (
	"database/sql"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestIndexesEarnTheirWrites: every index of the catalog is read by a
// query of the package, as the query's plan shows. Each index costs every
// write of its table (an entry stored writes seven of entries'), so a new
// index comes with the query that needs it, and one no query reads goes.
// The automatic indexes of PRIMARY KEY and UNIQUE constraints are the
// constraints' and not listed.
func TestIndexesEarnTheirWrites(t *testing.T) {
	// Each index and a query that reads through it: the package's
	// statement, by its constants where it has them, else copied from the
	// function named. Four of them name their index (INDEXED BY: the
	// planner's own choice was worse), which their plans show by force:
	// feed_state_due, marks_starred, marks_unread and media_queue.
	needs := map[string]string{
		// (*Catalog).Subscriptions, subs.go: the list in its order.
		"subscriptions_position": subscriptionsSQL,
		// (*Catalog).FindFeed, reading.go: a subscription by its URL.
		"subscriptions_url": feedByURLSQL,
		// (*Catalog).mayBeDue, feeds.go.
		"feed_state_due": `SELECT s.feed_key FROM subscriptions s LEFT JOIN feed_state st INDEXED BY feed_state_due ON st.feed_key = s.feed_key
		WHERE s.disabled = 0 AND (s.paused_until IS NULL OR s.paused_until <= :at)
			AND (st.feed_key IS NULL OR st.last_fetch_at IS NULL OR st.next_fetch_at IS NULL OR st.next_fetch_at <= :at)`,
		// (*Tx).Sighted, entries.go: the entries a fetch saw again. Its
		// uniqueness is also insertEntry's ON CONFLICT target.
		"entries_feed_uid": sightedSQL,
		// (*Catalog).EntriesByUID, byuids.go.
		"entries_uid": entriesByUIDSQL,
		// (*Catalog).FeedEntries, listing.go, by the default order.
		"entries_feed_published": listingQuery(oneFeed("").in("e.feed_key"), "e.published"),
		// (*Catalog).FeedEntries, listing.go, by OrderFirstSeen.
		"entries_feed_first_seen": listingQuery(oneFeed("").in("e.feed_key"), "e.first_seen"),
		// (*Catalog).AllEntries, listing.go, by the default order.
		"entries_published": listingQuery(allFeeds.in("e.feed_key"), "e.published"),
		// (*Catalog).AllEntries, listing.go, by OrderFirstSeen.
		"entries_first_seen": listingQuery(allFeeds.in("e.feed_key"), "e.first_seen"),
		// (*Tx).newSearchKey, fts.go: at each entry stored.
		"entries_search": lastSearchKeySQL,
		// (*Index).LoadLinks, links.go: the owners of a batch's links.
		"aliases_link": linkOwnersSQL,
		// (*Catalog).Fetches, fetches.go.
		"fetches_feed": feedFetchesSQL,
		// (*Catalog).AllEntries, listing.go, with EntryQuery.Starred.
		"marks_starred": listingQuery(allFeeds.in("e.feed_key")+" AND "+isStarred, "e.published"),
		// (*Catalog).unreadFew, listing.go, over all feeds.
		"marks_unread": `SELECT x.id FROM feeds f LEFT JOIN read_until w ON w.reader = :reader AND w.feed_key = f.key
		CROSS JOIN entries x ON x.feed_key = f.key AND x.first_seen >= max(coalesce(w.until, 0), :low) WHERE ` + allFeeds.in("f.key") + `
		UNION ALL SELECT x.id FROM marks m INDEXED BY marks_unread CROSS JOIN entries x ON x.feed_key = m.feed_key AND x.entry_uid = m.entry_uid
		WHERE m.reader = :reader AND NOT m.read AND ` + allFeeds.in("m.feed_key") + ` LIMIT :limit`,
		// The triggers subscriptions_labels_insert, _update and _delete,
		// migrations/0009_subscription_labels.sql, at each write of a
		// subscription (their new.feed_key or old.feed_key a parameter
		// here: a plan does not show a trigger's statements).
		"subscription_labels_feed": `DELETE FROM subscription_labels WHERE feed_key = ?`,
		// (*Catalog).WebSubs, push.go.
		"websub_feed": webSubsSQL,
		// (*Catalog).DueMedia, media.go: at every run of feed-media.
		"media_queue": dueMediaSQL,
		// (*Catalog).MediaType, media.go: a stored file's type, by its name.
		"media_sha256": mediaTypeSQL,
	}
	c := openTemp(t)
	indexes := table(t, c, `SELECT name FROM sqlite_schema WHERE type = 'index' AND name NOT GLOB 'sqlite_autoindex_*' ORDER BY name`)
	for _, index := range indexes {
		query, ok := needs[index]
		if !ok {
			t.Errorf("index %s: no query listed that reads it: list one, or drop the index", index)
			continue
		}
		plan := queryPlan(t, c, query)
		if i := slices.IndexFunc(plan, func(step string) bool { return strings.Contains(step+" ", "INDEX "+index+" ") }); i >= 0 {
			t.Logf("%s: %s", index, plan[i])
		} else {
			t.Errorf("index %s: the plan of its query does not read it:\n%s\n%s", index, query, strings.Join(plan, "\n"))
		}
	}
	for index := range needs {
		if !slices.Contains(indexes, index) {
			t.Errorf("index %s is listed, but the schema has none of that name", index)
		}
	}
}

// listingQuery is the query (*Catalog).entries (listing.go) runs for a
// page newest first by col, of the entries its conditions where keep.
func listingQuery(where, col string) string {
	return `SELECT ` + entryColumns + ` FROM entries e JOIN feeds f ON f.key = e.feed_key
			WHERE ` + where + ` ORDER BY ` + col + ` DESC, e.id DESC LIMIT :limit`
}

// namedParam is a named parameter of a statement (:name).
var namedParam = regexp.MustCompile(`:(\w+)`)

// queryPlan is the detail of each step of EXPLAIN QUERY PLAN query. The
// statement is compiled, not run: its parameters' values do not change
// the plan, but the driver wants one for each, so all are NULL.
func queryPlan(t *testing.T, c *Catalog, query string) []string {
	t.Helper()
	args := make([]any, strings.Count(query, "?"))
	for _, m := range namedParam.FindAllStringSubmatch(query, -1) {
		args = append(args, sql.Named(m[1], nil))
	}
	rows, err := c.read(ctx, once, `EXPLAIN QUERY PLAN `+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return plan
}
