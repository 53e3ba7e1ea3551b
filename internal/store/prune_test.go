package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// pruneFixture is a store after ten daily cycles of three feeds: two
// generated feeds that gain one item a day (a new payload a day, each one
// the source of an entry), and /a.xml, whose items never change but whose
// channel title does (a new payload a day; only the first one is the
// source of entries). It returns the store's directory and the moment, an
// hour into the tenth day, to prune at.
func pruneFixture(t *testing.T) (dir string, now time.Time) {
	t.Helper()
	w := newWorld(t)
	keepLinks(t, w.st) // so that prune has links to delete
	w.subscribe("/gen/1.xml")
	w.subscribe("/gen/2.xml")
	w.subscribe("/a.xml")
	for day := range 10 {
		w.h.SetRevision(day)
		w.serve("a.xml", strings.Replace(rssFeed("One", "Two"), "<title>T</title>", fmt.Sprintf("<title>T, day %d</title>", day), 1))
		w.cycle(t0.Add(time.Duration(day) * 24 * time.Hour))
	}
	return w.st.Root, t0.Add(9*24*time.Hour + time.Hour)
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// payloadSources maps the fetch ids of fetches/ to their payload keys.
func payloadSources(t *testing.T, st *storedir.Store) map[string]string {
	t.Helper()
	keys := map[string]string{}
	files, _ := st.DayFiles(storedir.DirFetches)
	for _, f := range files {
		st.ReadLog(f, 0, func(l ndjson.Line) error {
			var r ndjson.Fetch
			if l.Decode(&r) == nil && r.BodyRef != nil {
				keys[r.FetchID] = r.BodyRef.Key
			}
			return nil
		})
	}
	return keys
}

func TestPrune(t *testing.T) {
	fixture, now := pruneFixture(t)
	orig, _ := storedir.Open(fixture)
	allRaw, _ := orig.RawFiles()
	if len(allRaw) != 30 {
		t.Fatalf("fixture has %d payloads, want 30", len(allRaw))
	}
	day := func(n int) string { return storedir.Day(t0.Add(time.Duration(n) * 24 * time.Hour)) }

	for _, tc := range []struct {
		name    string
		cfg     PruneConfig
		prepare func(t *testing.T, st *storedir.Store)
		want    PruneSummary
	}{
		{name: "nothing asked, nothing goes", want: PruneSummary{}},
		{name: "older than 3 days, referenced ones stay",
			cfg:  PruneConfig{RawKeep: 72 * time.Hour},
			want: PruneSummary{Raw: 6, RawReferenced: 15}},
		{name: "dry run lists the same and deletes nothing",
			cfg:  PruneConfig{RawKeep: 72 * time.Hour, DryRun: true},
			want: PruneSummary{Raw: 6, RawReferenced: 15, DryRun: true}},
		{name: "even referenced",
			cfg:  PruneConfig{RawKeep: 72 * time.Hour, EvenReferenced: true},
			want: PruneSummary{Raw: 21}},
		{name: "the last 2 per feed, at any age",
			cfg:  PruneConfig{RawKeepPerFeed: 2, EvenReferenced: true},
			want: PruneSummary{Raw: 24, RawLastN: 3}},
		{name: "older than 3 days and beyond the last 5 per feed",
			cfg:  PruneConfig{RawKeep: 72 * time.Hour, RawKeepPerFeed: 5},
			want: PruneSummary{Raw: 4, RawLastN: 6, RawReferenced: 11}},
		{name: "articles older than 5 days go, and stop protecting their payloads",
			cfg:  PruneConfig{ArticlesKeep: 5 * 24 * time.Hour, RawKeep: 72 * time.Hour},
			want: PruneSummary{EntryFiles: 4, Raw: 15, RawReferenced: 6, Entries: 28, URLs: 28}},
		{name: "metadata older than 3 days, less what entries point at",
			cfg:  PruneConfig{MetadataKeep: 72 * time.Hour},
			want: PruneSummary{EventFiles: 6, DecisionFiles: 6, FetchesTrimmed: 5, FetchRecords: 5}},
		// The generated feeds serve their newest 10 items, one new a
		// day: each fetch counts a sighting of every item it shows, so the
		// items last seen before the cutoff (day 6) are the 7 of each
		// that had left the feed by then. /a.xml's two are seen every day.
		{name: "seen ids not seen within 3 days, less those still served",
			cfg:  PruneConfig{SeenKeep: 72 * time.Hour},
			want: PruneSummary{SeenForgotten: 14}},
		{name: "seen ids: a dry run forgets nothing",
			cfg:  PruneConfig{SeenKeep: 72 * time.Hour, DryRun: true},
			want: PruneSummary{SeenForgotten: 14, DryRun: true}},
		{name: "seen ids: a feed whose latest payload is gone keeps them all",
			cfg: PruneConfig{SeenKeep: 72 * time.Hour},
			prepare: func(t *testing.T, st *storedir.Store) {
				if err := os.RemoveAll(st.Path("raw/" + day(9))); err != nil {
					t.Fatal(err)
				}
			},
			want: PruneSummary{SeenFeedsKept: 2}}, // the generated ones: /a.xml has no old entries
		{name: "seen ids: a feed whose latest fetch record is gone keeps them all",
			cfg: PruneConfig{SeenKeep: 72 * time.Hour},
			prepare: func(t *testing.T, st *storedir.Store) {
				if err := os.Remove(st.Path("fetches/" + day(9) + ".ndjson")); err != nil {
					t.Fatal(err)
				}
			},
			want: PruneSummary{SeenFeedsKept: 2}}, // the generated ones: /a.xml has no old entries
		{name: "seen ids within 20 days: none",
			cfg:  PruneConfig{SeenKeep: 20 * 24 * time.Hour},
			want: PruneSummary{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			copyDir(t, fixture, dir)
			st, err := storedir.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			if tc.prepare != nil {
				tc.prepare(t, st)
			}
			entriesBefore := logText(t, st, storedir.DirEntries)
			indexBefore := indexSize(t, st)
			var out bytes.Buffer
			cfg := tc.cfg
			cfg.Store, cfg.Out, cfg.Now = st, &out, func() time.Time { return now }
			sum, err := Prune(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Bytes <= 0 != (out.Len() == 0 && sum.FetchesTrimmed == 0) {
				t.Errorf("bytes freed %d, listed:\n%s", sum.Bytes, out.String())
			}
			sum.Bytes = 0
			if sum != tc.want {
				t.Errorf("summary\n got %+v\nwant %+v", sum, tc.want)
			}
			listed := strings.Fields(out.String())
			if got := len(listed); got != tc.want.Raw+tc.want.EntryFiles+tc.want.EventFiles+tc.want.FetchFiles+tc.want.AliasFiles+tc.want.DecisionFiles {
				t.Errorf("%d files listed:\n%s", got, out.String())
			}
			for _, key := range listed {
				_, err := os.Stat(st.Path(key))
				if gone := errors.Is(err, os.ErrNotExist); gone == cfg.DryRun {
					t.Errorf("%s: gone %v after a run with dry run %v", key, gone, cfg.DryRun)
				}
			}
			if cfg.DryRun {
				if after, _ := st.RawFiles(); len(after) != 30 {
					t.Errorf("dry run left %d payloads", len(after))
				}
			}
			// Today's payloads always stay.
			for _, key := range listed {
				if strings.Contains(key, day(9)) {
					t.Errorf("deleted today's %s", key)
				}
			}
			// Entries are only ever deleted by their TTL, and every
			// payload a remaining entry comes from is still there.
			if cfg.ArticlesKeep == 0 && logText(t, st, storedir.DirEntries) != entriesBefore {
				t.Error("entries changed")
			}
			if !cfg.EvenReferenced && !cfg.DryRun && tc.prepare == nil { // prepare may delete payloads
				sources := payloadSources(t, st)
				for _, e := range storedEntries(t, st) {
					key, ok := sources[e.RawRef.FetchID]
					if !ok {
						t.Fatalf("entry %s: its fetch record %s is gone", e.EntryUID, e.RawRef.FetchID)
					}
					if _, err := os.Stat(st.Path(key)); err != nil {
						t.Errorf("entry %s: its payload is gone: %v", e.EntryUID, err)
					}
				}
			}
			// The links name entries in the index only.
			if n, err := openCatalog(t, st).DanglingLinks(context.Background()); n != 0 || err != nil {
				t.Errorf("%d links name entries not in the index (%v)", n, err)
			}
			// The seen-ids TTL: what the index lost, and no more.
			lost := indexBefore - indexSize(t, st)
			if tc.want.Entries > 0 {
				lost -= tc.want.Entries // with the files that went
			}
			if want := tc.want.SeenForgotten; cfg.DryRun && lost != 0 || !cfg.DryRun && lost != want {
				t.Errorf("the index lost %d entries, want %d (dry run %v)", lost, want, cfg.DryRun)
			}
			// The newest N of each feed stay.
			if n := cfg.RawKeepPerFeed; n > 0 {
				for d := 9; d > 9-n; d-- {
					if strings.Contains(out.String(), "raw/"+day(d)+"/") {
						t.Errorf("a payload of day %d, among its feed's newest %d, was deleted", d, n)
					}
				}
			}
			// A second run finds nothing more to delete.
			if !cfg.DryRun {
				out.Reset()
				again, err := Prune(context.Background(), cfg)
				if err != nil || again.Raw+again.EntryFiles+again.EventFiles+again.FetchFiles+again.FetchRecords != 0 {
					t.Errorf("second run: %+v, %v", again, err)
				}
			}
		})
	}
}

// indexSize is the number of entries in the catalog's index.
func indexSize(t *testing.T, st *storedir.Store) int {
	t.Helper()
	sizes, err := openCatalog(t, st).Sizes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sizes["entries"]
}

func TestPruneWaitsForTheStoreLock(t *testing.T) {
	st, _ := storedir.Open(t.TempDir())
	unlock, err := st.Lock(storedir.StoreLock, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, err := Prune(context.Background(), PruneConfig{Store: st, NoWait: true, RawKeep: time.Hour}); !errors.Is(err, storedir.ErrLocked) {
		t.Fatalf("prune with the lock held: %v", err)
	}
}

func TestParseAge(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "30d", want: 30 * 24 * time.Hour},
		{in: "2w", want: 14 * 24 * time.Hour},
		{in: "36h", want: 36 * time.Hour},
		{in: "90m", want: 90 * time.Minute},
		{in: "0", want: 0},
		{in: "-1d", bad: true},
		{in: "1.5d", bad: true},
		{in: "soon", bad: true},
	} {
		got, err := ParseAge(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParseAge(%q) = %v, %v", tc.in, got, err)
		}
	}
}
