package extract

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

func TestKeywordsDeterministic(t *testing.T) {
	text := "The engine computes. The ENGINE weaves; engines, looms and the loom's cards: 1842, 1843."
	first := Keywords("The engine", text)
	for range 20 {
		if got := Keywords("The engine", text); !reflect.DeepEqual(got, first) {
			t.Fatalf("keywords differ between runs:\n%v\n%v", got, first)
		}
	}
	if first.Extractor != KeywordExtractor || first.Version != KeywordVersion || first.Kind != ndjson.DerivationKeywords {
		t.Errorf("derivation %+v does not name its extractor", first)
	}
	if first.Keywords[0].Term != "engine" || first.Keywords[0].Score != 0.3333 {
		t.Errorf("top keyword %+v, want engine 0.3333", first.Keywords[0])
	}
	for _, k := range first.Keywords {
		if k.Term == "the" || k.Term == "and" || k.Term == "1842" || k.Term == "loom's" {
			t.Errorf("%q is a stop word or a number", k.Term)
		}
	}
	if Keywords("", "the and of 12") != nil {
		t.Error("a text of stop words has keywords")
	}
}

func TestTruncate(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"one two three four five six", 14, "one two three…"},
		{"ééééééééééé", 5, "ééééé…"},
	} {
		if got := Truncate(tt.in, tt.n); got != tt.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

func TestIsHTML(t *testing.T) {
	for _, tt := range []struct {
		ctype, body string
		want        bool
	}{
		{"text/html; charset=utf-8", "", true},
		{"application/xhtml+xml", "", true},
		{"", "<!DOCTYPE html><p>x", true},
		{"application/octet-stream", "<html><body>", true},
		{"application/pdf", "%PDF-1.4", false},
		{"application/rss+xml", "<rss>", false},
		{"", "%PDF-1.4", false},
	} {
		if got := IsHTML(tt.ctype, []byte(tt.body)); got != tt.want {
			t.Errorf("IsHTML(%q, %q) = %v", tt.ctype, tt.body, got)
		}
	}
}

func TestFeedLinks(t *testing.T) {
	page, err := NewPage([]byte(`<html><head>
<link rel="alternate" type="application/rss+xml" title=" Posts " href="/feed.xml">
<link rel="ALTERNATE stylesheet" type="application/atom+xml" href="atom.xml">
<link rel="alternate" type="text/html" hreflang="fr" href="/fr/">
<link rel="alternate" type="application/feed+json" href="/feed.xml">
<link rel="alternate" type="application/feed+json; charset=utf-8" href="/feed.json">
</head></html>`), "text/html", "https://example.org/blog/")
	if err != nil {
		t.Fatal(err)
	}
	got := page.FeedLinks()
	want := []FeedLink{
		{URL: "https://example.org/feed.xml", Type: "application/rss+xml", Title: "Posts"},
		{URL: "https://example.org/blog/atom.xml", Type: "application/atom+xml"},
		{URL: "https://example.org/feed.json", Type: "application/feed+json"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FeedLinks:\n got %+v\nwant %+v", got, want)
	}
}

// FuzzArticle reads arbitrary bytes as a page with arbitrary selectors:
// nothing may crash, and what comes out is valid UTF-8.
func FuzzArticle(f *testing.F) {
	pages, _ := filepath.Glob(filepath.Join(scrapeTestdata, "pages", "*.html"))
	for i, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		sels := []string{"h1", "div.body", "ul.posts a, a", ":is(p, li)"}
		f.Add(b, sels[i%len(sels)], sels[(i+1)%len(sels)])
	}
	f.Add([]byte("<p>\xff\xfe<b>x"), "b", "")
	f.Add([]byte(strings.Repeat("<div>", 5000)), "div div div", "div")
	f.Fuzz(func(t *testing.T, body []byte, title, content string) {
		rules, err := CompileRules(&ndjson.ArticleConfig{TitleSelector: title, ContentSelector: content, DateSelector: title, AuthorSelector: content})
		if err != nil {
			return
		}
		page, err := NewPage(body, "text/html", "https://example.org/a/b")
		if err != nil {
			return
		}
		a := page.Article(rules)
		for _, s := range append([]string{a.Title, a.Summary, a.Text}, a.Authors...) {
			if !utf8Valid(s) {
				t.Fatalf("invalid UTF-8 out: %q", s)
			}
		}
		sel, _ := CompileSelector(content)
		for _, l := range page.Links(sel) {
			_ = l
		}
		Keywords(a.Title, a.Text)
	})
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }
