package opml

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// expect is what Parse must find in one real file.
type expect struct {
	distinct  int  // distinct feed URLs
	outlines  int  // feed outlines, repeats included; -1 to not check
	malformed bool // not well-formed XML: a warning is due
	noOPML    bool // neither <opml> nor <outline>: the error is due
	inFolder  bool // every feed sits in the file's one folder: each has that folder's name, and only it, as labels
}

// inFolderFile reports whether every feed of the corpus file name sits in
// one folder, the same for all. That holds for the awesome-rss-feeds
// with_category files: each has one folder outline (no xmlUrl, not
// self-closing) before its first feed and one </outline> after its last,
// and no category attributes (checked with grep over all 59 files). Many
// of them are not well-formed, so the feeds after the failure point are
// found by the scanner and must still get the folder's label.
func inFolderFile(name string) bool {
	return strings.HasPrefix(name, "opml/awesome-rss-feeds/") && strings.Contains(name, "/with_category/")
}

// testdataFiles are copies of shared-corpus files (paths as in the corpus's
// INDEX.ndjson), with counts from that index: distinct_xmlUrl for
// well-formed files; for malformed ones the distinct values of
// xmlUrl="..." attributes, all of which Parse recovers.
var testdataFiles = map[string]expect{
	"opml/engineering-blogs/engineering_blogs.opml":                             {distinct: 420, outlines: 422},
	"opml/infosec-opml/feeds.xml":                                               {distinct: 341, outlines: 492}, // many repeats
	"opml/awesome-rss-feeds/countries/with_category/Brazil.opml":                {distinct: 7, outlines: 7},
	"opml/awesome-rss-feeds/countries/with_category/Russia.opml":                {distinct: 13, outlines: 13, malformed: true}, // '"' in values
	"opml/awesome-rss-feeds/countries/without_category/Canada.opml":             {distinct: 10, outlines: 10, malformed: true}, // bare '&' only
	"opml/awesome-rss-feeds/recommended/with_category/Android Development.opml": {distinct: 32, outlines: 32, malformed: true}, // '&', raw HTML in values
	"opml/awesome-rss-feeds/recommended/with_category/History.opml":             {distinct: 11, outlines: 11, malformed: true}, // '"' and raw HTML in values
	"opml/node-opmlparser/test/opml/malformed.opml":                             {distinct: 15, outlines: 15, malformed: true}, // starts mid-element, a cut tag
	"opml/node-opmlparser/test/opml/categories.opml":                            {distinct: 0, outlines: 0},                    // category attribute, no feeds
	"opml/holllo-opml/opml_api/tests/samples/invalid_xml.opml":                  {malformed: true, noOPML: true},               // "{not xml :)"
	"opml/holllo-opml/opml_api/tests/samples/invalid_opml_no_outlines.opml":     {distinct: 0, outlines: 0},                    // empty body
	"opml/holllo-opml/opml_api/tests/samples/valid_opml_with_everything.opml":   {distinct: 2, outlines: 2},                    // every attribute
	"opml/opml-go/testdata/feedreader/feedly.opml":                              {distinct: 5, outlines: 5},                    // Feedly export
	"opml/opml-go/testdata/feedreader/newsblur.opml":                            {distinct: 5, outlines: 5},                    // NewsBlur export
	"feedvalidator/testcases/opml/errors/closedbody.opml":                       {distinct: 1, outlines: 1},                    // outline after <body/>
	"feedvalidator/testcases/opml/errors/missingTitleAttribute.opml":            {distinct: 1, outlines: 1},                    // text only
	"feedvalidator/testcases/opml/errors/notwellformed.opml":                    {distinct: 1, outlines: 1, malformed: true},   // bare '&'
	"feedvalidator/testcases/opml/errors/notEncoded.opml":                       {distinct: 0, outlines: 0, malformed: true},   // '<' in a value, no feeds
	"feedvalidator/testcases/opml/errors/missingOpml.opml":                      {noOPML: true},                                // <haha/>
	"feedvalidator/testcases/opml/errors/subscriptionListErrors1.opml":          {distinct: 1, outlines: 4},                    // one xmlurl in lower case
	"feedvalidator/testcases/opml/errors/subscriptionListErrors2.opml":          {distinct: 1, outlines: 4},
	"feedvalidator/testcases/opml/errors/subscriptionListErrors3.opml":          {distinct: 1, outlines: 4},
	"feedvalidator/testcases/opml/errors/subscriptionListErrors4.opml":          {distinct: 1, outlines: 4},
}

func TestTestdata(t *testing.T) {
	seen := map[string]bool{}
	err := filepath.WalkDir("testdata", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !isDocument(path) {
			return err
		}
		name := filepath.ToSlash(strings.TrimPrefix(path, "testdata"+string(filepath.Separator)))
		want, ok := testdataFiles[name]
		if !ok {
			t.Errorf("%s: no expectation in testdataFiles", name)
			return nil
		}
		seen[name] = true
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		want.inFolder = inFolderFile(name)
		checkFile(t, name, data, want)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name := range testdataFiles {
		if !seen[name] {
			t.Errorf("%s: listed but not in testdata", name)
		}
	}
}

// TestCorpus reads every file of the shared corpus's OPML index, when the
// corpus is there (CI may not have it).
func TestCorpus(t *testing.T) {
	root := filepath.Join("..", "..", "..", "shared", "corpus")
	index, err := os.ReadFile(filepath.Join(root, "opml", "INDEX.ndjson"))
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("shared corpus not present")
	}
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(index))
	for sc.Scan() {
		var e struct {
			File     string `json:"file"`
			OK       bool   `json:"xml_ok"`
			Root     string `json:"root"`
			Outlines int    `json:"outlines"`
			Distinct int    `json:"distinct_xmlUrl"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("INDEX.ndjson: %v", err)
		}
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(e.File)))
		if err != nil {
			t.Errorf("%s: %v", e.File, err)
			continue
		}
		want := expect{distinct: e.Distinct, outlines: -1, inFolder: inFolderFile(e.File)}
		if e.OK {
			want.noOPML = !strings.EqualFold(e.Root, "opml") && e.Outlines == 0
		} else {
			// The index has only a raw count of xmlUrl="..." for these.
			want.malformed = true
			want.distinct = len(regexURLs(data))
			lower := bytes.ToLower(data)
			want.noOPML = !bytes.Contains(lower, []byte("<outline")) && !bytes.Contains(lower, []byte("<opml"))
		}
		if tw, ok := testdataFiles[e.File]; ok && tw != (expect{}) {
			if tw.distinct != want.distinct || tw.noOPML != want.noOPML || tw.malformed != want.malformed {
				t.Errorf("%s: testdataFiles says %+v, the corpus index %+v", e.File, tw, want)
			}
		}
		checkFile(t, e.File, data, want)
		n++
	}
	if n < 150 {
		t.Errorf("read %d files from the index, want all of them", n)
	}
}

// regexURLs is what a plain regexp finds: the distinct trimmed values of
// xmlUrl="..." attributes.
func regexURLs(data []byte) map[string]bool {
	urls := map[string]bool{}
	for _, m := range xmlURLAttr.FindAllSubmatch(data, -1) {
		if u := strings.TrimSpace(unescape(string(m[1]))); u != "" {
			urls[u] = true
		}
	}
	return urls
}

var xmlURLAttr = regexp.MustCompile(`(?i)\sxmlurl\s*=\s*"([^"]*)"`)

func checkFile(t *testing.T, name string, data []byte, want expect) {
	t.Helper()
	res, err := Parse(bytes.NewReader(data))
	if want.noOPML {
		if err == nil || err.Error() != errNotOPML.Error() {
			t.Errorf("%s: err = %v, want %v", name, err, errNotOPML)
		}
		return
	}
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	checkResult(t, name, res)
	urls := map[string]bool{}
	for _, o := range res.Outlines {
		urls[o.URL] = true
	}
	if len(urls) != want.distinct {
		t.Errorf("%s: %d distinct URLs, want %d", name, len(urls), want.distinct)
	}
	if want.malformed {
		// Nothing a regexp finds may be missed.
		for u := range regexURLs(data) {
			if !urls[u] {
				t.Errorf("%s: missed %q", name, u)
			}
		}
	}
	if want.outlines >= 0 && len(res.Outlines) != want.outlines {
		t.Errorf("%s: %d outlines, want %d", name, len(res.Outlines), want.outlines)
	}
	if want.malformed != (len(res.Warnings) > 0) {
		t.Errorf("%s: warnings %q, want some: %v", name, res.Warnings, want.malformed)
	}
	if want.inFolder {
		checkInFolder(t, name, res)
	}
}

// checkInFolder checks that every feed has one label, the same for all.
func checkInFolder(t *testing.T, name string, res Result) {
	t.Helper()
	if len(res.Outlines) == 0 {
		t.Errorf("%s: no feeds", name)
		return
	}
	folder := ""
	unlabeled := 0
	for _, o := range res.Outlines {
		switch {
		case len(o.Labels) == 0:
			unlabeled++
		case len(o.Labels) > 1:
			t.Errorf("%s: line %d: %q has labels %q, want only the folder", name, o.Line, o.URL, o.Labels)
		case folder == "":
			folder = o.Labels[0]
		case o.Labels[0] != folder:
			t.Errorf("%s: line %d: %q has label %q, want the folder %q", name, o.Line, o.URL, o.Labels[0], folder)
		}
	}
	if unlabeled > 0 {
		t.Errorf("%s: %d of %d feeds without a label, want all in the folder %q (warnings %q)", name, unlabeled, len(res.Outlines), folder, res.Warnings)
	}
}

// checkResult checks what holds for every result.
func checkResult(t *testing.T, name string, res Result) {
	t.Helper()
	if res.Outlines == nil {
		t.Errorf("%s: Outlines is nil", name)
	}
	for _, o := range res.Outlines {
		if o.URL == "" || o.URL != strings.TrimSpace(o.URL) {
			t.Errorf("%s: bad URL %q", name, o.URL)
		}
		if o.Title != strings.TrimSpace(o.Title) {
			t.Errorf("%s: untrimmed title %q", name, o.Title)
		}
		if o.Labels == nil {
			t.Errorf("%s: %q has nil Labels", name, o.URL)
		}
		seen := map[string]bool{}
		for _, l := range o.Labels {
			if l == "" || l != strings.TrimSpace(l) || seen[l] {
				t.Errorf("%s: %q has bad labels %q", name, o.URL, o.Labels)
			}
			seen[l] = true
		}
		if o.Line < 1 {
			t.Errorf("%s: %q has line %d", name, o.URL, o.Line)
		}
	}
	for _, w := range res.Warnings {
		if w == "" || strings.Contains(w, "\n") {
			t.Errorf("%s: warning %q is not one line", name, w)
		}
	}
}

func isDocument(path string) bool {
	ext := filepath.Ext(path)
	return ext == ".opml" || ext == ".xml"
}
