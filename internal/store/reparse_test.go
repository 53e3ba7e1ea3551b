package store

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/due"
	"github.com/feedpipe/feedpipe/internal/fetch"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/parse"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/sub"
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
	if n := strings.Count(logText(t, w.st, storedir.DirEntries), "\n"); n != 5 {
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
		before := logText(t, w.st, storedir.DirEntries)
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
		added := strings.TrimPrefix(logText(t, w.st, storedir.DirEntries), before)
		if strings.Count(added, "\n") != step.want.Updated {
			t.Errorf("step %d: stored\n%s", i, added)
		}
	}

	// The latest version of each entry of a.xml has its link's tracking
	// parameter, and the edited one its edit.
	idx := openCatalog(t, w.st).Index()
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
		if s, _, _ := idx.Latest(context.Background(), feedA, uid); s.Hash != e.ContentHash {
			t.Errorf("index of %s: %+v", uid, s)
		}
		if e.NativeID == "g0" && (e.Title != "One, corrected" || e.SeenCount != 3) {
			t.Errorf("g0 is %q, version %d", e.Title, e.SeenCount)
		}
	}
}

// TestReparseMendsLostEntries: a store broken as feedpipe broke stores
// before feed-store refused unread bodies and kept only the validators of
// bodies read (issue 13): a feed whose payload had too many items, a feed
// fetched by a pipeline without feed-parse, and a website fetched by one
// without feed-scrape, each with its body's validators kept, so that the
// server's 304 skipped the body since. feed-store reparse stores the
// feeds' entries, and drops the website's validators so that its next
// fetch brings the page whole.
func TestReparseMendsLostEntries(t *testing.T) {
	w := newWorld(t)
	w.serve("many.xml", rssFeed("One", "Two", "Three"))
	w.serve("unparsed.xml", rssFeed("Four", "Five"))
	w.serve("site.html", "<html><body><a href=\"/a1.html\">A1</a></body></html>")
	many, unparsed := w.subscribe("/many.xml"), w.subscribe("/unparsed.xml")
	s, _, err := sub.Add(sub.Config{Store: w.st, Out: io.Discard, Now: func() time.Time { return t0 }},
		sub.Spec{URL: w.srv.URL + "/site.html", Type: ndjson.SourceWebsite})
	if err != nil {
		t.Fatal(err)
	}
	site := s.FeedID

	// The broken runs: feed-fetch stored the payloads and their records;
	// the old feed-store kept each fetch's validators, and stored nothing.
	var dues, fetched bytes.Buffer
	if err := due.Run(due.Config{Out: ndjson.NewWriter(&dues), Store: w.st, Now: t0, All: true}); err != nil {
		t.Fatal(err)
	}
	if err := fetch.Run(context.Background(), fetch.Config{In: &dues, Out: ndjson.NewWriter(&fetched), Store: w.st,
		Client: httpx.New(httpx.Options{AllowPrivate: true}), Limiter: httpx.NewLimiter(8, 0, nil), Clock: atClock{t0}}); err != nil {
		t.Fatal(err)
	}
	var broken []catalog.FeedState
	for _, l := range strings.Split(strings.TrimSpace(fetched.String()), "\n") {
		var f ndjson.Fetch
		if err := json.Unmarshal([]byte(l), &f); err != nil || f.ResponseHeaders["Etag"] == "" {
			t.Fatalf("fetch record %s: %v", l, err)
		}
		fs := catalog.FeedState{FeedID: f.Due.FeedID, LastFetchAt: f.FetchedAt, LastStatus: 200,
			Validators: ndjson.Validators{ETag: f.ResponseHeaders["Etag"]}}
		if f.Due.FeedID == many {
			fs.LastError = &ndjson.Error{Class: ndjson.ClassParse, Code: "too_many_items", Message: "more than 2 items"}
		}
		broken = append(broken, fs)
	}
	putStates(t, w.st, broken...)

	var out bytes.Buffer
	var sum ReparseSummary
	err = Reparse(context.Background(), ReparseConfig{Store: w.st, Out: ndjson.NewWriter(&out), Since: t0,
		Now: func() time.Time { return t0.Add(time.Hour) }, Summary: &sum})
	if err != nil {
		t.Fatal(err)
	}
	if sum.New != 5 || sum.Refetch != 1 || strings.Count(out.String(), `"type":"new_entry"`) != 5 {
		t.Fatalf("summary %+v, events:\n%s", sum, out.String())
	}
	byFeed := map[string]int{}
	for _, e := range storedEntries(t, w.st) {
		byFeed[e.FeedID]++
	}
	if byFeed[many] != 3 || byFeed[unparsed] != 2 {
		t.Fatalf("stored by feed %v", byFeed)
	}
	states, _ := statesOf(t, w.st)
	if v := states.ByFeed[site].Validators; v.ETag != "" {
		t.Fatalf("the website keeps the validators of a page never scraped: %+v", v)
	}
	if v := states.ByFeed[unparsed].Validators; v.ETag == "" {
		t.Fatal("the validators of a payload read now were dropped")
	}
}
