package parse

import (
	"archive/zip"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/metrics"
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
	peak    uint64 // the most heap the parse added to what was in use before
	panic   any
}

// memBudget is how much heap a parse of body may use at once: a few
// copies of the body (text, repaired text, strings, the garbage between
// collections) and a fixed overhead, whatever the document's shape.
func memBudget(body []byte) uint64 { return 64<<20 + 10*uint64(len(body)) }

// peakHeap samples the heap until stop is closed and returns the most it
// saw.
func peakHeap(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var peak uint64
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
			select {
			case <-stop:
				out <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return out
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
		// The heap is watched for documents big enough to matter; for
		// the thousands of small ones the garbage collection that makes
		// the measure exact would cost more than the parses.
		measure := len(body) >= 256<<10
		var peak <-chan uint64
		var base []metrics.Sample
		stop := make(chan struct{})
		if measure {
			runtime.GC()
			base = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
			metrics.Read(base)
			peak = peakHeap(stop)
		}
		start := time.Now()
		r.feed, r.err = ParseFeed(body, Source{FeedID: testFeedID, FetchID: testFetchID, BaseURL: "https://example.org/feed"})
		r.elapsed = time.Since(start)
		close(stop)
		if measure {
			r.peak = max(<-peak, base[0].Value.Uint64()) - base[0].Value.Uint64()
		}
	}()
	limit := 10 * parseBudget()
	select {
	case r := <-done:
		if r.panic != nil {
			t.Fatalf("%s: ParseFeed panicked: %v", name, r.panic)
		}
		if r.elapsed > parseBudget() {
			// Other load on the machine can stall one parse: a document
			// that is slow to parse is slow twice.
			start := time.Now()
			ParseFeed(body, Source{FeedID: testFeedID, FetchID: testFetchID, BaseURL: "https://example.org/feed"})
			if again := time.Since(start); again > parseBudget() {
				t.Errorf("%s: ParseFeed took %v and %v, over the %v budget", name, r.elapsed, again, parseBudget())
			}
		}
		if r.peak > memBudget(body) {
			t.Errorf("%s: ParseFeed used %d MB of heap for %d bytes, over the %d MB budget", name, r.peak>>20, len(body), memBudget(body)>>20)
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
	docs["deep nesting in utf-16"] = append([]byte{0xFF, 0xFE}, utf16le(`<rss version="2.0"><channel><item>`+strings.Repeat("<a>", depth)+`</item></channel></rss>`)...)
	docs["deep nesting of items"] = []byte(`<rss version="2.0"><channel>` + strings.Repeat("<item>", depth) + `</channel></rss>`)

	// Sizes and counts, each within the body cap.
	docs["huge attribute"] = []byte(`<rss version="2.0"><channel><item><title>t</title><enclosure url="` + strings.Repeat("x", scaled(4<<20)) + `"/></item></channel></rss>`)
	docs["huge attribute name"] = []byte(`<rss version="2.0"><channel><item><title ` + strings.Repeat("a", scaled(4<<20)) + `="1">t</title></item></channel></rss>`)
	docs["many attributes"] = []byte(`<rss version="2.0"><channel><item><title ` + manyAttrs(scaled(200_000)) + `>t</title></item></channel></rss>`)
	docs["huge element name"] = []byte(`<rss version="2.0"><channel><item><` + strings.Repeat("n", scaled(4<<20)) + `/></item></channel></rss>`)
	docs["huge text"] = []byte(`<rss version="2.0"><channel><item><description>` + strings.Repeat("lorem ipsum ", scaled(1<<19)) + `</description></item></channel></rss>`)
	docs["huge CDATA"] = []byte(`<rss version="2.0"><channel><item><description><![CDATA[` + strings.Repeat("<p>x</p>", scaled(1<<19)) + `]]></description></item></channel></rss>`)
	docs["many tiny elements"] = []byte(`<rss version="2.0"><channel><item><title>t</title>` + strings.Repeat("<a/>", scaled(1<<19)) + `</item></channel></rss>`)
	docs["many items over the cap"] = []byte(`<rss version="2.0"><channel>` + strings.Repeat("<item><title>t</title></item>", MaxItems+1) + `</channel></rss>`)
	docs["many ampersands"] = []byte(`<rss version="2.0"><channel><item><title>` + strings.Repeat("& ", scaled(1<<20)) + `</title></item></channel></rss>`)
	docs["many entities"] = []byte(`<rss version="2.0"><channel><item><title>` + strings.Repeat("&nbsp;&bogus;", scaled(1<<18)) + `</title></item></channel></rss>`)
	docs["many control characters"] = []byte(`<rss version="2.0"><channel><item><title>` + strings.Repeat("\x01", scaled(1<<20)) + `</title></item></channel></rss>`)
	docs["many unclosed elements"] = []byte(`<rss version="2.0"><channel>` + strings.Repeat("<item><title>t</title><description><p><b><i>x</description></item>", scaled(20_000/4)) + `</channel></rss>`)
	docs["many broken items"] = []byte(`<rss version="2.0"><channel>` + strings.Repeat("<item><title>a < b</title></item>", scaled(5_000)) + `</channel></rss>`)
	docs["huge json string"] = []byte(`{"version":"https://jsonfeed.org/version/1.1","items":[{"id":"1","content_html":"` + strings.Repeat("x", scaled(8<<20)) + `"}]}`)
	docs["many json items"] = []byte(`{"version":"https://jsonfeed.org/version/1.1","items":[` + strings.Repeat(`{"id":"1"},`, MaxItems) + `{}]}`)
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
			t.Logf("%v, %d MB of heap", r.elapsed.Round(time.Millisecond), r.peak>>20)
			if len(out) > 2*len(docs[name])+1<<20+1024*len(r.feed.Entries) {
				t.Errorf("output is %d bytes for a %d-byte document: an expansion got through", len(out), len(docs[name]))
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

func manyAttrs(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, ` a%d="%d"`, i, i)
	}
	return b.String()
}

func utf16le(s string) []byte {
	var b []byte
	for _, r := range s {
		b = append(b, byte(r), byte(r>>8))
	}
	return b
}

// w3cSuite is the W3C XML conformance suite, unmodified, as its licence
// asks: the tests read it from the zip.
const w3cSuite = corpusDir + "/hostile-xml/w3c-xmlconf/xmlts20130923.zip"

// testEntry matches a TEST element of the suite's catalogues.
var testEntry = regexp.MustCompile(`(?s)<TEST\b[^>]*>`)
var testAttr = regexp.MustCompile(`\b(TYPE|URI)="([^"]*)"`)

// TestW3CConformance parses every document of the W3C XML conformance
// suite: the not-well-formed ones above all, but the valid and invalid
// ones too. Each must parse or fail cleanly, in time and memory.
func TestW3CConformance(t *testing.T) {
	zr, err := zip.OpenReader(w3cSuite)
	if err != nil {
		t.Skipf("no W3C suite: %v", err)
	}
	defer zr.Close()
	refuseNetwork(t)
	files := map[string]*zip.File{}
	for _, f := range zr.File {
		files[f.Name] = f
	}
	read := func(f *zip.File) []byte {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// The type of each test document, from the catalogues.
	types := map[string]string{}
	for _, f := range zr.File {
		if !strings.HasSuffix(f.Name, ".xml") {
			continue
		}
		cat := read(f)
		if !bytes.Contains(cat, []byte("<TEST")) {
			continue
		}
		for _, m := range testEntry.FindAll(cat, -1) {
			var typ, uri string
			for _, a := range testAttr.FindAllSubmatch(m, -1) {
				switch string(a[1]) {
				case "TYPE":
					typ = string(a[2])
				case "URI":
					uri = string(a[2])
				}
			}
			if typ != "" && uri != "" {
				types[pathJoin(f.Name, uri)] = typ
			}
		}
	}
	// Each document is parsed as it is (its root is no feed's, so it is
	// refused at once), then with its root taken for an RSS channel, so
	// that all of it goes through the parser.
	counts := map[string][2]int{} // type -> parsed, failed
	for _, anyRoot := range []bool{false, true} {
		testAnyRoot = anyRoot
		for name, typ := range types {
			f := files[name]
			if f == nil {
				continue
			}
			r := timedParse(t, name, read(f))
			checkResult(t, r.feed, r.err, Source{FeedID: testFeedID})
			if !anyRoot {
				if r.err == nil {
					t.Errorf("%s: parsed as a feed", name)
				}
				continue
			}
			c := counts[typ]
			if r.err == nil {
				c[0]++
			} else {
				c[1]++
			}
			counts[typ] = c
		}
	}
	testAnyRoot = false
	total := 0
	for _, typ := range slices.Sorted(maps.Keys(counts)) {
		c := counts[typ]
		total += c[0] + c[1]
		t.Logf("%-8s %4d documents, read whole: %4d parsed, %4d failed cleanly", typ, c[0]+c[1], c[0], c[1])
	}
	if c := counts["not-wf"]; c[0]+c[1] < 900 {
		t.Errorf("only %d not-wf documents found", c[0]+c[1])
	}
	if total < 2000 {
		t.Errorf("only %d documents found", total)
	}
}

// TestParseCountingCorpus holds Parse, where the tokenizer counts the
// references repair warns of, to repairing first and then parsing, on every
// document of the shared corpus and of the W3C suite (as it is and with its
// root taken for a channel): the same entries and warnings, or the same
// error. FuzzParseCounting does the same on what the fuzzer makes.
func TestParseCountingCorpus(t *testing.T) {
	if _, err := os.Stat(corpusDir); err != nil {
		t.Skipf("no shared corpus: %v", err)
	}
	refuseNetwork(t)
	src := Source{FeedID: testFeedID, FetchID: testFetchID, BaseURL: "https://example.org/feed"}
	first := &Parser{Tracking: DefaultParser.Tracking, repairFirst: true}
	check := func(name string, body []byte) {
		got, gotErr := DefaultParser.Parse(body, src)
		want, wantErr := first.Parse(body, src)
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Errorf("%s: error %v, want %v", name, gotErr, wantErr)
			return
		}
		if gotErr == nil && feedLines(t, got) != feedLines(t, want) {
			t.Errorf("%s: the entries or warnings differ from repairing first", name)
		}
	}
	dirs := []string{"testdata", "../../testdata"}
	for _, d := range []string{"feedvalidator/testcases", "hostile-xml", "feedjira", "rome", "miniflux", "simplepie", "jsonfeed"} {
		dirs = append(dirs, filepath.Join(corpusDir, d))
	}
	n := 0
	for _, path := range testdataFiles(t, dirs...) {
		if strings.HasSuffix(path, ".zip") {
			continue
		}
		check(path, readFile(t, path))
		n++
	}
	zr, err := zip.OpenReader(w3cSuite)
	if err != nil {
		t.Fatalf("no W3C suite: %v", err)
	}
	defer zr.Close()
	defer func() { testAnyRoot = false }()
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		testAnyRoot = false
		check(f.Name, b)
		testAnyRoot = true
		check(f.Name+" (any root)", b)
		n++
	}
	if n < 3000 {
		t.Errorf("only %d documents found", n)
	}
	t.Logf("%d documents", n)
}

// pathJoin resolves a catalogue's relative URI against its own path.
func pathJoin(catalogue, uri string) string {
	dir := catalogue[:strings.LastIndex(catalogue, "/")+1]
	return filepath.ToSlash(filepath.Clean(dir + uri))
}

// scaled scales the size of a generated document down under the race
// detector, which makes the parser some ten times slower: the documents
// still show that time and memory grow with the size, not faster.
func scaled(n int) int {
	if raceEnabled {
		return n / 8
	}
	return n
}
