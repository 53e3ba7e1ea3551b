package extract

import (
	"bytes"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	readability "codeberg.org/readeck/go-readability"
	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Limits on what an article yields.
const (
	SummaryRunes = 500 // a summary made from the text is cut here (docs/design.md#scraping)
	maxImages    = 10
	maxTags      = 20
	maxAuthors   = 10
)

// Rules are an article configuration, compiled.
type Rules struct {
	title, content, author, date, image, canonical Selector
	dateFormat                                     string
}

// CompileRules compiles an article configuration (nil: no selectors, the
// page's metadata and readability only).
func CompileRules(c *ndjson.ArticleConfig) (*Rules, error) {
	r := &Rules{}
	if c == nil {
		return r, nil
	}
	for _, s := range []struct {
		dst *Selector
		src string
	}{{&r.title, c.TitleSelector}, {&r.content, c.ContentSelector}, {&r.author, c.AuthorSelector},
		{&r.date, c.DateSelector}, {&r.image, c.ImageSelector}, {&r.canonical, c.CanonicalSelector}} {
		sel, err := CompileSelector(s.src)
		if err != nil {
			return nil, err
		}
		*s.dst = sel
	}
	if c.DateFormat != "" {
		if _, err := GoLayout(c.DateFormat); err != nil {
			return nil, err
		}
		r.dateFormat = c.DateFormat
	}
	return r, nil
}

// HasContentSelector reports whether the rules select the content
// themselves rather than leave it to readability.
func (r *Rules) HasContentSelector() bool { return !r.content.Empty() }

// Article is what a page says about the article it holds. Strings are ""
// and lists empty when the page does not say.
type Article struct {
	Title     string
	Content   string // HTML; relative links made absolute
	Text      string // the content's text, white space collapsed
	Summary   string // the page's description, else the text cut at SummaryRunes
	Authors   []string
	Published time.Time // zero if unknown
	DateText  string    // the date as written, when it could not be read
	DateErr   error     // why DateText could not be read
	Canonical string    // the canonical URL the page declares, absolute
	Images    []string  // absolute http(s) URLs, the lead image first
	Tags      []string
	// Extractor names what found the content: "selector" or
	// "readability".
	Extractor string
}

// Article reads the page's article by the rules: each field from its
// selector when there is one, else from the page's metadata (og:,
// article:, meta name=author, link rel=canonical) and, for the title and
// content, readability.
func (p *Page) Article(r *Rules) Article {
	var a Article
	var rd *readability.Article // parsed on first need
	read := func() *readability.Article {
		if rd == nil {
			// readability changes the tree it reads: give it its own.
			art, err := readability.FromReader(bytes.NewReader(p.utf8), p.URL)
			if err != nil {
				art = readability.Article{}
			}
			rd = &art
		}
		return rd
	}

	// Content.
	if !r.content.Empty() {
		a.Extractor = "selector"
		sel := outermost(p.Select(r.content))
		var b strings.Builder
		sel.Each(func(_ int, s *goquery.Selection) {
			p.clean(s)
			if h, err := goquery.OuterHtml(s); err == nil {
				b.WriteString(h)
			}
		})
		a.Content = b.String()
		a.Text = Text(sel.Nodes...)
	} else {
		a.Extractor = "readability"
		art := read()
		a.Content = strings.TrimSpace(art.Content)
		a.Text = collapse(art.TextContent)
	}

	// Title.
	switch {
	case !r.title.Empty():
		a.Title = Text(p.Select(r.title).First().Nodes...)
	default:
		// The publisher's own title, then the page's headline, before
		// <title>, which often adds the site's name or is the site's
		// alone (readability's title is <title>, trimmed).
		a.Title = p.meta("og:title", "twitter:title")
		if a.Title == "" {
			a.Title = p.headline()
		}
		if a.Title == "" {
			a.Title = collapse(read().Title)
		}
		if a.Title == "" {
			a.Title = collapse(p.Doc.Find("title").First().Text())
		}
	}

	// Summary: the publisher's own description, else the start of the text.
	a.Summary = p.meta("og:description", "description", "twitter:description")
	if a.Summary == "" && rd != nil {
		a.Summary = collapse(rd.Excerpt)
	}
	if a.Summary == "" {
		a.Summary = Truncate(a.Text, SummaryRunes)
	}

	// Authors.
	if !r.author.Empty() {
		p.Select(r.author).Each(func(_ int, s *goquery.Selection) {
			a.Authors = appendNames(a.Authors, Text(s.Nodes...))
		})
	} else {
		for _, v := range p.metas("author", "article:author", "dc.creator") {
			if !strings.HasPrefix(v, "http://") && !strings.HasPrefix(v, "https://") {
				a.Authors = appendNames(a.Authors, v)
			}
		}
		if len(a.Authors) == 0 && rd != nil {
			a.Authors = appendNames(a.Authors, rd.Byline)
		}
	}
	if len(a.Authors) > maxAuthors {
		a.Authors = a.Authors[:maxAuthors]
	}

	// Publication date.
	var dateText string
	if !r.date.Empty() {
		s := p.Select(r.date).First()
		dateText = firstNonBlank(s.AttrOr("datetime", ""), s.AttrOr("content", ""), Text(s.Nodes...))
	} else {
		dateText = p.meta("article:published_time", "datepublished", "dc.date", "date")
		if dateText == "" {
			s := p.Doc.Find(`[itemprop="datePublished"]`).First()
			dateText = firstNonBlank(s.AttrOr("content", ""), s.AttrOr("datetime", ""))
		}
		if dateText == "" {
			// A <time datetime>: the article's first, else the page's.
			s := p.Doc.Find("article time[datetime], main time[datetime]").First()
			if s.Length() == 0 {
				s = p.Doc.Find("time[datetime]").First()
			}
			dateText = strings.TrimSpace(s.AttrOr("datetime", ""))
		}
		if dateText == "" {
			if t := read().PublishedTime; t != nil {
				a.Published = t.UTC()
			}
		}
	}
	if dateText != "" {
		if t, err := ParseDate(dateText, r.dateFormat); err == nil {
			a.Published = t
		} else {
			a.DateText, a.DateErr = Truncate(collapse(dateText), 100), err
		}
	}

	// Canonical link.
	if !r.canonical.Empty() {
		s := p.Select(r.canonical).First()
		a.Canonical = p.absHTTP(firstNonBlank(s.AttrOr("href", ""), s.AttrOr("content", ""), Text(s.Nodes...)))
	} else {
		a.Canonical = p.absHTTP(p.Doc.Find(`link[rel="canonical"][href]`).First().AttrOr("href", ""))
		if a.Canonical == "" {
			a.Canonical = p.absHTTP(p.meta("og:url"))
		}
	}

	// Images: the lead image, then those of the content.
	if !r.image.Empty() {
		s := p.Select(r.image).First()
		a.Images = p.addImage(a.Images, firstNonBlank(s.AttrOr("src", ""), s.AttrOr("content", ""), s.AttrOr("href", ""), s.AttrOr("data-src", "")))
	} else {
		a.Images = p.addImage(a.Images, p.meta("og:image", "og:image:url", "twitter:image"))
		if len(a.Images) == 0 && rd != nil {
			a.Images = p.addImage(a.Images, rd.Image)
		}
	}
	if a.Content != "" {
		if frag, err := goquery.NewDocumentFromReader(strings.NewReader(a.Content)); err == nil {
			frag.Find("img[src]").Each(func(_ int, s *goquery.Selection) {
				a.Images = p.addImage(a.Images, s.AttrOr("src", ""))
			})
		}
	}

	// Tags.
	for _, v := range p.metas("article:tag") {
		a.Tags = appendUnique(a.Tags, collapse(v), maxTags)
	}
	for _, v := range strings.Split(p.meta("keywords"), ",") {
		a.Tags = appendUnique(a.Tags, collapse(v), maxTags)
	}
	return a
}

// headline is the page's h1 that titles its article: of the h1s in the
// <article> (or <main>) if there are any, else of all, the longest that
// <title> repeats (a page's logo is often an h1 too, and <title> names
// the site as well), else the first; "" for a page without one.
func (p *Page) headline() string {
	h1s := p.Doc.Find("article h1, main h1")
	if h1s.Length() == 0 {
		h1s = p.Doc.Find("h1")
	}
	title := collapse(p.Doc.Find("title").First().Text())
	first, repeated := "", ""
	h1s.Each(func(_ int, s *goquery.Selection) {
		t := Text(s.Nodes...)
		if first == "" {
			first = t
		}
		if t != "" && strings.Contains(title, t) && len(t) > len(repeated) {
			repeated = t
		}
	})
	return firstNonBlank(repeated, first)
}

// meta returns the content of the first meta element named (by name,
// property or itemprop, case-insensitively) one of names, in the order of
// names.
func (p *Page) meta(names ...string) string {
	for _, n := range names {
		if v := p.metas(n); len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

// metas returns the contents of every meta element named one of names.
func (p *Page) metas(names ...string) []string {
	var out []string
	p.Doc.Find("meta[content]").Each(func(_ int, s *goquery.Selection) {
		for _, attr := range []string{"property", "name", "itemprop"} {
			key := strings.ToLower(strings.TrimSpace(s.AttrOr(attr, "")))
			if key != "" && slices.Contains(names, key) {
				if v := collapse(s.AttrOr("content", "")); v != "" {
					out = append(out, v)
				}
				return
			}
		}
	})
	return out
}

// absHTTP resolves ref against the page and returns it if it is an http(s)
// URL, else "".
func (p *Page) absHTTP(ref string) string {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return ""
	}
	abs := p.Resolve(ref)
	u, err := url.Parse(abs)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return abs
}

func (p *Page) addImage(images []string, ref string) []string {
	if abs := p.absHTTP(ref); abs != "" {
		return appendUnique(images, abs, maxImages)
	}
	return images
}

// urlAttrs are the attributes of content elements that hold a URL.
var urlAttrs = []string{"href", "src", "poster", "cite"}

// clean prepares selected content for use elsewhere: scripts and styles
// go, relative URLs become absolute. References to a place in the same
// page ("#note-1") are left as they are.
func (p *Page) clean(s *goquery.Selection) {
	s.Find("script, style, noscript, template").Remove()
	nodes := append([]*html.Node{}, s.Nodes...)
	nodes = append(nodes, s.Find("*").Nodes...)
	for _, n := range nodes {
		for i, at := range n.Attr {
			if at.Namespace != "" || !slices.Contains(urlAttrs, at.Key) {
				continue
			}
			v := strings.TrimSpace(at.Val)
			if v == "" || strings.HasPrefix(v, "#") {
				continue
			}
			if r, err := url.Parse(v); err == nil && !r.IsAbs() {
				n.Attr[i].Val = p.Base.ResolveReference(r).String()
			}
		}
	}
}

// appendNames adds the names in s, split at commas, ampersands and " and ",
// without a leading "By".
func appendNames(names []string, s string) []string {
	s = collapse(s)
	for _, sep := range []string{" and ", " & ", ";"} {
		s = strings.ReplaceAll(s, sep, ",")
	}
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		if len(n) > 3 && strings.EqualFold(n[:3], "by ") {
			n = strings.TrimSpace(n[3:])
		}
		names = appendUnique(names, n, maxAuthors+1)
	}
	return names
}

func appendUnique(list []string, s string, limit int) []string {
	if s == "" || len(list) >= limit || slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// firstNonBlank is the first of vals with more than white space, trimmed
// (cmp.Or without the trim would take "  " as a value).
func firstNonBlank(vals ...string) string {
	for _, v := range vals {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}

// Truncate cuts s to at most n runes, at a space when there is one in its
// last fifth, and marks the cut with "…".
func Truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	runes := []rune(s)[:n]
	cut := len(runes)
	for i := len(runes) - 1; i > n*4/5; i-- {
		if runes[i] == ' ' {
			cut = i
			break
		}
	}
	return strings.TrimSpace(string(runes[:cut])) + "…"
}

// outermost keeps the elements of sel that are inside no other element of
// it: a selector such as "div" also matches the divs within the first, and
// each match's HTML holds its descendants', so a hostile page of n nested
// matches would otherwise make content of n² size (a 2.5 KB page of 500
// nested divs made 1.2 MB).
func outermost(sel *goquery.Selection) *goquery.Selection {
	if sel.Length() < 2 {
		return sel
	}
	in := make(map[*html.Node]bool, sel.Length())
	for _, n := range sel.Nodes {
		in[n] = true
	}
	return sel.FilterFunction(func(_ int, s *goquery.Selection) bool {
		for a := s.Nodes[0].Parent; a != nil; a = a.Parent {
			if in[a] {
				return false
			}
		}
		return true
	})
}
