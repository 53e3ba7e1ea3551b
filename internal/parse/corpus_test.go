package parse

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// corpusDir is the shared corpus of real feeds and hostile XML, beside the
// project (see its README). CI may not have it.
const corpusDir = "../../../shared/corpus"

// parseBudget is how long one document may take to parse. The race
// detector slows parsing down several times, so it gets more.
func parseBudget() time.Duration {
	if raceEnabled {
		return 10 * time.Second
	}
	return time.Second
}

type timedResult struct {
	feed    *Feed
	err     error
	elapsed time.Duration
	panic   any
}

// timedParse parses body in a goroutine, so that a panic is reported with
// the document's name and a parse that hangs fails the test instead of
// stalling it.
func timedParse(t *testing.T, name string, body []byte) timedResult {
	t.Helper()
	done := make(chan timedResult, 1)
	go func() {
		var r timedResult
		defer func() {
			r.panic = recover()
			done <- r
		}()
		start := time.Now()
		r.feed, r.err = ParseFeed(body, Source{FeedID: testFeedID, FetchID: testFetchID, BaseURL: "https://example.org/feed"})
		r.elapsed = time.Since(start)
	}()
	limit := 10 * parseBudget()
	select {
	case r := <-done:
		if r.panic != nil {
			t.Fatalf("%s: ParseFeed panicked: %v", name, r.panic)
		}
		if r.elapsed > parseBudget() {
			t.Errorf("%s: ParseFeed took %v, over the %v budget", name, r.elapsed, parseBudget())
		}
		return r
	case <-time.After(limit):
		t.Fatalf("%s: ParseFeed still running after %v", name, limit)
		return timedResult{}
	}
}

// outputOf is the NDJSON a parse writes: the feed's facts and its entries.
func outputOf(t *testing.T, f *Feed) []byte {
	t.Helper()
	if f == nil {
		return nil
	}
	var buf bytes.Buffer
	buf.Write([]byte(marshalLine(t, f.Info)))
	for i := range f.Entries {
		buf.Write([]byte(marshalLine(t, &f.Entries[i])))
	}
	return buf.Bytes()
}

// refuseNetwork makes any HTTP request through the default transport fail
// the test: parsing must never fetch what a document points at.
func refuseNetwork(t *testing.T) {
	t.Helper()
	orig := http.DefaultTransport
	http.DefaultTransport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		t.Errorf("a parse tried to fetch %s", r.URL)
		return nil, fmt.Errorf("network refused by the test")
	})
	t.Cleanup(func() { http.DefaultTransport = orig })
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestCorpus(t *testing.T) {
	if _, err := os.Stat(corpusDir); err != nil {
		t.Skipf("no shared corpus: %v", err)
	}
	refuseNetwork(t)
	var dirs []string
	for _, d := range []string{"feedvalidator/testcases", "hostile-xml", "feedjira", "rome", "miniflux", "simplepie", "jsonfeed"} {
		dirs = append(dirs, filepath.Join(corpusDir, d))
	}
	type timing struct {
		name    string
		elapsed time.Duration
		size    int
	}
	var timings []timing
	parsed, rejected := 0, 0
	for _, path := range testdataFiles(t, dirs...) {
		if strings.HasSuffix(path, ".zip") {
			continue // the W3C suite, to be read in place only
		}
		name, _ := filepath.Rel(corpusDir, path)
		body := readFile(t, path)
		r := timedParse(t, name, body)
		timings = append(timings, timing{name, r.elapsed, len(body)})
		if r.err != nil {
			if strings.Contains(r.err.Error(), "nests elements more than") {
				t.Errorf("%s: a real document refused for its depth: %v", name, r.err)
			}
			rejected++
		} else {
			parsed++
		}
		// The same checks as the fuzzer's, on the result already in hand.
		checkResult(t, r.feed, r.err, Source{FeedID: testFeedID})
	}
	if parsed+rejected < 1500 {
		t.Errorf("only %d corpus files found", parsed+rejected)
	}
	slices.SortFunc(timings, func(a, b timing) int { return cmp.Compare(b.elapsed, a.elapsed) })
	t.Logf("%d files: %d parsed, %d rejected; slowest:", parsed+rejected, parsed, rejected)
	for _, tm := range timings[:min(5, len(timings))] {
		t.Logf("  %v  %s (%d bytes)", tm.elapsed.Round(time.Microsecond), tm.name, tm.size)
	}
}

// canary is a file whose content must never show up in a parse.
func canary(t *testing.T) (path, secret string) {
	t.Helper()
	secret = "feedpipe-canary-" + fmt.Sprint(time.Now().UnixNano())
	path = filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(path, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, secret
}

// hostileDocs are documents built at run time: too big to keep, or
// pointing at a file of this run.
func hostileDocs(t *testing.T, canaryPath string) map[string][]byte {
	t.Helper()
	fileURL := "file://" + filepath.ToSlash(canaryPath)
	docs := map[string][]byte{}

	docs["xxe canary in rss"] = []byte(`<?xml version="1.0"?>
<!DOCTYPE rss [<!ENTITY secret SYSTEM "` + fileURL + `">]>
<rss version="2.0"><channel><title>&secret;</title><description>&secret;</description>
<item><title>&secret;</title><link>https://example.org/&secret;</link><description>&secret;</description><guid>&secret;</guid></item>
</channel></rss>`)
	docs["xxe canary as parameter entity"] = []byte(`<?xml version="1.0"?>
<!DOCTYPE rss [<!ENTITY % secret SYSTEM "` + fileURL + `"> %secret;]>
<rss version="2.0"><channel><item><title>t</title><description>%secret;</description></item></channel></rss>`)
	docs["canary as external dtd"] = []byte(`<?xml version="1.0"?>
<!DOCTYPE feed SYSTEM "` + fileURL + `">
<feed xmlns="http://www.w3.org/2005/Atom"><entry><id>1</id><title>t</title></entry></feed>`)
	docs["xinclude of the canary"] = []byte(`<?xml version="1.0"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:xi="http://www.w3.org/2001/XInclude"><entry><id>1</id>
<content type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml"><xi:include href="` + fileURL + `" parse="text"/></div></content></entry></feed>`)

	// Quadratic blow-up: one 50 KB entity used 50,000 times would expand
	// to 2.5 GB.
	big := strings.Repeat("A", 50_000)
	docs["quadratic blow-up in rss"] = []byte(`<?xml version="1.0"?>
<!DOCTYPE rss [<!ENTITY a "` + big + `">]>
<rss version="2.0"><channel><item><title>q</title><description>` + strings.Repeat("&a;", 50_000) + `</description></item></channel></rss>`)

	// Deep nesting, which the suites build in code rather than ship.
	const depth = 100_000
	nest := func(open, close string) string {
		return strings.Repeat(open, depth) + "x" + strings.Repeat(close, depth)
	}
	docs["deep nesting in channel"] = []byte(`<rss version="2.0"><channel>` + nest("<a>", "</a>") + `<item><title>t</title></item></channel></rss>`)
	docs["deep nesting in an item extension"] = []byte(`<rss version="2.0" xmlns:x="urn:x"><channel><item><title>t</title>` + nest("<x:a>", "</x:a>") + `</item></channel></rss>`)
	docs["deep nesting in a description"] = []byte(`<rss version="2.0"><channel><item><title>t</title><description>` + nest("<b>", "</b>") + `</description></item></channel></rss>`)
	docs["deep nesting in atom xhtml content"] = []byte(`<feed xmlns="http://www.w3.org/2005/Atom"><entry><id>1</id><content type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml">` +
		nest("<div>", "</div>") + `</div></content></entry></feed>`)
	docs["deep nesting unclosed"] = []byte(`<rss version="2.0"><channel><item>` + strings.Repeat("<a>", depth))
	docs["deep nesting in json feed"] = []byte(`{"version":"https://jsonfeed.org/version/1.1","items":[{"id":"1","_x":` + nest("[", "]") + `}]}`)
	docs["deep nesting of json objects"] = []byte(`{"version":"https://jsonfeed.org/version/1.1","items":[{"id":"1","_x":` + nest(`{"a":`, "}") + `}]}`)
	return docs
}

func TestHostile(t *testing.T) {
	refuseNetwork(t)
	canaryPath, secret := canary(t)
	docs := hostileDocs(t, canaryPath)
	for _, path := range testdataFiles(t, "testdata/hostile") {
		docs[filepath.ToSlash(path)] = readFile(t, path)
	}
	if len(docs) < 30 {
		t.Fatalf("only %d hostile documents", len(docs))
	}
	// Strings that would show that a file was read or an entity expanded.
	forbidden := []string{
		"root:", // /etc/passwd
		secret,
		"localhost", // /etc/hosts
		strings.Repeat("lol", 100),
		strings.Repeat("dos", 100),
		strings.Repeat("1234567890", 10),
		strings.Repeat("A", 100_000),
	}
	parsed := 0
	for _, name := range slices.Sorted(maps.Keys(docs)) {
		t.Run(name, func(t *testing.T) {
			r := timedParse(t, name, docs[name])
			checkResult(t, r.feed, r.err, Source{FeedID: testFeedID})
			if r.err != nil {
				return
			}
			parsed++
			out := outputOf(t, r.feed)
			if len(out) > 1<<20 {
				t.Errorf("output is %d bytes: an expansion got through", len(out))
			}
			for _, s := range forbidden {
				if bytes.Contains(out, []byte(s)) {
					t.Errorf("output contains %.40q:\n%.500s", s, out)
				}
			}
		})
	}
	// The feed-shaped attacks must reach the parser rather than be turned
	// away at detection, or this test proves little.
	if parsed < 8 {
		t.Errorf("only %d hostile documents parsed as feeds", parsed)
	}
}

// TestHostileEntitiesStayLiteral checks what becomes of an entity the
// parser does not expand: it is kept as written or dropped, never
// replaced by what it points at.
func TestHostileEntitiesStayLiteral(t *testing.T) {
	tests := []struct {
		file   string
		entity string
	}{
		{"rss-xxe-passwd.xml", "passwd"},
		{"atom-xxe-external-dtd.xml", "passwd"},
		{"rss-billion-laughs.xml", "lol9"},
		{"atom-billion-laughs.xml", "a9"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			feed := mustParse(t, readFile(t, "testdata/hostile/feedpipe/"+tt.file), testSource(tt.file))
			if len(feed.Entries) != 1 {
				t.Fatalf("%d entries, want 1", len(feed.Entries))
			}
			e := feed.Entries[0]
			for field, v := range map[string]string{"feed title": feed.Info.Title, "title": e.Title, "summary": e.Summary, "content": e.Content} {
				if v != "" && !strings.Contains(v, "&"+tt.entity+";") && !strings.Contains(v, "&amp;"+tt.entity+";") {
					t.Errorf("%s = %.80q: the entity became something else", field, v)
				}
			}
			if e.Title == "" && e.Summary == "" {
				t.Errorf("title and summary both empty: the test shows nothing")
			}
		})
	}
}
