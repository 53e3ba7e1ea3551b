package parse

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/ids"
)

// entryLinesTests are bodies of NDJSON entry records, as a webhook source
// may POST them; they seed FuzzEntryLines too.
var entryLinesTests = []struct {
	name, contentType, body string
	want                    []string // each entry's title and link, "title link"
	warnings                int
	err                     error
}{
	{"two entries", "application/x-ndjson",
		`{"type":"entry","v":1,"native_id":"a","title":"A","canonical_link":"https://example.org/a?utm_source=x","published":"2026-11-20T10:00:00Z"}` + "\n" +
			`{"type":"entry","title":"B","canonical_link":"https://example.org/b"}` + "\n",
		[]string{"A https://example.org/a", "B https://example.org/b"}, 0, nil},
	{"known by its first line, blank lines and CRLF", "application/json",
		"\n" + `  {"type":"entry","title":"A"}` + "\r\n\r\n" + `{"type":"entry","title":"B"}`,
		[]string{"A ", "B "}, 0, nil},
	{"the record of another type, another feed, junk: skipped", "application/x-ndjson",
		`{"type":"fetch","fetch_id":"x"}` + "\n" + `{"type":"entry","feed_id":"6ba7b810-9dad-11d1-80b4-00c04fd430c8","title":"theirs"}` + "\n" +
			`not json` + "\n" + `{"type":"entry","title":"ours","feed_id":"` + testFeedID + `"}` + "\n",
		[]string{"ours "}, 3, nil},
	{"links that are not http go; control characters too", "application/x-ndjson",
		`{"type":"entry","title":"T\u001b[31m","canonical_link":"javascript:alert(1)","authors":[{"name":"N","uri":"file:///etc/passwd"}],"enclosures":[{"url":"ftp://x/y"},{"url":"https://example.org/e.mp3","length":-5}]}`,
		[]string{"T[31m "}, 0, nil},
	{"ids and hashes are made again", "application/x-ndjson",
		`{"type":"entry","entry_uid":"zzz","content_hash":"0000000000000000","status":"new","seen_count":9,"title":"T"}`,
		[]string{"T "}, 0, nil},
	{"a date in the future is kept and said", "application/x-ndjson",
		`{"type":"entry","title":"T","published":"2099-01-01T00:00:00Z"}`, []string{"T "}, 1, nil},
	{"no entry at all", "application/x-ndjson", `{"type":"fetch"}` + "\n", nil, 0, ErrNotAFeed},
	{"not UTF-8", "application/x-ndjson", "{\"type\":\"entry\",\"title\":\"\xff\"}", nil, 0, ErrNotAFeed},
}

// TestEntryLines holds feed-parse's reading of NDJSON entry bodies to what
// pkg/ndjson's doc says (parse.format "ndjson").
func TestEntryLines(t *testing.T) {
	for _, tt := range entryLinesTests {
		t.Run(tt.name, func(t *testing.T) {
			src := Source{FeedID: testFeedID, FetchID: testFetchID, ContentType: tt.contentType, Now: time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)}
			feed, err := ParseFeed([]byte(tt.body), src)
			checkResult(t, feed, err, src)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkRawRefs(t, []byte(tt.body), feed)
			if feed.Info.Format != FormatEntryLines || feed.Info.Items != len(tt.want) {
				t.Errorf("format %q, items %d; want %q, %d", feed.Info.Format, feed.Info.Items, FormatEntryLines, len(tt.want))
			}
			var got []string
			for _, e := range feed.Entries {
				got = append(got, e.Title+" "+e.CanonicalLink)
				if e.Status != "" || e.SeenCount != 0 || len(e.Authors) > 0 && e.Authors[0].URI != "" {
					t.Errorf("entry %+v keeps what the sender may not set", e)
				}
				for _, enc := range e.Enclosures {
					if !strings.HasPrefix(enc.URL, "https://") || enc.Length < 0 {
						t.Errorf("enclosure %+v", enc)
					}
				}
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("entries %q, want %q", got, tt.want)
			}
			if len(feed.Info.Warnings) != tt.warnings {
				t.Errorf("warnings %q, want %d", feed.Info.Warnings, tt.warnings)
			}
		})
	}
	// The uid is the rules' own: the same as an RSS item with that guid.
	feed, err := ParseFeed([]byte(`{"type":"entry","native_id":"g1","title":"T"}`), Source{FeedID: testFeedID, ContentType: "application/x-ndjson"})
	if err != nil {
		t.Fatal(err)
	}
	if want := ids.EntryUID(ids.EntryKey{FeedID: testFeedID, NativeID: "g1", Title: "T"}); feed.Entries[0].EntryUID != want {
		t.Errorf("entry_uid %s, want %s", feed.Entries[0].EntryUID, want)
	}
	// A JSON Feed is no NDJSON body, on one line or many.
	for _, body := range []string{`{"version":"https://jsonfeed.org/version/1.1","items":[]}`, "{\n\"type\":\"entry\"}"} {
		if isEntryLines([]byte(body), "application/json") {
			t.Errorf("%q read as NDJSON entries", body)
		}
	}
}

// FuzzEntryLines: whatever the body, an NDJSON reading fails in one line
// or gives entries with their ids, the source's feed, and raw_refs inside
// the body.
func FuzzEntryLines(f *testing.F) {
	for _, tt := range entryLinesTests {
		f.Add(tt.body, tt.contentType)
	}
	f.Fuzz(func(t *testing.T, body, contentType string) {
		src := Source{FeedID: testFeedID, FetchID: testFetchID, ContentType: contentType, Now: time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)}
		p := *DefaultParser
		p.MaxItems = 50
		feed, err := p.parseEntryLines([]byte(body), src)
		checkResult(t, feed, err, src)
		if err == nil {
			checkRawRefs(t, []byte(body), feed)
		}
	})
}
