package catalog

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/testids"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// TestSearchPlansAgree: every way of finding a search's page (searchPlan)
// pages through the entries the listing without the search has that have
// its words, in the same order: entries published in the same
// millisecond (pages end inside one), before 1970 and after 2248 (their
// keys clamp), new versions published at another time, both directions,
// time bounds, a feed and a label.
func TestSearchPlansAgree(t *testing.T) {
	c := openTemp(t)
	add(t, c, sub("A", "news"), sub("B", "news"), sub("C"))
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"apple", "banana", "cherry"}
	times := []time.Time{time.Unix(-5000, 0), time.Unix(-10, 0), time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2400, 1, 1, 0, 0, 0, 0, time.UTC)}
	for i := range 12 {
		times = append(times, t0.Add(time.Duration(i)*time.Millisecond))
	}
	text := map[string]string{} // uid -> its latest words
	random := func(feed, uid string) *ndjson.Entry {
		var w []string
		for _, x := range words {
			if rng.IntN(2) == 0 {
				w = append(w, x)
			}
		}
		e := textEntry(feed, uid, fmt.Sprint(rng.Int()), t0.Add(time.Hour), strings.Join(w, " "), "", "")
		e.Published = ndjson.At(times[rng.IntN(len(times))])
		text[e.EntryUID] = e.Title
		return e
	}
	var es []*ndjson.Entry
	for i := range 40 {
		es = append(es, random([]string{"A", "B", "C"}[rng.IntN(3)], fmt.Sprint("e", i)))
	}
	storeLines(t, c, "2026-11-20", es...)
	// New versions of a third of them, published at another time.
	var updated []*ndjson.Entry
	for _, e := range es[:13] {
		u := random(testids.Name(e.FeedID), testids.Name(e.EntryUID))
		u.Status = ndjson.StatusUpdated
		updated = append(updated, u)
	}
	storeLines(t, c, "2026-11-21", updated...)

	list := func(feed, label string, q EntryQuery) ([]string, error) {
		var uids []string
		for {
			p, err := c.ReaderEntries(ctx, feed, label, q)
			if err != nil {
				return nil, err
			}
			for _, e := range p.Entries {
				uids = append(uids, testids.Name(e.UID))
			}
			if p.Next == "" {
				return uids, nil
			}
			q.Cursor = p.Next
		}
	}
	defer func() { planSearch = (*Catalog).choosePlan }()
	for _, scope := range []struct{ feed, label string }{{"", ""}, {testids.Feed("A"), ""}, {"", "news"}} {
		for _, bounds := range []EntryQuery{{}, {Since: times[1], Until: times[8]}, {Oldest: true, Since: t0.Add(3 * time.Millisecond)},
			{Order: OrderFirstSeen, Oldest: true}} {
			for _, search := range []string{"banana cherry", "ban*"} {
				all := bounds
				all.Limit = MaxLimit
				planSearch = (*Catalog).choosePlan
				every, err := list(scope.feed, scope.label, all)
				if err != nil {
					t.Fatal(err)
				}
				var want []string
				for _, uid := range every {
					if hasWords(text[testids.UID(uid)], search) {
						want = append(want, uid)
					}
				}
				for _, plan := range []searchPlan{searchFetch, searchWalk, searchCheck, searchFilter} {
					if plan == searchWalk && bounds.Order == OrderFirstSeen {
						continue // the keys order by published time
					}
					planSearch = func(*Catalog, context.Context, feedScope, string, searchBounds) (searchPlan, error) { return plan, nil }
					for _, limit := range []int{2, 7} {
						q := bounds
						q.Text, q.Limit = search, limit
						got, err := list(scope.feed, scope.label, q)
						if err != nil {
							t.Fatal(err)
						}
						if !slices.Equal(got, want) {
							t.Errorf("%s %s %+v, plan %d, pages of %d:\n got %v\nwant %v", testids.Name(scope.feed), scope.label, q, plan, limit, got, want)
						}
					}
				}
			}
		}
	}
}

// hasWords reports whether title has every word of search (a word ending
// in * a prefix).
func hasWords(title, search string) bool {
	for _, w := range strings.Fields(search) {
		prefix, found := strings.TrimSuffix(w, "*"), false
		for _, x := range strings.Fields(title) {
			found = found || x == w || prefix != w && strings.HasPrefix(x, prefix)
		}
		if !found {
			return false
		}
	}
	return true
}

// TestChoosePlan: a search over every feed walks the index by time; over
// a feed, the feed's entries are looked up; over a label of most feeds,
// the walk; with few matches, they are fetched and sorted; by first_seen,
// more are a list to filter by.
func TestChoosePlan(t *testing.T) {
	c := openTemp(t)
	var subs []ndjson.Subscription
	for i := range 20 {
		labels := []string{"most"}
		if i == 0 {
			labels = append(labels, "one")
		}
		subs = append(subs, sub(fmt.Sprint("F", i), labels...))
	}
	add(t, c, subs...)
	var es []*ndjson.Entry
	for i := range 60 {
		title := "common"
		if i%2 == 0 {
			title += " even"
		}
		es = append(es, textEntry(fmt.Sprint("F", i%20), fmt.Sprint("e", i), "h", t0.Add(time.Duration(i)*time.Minute), title, "", ""))
	}
	es = append(es, textEntry("F1", "rare", "h", t0, "rare", "", ""))
	storeLines(t, c, "2026-11-20", es...)
	defer func(fetch, many int) { searchFetchAt, searchManyAt = fetch, many }(searchFetchAt, searchManyAt)
	searchFetchAt, searchManyAt = 10, 40
	most, err := c.labelFeeds(ctx, "most")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		sc   feedScope
		m    string
		b    searchBounds
		want searchPlan
	}{
		{"every feed", allFeeds, `"common"`, searchBounds{col: "e.published", limit: 10}, searchWalk},
		{"one feed", oneFeed(testids.Feed("F0")), `"common"`, searchBounds{col: "e.published", limit: 10}, searchCheck},
		{"most feeds", keyFeeds(most), `"common"`, searchBounds{col: "e.published", limit: 10}, searchWalk},
		{"few matches", keyFeeds(most), `"rare"`, searchBounds{col: "e.published", limit: 10}, searchFetch},
		{"by first_seen, few", allFeeds, `"even"`, searchBounds{col: "e.first_seen", limit: 10}, searchFetch},
		{"by first_seen, many", allFeeds, `"common"`, searchBounds{col: "e.first_seen", limit: 10}, searchFilter},
		{"starred", allFeeds, `"common"`, searchBounds{col: "e.published", limit: 10, few: true}, searchCheck},
	} {
		got, err := c.choosePlan(ctx, tc.sc, tc.m, tc.b)
		if err != nil || got != tc.want {
			t.Errorf("%s: plan %d, %v; want %d", tc.name, got, err, tc.want)
		}
	}
}

// TestSearchKeysFull: an entry whose millisecond has no search key left
// is stored and listed, left out of the index with a warning.
func TestSearchKeysFull(t *testing.T) {
	var logged bytes.Buffer
	st, err := storedir.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Open(ctx, st, slog.New(slog.NewTextHandler(&logged, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	add(t, c, sub("A"))
	full := textEntry("A", "a1", "h", t0, "apple", "", "")
	// The millisecond's last key taken, as a million entries would.
	storeLines(t, c, "2026-11-20", full)
	if _, err := c.db.Exec(`UPDATE entries SET search_key = ? WHERE search_key IS NOT NULL`, searchGroup(unixMS(full.Published.Time))+searchKeyLast); err != nil {
		t.Fatal(err)
	}
	late := textEntry("A", "a2", "h", t0.Add(time.Minute), "apple pie", "", "")
	late.Published = full.Published
	storeLines(t, c, "2026-11-20", late)
	if got := search(t, c, "pie"); got != "" {
		t.Errorf("pie: %q, want nothing (no key left)", got)
	}
	p, err := c.AllEntries(ctx, EntryQuery{})
	if err != nil || len(p.Entries) != 2 {
		t.Errorf("listed %d entries, %v; want both", len(p.Entries), err)
	}
	if n := strings.Count(logged.String(), "left out of the search index"); n != 1 {
		t.Errorf("%d warnings, want 1: %s", n, logged.String())
	}
}
