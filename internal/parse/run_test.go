package parse

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

var fetchedAt = time.Date(2026, 11, 21, 8, 30, 0, 0, time.UTC)

func openStore(t *testing.T) *storedir.Store {
	t.Helper()
	st, err := storedir.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// putBody stores a payload as feed-fetch does and returns its reference.
func putBody(t *testing.T, st *storedir.Store, body []byte) *ndjson.BlobRef {
	t.Helper()
	key, _, err := st.PutRaw(fetchedAt, body)
	if err != nil {
		t.Fatal(err)
	}
	return &ndjson.BlobRef{Storage: storedir.RawStorage, Key: key}
}

// fetchRec is a successful fetch record of feed n with the given body.
func fetchRec(n int, ref *ndjson.BlobRef) ndjson.Fetch {
	url := fmt.Sprintf("https://example.org/feed%d.xml", n)
	return ndjson.Fetch{
		Header:          ndjson.Head(ndjson.TypeFetch),
		FetchID:         fmt.Sprintf("00000000-0000-7000-8000-%012d", n),
		Due:             ndjson.Due{Header: ndjson.Head(ndjson.TypeDue), FeedID: fmt.Sprintf("00000000-0000-5000-8000-%012d", n), URL: url, SourceType: ndjson.SourceAuto, Labels: []string{}},
		RequestedURL:    url,
		URL:             url,
		Redirects:       []ndjson.Redirect{},
		FetchedAt:       ndjson.At(fetchedAt),
		HTTPStatus:      200,
		RequestHeaders:  map[string]string{},
		ResponseHeaders: map[string]string{},
		BodyRef:         ref,
	}
}

func marshalLine(t *testing.T, v any) string {
	t.Helper()
	b, err := ndjson.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// runParse runs Run over the input lines and returns its output lines,
// its log and its error.
func runParse(t *testing.T, st *storedir.Store, lines ...string) (out []string, log string, err error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err = Run(context.Background(), Config{
		In:    strings.NewReader(strings.Join(lines, "")),
		Out:   ndjson.NewWriter(&stdout),
		Log:   slog.New(slog.NewTextHandler(&stderr, nil)),
		Store: st,
	})
	text := stdout.String()
	if text != "" && !strings.HasSuffix(text, "\n") {
		t.Errorf("output does not end in a newline: %q", text[max(0, len(text)-40):])
	}
	return strings.SplitAfter(text, "\n")[:strings.Count(text, "\n")], stderr.String(), err
}

// record decodes an output line far enough to tell what it is.
type record struct {
	Type    string        `json:"type"`
	FetchID string        `json:"fetch_id"`
	RawRef  ndjson.RawRef `json:"raw_ref"`
	Title   string        `json:"title"`
	Parse   *ndjson.Parse `json:"parse"`
	Error   *ndjson.Error `json:"error"`
	FeedID  string        `json:"feed_id"`
}

func decode(t *testing.T, line string) record {
	t.Helper()
	var r record
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		t.Fatalf("output line is not a record: %v: %q", err, line)
	}
	return r
}

func fiftyItems() []byte {
	// Fifty items whose dates are not in document order: item i was
	// published on day (i*7)%50 of 2026, so the newest twenty are not the
	// first twenty of the document.
	var items []string
	for i := range 50 {
		day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, (i*7)%50)
		items = append(items, fmt.Sprintf(`<item><title>item %d</title><link>https://example.org/%d</link><guid>https://example.org/%d</guid><pubDate>%s</pubDate></item>`,
			i, i, i, day.Format(time.RFC1123Z)))
	}
	return rssDoc(items...)
}

func TestRunStream(t *testing.T) {
	st := openStore(t)
	techcrunch := readFile(t, "../../testdata/feeds/TechCrunch.xml")

	feedA := fetchRec(1, putBody(t, st, techcrunch))

	notModified := fetchRec(2, nil)
	notModified.HTTPStatus, notModified.NotModified = 304, true
	notModifiedLine := strings.Replace(marshalLine(t, notModified), `"type":"fetch",`, `"type": "fetch" ,  `, 1)

	website := fetchRec(3, putBody(t, st, []byte("<html><body><article>a page</article></body></html>")))
	website.Due.SourceType = ndjson.SourceWebsite
	websiteLine := marshalLine(t, website)

	// The page feed-scrape fetched for an entry of an RSS source, and an
	// article of a website: HTML for feed-scrape, passed on as they are.
	fulltext := fetchRec(6, putBody(t, st, []byte("<html><body><article>the full text</article></body></html>")))
	fulltext.Due.SourceType = ndjson.SourceRSS
	fulltext.Page = &ndjson.Page{Role: ndjson.PageFulltext, SourceFetchID: feedA.FetchID, EntryUID: "0123456789abcdef"}
	fulltextLine := marshalLine(t, fulltext)
	article := fetchRec(7, putBody(t, st, techcrunch))
	article.Due.SourceType = ndjson.SourceAuto
	article.Page = &ndjson.Page{Role: ndjson.PageArticle, SourceFetchID: website.FetchID}
	articleLine := marshalLine(t, article)

	unknownLine := `{"type":"mystery","v":7, "feed_id":"x", "nested":{"a":[1,2.50,"\u00e9"]}}` + "\n"

	garbage := fetchRec(4, putBody(t, st, []byte("\x00\x01binary garbage\xff\xfe")))
	page := fetchRec(8, putBody(t, st, []byte("<!DOCTYPE html><html><body>a web page</body></html>")))
	limited := fetchRec(5, putBody(t, st, fiftyItems()))
	limited.Due.ItemLimit = 20

	out, log, err := runParse(t, st,
		unknownLine,
		marshalLine(t, feedA),
		notModifiedLine,
		"{this is not json\n",
		websiteLine,
		fulltextLine,
		articleLine,
		marshalLine(t, garbage),
		marshalLine(t, limited),
		marshalLine(t, page),
		`{"type":"fetch","v":1,"fetch_id":`+"\n", // not JSON either: reported by the decoding (Reader.SetDecoded)
	)

	if !errors.Is(err, pipe.ErrFailed) {
		t.Errorf("Run error = %v, want one matching pipe.ErrFailed", err)
	} else if msg := err.Error(); !strings.Contains(msg, "2 payloads failed") || !strings.Contains(msg, "2 malformed input lines skipped") {
		t.Errorf("Run error = %q, want it to count 2 failed payloads and 2 malformed lines", msg)
	}
	if !strings.Contains(log, "line=4") || !strings.Contains(log, "line=11") || !strings.Contains(log, "malformed") {
		t.Errorf("the malformed lines 4 and 11 were not reported:\n%s", log)
	}
	if !strings.Contains(log, garbage.FetchID) {
		t.Errorf("the failed payload was not reported with its fetch_id:\n%s", log)
	}

	// The expected shape of the output, one letter per line: entries (e)
	// of a feed, then its fetch record (f), and the pass-through records
	// byte for byte.
	var want []string
	want = append(want, unknownLine)
	want = append(want, slices.Repeat([]string{"e:" + feedA.FetchID}, 20)...)
	want = append(want, "f:"+feedA.FetchID, notModifiedLine, websiteLine, fulltextLine, articleLine, "f:"+garbage.FetchID)
	want = append(want, slices.Repeat([]string{"e:" + limited.FetchID}, 20)...)
	want = append(want, "f:"+limited.FetchID, "f:"+page.FetchID)

	var got []string
	for _, line := range out {
		r := decode(t, line)
		switch {
		case r.Type == ndjson.TypeEntry:
			got = append(got, "e:"+r.RawRef.FetchID)
		case r.Type == ndjson.TypeFetch && r.Parse != nil:
			got = append(got, "f:"+r.FetchID)
		default:
			got = append(got, line)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	byFetch := map[string][]ndjson.Entry{}
	fetches := map[string]ndjson.Fetch{}
	for _, line := range out {
		switch decode(t, line).Type {
		case ndjson.TypeEntry:
			var e ndjson.Entry
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatal(err)
			}
			byFetch[e.RawRef.FetchID] = append(byFetch[e.RawRef.FetchID], e)
		case ndjson.TypeFetch:
			var f ndjson.Fetch
			if err := json.Unmarshal([]byte(line), &f); err != nil {
				t.Fatal(err)
			}
			fetches[f.FetchID] = f
		}
	}

	t.Run("feed", func(t *testing.T) {
		f := fetches[feedA.FetchID]
		p := f.Parse
		if f.Error != nil || p.Error != "" {
			t.Errorf("error %+v, parse.error %q", f.Error, p.Error)
		}
		if p.Format != "rss" || p.Title != "TechCrunch" || p.Items != 20 || p.Entries != 20 {
			t.Errorf("parse = %+v", p)
		}
		if p.NewestPublished.String() != "2011-11-02T17:25:27Z" || p.OldestPublished.String() != "2011-11-02T12:34:07Z" {
			t.Errorf("published range %s .. %s", p.OldestPublished, p.NewestPublished)
		}
		// The rest of the record is as feed-fetch wrote it.
		f.Parse = nil
		if got, want := marshalLine(t, f), marshalLine(t, feedA); got != want {
			t.Errorf("the fetch record changed beyond its parse section:\n%s%s", got, want)
		}
		direct := mustParse(t, techcrunch, Source{FeedID: feedA.Due.FeedID, FetchID: feedA.FetchID, BaseURL: feedA.URL})
		for i, e := range byFetch[feedA.FetchID] {
			if got, want := marshalLine(t, &e), marshalLine(t, &direct.Entries[i]); got != want {
				t.Errorf("entry %d differs from ParseFeed's:\n%s%s", i, got, want)
			}
		}
	})

	t.Run("garbage", func(t *testing.T) {
		f := fetches[garbage.FetchID]
		if len(byFetch[garbage.FetchID]) != 0 {
			t.Errorf("%d entries from garbage", len(byFetch[garbage.FetchID]))
		}
		if f.Parse == nil || f.Parse.Error == "" {
			t.Fatalf("parse = %+v, want an error", f.Parse)
		}
		// The message of a binary payload is the parse error alone, and
		// says so; of a text (a web page subscribed to), it adds what to
		// do about it.
		if f.Error == nil || f.Error.Class != ndjson.ClassParse || f.Error.Code != "not_a_feed" ||
			f.Error.Message != f.Parse.Error || !strings.Contains(f.Error.Message, `a binary payload (no Content-Type, it looks like application/octet-stream), starting "\x00\x01binary garbage\xff\xfe"`) {
			t.Errorf("error = %+v, want class parse, code not_a_feed, the parse error as message", f.Error)
		}
		if f.Parse.SkipHours == nil || f.Parse.SkipDays == nil || f.Parse.Warnings == nil {
			t.Errorf("a failed parse section has null lists: %+v", f.Parse)
		}
		p := fetches[page.FetchID]
		if p.Error == nil || p.Error.Code != "not_a_feed" || p.Error.Message != p.Parse.Error+"; if it is a web page, feed-sub discover "+p.Due.URL+" lists the feeds it links to" {
			t.Errorf("error of a web page = %+v, want the parse error and feed-sub discover as message", p.Error)
		}
	})

	t.Run("item limit", func(t *testing.T) {
		f := fetches[limited.FetchID]
		if f.Parse.Items != 50 || f.Parse.Entries != 20 {
			t.Errorf("items %d entries %d, want 50 and 20", f.Parse.Items, f.Parse.Entries)
		}
		// The newest twenty are those published on days 30..49.
		for _, e := range byFetch[limited.FetchID] {
			if day := e.Published.YearDay() - 1; day < 30 {
				t.Errorf("kept %q from day %d, which is not among the newest twenty", e.Title, day)
			}
		}
		if len(byFetch[limited.FetchID]) == 20 && !distinct(uidsOfEntries(byFetch[limited.FetchID])) {
			t.Errorf("kept entries repeat")
		}
		if p := f.Parse; p.NewestPublished.YearDay() != 50 || p.OldestPublished.YearDay() != 1 {
			t.Errorf("published range %s .. %s, want the whole document's", p.OldestPublished, p.NewestPublished)
		}
	})
}

func uidsOfEntries(entries []ndjson.Entry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.EntryUID)
	}
	return out
}

func TestRunFetchCases(t *testing.T) {
	st := openStore(t)
	techcrunch := readFile(t, "../../testdata/feeds/TechCrunch.xml")
	tests := []struct {
		name      string
		fetch     func() ndjson.Fetch
		entries   int
		failed    bool   // Run must return an error matching pipe.ErrFailed
		errCode   string // the fetch record's error code after parsing; "" for none
		parseErr  bool   // parse.error must be set
		unchanged bool   // the record passes through byte for byte
	}{
		{"a clean feed", func() ndjson.Fetch { return fetchRec(1, putBody(t, st, techcrunch)) }, 20, false, "", false, false},
		{"item limit larger than the feed", func() ndjson.Fetch {
			f := fetchRec(1, putBody(t, st, techcrunch))
			f.Due.ItemLimit = 50
			return f
		}, 20, false, "", false, false},
		{"a complete body marked too large is parsed", func() ndjson.Fetch {
			f := fetchRec(1, putBody(t, st, techcrunch))
			f.Truncated = true
			f.Error = &ndjson.Error{Class: ndjson.ClassTransient, Code: "body_too_large", Message: "over 64 bytes"}
			return f
		}, 20, false, "body_too_large", false, false},
		{"a body cut at the cap keeps its complete items and its fetch error", func() ndjson.Fetch {
			f := fetchRec(1, putBody(t, st, techcrunch[:len(techcrunch)/2]))
			f.Truncated = true
			f.Error = &ndjson.Error{Class: ndjson.ClassTransient, Code: "body_too_large", Message: "over the cap"}
			return f
		}, 9, false, "body_too_large", false, false},
		{"a payload missing from the store", func() ndjson.Fetch {
			return fetchRec(1, &ndjson.BlobRef{Storage: storedir.RawStorage, Key: "raw/2026-11-21/" + strings.Repeat("0", 64) + ".zst"})
		}, 0, true, "payload_unreadable", true, false},
		{"JSON that is not a feed", func() ndjson.Fetch {
			return fetchRec(1, putBody(t, st, []byte(`{"error":"rate limited"}`)))
		}, 0, true, "not_a_feed", true, false},
		{"a truncated feed keeps its complete items", func() ndjson.Fetch {
			return fetchRec(1, putBody(t, st, techcrunch[:len(techcrunch)/2]))
		}, 9, false, "", false, false},
		{"a feed cut before its first item ends fails", func() ndjson.Fetch {
			return fetchRec(1, putBody(t, st, techcrunch[:bytes.Index(techcrunch, []byte("</item>"))]))
		}, 0, true, "parse_failed", true, false},
		{"404", func() ndjson.Fetch {
			f := fetchRec(1, putBody(t, st, []byte("<html>not found</html>")))
			f.HTTPStatus = 404
			f.Error = &ndjson.Error{Class: ndjson.ClassPermanent, Code: "http_404", Message: "404 Not Found"}
			return f
		}, 0, false, "http_404", false, true},
		{"no response", func() ndjson.Fetch {
			f := fetchRec(1, nil)
			f.HTTPStatus = 0
			f.Error = &ndjson.Error{Class: ndjson.ClassTransient, Code: "timeout", Message: "timeout"}
			return f
		}, 0, false, "timeout", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.fetch()
			inLine := marshalLine(t, in)
			out, _, err := runParse(t, st, inLine)
			if tt.failed != errors.Is(err, pipe.ErrFailed) || (!tt.failed && err != nil) {
				t.Errorf("Run error = %v, want failed=%v", err, tt.failed)
			}
			if len(out) != tt.entries+1 {
				t.Fatalf("%d output lines, want %d entries and the fetch record", len(out), tt.entries)
			}
			last := out[len(out)-1]
			if tt.unchanged {
				if last != inLine {
					t.Errorf("record changed:\n%s%s", inLine, last)
				}
				return
			}
			var f ndjson.Fetch
			if err := json.Unmarshal([]byte(last), &f); err != nil {
				t.Fatal(err)
			}
			if f.Parse == nil {
				t.Fatal("no parse section")
			}
			if (f.Parse.Error != "") != tt.parseErr {
				t.Errorf("parse.error = %q, want set=%v", f.Parse.Error, tt.parseErr)
			}
			code := ""
			if f.Error != nil {
				code = f.Error.Code
			}
			if code != tt.errCode {
				t.Errorf("error = %+v, want code %q", f.Error, tt.errCode)
			}
			if f.Parse.Entries != tt.entries {
				t.Errorf("parse.entries = %d, want %d", f.Parse.Entries, tt.entries)
			}
		})
	}
}

func TestRunFiles(t *testing.T) {
	st := openStore(t)
	dir := t.TempDir()
	techcrunch := readFile(t, "../../testdata/feeds/TechCrunch.xml")
	jsonFeed := readFile(t, "../../testdata/feeds/json_feed.json")
	plain := filepath.Join(dir, "json_feed.json")
	if err := os.WriteFile(plain, jsonFeed, 0o644); err != nil {
		t.Fatal(err)
	}
	zst := st.Path(putBody(t, st, techcrunch).Key)
	if raw := readFile(t, zst); bytes.Contains(raw, []byte("<rss")) {
		t.Fatal("the store did not compress the payload; the .zst case tests nothing")
	}
	notAFeed := filepath.Join(dir, "page.html")
	if err := os.WriteFile(notAFeed, []byte("<html></html>"), 0o644); err != nil {
		t.Fatal(err)
	}
	const feedID = "00000000-0000-5000-8000-00000000000f"

	tests := []struct {
		name    string
		files   []string
		entries int
		records []string // the files that get a fetch record, in order
		failed  bool
	}{
		{"plain file", []string{plain}, 20, []string{plain}, false},
		{"zst payload", []string{zst}, 20, []string{zst}, false},
		{"both", []string{plain, zst}, 40, []string{plain, zst}, false},
		{"a bad file among good ones", []string{plain, filepath.Join(dir, "missing.xml"), notAFeed, zst}, 40, []string{plain, notAFeed, zst}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := RunFiles(context.Background(), FileConfig{
				Out: ndjson.NewWriter(&stdout), Log: slog.New(slog.NewTextHandler(&stderr, nil)),
				Store: st, FeedID: feedID, BaseURL: "https://example.org/feed", ContentType: "text/xml", Files: tt.files,
			})
			if tt.failed != errors.Is(err, pipe.ErrFailed) || (!tt.failed && err != nil) {
				t.Errorf("RunFiles error = %v, want failed=%v", err, tt.failed)
			}
			if tt.failed && !strings.Contains(err.Error(), "2 files failed") {
				t.Errorf("RunFiles error = %q, want 2 files failed", err)
			}
			if tt.failed && (!strings.Contains(stderr.String(), "missing.xml") || !strings.Contains(stderr.String(), "page.html")) {
				t.Errorf("the bad files were not reported:\n%s", stderr.String())
			}
			lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
			if len(lines) != tt.entries+len(tt.records) {
				t.Fatalf("%d lines, want %d entries and %d fetch records", len(lines), tt.entries, len(tt.records))
			}
			var records []ndjson.Fetch
			var fetchIDs []string // of the entries of the file whose record comes next
			entries := 0
			for _, line := range lines {
				var h ndjson.Header
				if err := json.Unmarshal([]byte(line), &h); err != nil {
					t.Fatal(err)
				}
				if h.Type == ndjson.TypeFetch {
					var f ndjson.Fetch
					if err := json.Unmarshal([]byte(line), &f); err != nil {
						t.Fatal(err)
					}
					if f.Parse == nil || f.Parse.Entries != entries {
						t.Errorf("the record of %s follows %d entries, but its parse section is %+v", f.BodyRef.Key, entries, f.Parse)
					}
					for _, id := range fetchIDs {
						if id != f.FetchID {
							t.Errorf("an entry of %s has raw_ref.fetch_id %q, its record %q", f.BodyRef.Key, id, f.FetchID)
						}
					}
					records, entries, fetchIDs = append(records, f), 0, nil
					continue
				}
				var e ndjson.Entry
				if err := json.Unmarshal([]byte(line), &e); err != nil {
					t.Fatal(err)
				}
				if e.Type != ndjson.TypeEntry || e.FeedID != feedID || !hex16.MatchString(e.EntryUID) {
					t.Errorf("bad entry: %s", line)
				}
				entries++
				fetchIDs = append(fetchIDs, e.RawRef.FetchID)
			}
			if len(records) != len(tt.records) {
				t.Fatalf("%d fetch records, want %d", len(records), len(tt.records))
			}
			for i, f := range records {
				name := tt.records[i]
				fi, err := os.Stat(name)
				if err != nil {
					t.Fatal(err)
				}
				if f.Check() != nil || f.BodyRef != nil || f.Due.Reason != "file" || f.ContentLength <= 0 || f.Due.FeedID != feedID || f.URL != "https://example.org/feed" ||
					f.HTTPStatus != 200 || !f.FetchedAt.Equal(ndjson.At(fi.ModTime()).Time) || f.ContentType != "text/xml" || f.BodySHA256 != "" {
					t.Errorf("record of %s: %s", name, marshalLine(t, &f))
				}
				switch {
				case name == notAFeed:
					if f.Error == nil || f.Error.Code != "not_a_feed" || f.Parse.Error == "" {
						t.Errorf("record of %s: error %+v, parse %+v, want not_a_feed", name, f.Error, f.Parse)
					}
				case f.Error != nil || f.Parse.Format == "" || f.Parse.Title == "" || f.Parse.NewestPublished.IsZero():
					t.Errorf("record of %s: error %+v, parse %+v", name, f.Error, f.Parse)
				}
			}
		})
	}

	// The .zst payload gives exactly what ParseFeed gives on the body,
	// and the record the same parse section as the pipeline writes.
	var stdout bytes.Buffer
	if err := RunFiles(context.Background(), FileConfig{Out: ndjson.NewWriter(&stdout), Store: st, FeedID: feedID, Files: []string{zst}}); err != nil {
		t.Fatal(err)
	}
	got := stdout.String()
	last := strings.LastIndex(strings.TrimSuffix(got, "\n"), "\n") + 1
	var rec ndjson.Fetch
	if err := json.Unmarshal([]byte(got[last:]), &rec); err != nil {
		t.Fatal(err)
	}
	direct := mustParse(t, techcrunch, Source{FeedID: feedID, FetchID: rec.FetchID})
	var want strings.Builder
	for i := range direct.Entries {
		want.WriteString(marshalLine(t, &direct.Entries[i]))
	}
	limit(direct, 0)
	if got[:last] != want.String() {
		t.Errorf("RunFiles over the .zst differs from ParseFeed over the body")
	}
	if g, w := marshalLine(t, rec.Parse), marshalLine(t, &direct.Info); g != w {
		t.Errorf("the record's parse section:\n%s\nwant\n%s", g, w)
	}
}

// TestRunParallel checks that parsing payloads in parallel changes
// nothing in the output: each feed's entries together, followed by its
// fetch record, everything in input order, byte for byte as with one
// worker.
func TestRunParallel(t *testing.T) {
	st := openStore(t)
	var lines []string
	for i := range 40 {
		var body []byte
		switch i % 5 {
		case 0:
			body = readFile(t, "../../testdata/feeds/TechCrunch.xml")
		case 1:
			var items []string
			for k := range 300 + i {
				items = append(items, fmt.Sprintf(`<item><title>f%d item %d</title><guid>g%d-%d</guid></item>`, i, k, i, k))
			}
			body = rssDoc(items...)
		case 2:
			body = []byte("not a feed at all")
		case 3:
			body = readFile(t, "../../testdata/feeds/json_feed.json")
		case 4:
			lines = append(lines, fmt.Sprintf(`{"type":"mystery","v":1,"n":%d}`+"\n", i))
			body = rssDoc(`<item><title>small</title></item>`)
		}
		lines = append(lines, marshalLine(t, fetchRec(i+1, putBody(t, st, body))))
	}
	run := func(workers int) (string, error) {
		var stdout bytes.Buffer
		err := Run(context.Background(), Config{In: strings.NewReader(strings.Join(lines, "")), Out: ndjson.NewWriter(&stdout), Store: st, Workers: workers})
		return stdout.String(), err
	}
	one, err1 := run(1)
	many, errMany := run(4)
	if one != many {
		t.Errorf("4 workers wrote something else than 1 worker")
	}
	if err1 == nil || errMany == nil || err1.Error() != errMany.Error() || !strings.Contains(err1.Error(), "8 payloads failed") {
		t.Errorf("errors %v and %v, want 8 payloads failed", err1, errMany)
	}
	// Entries come in runs closed by their fetch record.
	open := ""
	for _, line := range strings.SplitAfter(many, "\n") {
		if line == "" {
			continue
		}
		r := decode(t, line)
		switch r.Type {
		case ndjson.TypeEntry:
			if open != "" && open != r.RawRef.FetchID {
				t.Fatalf("entries of %s among those of %s", r.RawRef.FetchID, open)
			}
			open = r.RawRef.FetchID
		case ndjson.TypeFetch:
			if open != "" && open != r.FetchID {
				t.Fatalf("fetch record %s closes the entries of %s", r.FetchID, open)
			}
			open = ""
		}
	}
}

// failingWriter fails once it has taken n bytes.
type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.n -= len(p); w.n < 0 {
		return 0, errors.New("broken pipe")
	}
	return len(p), nil
}

// TestRunWriteError checks that a failing stdout stops the run with its
// error, whatever the workers were doing.
func TestRunWriteError(t *testing.T) {
	st := openStore(t)
	ref := putBody(t, st, readFile(t, "../../testdata/feeds/TechCrunch.xml"))
	var in strings.Builder
	for i := range 200 {
		in.WriteString(marshalLine(t, fetchRec(i+1, ref)))
	}
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Config{In: strings.NewReader(in.String()), Out: ndjson.NewWriter(&failingWriter{n: 300 << 10}), Store: st, Workers: 3})
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "broken pipe") {
			t.Errorf("Run error = %v, want the write error", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after its output failed")
	}
}

// TestRunFetchContext checks what the fetch record tells the parse: the
// Content-Type's charset, the final URL, and the fetch time that dates
// are judged against.
func TestRunFetchContext(t *testing.T) {
	st := openStore(t)
	body := encodeAs(t, "windows-1251", `<rss version="2.0"><channel><title>Новости</title><item><title>Сегодня</title><link>/n/1</link><pubDate>Sat, 21 Nov 2026 20:00:00 GMT</pubDate></item></channel></rss>`)
	f := fetchRec(1, putBody(t, st, body))
	f.ContentType = "application/rss+xml; charset=windows-1251"
	f.URL = "https://news.example/rss"
	out, _, err := runParse(t, st, marshalLine(t, f))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 {
		t.Fatalf("%d lines", len(out))
	}
	var e ndjson.Entry
	var got ndjson.Fetch
	if err := json.Unmarshal([]byte(out[0]), &e); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(out[1]), &got); err != nil {
		t.Fatal(err)
	}
	if e.Title != "Сегодня" || got.Parse.Title != "Новости" || got.Parse.Charset != "windows-1251" {
		t.Errorf("title %q, feed title %q, charset %q", e.Title, got.Parse.Title, got.Parse.Charset)
	}
	if e.CanonicalLink != "https://news.example/n/1" {
		t.Errorf("canonical_link %q", e.CanonicalLink)
	}
	// Fetched at 08:30, the item says 20:00 the same day.
	if w := strings.Join(got.Parse.Warnings, "\n"); !strings.Contains(w, "in the future") {
		t.Errorf("warnings %q lack the future date", w)
	}
	if e.Published.String() != "2026-11-21T20:00:00Z" {
		t.Errorf("published %s: a future date is kept", e.Published)
	}
}

// TestRunLimits checks that each limit fails a payload with its own code.
func TestRunLimits(t *testing.T) {
	st := openStore(t)
	deep := []byte(`<rss version="2.0"><channel><item>` + strings.Repeat("<a>", 50) + `</item></channel></rss>`)
	many := rssDoc(slices.Repeat([]string{`<item><title>x</title></item>`}, 11)...)
	big := rssDoc(`<item><title>` + strings.Repeat("x", 2000) + `</title></item>`)
	p := &Parser{MaxDepth: 20, MaxItems: 10, MaxBodyBytes: 1000}
	for _, tt := range []struct {
		body []byte
		code string
	}{{deep, "too_deep"}, {many, "too_many_items"}, {big, "payload_too_large"}} {
		var stdout bytes.Buffer
		err := Run(context.Background(), Config{In: strings.NewReader(marshalLine(t, fetchRec(1, putBody(t, st, tt.body)))), Out: ndjson.NewWriter(&stdout), Store: st, Parser: p})
		if !errors.Is(err, pipe.ErrFailed) {
			t.Errorf("%s: Run error %v", tt.code, err)
		}
		var f ndjson.Fetch
		if err := json.Unmarshal(stdout.Bytes(), &f); err != nil {
			t.Fatal(err)
		}
		if f.Error == nil || f.Error.Code != tt.code || f.Parse == nil || f.Parse.Error == "" {
			t.Errorf("error %+v, want code %s", f.Error, tt.code)
		}
	}
}

// TestRunFilesParallel is TestRunParallel for payload files.
func TestRunFilesParallel(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for i := range 30 {
		name := filepath.Join(dir, fmt.Sprintf("f%02d.xml", i))
		body := rssDoc(fmt.Sprintf(`<item><title>file %d</title></item>`, i), fmt.Sprintf(`<item><title>file %d again</title></item>`, i))
		if i%7 == 3 {
			body = []byte("<html></html>")
		}
		if err := os.WriteFile(name, body, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, name)
	}
	run := func(workers int) string {
		var stdout bytes.Buffer
		err := RunFiles(context.Background(), FileConfig{Out: ndjson.NewWriter(&stdout), FeedID: testFeedID, BaseURL: "https://example.org/feed", Files: files, Workers: workers})
		if err == nil || !strings.Contains(err.Error(), "4 files failed") {
			t.Errorf("RunFiles error %v, want 4 files failed", err)
		}
		return stdout.String()
	}
	if one, many := run(1), run(5); one != many {
		t.Errorf("5 workers wrote something else than 1 worker:\n%s\n%s", one, many)
	}
}
