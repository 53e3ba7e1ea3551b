package storage

import (
	"fmt"
	"os"
	"testing"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// TestURLLogMergesIntoShards: past urlLogMax lines the log moves to the
// shards, and every link is still found, as first entry or alias.
func TestURLLogMergesIntoShards(t *testing.T) {
	st, _ := Open(t.TempDir())
	x := st.URLs()
	link := func(i int) string { return fmt.Sprintf("https://e.example/%d", i) }
	for i := range urlLogMax + 1 {
		h, _ := URLHash(link(i))
		if err := x.Add(h, ndjson.EntryRef{FeedID: "A", EntryUID: fmt.Sprint(i)}, false); err != nil {
			t.Fatal(err)
		}
	}
	h0, _ := URLHash(link(0))
	x.Add(h0, ndjson.EntryRef{FeedID: "B", EntryUID: "b"}, true)
	if err := x.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := st.MergeURLLog(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(st.Path(urlLogKey)); err != nil || fi.Size() != 0 {
		t.Fatalf("log not emptied: %v %v", fi, err)
	}
	y := st.URLs()
	for _, tt := range []struct {
		link  string
		first string
		alias bool
	}{{link(0), "0", true}, {link(urlLogMax), fmt.Sprint(urlLogMax), false}, {"http://E.example/7", "7", false}} {
		h, _ := URLHash(tt.link)
		o, err := y.Lookup(h)
		if err != nil || o.First.EntryUID != tt.first || o.Has(ndjson.EntryRef{FeedID: "B", EntryUID: "b"}) != tt.alias {
			t.Errorf("Lookup(%s) = %+v, %v", tt.link, o, err)
		}
	}
	if _, ok := URLHash("tag:example.org,2026:1"); ok {
		t.Error("a tag: URI has a URL hash")
	}
}
