package parse

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

var hex16 = regexp.MustCompile(`^[0-9a-f]{16}$`)

// checkParse parses body and checks what every parse must keep: it fails
// with a one-line error and no feed, or every entry has 16-hex-digit ids,
// the source's feed id, and records that survive a trip through NDJSON.
func checkParse(t testing.TB, body []byte) (*Feed, error) {
	t.Helper()
	src := Source{FeedID: testFeedID, FetchID: testFetchID, BaseURL: "https://example.org/feed"}
	feed, err := ParseFeed(body, src)
	checkResult(t, feed, err, src)
	if err == nil {
		checkRawRefs(t, body, feed)
	}
	return feed, err
}

// checkRawRefs checks that every raw_ref lies in the body and, where the
// body's bytes are its text's (UTF-8, windows-1252), starts and ends with
// the element's or object's brackets.
func checkRawRefs(t testing.TB, body []byte, feed *Feed) {
	t.Helper()
	for i, e := range feed.Entries {
		off, n := e.RawRef.Offset, e.RawRef.Length
		if off == 0 && n == 0 {
			continue
		}
		if off < 0 || n <= 0 || off+n > int64(len(body)) {
			t.Errorf("entry %d: raw_ref %d+%d outside the %d-byte body", i, off, n, len(body))
			continue
		}
		if cs := feed.Info.Charset; cs == "utf-8" || cs == "windows-1252" {
			first, last := body[off], body[off+n-1]
			if !(first == '<' && last == '>' || first == '{' && last == '}') {
				t.Errorf("entry %d: raw_ref %d+%d is %q...%q", i, off, n, first, last)
			}
		}
	}
}

// checkResult is checkParse's checks on a result already in hand.
func checkResult(t testing.TB, feed *Feed, err error, src Source) {
	t.Helper()
	if err != nil {
		if feed != nil {
			t.Errorf("ParseFeed returned a feed and an error")
		}
		if strings.ContainsAny(err.Error(), "\r\n") {
			t.Errorf("error is not one line: %q", err)
		}
		return
	}
	if feed == nil {
		t.Fatal("ParseFeed returned neither a feed nor an error")
	}
	if feed.Info.Items != len(feed.Entries) {
		t.Errorf("Info.Items = %d, but %d entries", feed.Info.Items, len(feed.Entries))
	}
	roundTrip(t, &feed.Info, new(ndjson.Parse), infoValid(&feed.Info))
	for i := range feed.Entries {
		e := &feed.Entries[i]
		if !hex16.MatchString(e.EntryUID) {
			t.Errorf("entry %d: entry_uid %q is not 16 hex digits", i, e.EntryUID)
		}
		if !hex16.MatchString(e.ContentHash) {
			t.Errorf("entry %d: content_hash %q is not 16 hex digits", i, e.ContentHash)
		}
		if e.FeedID != src.FeedID {
			t.Errorf("entry %d: feed_id %q, want %q", i, e.FeedID, src.FeedID)
		}
		if e.Type != ndjson.TypeEntry || e.V != ndjson.Version {
			t.Errorf("entry %d: header %+v", i, e.Header)
		}
		back := new(ndjson.Entry)
		roundTrip(t, e, back, entryValid(e))
		if back.EntryUID != e.EntryUID || back.ContentHash != e.ContentHash || back.FeedID != e.FeedID ||
			!back.Published.Equal(e.Published.Time) || !back.Updated.Equal(e.Updated.Time) {
			t.Errorf("entry %d changed in a round trip:\n%+v\n%+v", i, e, back)
		}
	}
}

// roundTrip marshals v as a record line, decodes it into back as the next
// stage would, and (when v's strings are valid UTF-8, so that encoding
// loses nothing) checks that back encodes to the same line.
func roundTrip(t testing.TB, v, back any, validUTF8 bool) {
	t.Helper()
	line, err := ndjson.Marshal(v)
	if err != nil {
		t.Errorf("marshal %T: %v", v, err)
		return
	}
	if bytes.IndexByte(line, '\n') != len(line)-1 {
		t.Errorf("%T is not one line: %q", v, line)
	}
	if err := json.Unmarshal(line, back); err != nil {
		t.Errorf("the next stage cannot decode %T: %v\n%s", v, err, line)
		return
	}
	again, err := ndjson.Marshal(back)
	if err != nil {
		t.Errorf("marshal %T again: %v", back, err)
		return
	}
	if validUTF8 && !bytes.Equal(again, line) {
		t.Errorf("%T changed in a round trip:\n%s%s", v, line, again)
	}
}

func entryValid(e *ndjson.Entry) bool {
	s := []string{e.EntryUID, e.FeedID, e.NativeID, e.CanonicalLink, e.Title, e.Summary, e.Content, e.ContentHash, e.RawRef.FetchID}
	for _, a := range e.Authors {
		s = append(s, a.Name, a.Email, a.URI)
	}
	for _, enc := range e.Enclosures {
		s = append(s, enc.URL, enc.Type)
	}
	return allValid(append(s, e.Categories...))
}

func infoValid(p *ndjson.Parse) bool {
	s := append([]string{p.Format, p.Version, p.Title, p.Link, p.Description, p.Language, p.Error}, p.SkipDays...)
	return allValid(append(s, p.Warnings...))
}

func allValid(s []string) bool {
	for _, v := range s {
		if !utf8.ValidString(v) {
			return false
		}
	}
	return true
}

// fuzzSeeds are small documents that reach the adapter's branches.
var fuzzSeeds = []string{
	``,
	`{}`,
	`{"version":"https://jsonfeed.org/version/1.1","title":"t","items":[{"id":"1","url":"/a","title":"x","date_published":"2026-01-01T00:00:00Z","authors":[{"name":"n"}],"tags":["a","a"],"attachments":[{"url":"/m.mp3","mime_type":"audio/mpeg","size_in_bytes":-5}]}]}`,
	`<rss version="2.0"><channel><ttl>5</ttl><skipHours><hour>24</hour></skipHours><skipDays><day>Monday</day></skipDays><item><guid>http://a/1</guid></item><item><guid>http://a/1</guid></item></channel></rss>`,
	`<rss version="2.0"><channel><item><title>a</title><guid isPermaLink="false">x</guid><pubDate>Mon, 02 Jan 2006 15:04:05 MST</pubDate><enclosure url="/e" length="99999999999999999999" type="a/b"/></item></channel></rss>`,
	`<rss version="2.0" xmlns:feedburner="http://rssnamespace.org/feedburner/ext/1.0"><channel><item><link>http://x/</link><feedburner:origLink>https://y/</feedburner:origLink></item></channel></rss>`,
	`<feed xmlns="http://www.w3.org/2005/Atom"><entry><id>tag:x,2026:1</id><link href="rel"/><published>2026-01-01T00:00:00Z</published><author><name>a</name><email>e</email></author></entry></feed>`,
	`<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/"><item rdf:about="x"><title>t</title></item></rdf:RDF>`,
	`<!DOCTYPE rss [<!ENTITY x SYSTEM "file:///etc/passwd">]><rss version="2.0"><channel><item><title>&x;</title></item></channel></rss>`,
	"\xef\xbb\xbf<rss version=\"2.0\"><channel><item><title>\x00\xff</title></item></channel></rss>",
	// Recovery: entities, bare &, junk, a document cut short, an error
	// between items.
	`<br/><b>Warning</b><?xml version="1.0"?><rss version="2.0"><channel><item><title>T&ecirc;te &amp; & &bogus; &#1;</title></item><item><title>a < b</title></item><item><title>c</title>`,
	`<feed xmlns="http://www.w3.org/2005/Atom" xml:base="http://x/"><entry xml:base="y/"><id>1</id><link href="z?utm_source=a&amp;b=c"/><content type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml"><p>x</p></div></content><author><name>A, B and C</name></author></entry></feed>`,
	`<rss version="2.0" xmlns:media="http://search.yahoo.com/mrss/" xmlns:dc="http://purl.org/dc/elements/1.1/"><channel><item><media:group><media:content url="/v" medium="image"><media:thumbnail url="t.jpg"/></media:content><media:description>d</media:description></media:group><dc:creator>x@y (X)</dc:creator><dc:date>2026-01-01</dc:date></item></channel></rss>`,
	"\xff\xfe<\x00r\x00s\x00s\x00>\x00<\x00i\x00t\x00e\x00m\x00>\x00",
	`{"version":"https://jsonfeed.org/version/1","author":{"name":"a"},"items":[{"id":1,"tags":"t","attachments":[{"url":"/a","size_in_bytes":"9"}]},2,[]]}`,
}

// testdataFiles lists every regular file under the given directories.
func testdataFiles(t testing.TB, dirs ...string) []string {
	t.Helper()
	var files []string
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type().IsRegular() {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return files
}

func FuzzParseFeed(f *testing.F) {
	// The golden inputs and hostile files, but for the biggest: the
	// fuzzer runs each seed with coverage before it starts, and a few
	// hundred kilobytes each would take most of a short run.
	for _, path := range testdataFiles(f, "testdata/feeds", "testdata/hostile", "../../testdata/feeds") {
		if b := readFile(f, path); len(b) <= 32<<10 {
			f.Add(b)
		}
	}
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkParse(t, body)
	})
}

// FuzzParseCounting holds parseXMLCounting, where the tokenizer counts
// the references repair warns of, to repair and then parseXML: the same
// feed, entries and warnings (in their order), or the same error.
func FuzzParseCounting(f *testing.F) {
	for _, path := range testdataFiles(f, "testdata/feeds", "testdata/hostile", "../../testdata/feeds") {
		if b := readFile(f, path); len(b) <= 32<<10 {
			f.Add(b)
		}
	}
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`<?xml version="1.0"?><?pi a&b?><rss version="2.0"><channel><item><title>a &nbsp; &bogus; & &#X41;</title><link>http://x/?a=1&amp;b=2</link></item></channel></rss>`,
		`<!DOCTYPE rss [<!ENTITY x "&y;"> <!-- <![CDATA[ -->]><rss><channel><item><title x="&eacute;">&x;</title></item></channel></rss>`,
		`<rss><channel><item><title>&#1; <![CDATA[&z;]]> <!-- &c; --></title></item></channel></rss>`,
		`<rss><channel><item><title>a</title></item><item><title>b & c <</title></item><item><title>&d;</title></item></channel></rss>`,
		`junk &x; <!-- <rss><channel><item><title>t</title></item></channel></rss>`,
	} {
		f.Add([]byte(s))
	}
	src := Source{FeedID: testFeedID, FetchID: testFetchID, BaseURL: "https://example.org/feed"}
	first := &Parser{Tracking: DefaultParser.Tracking, repairFirst: true}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, gotErr := DefaultParser.Parse(body, src)
		want, wantErr := first.Parse(body, src)
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Fatalf("%q: error %v, want %v", body, gotErr, wantErr)
		}
		if gotErr != nil {
			return
		}
		if a, b := feedLines(t, got), feedLines(t, want); a != b {
			t.Errorf("%q:\ncounting: %s\nrepair first: %s", body, a, b)
		}
	})
}

// feedLines is a feed as the record lines of its entries and its parse
// section.
func feedLines(t *testing.T, feed *Feed) string {
	var b []byte
	var err error
	for i := range feed.Entries {
		if b, err = ndjson.Append(b, &feed.Entries[i]); err != nil {
			t.Fatal(err)
		}
	}
	if b, err = ndjson.Append(b, &ndjson.Fetch{Parse: &feed.Info}); err != nil {
		t.Fatal(err)
	}
	return string(b)
}
