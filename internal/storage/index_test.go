package storage

import (
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

func TestIndexBinaryAndJSON(t *testing.T) {
	s := openTemp(t)
	at := ndjson.At(day1)
	later := ndjson.At(day1.Add(time.Hour))
	recs := []Seen{
		{UID: "0123456789abcdef", Hash: "00000000000000a1", FirstSeen: at, LastSeen: at, SeenCount: 1},
		{UID: "fedcba9876543210", Hash: "00000000000000b1", FirstSeen: at, LastSeen: at, SeenCount: 1},
		{UID: "not-a-hex-id", Hash: "00000000000000c1", FirstSeen: at, LastSeen: at, SeenCount: 1}, // as JSON
		{UID: "0123456789abcdef", Hash: "00000000000000a2", FirstSeen: at, LastSeen: later, SeenCount: 2},
		{UID: "fedcba9876543210", Hash: "Some Hash", FirstSeen: at, LastSeen: later, SeenCount: 2}, // as JSON
		{UID: "00000000000000ff", Hash: "00000000000000d1"},                                        // zero times
	}
	if err := s.PutSeen("feed", recs[:3], Durable); err != nil {
		t.Fatal(err)
	}
	if err := s.PutSeen("feed", recs[3:], Lazy); err != nil {
		t.Fatal(err)
	}
	bin, _ := os.Stat(s.Path(indexBinKey("feed")))
	if bin == nil || bin.Size() != 4*seenRecordSize {
		t.Fatalf("binary index: %v, want 4 records", bin)
	}
	check := func(what string) {
		t.Helper()
		ix, err := s.SeenEntries("feed")
		if err != nil {
			t.Fatal(err)
		}
		if ix.Len() != 4 {
			t.Errorf("%s: %d entries, want 4", what, ix.Len())
		}
		for _, want := range []Seen{recs[3], recs[4], recs[2], recs[5]} {
			got, ok := ix.Latest(want.UID)
			want.Header = ndjson.Head(TypeSeen)
			if !ok || !reflect.DeepEqual(got, want) {
				t.Errorf("%s: latest of %s = %+v, want %+v", what, want.UID, got, want)
			}
		}
		for _, r := range recs {
			if st := ix.Judge(r.UID, r.Hash); st != "" {
				t.Errorf("%s: stored version %s/%s judged %q", what, r.UID, r.Hash, st)
			}
		}
		if ix.Judge("0123456789abcdef", "00000000000000a3") != ndjson.StatusUpdated || ix.Judge("1123456789abcdef", "00000000000000a1") != ndjson.StatusNew {
			t.Errorf("%s: unknown versions misjudged", what)
		}
	}
	check("as written")

	// A torn record at the end is ignored, then cut by the next append; a
	// damaged one is skipped.
	f, _ := os.OpenFile(s.Path(indexBinKey("feed")), os.O_WRONLY|os.O_APPEND, 0)
	f.Write(make([]byte, 17))
	f.Close()
	check("with a torn tail")
	extra := Seen{UID: "00000000000000ee", Hash: "00000000000000e1", FirstSeen: at, LastSeen: at, SeenCount: 1}
	if err := s.PutSeen("feed", []Seen{extra}, Lazy); err != nil {
		t.Fatal(err)
	}
	if bin, _ := os.Stat(s.Path(indexBinKey("feed"))); bin.Size() != 5*seenRecordSize {
		t.Fatalf("torn tail not cut: %d bytes", bin.Size())
	}
	data, _ := os.ReadFile(s.Path(indexBinKey("feed")))
	data[4*seenRecordSize+3] ^= 0x40
	os.WriteFile(s.Path(indexBinKey("feed")), data, 0o644)
	check("with a damaged record")
}

// An index written before the binary form (JSON lines only) is read as it
// was, and the versions stored since win by seen_count.
func TestIndexOlderJSONFirst(t *testing.T) {
	s := openTemp(t)
	at := ndjson.At(day1)
	old := []Seen{
		{Header: ndjson.Head(TypeSeen), UID: "0123456789abcdef", Hash: "00000000000000a1", FirstSeen: at, LastSeen: at, SeenCount: 1},
		{Header: ndjson.Head(TypeSeen), UID: "0123456789abcdef", Hash: "00000000000000a2", FirstSeen: at, LastSeen: at, SeenCount: 2},
	}
	data, _ := encodeLines(old)
	if _, err := s.AppendLines(indexKey("feed"), data, Lazy); err != nil {
		t.Fatal(err)
	}
	// A binary record of a version older than the JSON's latest (a replay
	// that recovered it) does not win.
	if err := s.PutSeen("feed", []Seen{{UID: "0123456789abcdef", Hash: "00000000000000a1", FirstSeen: at, LastSeen: at, SeenCount: 1}}, Lazy); err != nil {
		t.Fatal(err)
	}
	ix, _ := s.SeenEntries("feed")
	if got, _ := ix.Latest("0123456789abcdef"); got.Hash != "00000000000000a2" {
		t.Errorf("latest %+v", got)
	}
	if err := s.PutSeen("feed", []Seen{{UID: "0123456789abcdef", Hash: "00000000000000a3", FirstSeen: at, LastSeen: at, SeenCount: 3}}, Lazy); err != nil {
		t.Fatal(err)
	}
	ix, _ = s.SeenEntries("feed")
	if got, _ := ix.Latest("0123456789abcdef"); got.Hash != "00000000000000a3" || got.SeenCount != 3 {
		t.Errorf("latest %+v", got)
	}
	if ix.Judge("0123456789abcdef", "00000000000000a1") != "" {
		t.Error("an old version judged new")
	}
}
