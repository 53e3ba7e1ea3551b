package catalog

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/testids"
)

// TestFeedNames: a subscription's name, else its feed's title, else its
// URL; a feed with entries and nothing else is left out.
func TestFeedNames(t *testing.T) {
	c := openTemp(t)
	unnamed := sub("B")
	unnamed.Name = ""
	titled := sub("C")
	titled.Name = ""
	add(t, c, sub("A"), unnamed, titled)
	if err := c.Update(ctx, func(tx *Tx) error {
		return tx.PutStates(FeedState{FeedID: testids.Feed("C"), Title: "The C feed"})
	}); err != nil {
		t.Fatal(err)
	}
	storeLines(t, c, "2026-11-20", entry("D", "d1", "h", t0))
	got, err := c.FeedNames(ctx, []string{testids.Feed("A"), testids.Feed("B"), testids.Feed("C"), testids.Feed("D"), "nope"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{testids.Feed("A"): "A", testids.Feed("B"): "https://B.example/feed", testids.Feed("C"): "The C feed"}
	if len(got) != len(want) {
		t.Errorf("names %v, want %v", got, want)
	}
	for id, n := range want {
		if got[id] != n {
			t.Errorf("%s: %q, want %q", testids.Name(id), got[id], n)
		}
	}
}

// TestFindFeed: by id (subscribed or not), URL, name or title (case
// aside), a prefix of four characters or more; ambiguous and unknown
// names are ErrNoSuchSubscription.
func TestFindFeed(t *testing.T) {
	c := openTemp(t)
	titled := sub("T")
	titled.Name = ""
	twin1, twin2 := sub("Twin1"), sub("Twin2")
	twin1.Name, twin2.Name = "Twins", "twins"
	add(t, c, sub("News"), titled, twin1, twin2)
	if err := c.Update(ctx, func(tx *Tx) error {
		return tx.PutStates(FeedState{FeedID: testids.Feed("T"), Title: "Titled Feed"})
	}); err != nil {
		t.Fatal(err)
	}
	storeLines(t, c, "2026-11-20", entry("Gone", "g1", "h", t0))
	news := testids.Feed("News")
	for _, tc := range []struct{ ref, want, err string }{
		{news, news, ""},
		{testids.Feed("Gone"), testids.Feed("Gone"), ""},
		{"https://News.example/feed", news, ""},
		{"news", news, ""},
		{"  News ", news, ""},
		{"titled feed", testids.Feed("T"), ""},
		{news[:8], news, ""},
		{news[:3], "", "too short"},
		{"twins", "", "ambiguous"},
		{"nothing", "", "no feed has"},
		{"", "", "empty"},
	} {
		got, err := c.FindFeed(ctx, tc.ref)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%q: %s, %v; want %s", tc.ref, testids.Name(got), err, testids.Name(tc.want))
		case tc.err != "" && (!errors.Is(err, ErrNoSuchSubscription) || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: %s, %v; want an error with %q", tc.ref, got, err, tc.err)
		}
	}
}

// TestReaderEntries: the same pages as the EntryQuery filters give, by
// feed, label, stars and words, every way of searching.
func TestReaderEntries(t *testing.T) {
	c := openTemp(t)
	add(t, c, sub("A", "news"), sub("B"))
	storeLines(t, c, "2026-11-20",
		textEntry("A", "a1", "h", t0, "apple pie", "", ""), textEntry("A", "a2", "h", t0.Add(time.Hour), "apple tart", "", ""),
		textEntry("B", "b1", "h", t0.Add(2*time.Hour), "banana", "", ""), textEntry("B", "b2", "h", t0.Add(3*time.Hour), "apple banana", "", ""))
	c.Mark(ctx, "default", MarkStar, []EntryKey{{testids.Feed("A"), testids.UID("a1")}, {testids.Feed("B"), testids.UID("b2")}}, t0)
	page := func(feed, label string, q EntryQuery) string {
		t.Helper()
		p, err := c.ReaderEntries(ctx, feed, label, q)
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, e := range p.Entries {
			n := testids.Name(e.UID)
			if e.Starred {
				n += "s"
			}
			s = append(s, n)
		}
		return strings.Join(s, ",")
	}
	for _, plan := range []searchPlan{searchFetch, searchWalk, searchCheck, searchFilter} {
		planSearch = func(*Catalog, context.Context, feedScope, string, searchBounds) (searchPlan, error) { return plan, nil }
		for _, tc := range []struct {
			feed, label string
			q           EntryQuery
			want        string
		}{
			{"", "", EntryQuery{}, "b2,b1,a2,a1"},
			{testids.Feed("A"), "", EntryQuery{}, "a2,a1"},
			{"", "news", EntryQuery{}, "a2,a1"},
			{"", "", EntryQuery{Reader: "default", Starred: true}, "b2s,a1s"},
			{"", "news", EntryQuery{Reader: "default", Starred: true}, "a1s"},
			{testids.Feed("B"), "", EntryQuery{Reader: "default", Starred: true}, "b2s"},
			{"", "", EntryQuery{Reader: "nobody", Starred: true}, ""},
			{"", "", EntryQuery{Text: "apple"}, "b2,a2,a1"},
			{"", "", EntryQuery{Text: "apple", Limit: 2}, "b2,a2"},
			{"", "news", EntryQuery{Text: "apple"}, "a2,a1"},
			{testids.Feed("B"), "", EntryQuery{Text: "apple"}, "b2"},
			{"", "", EntryQuery{Text: "apple", Reader: "default", Starred: true}, "b2s,a1s"},
			{"", "", EntryQuery{Text: "banana", Reader: "default", Unread: true}, "b2s,b1"},
			{"", "nolabel", EntryQuery{}, ""},
		} {
			if got := page(tc.feed, tc.label, tc.q); got != tc.want {
				t.Errorf("plan %d: %s %s %+v: %s, want %s", plan, testids.Name(tc.feed), tc.label, tc.q, got, tc.want)
			}
		}
	}
	planSearch = (*Catalog).choosePlan
	if _, err := c.ReaderEntries(ctx, "", "", EntryQuery{Text: "!!"}); !errors.Is(err, ErrBadQuery) {
		t.Errorf("a search without words: %v", err)
	}
	if _, err := c.ReaderEntries(ctx, "", "", EntryQuery{Reader: "Bad Name", Starred: true}); err == nil {
		t.Errorf("a bad reader: no error")
	}
}
