package parse

import (
	"bytes"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// readFile reads a test input.
func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mustParse parses a document that must be a feed.
func mustParse(t *testing.T, body []byte, src Source) *Feed {
	t.Helper()
	feed, err := ParseFeed(body, src)
	if err != nil {
		t.Fatalf("ParseFeed: %v", err)
	}
	return feed
}

// rssDoc wraps item elements in an RSS 2.0 document that declares the
// namespaces the tests use.
func rssDoc(items ...string) []byte {
	return []byte(`<?xml version="1.0" encoding="utf-8"?>
<rss version="2.0" xmlns:feedburner="http://rssnamespace.org/feedburner/ext/1.0" xmlns:dc="http://purl.org/dc/elements/1.1/">
<channel><title>t</title><link>https://example.org/</link>
` + strings.Join(items, "\n") + `
</channel></rss>`)
}

func uidsOf(f *Feed) []string {
	var out []string
	for _, e := range f.Entries {
		out = append(out, e.EntryUID)
	}
	return out
}

func distinct(s []string) bool {
	seen := map[string]bool{}
	for _, v := range s {
		if seen[v] {
			return false
		}
		seen[v] = true
	}
	return true
}

func TestParseable(t *testing.T) {
	ref := &ndjson.BlobRef{Storage: "localfs", Key: "raw/2026-11-21/abc.zst"}
	tests := []struct {
		name string
		f    ndjson.Fetch
		want bool
	}{
		{"200 with a body", ndjson.Fetch{HTTPStatus: 200, BodyRef: ref}, true},
		{"203 with a body", ndjson.Fetch{HTTPStatus: 203, BodyRef: ref}, true},
		{"299 with a body", ndjson.Fetch{HTTPStatus: 299, BodyRef: ref}, true},
		{"rss source", ndjson.Fetch{HTTPStatus: 200, BodyRef: ref, Due: ndjson.Due{SourceType: ndjson.SourceRSS}}, true},
		{"auto source", ndjson.Fetch{HTTPStatus: 200, BodyRef: ref, Due: ndjson.Due{SourceType: ndjson.SourceAuto}}, true},
		{"body cut at the size cap", ndjson.Fetch{HTTPStatus: 200, BodyRef: ref, Truncated: true,
			Error: &ndjson.Error{Class: ndjson.ClassTransient, Code: "body_too_large"}}, true},
		{"200 without a body", ndjson.Fetch{HTTPStatus: 200}, false},
		{"304", ndjson.Fetch{HTTPStatus: 304, NotModified: true}, false},
		{"not modified with a body ref", ndjson.Fetch{HTTPStatus: 200, NotModified: true, BodyRef: ref}, false},
		{"404 with a body", ndjson.Fetch{HTTPStatus: 404, BodyRef: ref,
			Error: &ndjson.Error{Class: ndjson.ClassPermanent, Code: "http_404"}}, false},
		{"500 with a body", ndjson.Fetch{HTTPStatus: 500, BodyRef: ref}, false},
		{"300 with a body", ndjson.Fetch{HTTPStatus: 300, BodyRef: ref}, false},
		{"199 with a body", ndjson.Fetch{HTTPStatus: 199, BodyRef: ref}, false},
		{"no response", ndjson.Fetch{HTTPStatus: 0, Error: &ndjson.Error{Class: ndjson.ClassTransient, Code: "timeout"}}, false},
		{"website source", ndjson.Fetch{HTTPStatus: 200, BodyRef: ref, Due: ndjson.Due{SourceType: ndjson.SourceWebsite}}, false},
		{"fulltext page of a feed entry", ndjson.Fetch{HTTPStatus: 200, BodyRef: ref, Due: ndjson.Due{SourceType: ndjson.SourceRSS},
			Page: &ndjson.Page{Role: ndjson.PageFulltext, SourceFetchID: "f1", EntryUID: "0123456789abcdef"}}, false},
		{"article page of a website", ndjson.Fetch{HTTPStatus: 200, BodyRef: ref, Due: ndjson.Due{SourceType: ndjson.SourceWebsite},
			Page: &ndjson.Page{Role: ndjson.PageArticle, SourceFetchID: "f1"}}, false},
		{"list page of an auto source", ndjson.Fetch{HTTPStatus: 200, BodyRef: ref, Due: ndjson.Due{SourceType: ndjson.SourceAuto},
			Page: &ndjson.Page{Role: ndjson.PageList, SourceFetchID: "f1"}}, false},
		{"200 with another error", ndjson.Fetch{HTTPStatus: 200, BodyRef: ref,
			Error: &ndjson.Error{Class: ndjson.ClassBlocked, Code: "bot_challenge"}}, false},
		{"already failed to parse", ndjson.Fetch{HTTPStatus: 200, BodyRef: ref,
			Error: &ndjson.Error{Class: ndjson.ClassParse, Code: "not_a_feed"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseable(&tt.f); got != tt.want {
				t.Errorf("parseable = %v, want %v", got, tt.want)
			}
		})
	}
}

// dated is an entry for the ordering tests: its title names it, and pub
// and upd are RFC 3339 times or "" for none.
func dated(title, pub, upd string) ndjson.Entry {
	at := func(s string) ndjson.Time {
		if s == "" {
			return ndjson.Time{}
		}
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			panic(err)
		}
		return ndjson.At(t)
	}
	return ndjson.Entry{Title: title, Published: at(pub), Updated: at(upd)}
}

func titles(entries []ndjson.Entry) []string {
	out := []string{}
	for _, e := range entries {
		out = append(out, e.Title)
	}
	return out
}

func TestNewestFirst(t *testing.T) {
	tests := []struct {
		name    string
		entries []ndjson.Entry
		want    []string
	}{
		{"empty", nil, []string{}},
		{"by published", []ndjson.Entry{
			dated("old", "2026-01-01T00:00:00Z", ""),
			dated("new", "2026-03-01T00:00:00Z", ""),
			dated("mid", "2026-02-01T00:00:00Z", ""),
		}, []string{"new", "mid", "old"}},
		{"updated stands in for published", []ndjson.Entry{
			dated("pub-old", "2026-01-01T00:00:00Z", "2026-12-01T00:00:00Z"),
			dated("upd-mid", "", "2026-02-01T00:00:00Z"),
			dated("pub-new", "2026-03-01T00:00:00Z", ""),
		}, []string{"pub-new", "upd-mid", "pub-old"}},
		{"undated after dated, in document order", []ndjson.Entry{
			dated("u1", "", ""),
			dated("d-old", "2026-01-01T00:00:00Z", ""),
			dated("u2", "", ""),
			dated("d-new", "2026-02-01T00:00:00Z", ""),
			dated("u3", "", ""),
		}, []string{"d-new", "d-old", "u1", "u2", "u3"}},
		{"ties keep document order", []ndjson.Entry{
			dated("a", "2026-01-01T00:00:00Z", ""),
			dated("b", "2026-01-01T00:00:00Z", ""),
			dated("c", "2026-01-01T00:00:00Z", ""),
		}, []string{"a", "b", "c"}},
		{"time zones compared as instants", []ndjson.Entry{
			dated("earlier", "2026-01-01T10:00:00+05:00", ""), // 05:00 UTC
			dated("later", "2026-01-01T06:00:00Z", ""),
		}, []string{"later", "earlier"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.entries)
			got := titles(newestFirst(in))
			if !slices.Equal(got, tt.want) {
				t.Errorf("newestFirst = %v, want %v", got, tt.want)
			}
			if !slices.Equal(titles(in), titles(tt.entries)) {
				t.Errorf("newestFirst reordered its input: %v", titles(in))
			}
		})
	}
}

func TestLimit(t *testing.T) {
	doc := []ndjson.Entry{ // in document order, not sorted
		dated("u1", "", ""),
		dated("jan", "2026-01-01T00:00:00Z", ""),
		dated("mar", "2026-03-01T00:00:00Z", ""),
		dated("upd-apr", "", "2026-04-01T00:00:00Z"),
		dated("u2", "", ""),
		dated("feb", "2026-02-01T00:00:00Z", "2026-05-01T00:00:00Z"),
		dated("u3", "", ""),
	}
	tests := []struct {
		name    string
		entries []ndjson.Entry
		limit   int
		want    []string // the entries kept, in document order
		newest  string
		oldest  string
	}{
		{"no limit keeps all in document order", doc, 0,
			[]string{"u1", "jan", "mar", "upd-apr", "u2", "feb", "u3"}, "2026-03-01T00:00:00Z", "2026-01-01T00:00:00Z"},
		{"limit above the count keeps all", doc, 100,
			[]string{"u1", "jan", "mar", "upd-apr", "u2", "feb", "u3"}, "2026-03-01T00:00:00Z", "2026-01-01T00:00:00Z"},
		{"limit equal to the count keeps all", doc, 7,
			[]string{"u1", "jan", "mar", "upd-apr", "u2", "feb", "u3"}, "2026-03-01T00:00:00Z", "2026-01-01T00:00:00Z"},
		{"keeps the most recent", doc, 2,
			[]string{"mar", "upd-apr"}, "2026-03-01T00:00:00Z", "2026-01-01T00:00:00Z"},
		{"published wins over updated", doc, 3,
			[]string{"mar", "upd-apr", "feb"}, "2026-03-01T00:00:00Z", "2026-01-01T00:00:00Z"},
		{"undated ones fill up in document order", doc, 6,
			[]string{"u1", "jan", "mar", "upd-apr", "u2", "feb"}, "2026-03-01T00:00:00Z", "2026-01-01T00:00:00Z"},
		{"limit 1", doc, 1, []string{"upd-apr"}, "2026-03-01T00:00:00Z", "2026-01-01T00:00:00Z"},
		{"nothing dated", []ndjson.Entry{dated("u1", "", ""), dated("u2", "", ""), dated("u3", "", "")}, 2,
			[]string{"u1", "u2"}, "", ""},
		{"only updated dates", []ndjson.Entry{dated("a", "", "2026-01-01T00:00:00Z"), dated("b", "", "2026-02-01T00:00:00Z")}, 0,
			[]string{"a", "b"}, "", ""},
		{"no entries", nil, 20, []string{}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			feed := &Feed{Info: ndjson.Parse{Items: len(tt.entries)}, Entries: slices.Clone(tt.entries)}
			got := limit(feed, tt.limit)
			names := titles(got)
			if !slices.Equal(names, tt.want) {
				t.Errorf("kept %v, want %v in that order", names, tt.want)
			}
			if feed.Info.Entries != len(tt.want) {
				t.Errorf("Info.Entries = %d, want %d", feed.Info.Entries, len(tt.want))
			}
			if feed.Info.Items != len(tt.entries) {
				t.Errorf("Info.Items = %d, want %d (limit must not change it)", feed.Info.Items, len(tt.entries))
			}
			if s := feed.Info.NewestPublished.String(); s != tt.newest {
				t.Errorf("NewestPublished = %q, want %q", s, tt.newest)
			}
			if s := feed.Info.OldestPublished.String(); s != tt.oldest {
				t.Errorf("OldestPublished = %q, want %q", s, tt.oldest)
			}
		})
	}
}

func TestEntryLink(t *testing.T) {
	src := Source{FeedID: testFeedID, FetchID: testFetchID, BaseURL: "https://example.org/blog/feed.xml"}
	atom := func(entry string) []byte {
		return []byte(`<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:feedburner="http://rssnamespace.org/feedburner/ext/1.0">
<title>t</title><id>urn:t</id><updated>2026-01-01T00:00:00Z</updated>
<entry><title>e</title><updated>2026-01-01T00:00:00Z</updated>` + entry + `</entry></feed>`)
	}
	tests := []struct {
		name string
		doc  []byte
		want string
	}{
		{"origLink over link", rssDoc(`<item><title>a</title><link>http://feedproxy.google.com/~r/x/~3/abc/</link>
			<feedburner:origLink>https://publisher.example/post/1</feedburner:origLink><guid>https://example.net/guid</guid></item>`),
			"https://publisher.example/post/1"},
		{"link over guid", rssDoc(`<item><title>a</title><link>https://example.org/post/1</link><guid>https://example.org/?p=1</guid></item>`),
			"https://example.org/post/1"},
		{"guid without isPermaLink is a permalink", rssDoc(`<item><title>a</title><guid>https://example.org/post/2</guid></item>`),
			"https://example.org/post/2"},
		{"isPermaLink true", rssDoc(`<item><title>a</title><guid isPermaLink="true">https://example.org/post/3</guid></item>`),
			"https://example.org/post/3"},
		{`isPermaLink "false" is not a link`, rssDoc(`<item><title>a</title><guid isPermaLink="false">https://example.org/post/4</guid></item>`),
			""},
		{`isPermaLink " FALSE " is not a link`, rssDoc(`<item><title>a</title><guid isPermaLink=" FALSE ">https://example.org/post/5</guid></item>`),
			""},
		{"a guid that is not a URL is not a link", rssDoc(`<item><title>a</title><guid>post-6@example.org</guid></item>`),
			""},
		{"a guid with another scheme is not a link", rssDoc(`<item><title>a</title><guid>ftp://example.org/post/7</guid></item>`),
			""},
		{"relative link resolved against the document", rssDoc(`<item><title>a</title><link>../post/8?x=1#c</link></item>`),
			"https://example.org/post/8?x=1"},
		{"host-relative link", rssDoc(`<item><title>a</title><link>/post/9</link></item>`),
			"https://example.org/post/9"},
		{"link normalized", rssDoc(`<item><title>a</title><link>  HTTPS://Example.ORG:443/post/10  </link></item>`),
			"https://example.org/post/10"},
		{"empty origLink falls back to link", rssDoc(`<item><title>a</title><link>https://example.org/post/11</link><feedburner:origLink> </feedburner:origLink></item>`),
			"https://example.org/post/11"},
		{"no link at all", rssDoc(`<item><title>a</title></item>`), ""},
		{"atom alternate link", atom(`<id>urn:e</id><link rel="alternate" href="https://example.org/a/1"/>`), "https://example.org/a/1"},
		{"atom origLink", atom(`<id>urn:e</id><link rel="alternate" href="http://feedproxy.google.com/~r/x/~3/abc/"/>
			<feedburner:origLink>https://publisher.example/a/2</feedburner:origLink>`), "https://publisher.example/a/2"},
		{"atom relative link", atom(`<id>urn:e</id><link href="a/3"/>`), "https://example.org/blog/a/3"},
		{"atom id is never a link", atom(`<id>https://example.org/a/4</id>`), ""},
		{"json url", []byte(`{"version":"https://jsonfeed.org/version/1.1","title":"t","items":[{"id":"1","url":"https://example.org/j/1"}]}`),
			"https://example.org/j/1"},
		{"json id is never a link", []byte(`{"version":"https://jsonfeed.org/version/1.1","title":"t","items":[{"id":"https://example.org/j/2"}]}`),
			""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			feed := mustParse(t, tt.doc, src)
			if len(feed.Entries) != 1 {
				t.Fatalf("got %d entries, want 1", len(feed.Entries))
			}
			if got := feed.Entries[0].CanonicalLink; got != tt.want {
				t.Errorf("canonical_link = %q, want %q", got, tt.want)
			}
		})
	}
}

var guidRE = regexp.MustCompile(`<guid[^>]*>[^<]*</guid>`)

func TestEntryUIDRepeatedGUID(t *testing.T) {
	// A feed that gives every item the same guid: the guid is useless as
	// an identity, and the items must still get distinct ids.
	for _, name := range []string{"TechCrunch.xml", "TenderLovemaking.xml"} {
		t.Run(name, func(t *testing.T) {
			orig := readFile(t, "../../testdata/feeds/"+name)
			same := guidRE.ReplaceAll(orig, []byte(`<guid isPermaLink="false">http://example.com/the-only-guid</guid>`))
			if slices.Equal(same, orig) {
				t.Fatal("the document has no guid to replace")
			}
			feed := mustParse(t, same, testSource(name))
			if len(feed.Entries) < 10 {
				t.Fatalf("only %d entries", len(feed.Entries))
			}
			for _, e := range feed.Entries {
				if e.NativeID != "http://example.com/the-only-guid" {
					t.Fatalf("native_id = %q: the rewrite did not reach every item", e.NativeID)
				}
			}
			if uids := uidsOf(feed); !distinct(uids) {
				t.Errorf("items sharing one guid share entry_uids: %v", uids)
			}
			// The ids are those of items without a guid: a publisher
			// that starts repeating its guid keeps no stable ids either
			// way, but the ids must not depend on the guid's value.
			other := mustParse(t, guidRE.ReplaceAll(orig, []byte(`<guid>urn:another-only-guid</guid>`)), testSource(name))
			if !slices.Equal(uidsOf(feed), uidsOf(other)) {
				t.Errorf("the ids of repeated-guid items depend on the repeated guid")
			}
		})
	}
}

func TestEntryUIDSchemeFlip(t *testing.T) {
	// The same feed served with http guids and then with https guids (and
	// a host spelled in upper case) keeps its ids.
	for _, name := range []string{"TechCrunch.xml", "TenderLovemaking.xml"} {
		t.Run(name, func(t *testing.T) {
			orig := readFile(t, "../../testdata/feeds/"+name)
			flipped := guidRE.ReplaceAllFunc(orig, func(g []byte) []byte {
				return []byte(strings.Replace(string(g), ">http://", ">HTTPS://", 1))
			})
			if slices.Equal(flipped, orig) {
				t.Fatal("no http guid to flip")
			}
			a := mustParse(t, orig, testSource(name))
			b := mustParse(t, flipped, testSource(name))
			if a.Entries[0].NativeID == b.Entries[0].NativeID {
				t.Fatalf("the flip did not change the guids: %q", a.Entries[0].NativeID)
			}
			if !slices.Equal(uidsOf(a), uidsOf(b)) {
				t.Errorf("http -> https guids changed the ids:\n%v\n%v", uidsOf(a), uidsOf(b))
			}
			if !distinct(uidsOf(a)) {
				t.Errorf("ids not distinct: %v", uidsOf(a))
			}
		})
	}
}

func TestEntryUIDNoGUIDNoDate(t *testing.T) {
	// Items without guid and without date get ids that are stable across
	// parses (nothing of the fetch goes in) and distinct within the feed.
	strip := regexp.MustCompile(`(?s)<guid[^>]*>.*?</guid>|<pubDate>.*?</pubDate>|<dc:date>.*?</dc:date>`)
	tests := []struct {
		name string
		doc  []byte
	}{
		{"TechCrunch.xml stripped", strip.ReplaceAll(readFile(t, "../../testdata/feeds/TechCrunch.xml"), nil)},
		{"TenderLovemaking.xml stripped", strip.ReplaceAll(readFile(t, "../../testdata/feeds/TenderLovemaking.xml"), nil)},
		{"rss_0.91U.xml as is", readFile(t, "testdata/feeds/rome/rss_0.91U.xml")},
		{"titles only", rssDoc(`<item><title>one</title></item>`, `<item><title>two</title></item>`, `<item><title>three</title></item>`)},
		{"descriptions only", rssDoc(`<item><description>one</description></item>`, `<item><description>two</description></item>`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first := mustParse(t, tt.doc, Source{FeedID: testFeedID, FetchID: "fetch-1", BaseURL: "https://example.org/feed"})
			for _, e := range first.Entries {
				if e.NativeID != "" || !e.Published.IsZero() || !e.Updated.IsZero() {
					t.Fatalf("entry %q still has a guid or a date", e.Title)
				}
			}
			second := mustParse(t, tt.doc, Source{FeedID: testFeedID, FetchID: "fetch-2", BaseURL: "https://example.org/feed"})
			if len(first.Entries) < 2 {
				t.Fatalf("only %d entries", len(first.Entries))
			}
			if !slices.Equal(uidsOf(first), uidsOf(second)) {
				t.Errorf("ids changed between two parses:\n%v\n%v", uidsOf(first), uidsOf(second))
			}
			if !distinct(uidsOf(first)) {
				t.Errorf("ids not distinct: %v", uidsOf(first))
			}
			if second.Entries[0].RawRef.FetchID != "fetch-2" {
				t.Errorf("raw_ref.fetch_id = %q, want fetch-2", second.Entries[0].RawRef.FetchID)
			}
			// The feed id is part of every id.
			other := mustParse(t, tt.doc, Source{FeedID: "another-feed", BaseURL: "https://example.org/feed"})
			for i, e := range other.Entries {
				if e.EntryUID == first.Entries[i].EntryUID {
					t.Errorf("entry %d has the same id in two feeds", i)
				}
			}
		})
	}
}

func TestParseFeedErrors(t *testing.T) {
	techcrunch := readFile(t, "../../testdata/feeds/TechCrunch.xml")
	jsonFeed := readFile(t, "../../testdata/feeds/json_feed.json")
	tests := []struct {
		name      string
		body      []byte
		notAFeed  bool // the error must wrap ErrNotAFeed
		mayBeFeed bool // whatever gofeed says about it is fine, as long as it fails cleanly
	}{
		{"empty body", nil, true, false},
		{"white space", []byte(" \r\n\t \n"), true, false},
		{"HTML page", []byte("<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\"><title>Welcome</title>\n<link rel=\"alternate\" type=\"application/rss+xml\" href=\"/feed.xml\">\n</head>\n<body><h1>Hello</h1><p>Not a feed.</p></body>\n</html>\n"), true, false},
		{"HTML without doctype", []byte("<html><body>rss</body></html>"), true, false},
		{"plain text", []byte("Service Unavailable\n\nThe server is temporarily unable to service your request.\n"), true, false},
		{"OPML document", []byte(`<?xml version="1.0"?><opml version="2.0"><body><outline xmlUrl="https://example.org/feed"/></body></opml>`), true, false},
		{"JSON that is not a feed", []byte(`{"error": "rate limited", "retry_after": 60}`), true, false},
		{"JSON array", []byte(`[{"id": 1}]`), true, false},
		{"binary", []byte("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xcb\x48\xcd\xc9\xc9\x07\x00"), true, false},
		{"NUL bytes", []byte("\x00\x00\x00\x00"), true, false},
		{"RSS cut before its first item ends", techcrunch[:bytes.Index(techcrunch, []byte("</item>"))], false, true},
		{"RSS cut inside the root tag", []byte(`<rss version="2.`), false, true},
		{"truncated JSON Feed", jsonFeed[:len(jsonFeed)/2], false, true},
		{"malformed JSON Feed", []byte(`{"version":"https://jsonfeed.org/version/1.1","items":"none"}`), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			feed, err := ParseFeed(tt.body, testSource("x"))
			if err == nil {
				t.Fatalf("ParseFeed succeeded with %d entries, want an error", len(feed.Entries))
			}
			if feed != nil {
				t.Errorf("ParseFeed returned a feed with its error")
			}
			msg := err.Error()
			if strings.ContainsAny(msg, "\r\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			if !strings.HasPrefix(msg, "parse: ") {
				t.Errorf("error %q lacks the package prefix", msg)
			}
			if len(msg) > 300 {
				t.Errorf("error is %d bytes long: %q", len(msg), msg)
			}
			if !tt.mayBeFeed && errors.Is(err, ErrNotAFeed) != tt.notAFeed {
				t.Errorf("errors.Is(%q, ErrNotAFeed) = %v, want %v", msg, !tt.notAFeed, tt.notAFeed)
			}
		})
	}
}

// TestBinaryPayload: a body that is no text (an image, an archive, served
// under a feed's URL) is not_a_feed, said to be binary, with its
// Content-Type, what it looks like and its first bytes escaped: never an
// XML error quoting raw bytes.
func TestBinaryPayload(t *testing.T) {
	for _, tc := range []struct {
		name, body, contentType, want string
	}{
		{"PNG", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00<\x9a\xff\xfe", "image/png",
			`parse: not an RSS, Atom or JSON feed: a binary payload (Content-Type "image/png", it looks like image/png), starting "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00<\x9a\xff\xfe"`},
		{"a zip with a tag inside", "PK\x03\x04\x14\x00\x00\x00\x08\x00<xml", "application/rss+xml",
			`parse: not an RSS, Atom or JSON feed: a binary payload (Content-Type "application/rss+xml", it looks like application/zip), starting "PK\x03\x04\x14\x00\x00\x00\b\x00<xml"`},
		{"bytes of no format", "<\x00\x01\x02\x03\x04\xfe\xfd", "",
			`parse: not an RSS, Atom or JSON feed: a binary payload (no Content-Type, it looks like application/octet-stream), starting "<\x00\x01\x02\x03\x04\xfe\xfd"`},
	} {
		_, err := ParseFeed([]byte(tc.body), Source{FeedID: "x", BaseURL: "https://example.org/feed", ContentType: tc.contentType})
		if err == nil || err.Error() != tc.want || !errors.Is(err, ErrNotAFeed) || !errors.Is(err, ErrBinary) || errorCode(err) != "not_a_feed" {
			t.Errorf("%s: %v\nwant %s", tc.name, err, tc.want)
		}
	}
	// A text in UTF-16 without a byte order mark has zero bytes, and
	// stays a text: a feed.
	utf16 := []byte{}
	for _, r := range `<?xml version="1.0" encoding="UTF-16"?><rss version="2.0"><channel><title>T</title><item><title>I</title></item></channel></rss>` {
		utf16 = append(utf16, byte(r), 0)
	}
	if f, err := ParseFeed(utf16, testSource("x")); err != nil || len(f.Entries) != 1 {
		t.Errorf("UTF-16 without a BOM: %v", err)
	}
}

// TestParseFeedRegressions holds documents that once broke an invariant
// (found by FuzzParseFeed or by probing), with the invariant they broke.
func TestParseFeedRegressions(t *testing.T) {
	tests := []struct {
		name string
		body string
	}{
		// A date that is in the year 10000 once converted to UTC was
		// written as "10000-01-01T04:59:59Z", which no reader accepts.
		{"date past year 9999 in UTC", string(rssDoc(`<item><title>a</title><pubDate>9999-12-31T23:59:59-05:00</pubDate></item>`))},
		{"atom date past year 9999 in UTC", `<feed xmlns="http://www.w3.org/2005/Atom"><entry><id>x</id><published>9999-12-31T23:30:00-01:00</published><updated>9999-12-31T23:30:00-01:00</updated></entry></feed>`},
		{"json date past year 9999 in UTC", `{"version":"https://jsonfeed.org/version/1.1","items":[{"id":"1","date_published":"9999-12-31T23:00:00-02:00"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkParse(t, []byte(tt.body))
		})
	}
}

func TestParseFeedInfo(t *testing.T) {
	tests := []struct {
		name      string
		channel   string
		ttl       int
		skipHours []int
		skipDays  []string
	}{
		{"none", ``, 0, []int{}, []string{}},
		{"ttl", `<ttl> 90 </ttl>`, 90, []int{}, []string{}},
		{"ttl not a number", `<ttl>an hour</ttl>`, 0, []int{}, []string{}},
		{"skip hours, 24 is midnight, junk and repeats dropped", `<skipHours><hour>0</hour><hour> 7 </hour><hour>24</hour><hour>25</hour><hour>-1</hour><hour>noon</hour></skipHours>`,
			0, []int{0, 7}, []string{}},
		{"skip days trimmed, empty dropped", `<skipDays><day> Saturday </day><day></day><day>Sunday</day></skipDays>`,
			0, []int{}, []string{"Saturday", "Sunday"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := `<rss version="2.0"><channel><title> T </title><link>/home</link><language> en </language>` + tt.channel +
				`<item><title>a</title></item><item><title>b</title></item></channel></rss>`
			feed := mustParse(t, []byte(doc), testSource("info.xml"))
			info := feed.Info
			if info.Format != "rss" || info.Version != "2.0" || info.Title != "T" || info.Language != "en" {
				t.Errorf("format/version/title/language = %q %q %q %q", info.Format, info.Version, info.Title, info.Language)
			}
			if info.Link != "https://example.org/home" {
				t.Errorf("link = %q, want it resolved against the document", info.Link)
			}
			if info.Items != 2 {
				t.Errorf("items = %d, want 2", info.Items)
			}
			if info.TTLMinutes != tt.ttl {
				t.Errorf("ttl_minutes = %d, want %d", info.TTLMinutes, tt.ttl)
			}
			if !slices.Equal(info.SkipHours, tt.skipHours) || info.SkipHours == nil {
				t.Errorf("skip_hours = %#v, want %v", info.SkipHours, tt.skipHours)
			}
			if !slices.Equal(info.SkipDays, tt.skipDays) || info.SkipDays == nil {
				t.Errorf("skip_days = %#v, want %v", info.SkipDays, tt.skipDays)
			}
			if info.Warnings == nil {
				t.Errorf("warnings is nil; records write [] for empty lists")
			}
		})
	}
}

func TestParseFeedDepthCap(t *testing.T) {
	doc := func(depth int) []byte {
		return []byte(`<rss version="2.0" xmlns:x="urn:x"><channel><item><title>t</title>` +
			strings.Repeat("<x:a>", depth) + strings.Repeat("</x:a>", depth) + `</item></channel></rss>`)
	}
	// rss, channel and item are three levels.
	if _, err := ParseFeed(doc(MaxXMLDepth-3), testSource("deep")); err != nil {
		t.Errorf("a document %d deep: %v", MaxXMLDepth, err)
	}
	_, err := ParseFeed(doc(MaxXMLDepth-2), testSource("deep"))
	if err == nil || !strings.Contains(err.Error(), "nests elements more than") || errors.Is(err, ErrNotAFeed) {
		t.Errorf("a document %d deep: error %v, want the depth error", MaxXMLDepth+1, err)
	}
}

func BenchmarkParseFeed(b *testing.B) {
	body := readFile(b, "../../testdata/feeds/TechCrunch.xml")
	src := testSource("TechCrunch.xml")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseFeed(body, src); err != nil {
			b.Fatal(err)
		}
	}
}

// TestControlCharacters: NUL, BEL, ESC, DEL and C1 controls of a
// publisher's, escaped in XML or JSON, reach no field of an entry or the
// feed; tabs and line breaks stay.
func TestControlCharacters(t *testing.T) {
	const src = "00000000-0000-5000-8000-000000000001"
	for name, doc := range map[string]string{
		"rss": `<?xml version="1.0"?><rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/"><channel>
<title>Bad&#x1b;[31m feed&#x7;</title><link>https://example.org/</link><description>d&#x9b;2J</description>
<item><title>Evil&#x1b;]0;pwned&#x7; title</title><link>https://example.org/1</link>
<description>line one
&#x0;line&#x9;two</description><dc:creator>Mal&#x1b;[2Jlory</dc:creator><category>c&#x7f;at</category></item></channel></rss>`,
		"json": `{"version":"https://jsonfeed.org/version/1.1","title":"Bad\u001b[31m feed\u0007","description":"d\u009b2J",
"items":[{"id":"1","url":"https://example.org/1","title":"Evil\u001b]0;pwned\u0007 title","content_text":"line one\n\u0000line\ttwo",
"authors":[{"name":"Mal\u001b[2Jlory"}],"tags":["c\u007fat"]}]}`,
	} {
		f := mustParse(t, []byte(doc), Source{FeedID: src, FetchID: "00000000-0000-7000-8000-000000000001"})
		e := f.Entries[0]
		fields := []string{f.Info.Title, f.Info.Description, f.Info.Publisher, e.Title, e.Summary, e.Content, e.Authors[0].Name, e.Categories[0]}
		for _, v := range fields {
			if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 && r != '\t' && r != '\n' || r >= 0x7f && r <= 0x9f }) {
				t.Errorf("%s: a control character left in %q", name, v)
			}
		}
		if f.Info.Title != "Bad[31m feed" || e.Title != "Evil]0;pwned title" || e.Authors[0].Name != "Mal[2Jlory" || e.Categories[0] != "cat" {
			t.Errorf("%s: %q %q %q %q", name, f.Info.Title, e.Title, e.Authors[0].Name, e.Categories[0])
		}
		if body := e.Summary + e.Content; !strings.Contains(body, "line one\nline\ttwo") {
			t.Errorf("%s: tabs and line breaks lost: %q", name, body)
		}
	}
}
