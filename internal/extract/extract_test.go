package extract

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
	"golang.org/x/net/html"
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

// TestArticleTitleAndDateWithoutSelectors: a page read without selectors
// (direct mode) takes its title from og:title, else its headline (the h1
// of the article, the one <title> repeats, or the only one) before
// <title>, and its date from article:published_time, else a <time
// datetime> (the article's first).
func TestArticleTitleAndDateWithoutSelectors(t *testing.T) {
	const body = `<p>` + "Some words of the article, long enough for readability to take it as the content of the page. " + `</p>`
	for _, tc := range []struct {
		name, head, page string
		title, date      string
	}{
		{"og:title first", `<title>Welcome to our example website</title><meta property="og:title" content="From the Graph">`,
			`<h1>The Real Headline</h1>` + body, "From the Graph", ""},
		{"the h1 before <title>", `<title>Welcome to our example website</title>`,
			`<h1>The Real Headline</h1>` + body, "The Real Headline", ""},
		{"the article's h1 before the logo's", `<title>Welcome to our example website</title>`,
			`<header><h1>Example Site</h1></header><article><h1>The Real Headline</h1>` + body + `</article>`, "The Real Headline", ""},
		{"the h1 that <title> repeats", `<title>The Real Headline · Example Site</title>`,
			`<h1>Example</h1><h1>The Real Headline</h1>` + body, "The Real Headline", ""},
		{"<title> without an h1", `<title>Welcome to our example website</title>`, body, "Welcome to our example website", ""},
		{"article:published_time", `<title>Welcome to our example website</title><meta property="article:published_time" content="2026-03-04T05:06:07Z">`,
			body + `<time datetime="2020-01-01T00:00:00Z">then</time>`, "Welcome to our example website", "2026-03-04T05:06:07Z"},
		{"<time datetime>", `<title>Welcome to our example website</title>`,
			`<article><p>Posted <time datetime="2026-03-04T05:06:07+01:00">4 March</time></p>` + body + `</article>`, "Welcome to our example website", "2026-03-04T04:06:07Z"},
		{"the article's <time> first", `<title>Welcome to our example website</title>`,
			`<aside><time datetime="2019-01-01">old</time></aside><article><time datetime="2026-03-04">4 March</time>` + body + `</article>`, "Welcome to our example website", "2026-03-04T00:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page, err := NewPage([]byte(`<!DOCTYPE html><html><head>`+tc.head+`</head><body>`+tc.page+`</body></html>`), "text/html; charset=utf-8", "https://example.org/post")
			if err != nil {
				t.Fatal(err)
			}
			rules, err := CompileRules(&ndjson.ArticleConfig{})
			if err != nil {
				t.Fatal(err)
			}
			a := page.Article(rules)
			date := ""
			if !a.Published.IsZero() {
				date = a.Published.UTC().Format("2006-01-02T15:04:05Z")
			}
			if a.Title != tc.title || date != tc.date {
				t.Errorf("title %q, date %q; want %q, %q", a.Title, date, tc.title, tc.date)
			}
		})
	}
}

// TestContentOfNestedMatches: a content selector that also matches
// elements inside its first match gives each part of the page once, so
// that n nested matches make content of the page's size, not n² (a
// hostile page of 500 nested divs made 1.2 MB of content from 2.5 KB).
func TestContentOfNestedMatches(t *testing.T) {
	for _, tc := range []struct {
		name, page, selector string
		content, text        string
	}{
		{"nested once", `<div>a<div>b</div></div>`, "div", `<div>a<div>b</div></div>`, "a b"},
		{"siblings kept", `<p>a</p><p>b</p>`, "p", `<p>a</p><p>b</p>`, "a b"},
		{"deeper, then a sibling", `<div>a<section><div>b</div></section></div><div>c</div>`, "div", `<div>a<section><div>b</div></section></div><div>c</div>`, "a b c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page, err := NewPage([]byte(`<html><body>`+tc.page+`</body></html>`), "text/html; charset=utf-8", "https://example.org/post")
			if err != nil {
				t.Fatal(err)
			}
			rules, err := CompileRules(&ndjson.ArticleConfig{ContentSelector: tc.selector})
			if err != nil {
				t.Fatal(err)
			}
			if a := page.Article(rules); a.Content != tc.content || a.Text != tc.text {
				t.Errorf("content %q, text %q; want %q, %q", a.Content, a.Text, tc.content, tc.text)
			}
		})
	}
	body := strings.Repeat("<div>", 500) + "x"
	page, err := NewPage([]byte(body), "text/html", "https://example.org/post")
	if err != nil {
		t.Fatal(err)
	}
	rules, err := CompileRules(&ndjson.ArticleConfig{ContentSelector: "div"})
	if err != nil {
		t.Fatal(err)
	}
	if a := page.Article(rules); len(a.Content) > 3*len(body) {
		t.Errorf("500 nested divs of %d bytes made %d bytes of content", len(body), len(a.Content))
	}
}

// depthOf is how deep n's descendants nest below it.
func depthOf(n *html.Node) int {
	d := 0
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		d = max(d, 1+depthOf(c))
	}
	return d
}

// TestDeepPagesAreCapped: below maxDepth a page's nodes keep only their
// text, so that a selector's descendant combinators cannot take minutes
// on a page of nested divs; every real page of the test data nests less
// deeply, and is left whole.
func TestDeepPagesAreCapped(t *testing.T) {
	body := strings.Repeat("<div>", 500) + "deep <a href=/x>text</a>"
	page, err := NewPage([]byte(body), "text/html", "https://example.org/a")
	if err != nil {
		t.Fatal(err)
	}
	if d := depthOf(page.Doc.Nodes[0]); d > maxDepth+1 {
		t.Fatalf("the page nests %d levels, over %d", d, maxDepth+1)
	}
	if got := page.Doc.Text(); got != "deep text" {
		t.Fatalf("its text: %q", got)
	}
	rules, err := CompileRules(&ndjson.ArticleConfig{TitleSelector: "dv div div div", ContentSelector: "div"})
	if err != nil {
		t.Fatal(err)
	}
	if a := page.Article(rules); !strings.Contains(a.Text, "deep text") {
		t.Fatalf("the article's text: %q", a.Text)
	}
	pages, _ := filepath.Glob(filepath.Join(scrapeTestdata, "pages", "*.html"))
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := html.Parse(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if d := depthOf(doc); d >= maxDepth {
			t.Errorf("%s nests %d levels: capped at %d", p, d, maxDepth)
		}
	}
}
