package feedwrite

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/parse"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

const feedA = "00000000-0000-5000-8000-00000000000a"

// sample is a page of stored entries with everything a feed carries, and
// the characters that need escaping.
func sample() *Feed {
	return &Feed{
		ID: "https://feeds.example/all.atom", Title: "All <feeds> & more", Description: "Everything stored",
		Home: "https://feeds.example/", Self: "https://feeds.example/all.atom", Next: "https://feeds.example/all.atom?cursor=1.2",
		Hub: "https://hub.example/",
		Entries: []ndjson.Entry{
			{FeedID: feedA, EntryUID: "00000000000000e1", CanonicalLink: "https://a.example/post?x=1&y=2", Title: `Tom & Jerry's "big" <day>`,
				Summary: "<p>A <b>short</b> summary</p>", Content: "<p>The whole &amp; article, with <a href=\"https://a.example/\">a link</a>.</p>",
				Authors:    []ndjson.Author{{Name: "Ann Author", Email: "ann@a.example", URI: "https://a.example/ann"}},
				Categories: []string{"go", "feeds & things"},
				Enclosures: []ndjson.Enclosure{{URL: "https://a.example/ep1.mp3", Type: "audio/mpeg", Length: 12345}},
				Published:  ndjson.At(t0), Updated: ndjson.At(t0.Add(time.Hour)), FirstSeen: ndjson.At(t0.Add(2 * time.Hour))},
			{FeedID: feedA, EntryUID: "00000000000000e2", CanonicalLink: "https://a.example/second", Title: "Second, summary only",
				Summary: "Plain text summary \u00e9\u4e16\u754c", Published: ndjson.At(t0.Add(-24 * time.Hour)), FirstSeen: ndjson.At(t0)},
			{FeedID: feedA, EntryUID: "00000000000000e3", CanonicalLink: "https://a.example/third", Title: "Undated, a control \x01 character",
				Content: "<p>content only</p>", FirstSeen: ndjson.At(t0.Add(-time.Hour))},
		},
	}
}

func write(t *testing.T, format string, f *Feed) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, format, f); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

var ext = map[string]string{Atom: ".atom", RSS: ".xml", JSON: ".json"}

// TestGolden: the output is stable; go test ./internal/feedwrite -update
// rewrites the files in testdata, whose diffs are reviewed like code.
func TestGolden(t *testing.T) {
	for _, format := range Formats {
		got := write(t, format, sample())
		path := filepath.Join("testdata", "sample"+ext[format])
		if *update {
			os.WriteFile(path, got, 0o644)
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./internal/feedwrite -update makes it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs (go test ./internal/feedwrite -update rewrites it):\n%s", path, got)
		}
	}
}

// wellFormed reads an XML document to its end and returns the local names
// of its elements, with the path of each ("feed/entry/title").
func wellFormed(t *testing.T, doc []byte) map[string]int {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	var stack []string
	seen := map[string]int{}
	root := ""
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, doc)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if len(stack) == 0 {
				root = tok.Name.Space
			}
			name := tok.Name.Local
			if tok.Name.Space != root {
				name = tok.Name.Space + ":" + name
			}
			stack = append(stack, name)
			seen[strings.Join(stack, "/")]++
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		}
	}
	return seen
}

// TestRequiredElements: each format has what its specification requires.
func TestRequiredElements(t *testing.T) {
	f := sample()
	n := len(f.Entries)
	atom := wellFormed(t, write(t, Atom, f))
	// RFC 4287 §4.1.1, §4.1.2: feed id, title, updated; each entry id,
	// title, updated, and an author (its own, or the feed's).
	for path, want := range map[string]int{"feed/id": 1, "feed/title": 1, "feed/updated": 1, "feed/author/name": 1, "feed/entry": n,
		"feed/entry/id": n, "feed/entry/title": n, "feed/entry/updated": n} {
		if atom[path] != want {
			t.Errorf("atom: %s %d times, want %d", path, atom[path], want)
		}
	}
	rss := wellFormed(t, write(t, RSS, f))
	// RSS 2.0: channel title, link, description; each item a title or a
	// description.
	for path, want := range map[string]int{"rss/channel/title": 1, "rss/channel/link": 1, "rss/channel/description": 1, "rss/channel/item": n,
		"rss/channel/item/title": n, "rss/channel/item/guid": n} {
		if rss[path] != want {
			t.Errorf("rss: %s %d times, want %d", path, rss[path], want)
		}
	}
	var jf map[string]any
	if err := json.Unmarshal(write(t, JSON, f), &jf); err != nil {
		t.Fatal(err)
	}
	// JSON Feed 1.1: version, title, items; each item an id and
	// content_html or content_text.
	if jf["version"] != "https://jsonfeed.org/version/1.1" || jf["title"] != f.Title || jf["next_url"] != f.Next || jf["feed_url"] != f.Self {
		t.Errorf("json feed: %v", jf)
	}
	for _, it := range jf["items"].([]any) {
		m := it.(map[string]any)
		_, html := m["content_html"]
		_, text := m["content_text"]
		if m["id"] == "" || !html && !text {
			t.Errorf("json feed item lacks id or content: %v", m)
		}
	}
	// An empty feed is a feed still.
	for _, format := range Formats {
		out := write(t, format, &Feed{Title: "empty", Self: "https://x.example/e"})
		if format == JSON {
			if !bytes.Contains(out, []byte(`"items": []`)) {
				t.Errorf("empty json feed: %s", out)
			}
			continue
		}
		wellFormed(t, out)
	}
}

// TestLinks: rel=self, next (RFC 5005) and hub (WebSub) in each format.
func TestLinks(t *testing.T) {
	f := sample()
	for _, format := range []string{Atom, RSS} {
		doc := string(write(t, format, f))
		for _, want := range []string{`rel="self"`, `href="` + f.Self + `"`, `rel="next"`, `href="https://feeds.example/all.atom?cursor=1.2"`, `rel="hub"`} {
			if !strings.Contains(doc, want) {
				t.Errorf("%s lacks %s", format, want)
			}
		}
	}
	f.Next, f.Hub = "", ""
	for _, format := range Formats {
		doc := string(write(t, format, f))
		if strings.Contains(doc, `"next"`) || strings.Contains(doc, "next_url") || strings.Contains(doc, "hub") {
			t.Errorf("%s: a next or hub link without one:\n%s", format, doc)
		}
	}
}

// TestParsedBack: feed-parse reads each format back to the entries it was
// written from (their feed-level ids aside: the written feed is another
// feed).
func TestParsedBack(t *testing.T) {
	f := sample()
	for _, format := range Formats {
		t.Run(format, func(t *testing.T) {
			got, err := parse.ParseFeed(write(t, format, f), parse.Source{FeedID: feedA, BaseURL: f.Self})
			if err != nil {
				t.Fatal(err)
			}
			if got.Info.Title != f.Title || got.Info.Self != f.Self || got.Info.NextArchive != "" && got.Info.NextArchive != f.Next || !slices.Contains(got.Info.Hubs, f.Hub) {
				t.Errorf("feed: title %q self %q hubs %v", got.Info.Title, got.Info.Self, got.Info.Hubs)
			}
			if len(got.Entries) != len(f.Entries) {
				t.Fatalf("%d entries, want %d", len(got.Entries), len(f.Entries))
			}
			for i := range f.Entries {
				compare(t, format, f.Title, &f.Entries[i], &got.Entries[i])
			}
		})
	}
}

// compare checks that a parsed-back entry is the entry written, field by
// field, as far as the format carries it.
func compare(t *testing.T, format, feedTitle string, want, got *ndjson.Entry) {
	t.Helper()
	// No XML document carries a control character: it is written as
	// U+FFFD; JSON carries it, and feed-parse drops it.
	title := strings.ReplaceAll(want.Title, "\x01", "\ufffd")
	if format == JSON {
		title = strings.ReplaceAll(want.Title, "\x01", "")
	}
	check := func(field string, g, w any) {
		t.Helper()
		gj, _ := json.Marshal(g)
		wj, _ := json.Marshal(w)
		if !bytes.Equal(gj, wj) {
			t.Errorf("%s: entry %s: %s %s, want %s", format, want.EntryUID, field, gj, wj)
		}
	}
	check("native_id", got.NativeID, EntryID(want))
	check("title", got.Title, title)
	check("link", got.CanonicalLink, want.CanonicalLink)
	check("summary", got.Summary, want.Summary)
	check("content", got.Content, want.Content)
	check("categories", nonNil(got.Categories), nonNil(want.Categories))
	published := want.Published
	if format == Atom && published.IsZero() { // feed-parse takes updated for it
		published = ndjson.At(entryTime(want))
	}
	check("published", got.Published, published)
	authors := want.Authors
	switch format {
	case Atom: // an entry without one has the feed's
		if len(authors) == 0 {
			authors = []ndjson.Author{{Name: feedTitle}}
		}
	case RSS: // dc:creator is a name
		authors = nil
		for _, a := range want.Authors {
			authors = append(authors, ndjson.Author{Name: a.Name})
		}
	case JSON: // a JSON Feed author has no email
		authors = nil
		for _, a := range want.Authors {
			authors = append(authors, ndjson.Author{Name: a.Name, URI: a.URI})
		}
	}
	check("authors", nonNil(got.Authors), nonNil(authors))
	check("enclosures", nonNil(got.Enclosures), nonNil(want.Enclosures))
	switch format {
	case Atom: // updated is required: the entry's time
		check("updated", got.Updated, ndjson.At(entryTime(want)))
	case JSON:
		check("updated", got.Updated, want.Updated)
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// feedparserPython returns a python3 that has Python's feedparser
// (Debian's python3-feedparser); the test is skipped, saying so, when
// there is none.
func feedparserPython(t *testing.T) string {
	t.Helper()
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(py, "-c", "import feedparser").Run() == nil {
			return py
		}
	}
	t.Skip("Python's feedparser is not installed (Debian: apt-get install python3-feedparser; ./scripts/test installs it when it can): the check with a second parser is skipped")
	return ""
}

// TestFeedparser: Python's feedparser, the most used feed parser, reads
// each format without complaint, to the same titles, links, ids and dates.
func TestFeedparser(t *testing.T) {
	py := feedparserPython(t)
	f := sample()
	script := `import feedparser, json, sys
d = feedparser.parse(sys.stdin.buffer.read(), response_headers={"content-type": sys.argv[1]})
print(json.dumps({"bozo": bool(d.bozo), "exc": str(d.get("bozo_exception", "")), "version": d.version, "title": d.feed.get("title"),
  "entries": [{"id": e.get("id"), "title": e.get("title"), "link": e.get("link"), "published": e.get("published_parsed") and list(e.published_parsed)[:6],
  "content": (e.get("content") or [{}])[0].get("value"), "tags": [x.term for x in e.get("tags", [])]} for e in d.entries]}))`
	for _, format := range Formats {
		t.Run(format, func(t *testing.T) {
			if format == JSON && exec.Command(py, "-c", "import feedparser.parsers.json").Run() != nil {
				t.Skip("this feedparser reads no JSON Feed (it came in feedparser 6.1): the JSON Feed is checked by TestRequiredElements and TestParsedBack")
			}
			cmd := exec.Command(py, "-c", script, ContentType(format))
			cmd.Stdin = bytes.NewReader(write(t, format, f))
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("feedparser: %v", err)
			}
			var got struct {
				Bozo    bool
				Exc     string
				Version string
				Title   string
				Entries []struct {
					ID, Title, Link, Content string
					Published                []int
					Tags                     []string
				}
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			want := map[string]string{Atom: "atom10", RSS: "rss20", JSON: "json11"}[format]
			if got.Bozo || got.Version != want || got.Title != f.Title || len(got.Entries) != len(f.Entries) {
				t.Fatalf("feedparser: %s", out)
			}
			for i, e := range got.Entries {
				w := &f.Entries[i]
				if e.ID != EntryID(w) || e.Link != w.CanonicalLink || !slices.Equal(e.Tags, nonNil(w.Categories)) && len(w.Categories) > 0 {
					t.Errorf("entry %d: %+v", i, e)
				}
				if !w.Published.IsZero() {
					p := w.Published.UTC()
					if !slices.Equal(e.Published, []int{p.Year(), int(p.Month()), p.Day(), p.Hour(), p.Minute(), p.Second()}) {
						t.Errorf("entry %d published %v, want %v", i, e.Published, p)
					}
				}
				if w.Content != "" && e.Content != w.Content && format != RSS {
					t.Errorf("entry %d content %q, want %q", i, e.Content, w.Content)
				}
			}
		})
	}
}
