package spool

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/ids"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/testids"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// TestSpool: records put are read back whole, oldest first; a file that is
// no fetch record is set aside and named; a temporary file is not read.
func TestSpool(t *testing.T) {
	st, err := storedir.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)
	var want []string
	for i := range 3 {
		id, err := ids.FetchID(t0.Add(time.Duration(2-i)*time.Second), strings.NewReader(strings.Repeat("x", 64)))
		if err != nil {
			t.Fatal(err)
		}
		f := &ndjson.Fetch{Header: ndjson.Head(ndjson.TypeFetch), FetchID: id, Origin: ndjson.OriginWebSub,
			Due: ndjson.Due{Header: ndjson.Head(ndjson.TypeDue), FeedID: testids.Feed("a"), Reason: ndjson.ReasonPush}}
		if err := Put(st, f); err != nil {
			t.Fatal(err)
		}
		want = append([]string{id}, want...)
	}
	if err := Put(st, &ndjson.Fetch{FetchID: "../x"}); err == nil {
		t.Error("a record whose id is no fetch id was spooled")
	}
	if err := st.WriteFileAtomic(Dir+"/junk.ndjson", []byte("{not json\n")); err != nil {
		t.Fatal(err)
	}
	if err := st.WriteFileAtomic(Dir+"/.half.ndjson.tmp-1", []byte("{")); err != nil {
		t.Fatal(err)
	}
	items, bad, err := Read(st)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range items {
		got = append(got, it.Fetch.FetchID)
		if it.Fetch.Origin != ndjson.OriginWebSub || !strings.Contains(string(it.Line), `"origin":"websub"`) {
			t.Errorf("item %+v", it)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("read %v, want oldest first %v", got, want)
	}
	if len(bad) != 1 || !strings.HasPrefix(bad[0], "junk.ndjson: ") {
		t.Errorf("bad %q", bad)
	}
	if _, err := st.Stat(Dir + "/junk.ndjson.bad"); err != nil {
		t.Errorf("the bad file is not set aside: %v", err)
	}
	if err := Remove(st, items); err != nil {
		t.Fatal(err)
	}
	if items, _, _ := Read(st); len(items) != 0 {
		t.Errorf("left after Remove: %d", len(items))
	}
}
