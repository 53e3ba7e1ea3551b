// Package extract reads web pages for feed-scrape and feed-sub discover:
// an article's title, content, authors, date, images and metadata by CSS
// selectors (goquery) or by readability, the links of a list page, the
// feeds a page announces, and keywords from text.
package extract

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"
)

// ErrNotHTML is returned by NewPage for a body that is not an HTML page.
var ErrNotHTML = errors.New("not an HTML page")

// Page is an HTML page, parsed.
type Page struct {
	URL     *url.URL // where the page was fetched from, after redirects
	Base    *url.URL // what its relative links resolve against: <base href>, else URL
	Doc     *goquery.Document
	Charset string // the encoding the body was read as
	utf8    []byte // the page as UTF-8, for a second parse by readability
}

// NewPage parses body, served with contentType ("" if unknown) from
// pageURL. A body whose type says it is something else than HTML (a PDF,
// an image, a feed) is ErrNotHTML.
func NewPage(body []byte, contentType, pageURL string) (*Page, error) {
	if !IsHTML(contentType, body) {
		mt, _, _ := mime.ParseMediaType(contentType)
		return nil, fmt.Errorf("extract: %w (%s)", ErrNotHTML, mt)
	}
	u, err := url.Parse(pageURL)
	if err != nil {
		return nil, fmt.Errorf("extract: page URL: %w", err)
	}
	text, cs := ToUTF8(body, contentType)
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("extract: %w", err)
	}
	for _, n := range doc.Nodes {
		capDepth(n, 0)
	}
	p := &Page{URL: u, Base: u, Doc: doc, Charset: cs, utf8: text}
	if href, ok := doc.Find("base[href]").First().Attr("href"); ok {
		if b, err := u.Parse(strings.TrimSpace(href)); err == nil && (b.Scheme == "http" || b.Scheme == "https") {
			p.Base = b
		}
	}
	return p, nil
}

// maxDepth is how deep a page's nodes nest before what lies deeper is
// kept as its text alone. A CSS selector's descendant combinators match
// in a time that grows with the depth to the power of their number (a
// hostile page of 500 nested divs and the selector "x div div div" took
// 19 s of CPU; at this depth, 3 ms), and real pages nest a few dozen
// levels.
const maxDepth = 64

// capDepth replaces the children of every node maxDepth levels below n
// with their text.
func capDepth(n *html.Node, depth int) {
	if depth == maxDepth {
		if n.FirstChild == nil {
			return
		}
		var text strings.Builder
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			textOf(&text, c)
		}
		for n.FirstChild != nil {
			n.RemoveChild(n.FirstChild)
		}
		if text.Len() > 0 {
			n.AppendChild(&html.Node{Type: html.TextNode, Data: text.String()})
		}
		return
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		capDepth(c, depth+1)
	}
}

// textOf adds the text of n and its descendants to b.
func textOf(b *strings.Builder, n *html.Node) {
	if n.Type == html.TextNode {
		b.WriteString(n.Data)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		textOf(b, c)
	}
}

// IsHTML reports whether a body served with contentType is an HTML page.
// Without a usable type, the body is sniffed.
func IsHTML(contentType string, body []byte) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	switch {
	case err != nil || mt == "" || mt == "application/octet-stream" || mt == "text/plain":
		mt, _, _ = mime.ParseMediaType(http.DetectContentType(body))
		return mt == "text/html"
	case mt == "text/html", mt == "application/xhtml+xml":
		return true
	}
	return false
}

// metaCharset finds a charset declared by a meta element anywhere in the
// head, also past the first 1024 bytes that the HTML standard's prescan
// looks at (miniflux's testdata has such pages).
var metaCharset = regexp.MustCompile(`(?i)<meta[^>]+charset\s*=\s*["']?\s*([a-zA-Z0-9_.:-]+)`)

// ToUTF8 returns an HTML body as UTF-8 and the charset it was read in.
// A byte order mark decides; then a body that is valid UTF-8 is UTF-8
// whatever it declares (declarations that disagree with such a body are
// servers' defaults, not the truth); then the Content-Type charset, a meta
// charset, and windows-1252, as browsers do.
func ToUTF8(body []byte, contentType string) ([]byte, string) {
	if rest, ok := bytes.CutPrefix(body, []byte("\xef\xbb\xbf")); ok && utf8.Valid(rest) {
		return rest, "utf-8"
	}
	if !bytes.HasPrefix(body, []byte("\xfe\xff")) && !bytes.HasPrefix(body, []byte("\xff\xfe")) && utf8.Valid(body) {
		return body, "utf-8"
	}
	enc, name, certain := charset.DetermineEncoding(body, contentType)
	if !certain && name == "windows-1252" {
		head := body[:min(len(body), 64<<10)]
		if m := metaCharset.FindSubmatch(head); m != nil {
			if e, n := charset.Lookup(string(m[1])); e != nil && n != "utf-8" {
				enc, name = e, n
			}
		}
	}
	out, err := enc.NewDecoder().Bytes(body)
	if err != nil {
		return bytes.ToValidUTF8(body, []byte("\uFFFD")), "utf-8"
	}
	// A page that says utf-8 (its meta, or a guess) and is not gets no
	// decoding at all (the charset package's utf-8 is a no-op): mend it.
	return bytes.ToValidUTF8(out, []byte("\uFFFD")), name
}

// Select returns what sel selects in the page: the matches of its first
// alternative that matches anything.
func (p *Page) Select(sel Selector) *goquery.Selection {
	return selectIn(p.Doc.Selection, sel)
}

func selectIn(s *goquery.Selection, sel Selector) *goquery.Selection {
	for _, alt := range sel.alts {
		if found := s.FindMatcher(alt); found.Length() > 0 {
			return found
		}
	}
	return s.FindNodes() // empty
}

// Links returns the absolute URLs of the links sel selects, in document
// order and each once: the href of each selected a (or area) element, or of
// the first link inside a selected element. Links that cannot be resolved
// are returned as written, for the caller to reject.
func (p *Page) Links(sel Selector) []string {
	var out []string
	seen := map[string]bool{}
	p.Select(sel).Each(func(_ int, s *goquery.Selection) {
		href, ok := linkOf(s)
		if !ok {
			return
		}
		abs := p.Resolve(href)
		if !seen[abs] {
			seen[abs] = true
			out = append(out, abs)
		}
	})
	return out
}

// linkOf returns the link an element stands for.
func linkOf(s *goquery.Selection) (string, bool) {
	if href, ok := s.Attr("href"); ok {
		return href, true
	}
	if href, ok := s.Find("a[href], area[href]").First().Attr("href"); ok {
		return href, true
	}
	return "", false
}

// Resolve makes ref absolute against the page's base. A reference that
// does not parse is returned trimmed, as written.
func (p *Page) Resolve(ref string) string {
	ref = strings.TrimSpace(ref)
	r, err := url.Parse(ref)
	if err != nil {
		return ref
	}
	return p.Base.ResolveReference(r).String()
}

// FeedLink is a feed a page announces with <link rel="alternate">.
type FeedLink struct {
	URL   string // absolute
	Type  string // its media type, lower-case
	Title string
}

// feedTypes are the media types of feeds: RSS's and Atom's (RFC 4287 §7),
// JSON Feed 1.1's, and the generic XML and JSON ones (docs/design.md#discovery).
var feedTypes = map[string]bool{
	"application/rss+xml": true, "application/atom+xml": true, "application/rdf+xml": true,
	"application/feed+json": true, "application/json": true, "text/xml": true, "application/xml": true,
}

// FeedLinks returns the feeds the page announces, in document order.
func (p *Page) FeedLinks() []FeedLink {
	var out []FeedLink
	seen := map[string]bool{}
	p.Doc.Find("link[rel][href], a[rel][href]").Each(func(_ int, s *goquery.Selection) {
		if !hasToken(s.AttrOr("rel", ""), "alternate") {
			return
		}
		typ, _, _ := mime.ParseMediaType(s.AttrOr("type", ""))
		if !feedTypes[typ] {
			return
		}
		abs := p.Resolve(s.AttrOr("href", ""))
		if abs == "" || seen[abs] {
			return
		}
		seen[abs] = true
		out = append(out, FeedLink{URL: abs, Type: typ, Title: collapse(s.AttrOr("title", ""))})
	})
	return out
}

func hasToken(list, token string) bool {
	for _, t := range strings.Fields(list) {
		if strings.EqualFold(t, token) {
			return true
		}
	}
	return false
}

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// Text returns the readable text of nodes: text nodes joined, with a space
// where block elements and line breaks separate them, white space
// collapsed. Scripts, styles and templates are left out.
func Text(nodes ...*html.Node) string {
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		switch n.Type {
		case html.TextNode:
			b.WriteString(n.Data)
			return
		case html.ElementNode:
			if skipText[n.Data] {
				return
			}
			if !inline[n.Data] {
				b.WriteByte(' ')
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
		if n.Type == html.ElementNode && !inline[n.Data] {
			b.WriteByte(' ')
		}
	}
	for _, n := range nodes {
		walk(n)
	}
	return collapse(b.String())
}

var skipText = map[string]bool{"script": true, "style": true, "template": true, "noscript": true, "head": true}

// inline elements do not separate words.
var inline = map[string]bool{
	"a": true, "abbr": true, "b": true, "bdi": true, "bdo": true, "cite": true, "code": true, "data": true,
	"dfn": true, "em": true, "i": true, "kbd": true, "mark": true, "q": true, "s": true, "samp": true,
	"small": true, "span": true, "strong": true, "sub": true, "sup": true, "time": true, "u": true,
	"var": true, "font": true, "del": true, "ins": true,
}

// HTMLText returns the text of an HTML fragment (or of plain text, which
// reads as itself).
func HTMLText(fragment string) string {
	if !strings.ContainsAny(fragment, "<&") {
		return collapse(fragment)
	}
	nodes, err := html.ParseFragment(strings.NewReader(fragment), &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body})
	if err != nil {
		return collapse(fragment)
	}
	return Text(nodes...)
}
