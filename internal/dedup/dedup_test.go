package dedup

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/testenv"
	"github.com/feedpipe/feedpipe/internal/testids"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

func entry(feed, uid, hash, fetch string) string {
	b, _ := ndjson.Marshal(ndjson.Entry{Header: ndjson.Head(ndjson.TypeEntry), FeedID: testids.Feed(feed), EntryUID: testids.UID(uid), ContentHash: hash, RawRef: ndjson.RawRef{FetchID: testids.Fetch(fetch)}})
	return string(b)
}

func fetch(feed, id string, parsed bool) string {
	f := ndjson.Fetch{Header: ndjson.Head(ndjson.TypeFetch), FetchID: testids.Fetch(id), Due: ndjson.Due{Header: ndjson.Head(ndjson.TypeDue), FeedID: testids.Feed(feed)}}
	if parsed {
		f.Parse = &ndjson.Parse{Format: "rss"}
	}
	b, _ := ndjson.Marshal(f)
	return string(b)
}

// summary renders the output stream compactly: feed/uid:status for
// entries, fetch_id:new/updated/unchanged for fetch records, the type of
// anything else.
func summary(t *testing.T, out []byte) string {
	t.Helper()
	var got []string
	rd := ndjson.NewReader(bytes.NewReader(out))
	for {
		line, err := rd.Next()
		if err != nil {
			break
		}
		switch line.Type {
		case ndjson.TypeEntry:
			var e ndjson.Entry
			line.Decode(&e)
			got = append(got, testids.Name(e.FeedID)+"/"+testids.Name(e.EntryUID)+":"+e.Status)
		case ndjson.TypeFetch:
			var f ndjson.Fetch
			line.Decode(&f)
			if f.Dedup == nil {
				got = append(got, testids.Name(f.FetchID)+":-")
			} else {
				got = append(got, testids.Name(f.FetchID)+":"+strconv.Itoa(f.Dedup.New)+"/"+strconv.Itoa(f.Dedup.Updated)+"/"+strconv.Itoa(f.Dedup.Unchanged))
			}
		default:
			got = append(got, line.Type)
		}
	}
	return strings.Join(got, " ")
}

func TestRun(t *testing.T) {
	// Stored already, in every case: a1 (hash h1) and a2 (hash h2) of feed A.
	for _, tc := range []struct {
		name, in, want string
		bad            bool // the input has a malformed line
	}{
		{"unknown entry is new", entry("A", "a3", "h3", "F") + fetch("A", "F", true), "A/a3:new F:1/0/0", false},
		{"unchanged entry is dropped and counted", entry("A", "a1", "h1", "F") + fetch("A", "F", true), "F:0/0/1", false},
		{"changed entry is an update", entry("A", "a2", "h2b", "F") + fetch("A", "F", true), "A/a2:updated F:0/1/0", false},
		{"a repeat within the run is dropped", entry("A", "a3", "h3", "F") + entry("A", "a3", "h3", "F") + fetch("A", "F", true), "A/a3:new F:1/0/1", false},
		{"same uid in another feed is new", entry("B", "a1", "h1", "G") + fetch("B", "G", true), "B/a1:new G:1/0/0", false},
		{"an older version coming back is not announced", entry("A", "a2", "h2b", "F") + entry("A", "a2", "h2", "G"), "A/a2:updated", false},
		{"a later version in the same run is an update",
			entry("A", "a3", "h3", "F") + fetch("A", "F", true) + entry("A", "a3", "h3b", "G") + fetch("A", "G", true),
			"A/a3:new F:1/0/0 A/a3:updated G:0/1/0", false},
		{"a parsed fetch without entries gets zero counts", fetch("C", "F", true), "F:0/0/0", false},
		{"entries count for their feed's next fetch, whatever fetch they point at",
			entry("W", "w1", "h", "page1") + entry("W", "w2", "h", "page2") + fetch("W", "F", true), "W/w1:new W/w2:new F:2/0/0", false},
		{"an unparsed fetch (304) passes unchanged", fetch("A", "F", false), "F:-", false},
		{"other records pass through", `{"type":"unknown","v":1}` + "\n" + entry("A", "a3", "h3", "F"), "unknown A/a3:new", false},
		{"a malformed line is reported, the rest goes on", "garbage\n" + entry("A", "a3", "h3", "F"), "A/a3:new", true},
		{"a record of the wrong shape is reported", `{"type":"entry","entry_uid":7}` + "\n" + fetch("A", "F", true), "F:0/0/0", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, cat := seeded(t, func(tx *catalog.Tx) error {
				if err := tx.StoreVersion(stored("A", "a1", "h1"), loc); err != nil {
					return err
				}
				return tx.StoreVersion(stored("A", "a2", "h2"), loc)
			})
			before, _ := cat.Sizes(context.Background())
			var out bytes.Buffer
			err := Run(context.Background(), Config{In: strings.NewReader(tc.in), Out: ndjson.NewWriter(&out), Store: st})
			if tc.bad != errors.Is(err, pipe.ErrFailed) || (!tc.bad && err != nil) {
				t.Fatalf("err %v, want a failure: %v", err, tc.bad)
			}
			if got := summary(t, out.Bytes()); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
			// feed-dedup never writes the catalog.
			after, _ := cat.Sizes(context.Background())
			a2, _, _ := cat.Index().Latest(context.Background(), testids.Feed("A"), testids.UID("a2"))
			if !maps.Equal(after, before) || a2.Hash != "h2" {
				t.Fatalf("catalog changed: %v, was %v; a2 %+v", after, before, a2)
			}
		})
	}
}

// loc is where a seeded entry's line is: a test never reads it.
var loc = catalog.Location{Day: "2026-11-21", Length: 1}

// stored is an entry as feed-store stored it.
func stored(feed, uid, hash string) *ndjson.Entry {
	at := ndjson.At(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
	return &ndjson.Entry{FeedID: testids.Feed(feed), EntryUID: testids.UID(uid), ContentHash: hash, FirstSeen: at, LastSeen: at, SeenCount: 1}
}

// seeded is a store whose catalog seed filled.
func seeded(t *testing.T, seed func(*catalog.Tx) error) (*storedir.Store, *catalog.Catalog) {
	t.Helper()
	st, cat := testenv.Store(t)
	if err := cat.Update(context.Background(), seed); err != nil {
		t.Fatal(err)
	}
	return st, cat
}

// TestBadEntryOfAStoredVersion: a line whose ids and hash are those of a
// stored version, and which would be dropped unchanged, is still reported
// as Decode reports it when it is not a good entry, and not counted.
func TestBadEntryOfAStoredVersion(t *testing.T) {
	good := strings.TrimSuffix(entry("A", "a1", "h1", "F"), "\n")
	for _, tc := range []struct{ name, from, to string }{
		{"a number for a string", `"title":""`, `"title":1`},
		{"a bad time", `"published":null`, `"published":"yesterday"`},
		{"a string for a number", `"seen_count":0`, `"seen_count":"0"`},
		{"a string for a list", `"authors":null`, `"authors":"A. Writer"`},
		{"a bad fetch id", `"fetch_id":"` + testids.Fetch("F"), `"fetch_id":"F`},
		{"trailing data", good, good + `{}`},
		{"cut short", good, good[:len(good)-20]},
		{"a control character", `"title":""`, "\"title\":\"\x01\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := strings.Replace(good, tc.from, tc.to, 1)
			if bad == good {
				t.Fatalf("%q is not in %s", tc.from, good)
			}
			st, _ := seeded(t, func(tx *catalog.Tx) error { return tx.StoreVersion(stored("A", "a1", "h1"), loc) })
			var out, logged, want bytes.Buffer
			in := good + "\n" + bad + "\n" + fetch("A", "F", true)
			err := Run(context.Background(), Config{In: strings.NewReader(in), Out: ndjson.NewWriter(&out), Store: st, Log: textLog(&logged)})
			if !errors.Is(err, pipe.ErrFailed) {
				t.Fatalf("err %v, want a failure", err)
			}
			if got := summary(t, out.Bytes()); got != "F:0/0/1" {
				t.Fatalf("got %s, want F:0/0/1", got)
			}
			// What the reader or Decode says of the line, as it was reported
			// before feed-dedup read keys.
			rd := ndjson.NewReader(strings.NewReader(in))
			rd.Next()
			line, lerr := rd.Next()
			if lerr == nil {
				lerr = line.Decode(new(ndjson.Entry))
			}
			textLog(&want).Error("skipping malformed input", "line", 2, "error", errors.Unwrap(lerr))
			if !strings.Contains(logged.String(), want.String()) {
				t.Fatalf("logged\n%swant\n%s", logged.String(), want.String())
			}
		})
	}
}

// textLog logs to w without times.
func textLog(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
}

// TestPassRaw: an entry that goes on is its input line with its status
// set, byte for byte, whether dedup passes the line on (passRaw) or
// decodes it (a canonical link with an escape); both are what encoding
// the entry would write.
func TestPassRaw(t *testing.T) {
	st, _ := testenv.Store(t)
	var lines []string
	var want bytes.Buffer
	w := ndjson.NewWriter(&want)
	for i, link := range []string{"https://example.com/a", `https://example.com/"q"`, "", "https://example.com/é"} {
		e := ndjson.Entry{Header: ndjson.Head(ndjson.TypeEntry), FeedID: testids.Feed("f"), EntryUID: testids.UID(strconv.Itoa(i)), ContentHash: "h",
			CanonicalLink: link, Title: "<b>" + link + "</b>", RawRef: ndjson.RawRef{FetchID: testids.Fetch("x")}}
		b, _ := ndjson.Marshal(e)
		lines = append(lines, string(b))
		e.Status = ndjson.StatusNew
		w.Write(&e)
	}
	w.Flush()
	var out bytes.Buffer
	if err := Run(context.Background(), Config{In: strings.NewReader(strings.Join(lines, "\n") + "\n"), Out: ndjson.NewWriter(&out), Store: st}); err != nil {
		t.Fatal(err)
	}
	if out.String() != want.String() {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want.String())
	}
	if _, ok := rawLink([]byte(lines[1])); ok {
		t.Error("a link with an escape read as it is")
	}
}
