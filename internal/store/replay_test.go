package store

import (
	"bytes"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/parse"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// A store built by real cycles, new entries, updates and 304s over two
// days, is replayed from its fetches/ into a fresh store: the entries come
// out byte for byte the same, with the same ids.
func TestReplayIsByteIdentical(t *testing.T) {
	w := newWorld(t)
	w.serve("a.xml", rssFeed("One", "Two"))
	for _, p := range []string{"/gen/1.xml", "/gen/2.xml", "/a.xml"} {
		w.subscribe(p)
	}
	w.cycle(t0)
	w.h.SetRevision(1)
	w.serve("a.xml", rssFeed("One, corrected", "Two", "Three"))
	w.cycle(t0.Add(time.Hour))
	w.cycle(t0.Add(2 * time.Hour)) // 304s
	w.h.SetRevision(2)
	w.cycle(t0.Add(26 * time.Hour))

	want := logText(t, w.st, storedir.DirEntries)
	if n := strings.Count(want, "\n"); n != 10+10+2+(1+1+2)+(1+1) {
		t.Fatalf("the cycles stored %d entries:\n%s", n, want)
	}
	if !strings.Contains(want, `"status":"updated"`) {
		t.Fatal("no update stored")
	}
	days, err := w.st.DayFiles(storedir.DirFetches)
	if err != nil || len(days) != 2 {
		t.Fatalf("fetches files %v, %v", days, err)
	}

	for _, tc := range []struct {
		name string
		runs [][]string // fetches/ files replayed by each run
	}{
		{"one run over every file", [][]string{days}},
		{"a run per day", [][]string{days[:1], days[1:]}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fresh, err := storedir.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			for i, files := range tc.runs {
				var in bytes.Buffer
				for _, f := range files {
					data, err := os.ReadFile(w.st.Path(f))
					if err != nil {
						t.Fatal(err)
					}
					in.Write(data)
				}
				// Replayed days later: the clock must not show.
				storeInto(t, w.st, fresh, &in, parse.DefaultParser, t0.Add(time.Duration(100+i)*time.Hour))
			}
			got := logText(t, fresh, storedir.DirEntries)
			if got != want {
				t.Errorf("replayed entries differ\n got:\n%s\nwant:\n%s", got, want)
			}
			if g, wnt := uids(t, got), uids(t, want); g != wnt {
				t.Errorf("entry ids differ: %s, want %s", g, wnt)
			}
		})
	}
}

// uids lists the entry ids and content hashes of NDJSON entries, sorted.
func uids(t *testing.T, text string) string {
	t.Helper()
	var ids []string
	rd := ndjson.NewReader(strings.NewReader(text))
	for {
		l, err := rd.Next()
		if err != nil {
			break
		}
		var e ndjson.Entry
		if err := l.Decode(&e); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.EntryUID+"/"+e.ContentHash)
	}
	sort.Strings(ids)
	return strings.Join(ids, " ")
}
