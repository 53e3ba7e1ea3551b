package extract

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const scrapeTestdata = "../../testdata/scrape"

// goldenArticle is what a golden file holds for a saved page.
type goldenArticle struct {
	Title     string             `json:"title"`
	Summary   string             `json:"summary"`
	Content   string             `json:"content"`
	Text      string             `json:"text"`
	Authors   []string           `json:"authors"`
	Published string             `json:"published"`
	DateText  string             `json:"date_text,omitempty"`
	DateError string             `json:"date_error,omitempty"`
	Canonical string             `json:"canonical"`
	Images    []string           `json:"images"`
	Tags      []string           `json:"tags"`
	Extractor string             `json:"extractor"`
	Keywords  *ndjson.Derivation `json:"keywords"`
	Links     []string           `json:"links,omitempty"`
	Next      []string           `json:"next,omitempty"`
}

// render reads a saved page as feed-scrape would, with the configuration
// beside it (pages/NAME.json) if there is one.
func render(t *testing.T, name string) []byte {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(scrapeTestdata, "pages", name+".html"))
	if err != nil {
		t.Fatal(err)
	}
	var conf *ndjson.ScrapeConfig
	if raw, err := os.ReadFile(filepath.Join(scrapeTestdata, "pages", name+".json")); err == nil {
		if conf, err = ParseConfig(raw, true); err != nil {
			t.Fatalf("%s.json: %v", name, err)
		}
	}
	page, err := NewPage(body, "text/html; charset=utf-8", "https://blog.example.org/2026/11/"+name+".html")
	if err != nil {
		t.Fatal(err)
	}
	var ac *ndjson.ArticleConfig
	if conf != nil {
		ac = &conf.ArticleConfig
	}
	rules, err := CompileRules(ac)
	if err != nil {
		t.Fatal(err)
	}
	var g goldenArticle
	if conf != nil && conf.DiscoveryMode == ndjson.ModeList {
		arts, _ := CompileSelector(conf.ListConfig.ArticleSelector)
		next, _ := CompileSelector(conf.ListConfig.PaginationSelector)
		g.Links, g.Next = page.Links(arts), page.Links(next)
	} else {
		a := page.Article(rules)
		g = goldenArticle{Title: a.Title, Summary: a.Summary, Content: a.Content, Text: a.Text, Authors: a.Authors,
			Canonical: a.Canonical, Images: a.Images, Tags: a.Tags, Extractor: a.Extractor, DateText: a.DateText,
			Keywords: Keywords(a.Title, a.Text)}
		if !a.Published.IsZero() {
			g.Published = a.Published.Format(time.RFC3339)
		}
		if a.DateErr != nil {
			g.DateError = a.DateErr.Error()
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(g); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestGolden reads every saved page of testdata/scrape/pages and compares
// what comes out with testdata/scrape/golden (go test -update rewrites
// them; review the diff like code).
func TestGolden(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join(scrapeTestdata, "pages", "*.html"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no saved pages: %v", err)
	}
	for _, p := range pages {
		name := strings.TrimSuffix(filepath.Base(p), ".html")
		t.Run(name, func(t *testing.T) {
			got := render(t, name)
			path := filepath.Join(scrapeTestdata, "golden", name+".json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test ./internal/extract -update creates it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from the extraction (go test ./internal/extract -update rewrites it):\ngot:\n%s", path, got)
			}
		})
	}
}

// TestMinifluxScraperRules checks content selectors against miniflux's
// scraper testdata: the page, the rule its test uses, and the content it
// expects (testdata/scrape/miniflux, Apache-2.0).
func TestMinifluxScraperRules(t *testing.T) {
	for name, rule := range map[string]string{"img.html": "article > img", "iframe.html": "article > iframe", "p.html": "article > p"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(scrapeTestdata, "miniflux")
			body, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join(dir, name+"-result"))
			if err != nil {
				t.Fatal(err)
			}
			page, err := NewPage(body, "text/html", "https://example.org/page")
			if err != nil {
				t.Fatal(err)
			}
			rules, err := CompileRules(&ndjson.ArticleConfig{ContentSelector: rule, TitleSelector: "title"})
			if err != nil {
				t.Fatal(err)
			}
			if got := page.Article(rules).Content; got != strings.TrimSpace(string(want)) {
				t.Errorf("content:\n got %s\nwant %s", got, want)
			}
		})
	}
}

// TestCharsets reads miniflux's pages whose charset a meta element
// declares, before and after the first 1024 bytes.
func TestCharsets(t *testing.T) {
	for name, want := range map[string]struct{ charset, text string }{
		"utf8.html":                       {"utf-8", "Café"},
		"utf8-meta-after-1024.html":       {"utf-8", "Café"},
		"iso-8859-1.html":                 {"windows-1252", "Café"},
		"iso-8859-1-meta-after-1024.html": {"windows-1252", "Café"},
	} {
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join(scrapeTestdata, "miniflux", name))
			if err != nil {
				t.Fatal(err)
			}
			page, err := NewPage(body, "text/html", "https://example.org/")
			if err != nil {
				t.Fatal(err)
			}
			if page.Charset != want.charset {
				t.Errorf("charset %q, want %q", page.Charset, want.charset)
			}
			if text := Text(page.Doc.Selection.Nodes...); !strings.Contains(text, want.text) {
				t.Errorf("text %q lacks %q", text, want.text)
			}
			if title := page.Doc.Find("title").Text(); strings.ContainsRune(title, utf8.RuneError) || !utf8.ValidString(title) {
				t.Errorf("title %q was not decoded", title)
			}
		})
	}
}
