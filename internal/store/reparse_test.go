package store

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/parse"
	"github.com/feedpipe/feedpipe/internal/storage"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// A store of two cycles is re-parsed by a parser that keeps the tracking
// parameters of links, which the cycles' parser removed: the entries with
// ids of their own come out as new versions, announced as updates, the
// edited one in its newest version; the entries without (whose ids derive
// from the link) are not stored twice; nothing is touched twice.
func TestReparse(t *testing.T) {
	w := newWorld(t)
	w.serve("a.xml", rssFeed("One", "Two"))
	noGUID := `<?xml version="1.0"?><rss version="2.0"><channel><title>B</title><link>https://b.example/</link>` +
		`<item><title>B one</title><link>https://b.example/1?utm_medium=x</link></item>` +
		`<item><title>B two</title><link>https://b.example/2?utm_medium=x</link></item></channel></rss>`
	w.serve("b.xml", noGUID)
	feedA := w.subscribe("/a.xml")
	w.subscribe("/b.xml")
	w.cycle(t0)
	w.serve("a.xml", rssFeed("One, corrected", "Two"))
	w.cycle(t0.Add(time.Hour))
	if n := strings.Count(logText(t, w.st, storage.DirEntries), "\n"); n != 5 {
		t.Fatalf("the cycles stored %d entries, want 5", n)
	}

	keep := &parse.Parser{} // no tracking parameters removed
	for i, step := range []struct {
		parser *parse.Parser
		since  time.Time
		want   ReparseSummary // Store left out
	}{
		{keep, t0, ReparseSummary{Fetches: 4, Entries: 4, Updated: 2, Renamed: 2}},
		{keep, t0, ReparseSummary{Fetches: 4, Entries: 4, Unchanged: 2, Renamed: 2}},
		{keep, t0.Add(24 * time.Hour), ReparseSummary{}}, // no fetches since
	} {
		before := logText(t, w.st, storage.DirEntries)
		var out bytes.Buffer
		var sum ReparseSummary
		err := Reparse(context.Background(), ReparseConfig{Store: w.st, Out: ndjson.NewWriter(&out), Since: step.since,
			Parser: step.parser, Now: func() time.Time { return t0.Add(2 * time.Hour) }, Summary: &sum})
		if err != nil {
			t.Fatal(err)
		}
		sum.Store = Summary{}
		if sum != step.want {
			t.Errorf("step %d: %+v, want %+v", i, sum, step.want)
		}
		events := out.String()
		if strings.Count(events, `"type":"updated_entry"`) != step.want.Updated || strings.Contains(events, "new_entry") {
			t.Errorf("step %d: events\n%s", i, events)
		}
		added := strings.TrimPrefix(logText(t, w.st, storage.DirEntries), before)
		if strings.Count(added, "\n") != step.want.Updated {
			t.Errorf("step %d: stored\n%s", i, added)
		}
	}

	// The latest version of each entry of a.xml has its link's tracking
	// parameter, and the edited one its edit.
	idx, _ := w.st.SeenEntries(feedA)
	latest := map[string]ndjson.Entry{}
	for _, e := range storedEntries(t, w.st) {
		if e.FeedID == feedA {
			latest[e.EntryUID] = e
		}
	}
	if len(latest) != 2 {
		t.Fatalf("feed a has %d entries", len(latest))
	}
	for uid, e := range latest {
		if !strings.Contains(e.CanonicalLink, "utm_source=rss") || e.Status != "updated" {
			t.Errorf("latest of %s: %+v", uid, e)
		}
		if s, _ := idx.Latest(uid); s.Hash != e.ContentHash {
			t.Errorf("index of %s: %+v", uid, s)
		}
		if e.NativeID == "g0" && (e.Title != "One, corrected" || e.SeenCount != 3) {
			t.Errorf("g0 is %q, version %d", e.Title, e.SeenCount)
		}
	}
}
