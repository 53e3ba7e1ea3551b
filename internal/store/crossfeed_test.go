package store

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/storage"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

func linkedEntry(feed, uid, link string, aliasOf *ndjson.EntryRef) string {
	e := ndjson.Entry{Header: ndjson.Head(ndjson.TypeEntry), FeedID: feed, EntryUID: uid, ContentHash: "h-" + uid, CanonicalLink: link,
		Title: uid, Status: ndjson.StatusNew, Authors: []ndjson.Author{}, Categories: []string{}, Enclosures: []ndjson.Enclosure{}}
	if aliasOf != nil {
		e.Status, e.AliasOf = ndjson.StatusAlias, aliasOf
	}
	b, _ := ndjson.Marshal(e)
	return string(b)
}

// storeRun runs feed-store and renders its output compactly: uid:new for
// a new_entry, uid>feed/uid for an alias.
func storeRun(t *testing.T, st *storage.Store, input string) (string, Summary) {
	t.Helper()
	var out bytes.Buffer
	var sum Summary
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
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
			got = append(got, ev.EntryUID+":new")
		case ndjson.TypeAlias:
			var a ndjson.Alias
			l.Decode(&a)
			got = append(got, a.EntryUID+">"+a.AliasOf.FeedID+"/"+a.AliasOf.EntryUID)
		}
	}
	return strings.Join(got, " "), sum
}

func TestCrossFeedAliases(t *testing.T) {
	const link = "https://news.example/story/1"
	a1 := &ndjson.EntryRef{FeedID: "A", EntryUID: "a1"}
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
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, _ := storage.Open(t.TempDir())
			if tt.before != "" {
				storeRun(t, st, tt.before)
			}
			got, sum := storeRun(t, st, tt.in)
			if got != tt.want || sum.Aliases != tt.aliases {
				t.Fatalf("got %q, %d aliases; want %q, %d", got, sum.Aliases, tt.want, tt.aliases)
			}
			// An alias is never an entry, and is in aliases/.
			b, _ := os.ReadFile(st.Path(storage.DayFile(storage.DirEntries, time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC))))
			if tt.aliases > 0 && strings.Contains(string(b), `"entry_uid":"b1"`) {
				t.Errorf("an alias was stored as an entry:\n%s", b)
			}
			a, _ := os.ReadFile(st.Path(storage.DayFile(storage.DirAliases, time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC))))
			if n := strings.Count(string(a), `"type":"alias"`); tt.aliases > 0 && n < 1 {
				t.Errorf("aliases/ holds %d aliases", n)
			}
		})
	}
}

// TestURLIndexCatchesUp: entries stored whose URL index lines a crash lost
// are indexed again by the next run.
func TestURLIndexCatchesUp(t *testing.T) {
	const link = "https://news.example/story/1"
	st, _ := storage.Open(t.TempDir())
	storeRun(t, st, linkedEntry("A", "a0", "https://news.example/other", nil))
	storeRun(t, st, linkedEntry("A", "a1", link, nil))
	if err := os.RemoveAll(st.Path(storage.DirURLs + "/")); err != nil {
		t.Fatal(err)
	}
	// What the checkpoint of the first run said survives the crash.
	h, _ := storage.URLHash(link)
	if o, _ := st.URLs().Lookup(h); o.Known() {
		t.Fatal("index still there")
	}
	os.MkdirAll(st.Path(storage.DirURLs), 0o755)
	os.WriteFile(st.Path(storage.DirURLs+"/checkpoint.json"), []byte(`{"file":"entries/2026-11-21.ndjson","offset":0}`+"\n"), 0o644)
	got, sum := storeRun(t, st, linkedEntry("B", "b1", link, &ndjson.EntryRef{FeedID: "A", EntryUID: "a1"}))
	if got != "b1>A/a1" || sum.Aliases != 1 {
		t.Fatalf("after catching up: %q", got)
	}
}

// TestReplayedFetchNotCommittedTwice: a fetch record feed-store stored
// already is skipped and counted, its entries judged as ever.
func TestReplayedFetchNotCommittedTwice(t *testing.T) {
	st, _ := storage.Open(t.TempDir())
	at := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	fetch := func(id string, fetched time.Time) string {
		b, _ := ndjson.Marshal(ndjson.Fetch{Header: ndjson.Head(ndjson.TypeFetch), FetchID: id, FetchedAt: ndjson.At(fetched),
			Due: ndjson.Due{Header: ndjson.Head(ndjson.TypeDue), FeedID: "A"}, HTTPStatus: 200})
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
