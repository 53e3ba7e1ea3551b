package dedup

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/storage"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

func entry(feed, uid, hash, fetch string) string {
	b, _ := ndjson.Marshal(ndjson.Entry{Header: ndjson.Head(ndjson.TypeEntry), FeedID: feed, EntryUID: uid, ContentHash: hash, RawRef: ndjson.RawRef{FetchID: fetch}})
	return string(b)
}

func fetch(feed, id string, parsed bool) string {
	f := ndjson.Fetch{Header: ndjson.Head(ndjson.TypeFetch), FetchID: id, Due: ndjson.Due{Header: ndjson.Head(ndjson.TypeDue), FeedID: feed}}
	if parsed {
		f.Parse = &ndjson.Parse{Format: "rss"}
	}
	b, _ := ndjson.Marshal(f)
	return string(b)
}

func TestRun(t *testing.T) {
	st, _ := storage.Open(t.TempDir())
	// Stored already: a1 (hash h1) and a2 (hash h2) of feed A.
	if err := st.PutSeen("A", []storage.Seen{{UID: "a1", Hash: "h1"}, {UID: "a2", Hash: "h2"}}, storage.Durable); err != nil {
		t.Fatal(err)
	}
	in := entry("A", "a1", "h1", "F1") + // unchanged: dropped
		entry("A", "a2", "h2-new", "F1") + // changed: updated
		entry("A", "a3", "h3", "F1") + // unknown: new
		entry("A", "a3", "h3", "F1") + // repeat within the run: dropped
		fetch("A", "F1", true) +
		entry("B", "a1", "h1", "F2") + // same uid, other feed: new
		fetch("B", "F2", true) +
		fetch("C", "F3", true) + // parsed, no entries: zero counts
		fetch("D", "F4", false) + // 304: passes unchanged
		`{"type":"unknown","v":1}` + "\n" +
		"garbage\n" +
		entry("A", "a3", "h3-later", "F5") + // a later fetch changed a3 again: updated
		fetch("A", "F5", true)
	var out bytes.Buffer
	err := Run(context.Background(), Config{In: strings.NewReader(in), Out: ndjson.NewWriter(&out), Store: st})
	if !errors.Is(err, pipe.ErrFailed) {
		t.Fatalf("err %v: the garbage line must be reported", err)
	}
	var got []string
	rd := ndjson.NewReader(&out)
	for {
		line, err := rd.Next()
		if err != nil {
			break
		}
		switch line.Type {
		case ndjson.TypeEntry:
			var e ndjson.Entry
			line.Decode(&e)
			got = append(got, e.FeedID+"/"+e.EntryUID+":"+e.Status)
		case ndjson.TypeFetch:
			var f ndjson.Fetch
			line.Decode(&f)
			if f.Dedup == nil {
				got = append(got, f.FetchID+":nodedup")
			} else {
				got = append(got, f.FetchID+":"+strconv.Itoa(f.Dedup.New)+"/"+strconv.Itoa(f.Dedup.Updated)+"/"+strconv.Itoa(f.Dedup.Unchanged))
			}
		default:
			got = append(got, line.Type)
		}
	}
	want := "A/a2:updated A/a3:new F1:1/1/2 B/a1:new F2:1/0/0 F3:0/0/0 F4:nodedup unknown A/a3:updated F5:0/1/0"
	if strings.Join(got, " ") != want {
		t.Fatalf("got  %s\nwant %s", strings.Join(got, " "), want)
	}
	// feed-dedup never writes the index.
	idx, _ := st.SeenEntries("A")
	if len(idx) != 2 || idx["a2"].Hash != "h2" {
		t.Fatalf("index changed: %+v", idx)
	}
}
