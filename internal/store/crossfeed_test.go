package store

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/testids"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

func linkedEntry(feed, uid, link string, aliasOf *ndjson.EntryRef) string {
	e := ndjson.Entry{Header: ndjson.Head(ndjson.TypeEntry), FeedID: testids.Feed(feed), EntryUID: testids.UID(uid), ContentHash: "h-" + uid, CanonicalLink: link,
		Title: uid, Status: ndjson.StatusNew, Authors: []ndjson.Author{}, Categories: []string{}, Enclosures: []ndjson.Enclosure{}}
	if aliasOf != nil {
		e.Status, e.AliasOf = ndjson.StatusAlias, aliasOf
	}
	b, _ := ndjson.Marshal(e)
	return string(b)
}

// ref names the entry uid of the test feed feed.
func ref(feed, uid string) *ndjson.EntryRef {
	return &ndjson.EntryRef{FeedID: testids.Feed(feed), EntryUID: testids.UID(uid)}
}

// storeRun runs feed-store and renders what it stored compactly: uid:new
// for a new_entry on stdout, then uid>feed/uid for each alias it recorded
// in aliases/ (never on stdout, which carries events only).
func storeRun(t *testing.T, st *storedir.Store, input string) (string, Summary) {
	t.Helper()
	return storeAt(t, st, time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC), input)
}

// storeAt is storeRun at the moment at.
func storeAt(t *testing.T, st *storedir.Store, at time.Time, input string) (string, Summary) {
	t.Helper()
	var out bytes.Buffer
	var sum Summary
	aliasFile := storedir.DayFile(storedir.DirAliases, at)
	aliasesBefore := st.Size(aliasFile)
	if err := Run(context.Background(), Config{In: strings.NewReader(input), Out: ndjson.NewWriter(&out), Store: st,
		Now: func() time.Time { return at }, Summary: &sum}); err != nil {
		t.Fatal(err)
	}
	var got []string
	rd := ndjson.NewReader(&out)
	for {
		l, err := rd.Next()
		if err != nil {
			break
		}
		switch l.Type {
		case ndjson.TypeNewEntry:
			var ev ndjson.Event
			l.Decode(&ev)
			got = append(got, testids.Name(ev.EntryUID)+":new")
		case ndjson.TypeAlias:
			t.Errorf("an alias record on stdout: %s", l.Raw)
		}
	}
	if _, _, err := st.ReadLog(aliasFile, aliasesBefore, func(l ndjson.Line) error {
		var a ndjson.Alias
		if err := l.Decode(&a); err != nil {
			return err
		}
		got = append(got, testids.Name(a.EntryUID)+">"+testids.Name(a.AliasOf.FeedID)+"/"+testids.Name(a.AliasOf.EntryUID))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return strings.Join(got, " "), sum
}

func TestCrossFeedAliases(t *testing.T) {
	const link = "https://news.example/story/1"
	a1 := ref("A", "a1")
	tests := []struct {
		name    string
		before  string // stored first, in a run of its own
		in      string
		want    string
		aliases int
	}{
		{"alias of a stored entry", linkedEntry("A", "a1", link, nil), linkedEntry("B", "b1", link, a1), "b1>A/a1", 1},
		{"alias of an entry of the same batch", "", linkedEntry("A", "a1", link, nil) + linkedEntry("B", "b1", link, a1), "a1:new b1>A/a1", 1},
		{"alias recorded already", linkedEntry("A", "a1", link, nil) + linkedEntry("B", "b1", link, a1), linkedEntry("B", "b1", link, a1), "", 0},
		{"alias of an entry never stored: stored", "", linkedEntry("B", "b1", link, a1), "b1:new", 0},
		{"the link's first entry is in its own feed: stored", linkedEntry("B", "b0", link, nil), linkedEntry("B", "b1", link, a1), "b1:new", 0},
		{"without status alias both are stored", linkedEntry("A", "a1", link, nil), linkedEntry("B", "b1", link, nil), "b1:new", 0},
	}
	// The link index kept from the store's start, or built from entries/
	// once the entries before were stored (the first feed-dedup
	// --cross-feed run on a store): the same answers.
	for _, tt := range tests {
		for _, built := range []bool{false, true} {
			if built && strings.Contains(tt.before, `"alias_of"`) {
				continue // an alias comes from a --cross-feed run only, which kept the index first
			}
			name := tt.name
			if built {
				name += ", index built after"
			}
			t.Run(name, func(t *testing.T) {
				st, _ := storedir.Open(t.TempDir())
				if !built {
					keepLinks(t, st)
				}
				if tt.before != "" {
					storeRun(t, st, tt.before)
				}
				if built {
					keepLinks(t, st)
				}
				got, sum := storeRun(t, st, tt.in)
				if got != tt.want || sum.Aliases != tt.aliases {
					t.Fatalf("got %q, %d aliases; want %q, %d", got, sum.Aliases, tt.want, tt.aliases)
				}
				// An alias is never an entry, and is in aliases/.
				b, _ := os.ReadFile(st.Path(storedir.DayFile(storedir.DirEntries, time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC))))
				if tt.aliases > 0 && strings.Contains(string(b), `"entry_uid":"b1"`) {
					t.Errorf("an alias was stored as an entry:\n%s", b)
				}
				a, _ := os.ReadFile(st.Path(storedir.DayFile(storedir.DirAliases, time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC))))
				if n := strings.Count(string(a), `"type":"alias"`); tt.aliases > 0 && n < 1 {
					t.Errorf("aliases/ holds %d aliases", n)
				}
			})
		}
	}
}

// TestLinksCatchUp: an entry a crash left in entries/ without its rows in
// the catalog (the append done, the commit not) is indexed by the next
// run, its link with it, and announced then.
func TestLinksCatchUp(t *testing.T) {
	const link = "https://news.example/story/1"
	st, _ := storedir.Open(t.TempDir())
	keepLinks(t, st)
	storeRun(t, st, linkedEntry("A", "a0", "https://news.example/other", nil))
	var e ndjson.Entry
	if err := ndjson.Unmarshal([]byte(linkedEntry("A", "a1", link, nil)), &e); err != nil {
		t.Fatal(err)
	}
	e.FirstSeen, e.LastSeen, e.SeenCount = ndjson.At(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)), ndjson.At(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)), 1
	line, _ := ndjson.Marshal(&e)
	if _, err := st.AppendLines("entries/2026-11-21.ndjson", line, storedir.Durable); err != nil {
		t.Fatal(err)
	}
	got, sum := storeRun(t, st, linkedEntry("B", "b1", link, ref("A", "a1")))
	if got != "a1:new b1>A/a1" || sum.Aliases != 1 {
		t.Fatalf("after catching up: %q", got)
	}
}

// TestReplayedFetchNotCommittedTwice: a fetch record feed-store stored
// already is skipped and counted, its entries judged as ever.
func TestReplayedFetchNotCommittedTwice(t *testing.T) {
	st, _ := storedir.Open(t.TempDir())
	at := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	fetch := func(id string, fetched time.Time) string {
		b, _ := ndjson.Marshal(ndjson.Fetch{Header: ndjson.Head(ndjson.TypeFetch), FetchID: testids.Fetch(id), FetchedAt: ndjson.At(fetched),
			Due: ndjson.Due{Header: ndjson.Head(ndjson.TypeDue), FeedID: testids.Feed("A")}, HTTPStatus: 200})
		return string(b)
	}
	in := linkedEntry("A", "a1", "", nil) + fetch("F1", at)
	for i, tt := range []struct {
		in              string
		want            string
		feeds, replayed int
	}{
		{in, "a1:new", 1, 0},
		{in, "", 0, 1},
		{fetch("F0", at.Add(-time.Hour)), "", 0, 1}, // older: superseded
		{fetch("F2", at.Add(time.Hour)), "", 1, 0},
	} {
		got, sum := storeRun(t, st, tt.in)
		if got != tt.want || sum.Feeds != tt.feeds || sum.Replayed != tt.replayed {
			t.Errorf("run %d: %q, %d feeds, %d replayed; want %q, %d, %d", i, got, sum.Feeds, sum.Replayed, tt.want, tt.feeds, tt.replayed)
		}
	}
}

// crossFeedStore is a store of two links stored by feed A on day 1, L1
// (a1) and L2 (a2), an alias of a1 from feed B recorded that day, and a
// new version of a2 stored on day 8.
func crossFeedStore(t *testing.T) (st *storedir.Store, day func(int) time.Time) {
	t.Helper()
	day = func(n int) time.Time { return time.Date(2026, 11, n, 10, 0, 0, 0, time.UTC) }
	st, err := storedir.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	keepLinks(t, st)
	a1 := ref("A", "a1")
	storeAt(t, st, day(1), linkedEntry("A", "a1", "https://news.example/1", nil)+linkedEntry("A", "a2", "https://news.example/2", nil))
	storeAt(t, st, day(1).Add(time.Hour), linkedEntry("B", "b1", "https://news.example/1", a1))
	storeAt(t, st, day(8), strings.Replace(linkedEntry("A", "a2", "https://news.example/2", nil), `"h-a2"`, `"h-a2-v2"`, 1))
	return st, day
}

// TestPruneCrossFeed: what prune does to aliases/ and the URL index, and
// what the next alias of a pruned entry becomes.
func TestPruneCrossFeed(t *testing.T) {
	const l1, l2 = "https://news.example/1", "https://news.example/2"
	a1, a2 := ref("A", "a1"), ref("A", "a2")
	for _, tc := range []struct {
		name string
		cfg  PruneConfig
		want PruneSummary
		in   string // stored after, on day 10
		out  string
	}{
		{name: "articles: a link whose entry is gone falls back to storing, its aliases with it",
			cfg:  PruneConfig{ArticlesKeep: 72 * time.Hour},
			want: PruneSummary{EntryFiles: 1, Entries: 1, URLs: 1},
			in:   linkedEntry("C", "c1", l1, a1) + linkedEntry("B", "b1", l1, a1) + linkedEntry("C", "c2", l2, a2),
			out:  "c1:new b1>C/c1 c2>A/a2"}, // c1 is the link's first now
		{name: "articles, dry run: the index is left alone",
			cfg:  PruneConfig{ArticlesKeep: 72 * time.Hour, DryRun: true},
			want: PruneSummary{EntryFiles: 1, Entries: 1, URLs: 1, DryRun: true},
			in:   linkedEntry("C", "c1", l1, a1),
			out:  "c1>A/a1"},
		{name: "metadata: old alias files go, the index still knows the alias",
			cfg:  PruneConfig{MetadataKeep: 72 * time.Hour},
			want: PruneSummary{EventFiles: 1, AliasFiles: 1},
			in:   linkedEntry("B", "b1", l1, a1) + linkedEntry("C", "c1", l1, a1),
			out:  "c1>A/a1"},
		{name: "all of it within the TTLs: nothing",
			cfg: PruneConfig{MetadataKeep: 30 * 24 * time.Hour, ArticlesKeep: 30 * 24 * time.Hour},
			in:  linkedEntry("C", "c1", l1, a1),
			out: "c1>A/a1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, day := crossFeedStore(t)
			var out bytes.Buffer
			cfg := tc.cfg
			cfg.Store, cfg.Out, cfg.Now = st, &out, func() time.Time { return day(10) }
			sum, err := Prune(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			sum.Bytes = 0
			if sum != tc.want {
				t.Errorf("summary\n got %+v\nwant %+v", sum, tc.want)
			}
			if got, _ := storeAt(t, st, day(10), tc.in); got != tc.out {
				t.Errorf("stored after: %q, want %q", got, tc.out)
			}
		})
	}
}

// TestReindex: a store whose catalog is deleted, or damaged, gets it back
// from its files with feed-store reindex: the subscriptions, the entry
// index, its aliases, and its links (kept: the store recorded an alias).
func TestReindex(t *testing.T) {
	const l1 = "https://news.example/1"
	a1 := ref("A", "a1")
	for _, how := range []string{"deleted", "damaged"} {
		t.Run(how, func(t *testing.T) {
			st, day := crossFeedStore(t)
			editSubs(t, st, func([]ndjson.Subscription) ([]ndjson.Subscription, error) {
				return []ndjson.Subscription{{Header: ndjson.Head(ndjson.TypeSubscription), FeedID: testids.Feed("A"), URL: "https://a.example/"}}, nil
			})
			for _, suffix := range []string{"", "-wal", "-shm"} {
				os.Remove(st.Path(catalog.File + suffix))
			}
			if how == "damaged" {
				os.WriteFile(st.Path(catalog.File), []byte(strings.Repeat("garbage ", 1000)), 0o600)
			}
			sum, err := catalog.Reindex(context.Background(), st, nil)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Subscriptions != 1 || sum.Entries != 2 || sum.Versions != 3 || sum.Aliases != 1 || (how == "damaged") != (sum.Damaged != "") {
				t.Fatalf("%+v", sum)
			}
			for _, step := range []struct{ in, out string }{
				{linkedEntry("C", "c1", l1, a1), "c1>A/a1"}, // the link's first is known
				{linkedEntry("B", "b1", l1, a1), ""},        // the alias too
				{linkedEntry("A", "a1", l1, nil), ""},       // and the entry
			} {
				if got, _ := storeAt(t, st, day(10), step.in); got != step.out {
					t.Errorf("%q, want %q", got, step.out)
				}
			}
			if subs := subsOf(t, st); len(subs) != 1 {
				t.Errorf("subscriptions %+v", subs)
			}
		})
	}
}

// TestLinksOfABatchBegunBeforeKeepLinks: a batch begun while the catalog
// kept no link index read no link; if a feed-dedup --cross-feed run's
// KeepLinks commits before the batch does, the batch's commit adds its
// stored versions' links (the index's build read none of their lines).
func TestLinksOfABatchBegunBeforeKeepLinks(t *testing.T) {
	const link = "https://news.example/story/1"
	for _, keptMeanwhile := range []bool{false, true} {
		st, _ := storedir.Open(t.TempDir())
		cat := openCatalog(t, st)
		var e ndjson.Entry
		if err := ndjson.Unmarshal([]byte(linkedEntry("A", "a1", link, nil)), &e); err != nil {
			t.Fatal(err)
		}
		w := batchWrites{versions: []staged{{entry: &e}}} // linksKept false: as the batch began
		if keptMeanwhile {
			if _, err := cat.KeepLinks(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if err := cat.Update(context.Background(), func(t *catalog.Tx) error { return addLinks(t, &w) }); err != nil {
			t.Fatal(err)
		}
		h, _ := catalog.LinkHash(link)
		o, err := cat.LinkOwners(context.Background(), h)
		if err != nil || o.Known() != keptMeanwhile || keptMeanwhile && o.First != *ref("A", "a1") {
			t.Errorf("kept meanwhile %v: the link's owners %+v (%v)", keptMeanwhile, o, err)
		}
	}
}
