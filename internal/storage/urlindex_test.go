package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
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

// TestURLIndexSplitsAPrefixPastItsSize: a prefix's lines stay in one file
// until it passes urlSplitBytes, then move to 256 shards; lookups find
// every link, first entries and aliases in order, before, after and across
// a split, and what a crash can leave of one (a split not yet renamed, a
// prefix file not yet removed) neither hides nor doubles a line.
func TestURLIndexSplitsAPrefixPastItsSize(t *testing.T) {
	defer func(n, b int) { urlLogMax, urlSplitBytes = n, int64(b) }(urlLogMax, int(urlSplitBytes))
	// Links of two prefixes, 60 of each per merge: 4 KB of lines in each
	// prefix file per merge, so the second merge splits both.
	urlLogMax, urlSplitBytes = 100, 6000
	var links []string
	perPrefix := map[string]int{}
	for i := 0; len(links) < 3*120; i++ {
		l := fmt.Sprintf("https://e.example/%d", i)
		h, _ := URLHash(l)
		if p := h[:2]; (p == "00" || p == "01") && perPrefix[p] < 3*60 {
			perPrefix[p]++
			links = append(links, l)
		}
	}
	sort.Slice(links, func(i, j int) bool { // each merge gets 60 of each prefix
		hi, _ := URLHash(links[i])
		hj, _ := URLHash(links[j])
		return hi[:2] < hj[:2]
	})
	order := make([]string, 0, len(links))
	for k := range 3 {
		order = append(order, links[k*60:(k+1)*60]...)
		order = append(order, links[180+k*60:180+(k+1)*60]...)
	}
	links = order
	st, _ := Open(t.TempDir())
	ref := func(feed string, i int) ndjson.EntryRef {
		return ndjson.EntryRef{FeedID: feed + "000000000000000", EntryUID: fmt.Sprintf("%016x", i)}
	}
	fill := func(round int) {
		t.Helper()
		x := st.URLs()
		for i := round * 120; i < (round+1)*120; i++ {
			h, _ := URLHash(links[i])
			if err := x.Add(h, ref("A", i), false); err != nil {
				t.Fatal(err)
			}
			if i%7 == 0 {
				x.Add(h, ref("B", i), true)
			}
		}
		if err := x.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := st.MergeURLLog(); err != nil {
			t.Fatal(err)
		}
	}
	check := func(rounds int) {
		t.Helper()
		x := st.URLReader()
		for i := range rounds * 120 {
			h, _ := URLHash(links[i])
			o, err := x.Lookup(h)
			var want []ndjson.EntryRef
			if i%7 == 0 {
				want = []ndjson.EntryRef{ref("B", i)}
			}
			if err != nil || o.First != ref("A", i) || !slices.Equal(o.Aliases, want) {
				t.Fatalf("Lookup(%s) = %+v, %v", links[i], o, err)
			}
		}
	}
	glob := func(pattern string) int {
		m, _ := filepath.Glob(st.Path(DirURLs + "/" + pattern))
		return len(m)
	}

	fill(0)
	if glob("??.tsv") != 2 || glob("??/??.tsv") != 0 {
		t.Fatalf("after one merge: %d prefix files, %d shards; want 2 and 0", glob("??.tsv"), glob("??/??.tsv"))
	}
	check(1)

	// A crash left half a split of prefix "00" under its temporary name.
	os.MkdirAll(st.Path(DirURLs+"/00.split"), 0o755)
	junk := "00" + strings.Repeat("f", 30)
	os.WriteFile(st.Path(DirURLs+"/00.split/ff.tsv"), []byte(junk+"\tJ\tj\n"), 0o644)

	fill(1)
	if glob("??.tsv") != 0 || glob("??.split") != 0 || glob("0?/??.tsv") < 100 {
		t.Fatalf("after the split: %d prefix files, %d temporary splits, %d shards", glob("??.tsv"), glob("??.split"), glob("0?/??.tsv"))
	}
	check(2)
	if o, _ := st.URLReader().Lookup(junk); o.Known() {
		t.Errorf("a line of an abandoned split is in the index: %+v", o)
	}

	// A crash after a split's rename left its prefix file behind: lookups
	// read its lines and the shards' as one, and the next merge removes it.
	h0, _ := URLHash(links[0])
	b, _ := os.ReadFile(st.Path(urlShard(h0)))
	os.WriteFile(st.Path(urlPrefixFile(h0)), b, 0o644)
	check(2)
	fill(2)
	if glob("??.tsv") != 0 {
		t.Errorf("a prefix file left by a crash is still there after a merge")
	}
	check(3)
}
