package catalog

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/testids"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// TestCatchUpEntries: entries a crash left in entries/ past the catalog's
// checkpoint are indexed by the next writer, once; those whose event the
// crash kept from events/ are announced now, the others not again.
func TestCatchUpEntries(t *testing.T) {
	c := openTemp(t)
	st := c.st
	line := func(e *ndjson.Entry) []byte { b, _ := ndjson.Marshal(e); return b }
	e1, e2 := entry("A", "u1", "h1", t0), entry("A", "u2", "h2", t0)
	e1b := entry("A", "u1", "h1b", t0.Add(time.Hour))
	st.AppendLines("entries/2026-11-20.ndjson", append(line(e1), line(e2)...), storedir.Durable)
	st.AppendLines("entries/2026-11-21.ndjson", line(e1b), storedir.Durable)
	ev, _ := ndjson.Marshal(ndjson.EventFor(e2, ndjson.At(t0), "entries/2026-11-20.ndjson"))
	st.AppendLines("events/2026-11-20.ndjson", ev, storedir.Durable)

	announced, err := c.CatchUpEntries(ctx, t0)
	if err != nil || len(announced) != 2 || announced[0].EntryUID != e1.EntryUID || announced[1].ContentHash != "h1b" ||
		announced[0].StoredIn != "entries/2026-11-20.ndjson" {
		t.Fatalf("announced %+v, %v", announced, err)
	}
	x := c.Index()
	s, ok, _ := x.Latest(ctx, e1.FeedID, e1.EntryUID)
	if !ok || s.Hash != "h1b" || s.Versions != 2 {
		t.Fatalf("latest %+v", s)
	}
	if got, _ := x.Judge(ctx, e1.FeedID, e1.EntryUID, "h1"); got != "" {
		t.Fatalf("the first version is not known: %q", got)
	}
	events, _ := st.ReadFile(storedir.DayFile(storedir.DirEvents, t0))
	if strings.Count(string(events), "\n") != 2 {
		t.Fatalf("events written:\n%s", events)
	}
	if again, err := c.CatchUpEntries(ctx, t0); len(again) != 0 || err != nil {
		t.Fatalf("a second catch-up announced %d, %v", len(again), err)
	}
	// The line's place is kept: the entry reads back.
	rows, _, _ := c.EntriesByUID(ctx, e2.EntryUID)
	if got, err := c.Entry(rows[0]); err != nil || got.Title != e2.Title || got.ContentHash != "h2" {
		t.Fatalf("%+v %v", got, err)
	}
}

func TestCatchUpFetches(t *testing.T) {
	c := openTemp(t)
	f := ndjson.Fetch{Header: ndjson.Head(ndjson.TypeFetch), FetchID: testids.Fetch("F1"), Due: ndjson.Due{FeedID: testids.Feed("A")},
		FetchedAt: ndjson.At(t0), HTTPStatus: 304, NotModified: true}
	b, _ := ndjson.Marshal(f)
	c.st.AppendLines("fetches/2026-11-21.ndjson", b, storedir.Durable)
	for range 2 {
		if err := c.CatchUpFetches(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got, ok, err := c.FetchRecord(ctx, f.FetchID)
	if !ok || err != nil || got.HTTPStatus != 304 || got.Due.FeedID != f.Due.FeedID {
		t.Fatalf("%+v %v %v", got, ok, err)
	}
	var n int
	c.db.QueryRow(`SELECT count(*) FROM fetches`).Scan(&n)
	if n != 1 {
		t.Fatalf("%d fetch rows", n)
	}
}

// TestMigrateOldStore opens a copy of a store written before the catalog
// (testdata/README.md): once, with one log line, its subscriptions, feed
// states, budget, entries, aliases and fetches move into the catalog and
// its old files go.
func TestMigrateOldStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	if err := os.CopyFS(dir, os.DirFS("testdata/oldstore")); err != nil {
		t.Fatal(err)
	}
	st, err := storedir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	c, err := Open(ctx, st, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if n := strings.Count(logs.String(), "migrating the store to its catalog, once"); n != 1 {
		t.Fatalf("logs:\n%s", logs.String())
	}
	subs, _ := c.Subscriptions(ctx)
	if len(subs) != 4 || subs[0].Name != "Feed A" || strings.Join(subs[1].Labels, ",") != "news,tech" {
		t.Fatalf("subscriptions %+v", subs)
	}
	states, _ := c.States(ctx)
	a := states[subs[0].FeedID]
	if len(states) != 4 || a.Title != "Feed A" || a.Validators.ETag == "" || a.Sched == nil || a.Counts.Fetches != 2 || a.LastRunAt.IsZero() {
		t.Fatalf("states %d, feed A %+v", len(states), a)
	}
	gone := states[subs[2].FeedID]
	if gone.Sched == nil || gone.Sched.Lifecycle != "disabled" || gone.LastError == nil || gone.LastError.Code != "http_404" {
		t.Fatalf("the 404 feed %+v", gone)
	}
	var budget map[string]any
	if ok, err := c.Meta(ctx, MetaBudget, &budget); !ok || err != nil || budget["factor"] != 1.0 {
		t.Fatalf("budget %v %v %v", budget, ok, err)
	}
	// Feed A: two entries, one of them in two versions; B: one entry,
	// and one alias of A's.
	page, _ := c.FeedEntries(ctx, subs[0].FeedID, EntryQuery{})
	if len(page.Entries) != 2 {
		t.Fatalf("feed A entries %+v", page.Entries)
	}
	versions := 0
	for _, e := range page.Entries {
		versions += e.Versions
		if got, err := c.Entry(e); err != nil || got.EntryUID != e.UID {
			t.Fatalf("entry %s: %v", e.UID, err)
		}
	}
	if versions != 3 {
		t.Fatalf("%d versions", versions)
	}
	h, _ := LinkHash("https://news.example/story/1")
	o, _ := c.LinkOwners(ctx, h)
	if o.First.FeedID != subs[0].FeedID || len(o.Aliases) != 1 || o.Aliases[0].FeedID != subs[1].FeedID {
		t.Fatalf("link owners %+v", o)
	}
	fetches, _ := c.Fetches(ctx, subs[0].FeedID, time.Time{}, 0)
	if len(fetches) != 2 {
		t.Fatalf("%d fetches of feed A", len(fetches))
	}
	// The old files are gone; opening again migrates nothing.
	for _, key := range []string{"state/feeds.ndjson", "state/sched-budget.json", "index", "urls", "ledger"} {
		if _, err := st.Stat(key); err == nil {
			t.Errorf("%s is still there", key)
		}
	}
	logs.Reset()
	c2, err := Open(ctx, st, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	c2.Close()
	if strings.Contains(logs.String(), "migrating") {
		t.Fatalf("migrated twice:\n%s", logs.String())
	}
}
