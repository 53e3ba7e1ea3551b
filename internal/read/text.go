package read

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/feedpipe/feedpipe/internal/table"
)

// Text renders the HTML of an entry (or its plain text, which reads as
// itself) as text for a terminal or a mail: paragraphs, headings, quotes
// and preformatted blocks apart, separated by blank lines; list items
// under "-" or their number; line breaks kept; entities decoded; scripts,
// styles, forms and the like dropped; control characters (a feed's way
// to drive the terminal) removed. Lines are wrapped to width columns
// (0: not wrapped). Each link and image is numbered after its text, "[1]",
// and links has their URLs in that order, resolved against base (nil:
// left as written); a URL seen twice keeps its first number.
func Text(s string, base *url.URL, width int) (text string, links []string) {
	r := &renderer{width: width, base: base, seen: map[string]int{}}
	if !looksHTML.MatchString(s) {
		if strings.Contains(s, "&") {
			s = html.UnescapeString(s)
		}
		for _, p := range paragraphs.Split(strings.TrimSpace(s), -1) {
			r.inline(p)
			r.block(2)
		}
		return r.String(), r.links
	}
	nodes, err := html.ParseFragment(strings.NewReader(s), &html.Node{Type: html.ElementNode, Data: "body", DataAtom: atom.Body})
	if err != nil { // nested too deep for the parser: its text, flat
		r.flat(s)
		return r.String(), r.links
	}
	for _, n := range nodes {
		r.walk(n, 0)
	}
	r.flush()
	return r.String(), r.links
}

var (
	// looksHTML finds a tag or a comment: plain text has none (but may
	// have entities).
	looksHTML  = regexp.MustCompile(`<[A-Za-z!/?]`)
	paragraphs = regexp.MustCompile(`\n[ \t\r]*\n\s*`)
)

// maxDepth is how deep elements are told apart; text deeper down is
// still shown, without its structure.
const maxDepth = 200

// renderer builds the text of an HTML tree.
type renderer struct {
	b       strings.Builder
	width   int
	base    *url.URL
	links   []string
	seen    map[string]int
	prefix  []string // in force: "> " for a quote, spaces under a list item
	bullet  string   // the next line's list marker, in place of the last prefix
	words   strings.Builder
	space   bool // a space is due before the next word
	pending int  // breaks due before the next block: 1 a new line, 2 a blank line
	lists   []int
	pre     int
	cells   int  // cells of the table row so far
	brs     int  // line breaks in a row
	count   int  // characters of running text so far
	blank   bool // the last line written is a blank one
}

func (r *renderer) String() string {
	s := strings.TrimRight(r.b.String(), "\n ")
	if s == "" {
		return ""
	}
	return s + "\n"
}

// inline adds running text: white space collapses, control characters go.
func (r *renderer) inline(s string) {
	for _, c := range s {
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\u2028' || c == '\u2029':
			r.space = r.words.Len() > 0
		case c == utf8.RuneError || isControl(c) || c == '\u00ad': // invalid, control, soft hyphen
		default:
			if r.space {
				r.words.WriteByte(' ')
				r.space = false
			}
			r.words.WriteRune(c)
			r.count++
			r.brs = 0
		}
	}
}

// block ends the running text and asks for n breaks before the next.
func (r *renderer) block(n int) {
	r.flush()
	r.pending = max(r.pending, n)
}

// flush writes the running text as a paragraph, wrapped.
func (r *renderer) flush() {
	text := r.words.String()
	r.words.Reset()
	r.space = false
	if text == "" {
		return
	}
	r.breaks()
	first, rest := r.prefixes()
	avail := r.width - table.Width(rest)
	if r.width > 0 && avail < 20 {
		avail = 20
	}
	r.b.WriteString(first)
	lw := 0
	for w := range strings.SplitSeq(text, " ") {
		ww := table.Width(w)
		if lw > 0 && r.width > 0 && lw+1+ww > avail {
			r.b.WriteString("\n" + rest)
			lw = 0
		}
		if lw > 0 {
			r.b.WriteByte(' ')
			lw++
		}
		r.b.WriteString(w)
		lw += ww
	}
	r.b.WriteByte('\n')
	r.blank = false
}

// breaks writes the breaks due before a block.
func (r *renderer) breaks() {
	if r.b.Len() > 0 && r.pending >= 2 && !r.blank {
		r.b.WriteString(strings.TrimRight(strings.Join(r.prefix, ""), " ") + "\n")
		r.blank = true
	}
	r.pending = 0
}

// prefixes are the first line's prefix (with a list item's marker) and
// the others'.
func (r *renderer) prefixes() (first, rest string) {
	rest = strings.Join(r.prefix, "")
	first = rest
	if r.bullet != "" && len(r.prefix) > 0 {
		first = strings.Join(r.prefix[:len(r.prefix)-1], "") + r.bullet
		r.bullet = ""
	}
	return first, rest
}

// link numbers a URL, resolved against the base: 0 for none worth it.
func (r *renderer) link(ref string) int {
	ref = strings.TrimSpace(ref)
	if ref == "" || strings.HasPrefix(ref, "#") {
		return 0
	}
	u, err := url.Parse(ref)
	if err != nil {
		return 0
	}
	if r.base != nil {
		u = r.base.ResolveReference(u)
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https", "mailto", "ftp", "":
	default:
		return 0 // javascript:, data: and the like
	}
	s := clean(u.String())
	if n, ok := r.seen[s]; ok {
		return n
	}
	r.links = append(r.links, s)
	r.seen[s] = len(r.links)
	return len(r.links)
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key && a.Namespace == "" {
			return a.Val
		}
	}
	return ""
}

func (r *renderer) children(n *html.Node, depth int) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		r.walk(c, depth+1)
	}
}

func (r *renderer) walk(n *html.Node, depth int) {
	switch n.Type {
	case html.TextNode:
		if r.pre > 0 {
			r.preText(n.Data)
		} else {
			r.inline(n.Data)
		}
		return
	case html.ElementNode:
	case html.DocumentNode:
		r.children(n, depth)
		return
	default: // comments, doctypes
		return
	}
	if depth > maxDepth {
		r.children(n, depth)
		return
	}
	switch n.DataAtom {
	case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Head, atom.Title, atom.Svg, atom.Math,
		atom.Object, atom.Embed, atom.Button, atom.Select, atom.Input, atom.Textarea, atom.Canvas, atom.Audio, atom.Video, atom.Track, atom.Source:
		if n.DataAtom == atom.Video || n.DataAtom == atom.Audio {
			r.media(n)
		}
		return
	}
	if r.pre > 0 && n.DataAtom != atom.A && n.DataAtom != atom.Img && n.DataAtom != atom.Iframe {
		if n.DataAtom == atom.Br {
			r.words.WriteByte('\n')
		}
		r.children(n, depth)
		return
	}
	switch n.DataAtom {
	case atom.Br:
		if r.words.Len() == 0 {
			r.brs++
			if r.brs >= 2 {
				r.pending = 2
			}
			return
		}
		r.brs = 1
		r.block(1)
		return
	case atom.Img:
		if src := attr(n, "src"); src != "" && attr(n, "width") != "1" && attr(n, "height") != "1" {
			alt := clean(attr(n, "alt"))
			if k := r.link(src); k > 0 {
				r.word("[image" + colon(alt) + "][" + strconv.Itoa(k) + "]")
			} else if alt != "" {
				r.word("[image: " + alt + "]")
			}
		}
		return
	case atom.Iframe:
		if k := r.link(attr(n, "src")); k > 0 {
			r.word("[embedded][" + strconv.Itoa(k) + "]")
		}
		return
	case atom.A:
		before := r.count
		r.children(n, depth)
		if r.count == before {
			return // nothing to read the number after
		}
		if k := r.link(attr(n, "href")); k > 0 {
			sp := r.space
			r.space = false
			r.inline("[" + strconv.Itoa(k) + "]")
			r.space = sp
		}
		return
	case atom.Q:
		r.inline("“")
		r.children(n, depth)
		r.inline("”")
		return
	case atom.Hr:
		r.block(2)
		r.inline("* * *")
		r.block(2)
		return
	case atom.Pre:
		r.block(2)
		r.breaks()
		r.pre++
		r.prefix = append(r.prefix, "    ")
		r.words.Reset()
		r.children(n, depth)
		r.preFlush()
		r.prefix = r.prefix[:len(r.prefix)-1]
		r.pre--
		r.pending = 2
		return
	case atom.Blockquote:
		r.block(2)
		r.breaks() // the blank line before is outside the quote
		r.prefix = append(r.prefix, "> ")
		r.children(n, depth)
		r.block(2)
		r.prefix = r.prefix[:len(r.prefix)-1]
		return
	case atom.Ul, atom.Ol, atom.Menu:
		gap := 2
		if len(r.lists) > 0 {
			gap = 1
		}
		r.block(gap)
		start := 1
		if n.DataAtom != atom.Ol {
			start = -1
		} else if s, err := strconv.Atoi(attr(n, "start")); err == nil && s >= 0 && s < 1e6 {
			start = s
		}
		r.lists = append(r.lists, start)
		r.children(n, depth)
		r.lists = r.lists[:len(r.lists)-1]
		r.block(gap)
		return
	case atom.Li:
		r.block(1)
		marker := "- "
		if len(r.lists) > 0 && r.lists[len(r.lists)-1] >= 0 {
			marker = strconv.Itoa(r.lists[len(r.lists)-1]) + ". "
			r.lists[len(r.lists)-1]++
		}
		r.prefix = append(r.prefix, strings.Repeat(" ", len(marker)))
		r.bullet = marker
		r.children(n, depth)
		r.block(1)
		r.bullet = ""
		r.prefix = r.prefix[:len(r.prefix)-1]
		return
	case atom.Dd:
		r.block(1)
		r.prefix = append(r.prefix, "    ")
		r.children(n, depth)
		r.block(1)
		r.prefix = r.prefix[:len(r.prefix)-1]
		return
	case atom.Tr:
		r.block(1)
		r.cells = 0
		r.children(n, depth)
		r.block(1)
		return
	case atom.Td, atom.Th:
		if r.cells > 0 {
			r.word("|")
		}
		r.cells++
		r.children(n, depth)
		return
	case atom.P, atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6, atom.Table, atom.Figure, atom.Dl, atom.Details, atom.Fieldset:
		r.block(2)
		r.children(n, depth)
		r.block(2)
		return
	case atom.Div, atom.Section, atom.Article, atom.Header, atom.Footer, atom.Main, atom.Aside, atom.Nav, atom.Address,
		atom.Figcaption, atom.Summary, atom.Caption, atom.Dt, atom.Center, atom.Form, atom.Legend, atom.Body, atom.Html:
		r.block(1)
		r.children(n, depth)
		r.block(1)
		return
	}
	r.children(n, depth)
}

// word adds a word of its own to the running text.
func (r *renderer) word(w string) {
	if r.words.Len() > 0 {
		r.space = true
	}
	r.inline(w)
	r.space = true
}

// media shows a video's or an audio's source as a link.
func (r *renderer) media(n *html.Node) {
	src := attr(n, "src")
	for c := n.FirstChild; c != nil && src == ""; c = c.NextSibling {
		if c.Type == html.ElementNode && c.DataAtom == atom.Source {
			src = attr(c, "src")
		}
	}
	if k := r.link(src); k > 0 {
		r.word("[" + n.Data + "][" + strconv.Itoa(k) + "]")
	}
}

func colon(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

// preText adds the text of a preformatted block as it is, but for
// control characters and tabs (four spaces).
func (r *renderer) preText(s string) {
	for _, c := range s {
		switch {
		case c == '\n':
			r.words.WriteByte('\n')
		case c == '\t':
			r.words.WriteString("    ")
		case c == utf8.RuneError || isControl(c):
		default:
			r.words.WriteRune(c)
		}
	}
}

// preFlush writes a preformatted block's lines, unwrapped, under its
// prefix. Its blank lines (white space only) are kept one at a time
// inside the block and dropped at its ends, as between the other
// blocks: the text never has a blank line first or two in a row.
func (r *renderer) preFlush() {
	text := r.words.String()
	r.words.Reset()
	var lines []string
	for l := range strings.SplitSeq(text, "\n") {
		if strings.TrimSpace(l) == "" {
			l = ""
			if len(lines) == 0 || lines[len(lines)-1] == "" {
				continue
			}
		}
		lines = append(lines, l)
	}
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return
	}
	_, rest := r.prefixes()
	for _, l := range lines {
		r.b.WriteString(strings.TrimRight(rest+l, " ") + "\n")
	}
	r.blank = false
}

// flat adds the text of HTML the parser refused (nested too deep), a line
// per block element, without scripts and styles.
func (r *renderer) flat(s string) {
	z := html.NewTokenizer(strings.NewReader(s))
	skip := 0
	for {
		switch tt := z.Next(); tt {
		case html.ErrorToken:
			r.flush()
			return
		case html.TextToken:
			if skip == 0 {
				r.inline(string(z.Text()))
			}
		case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			switch a := atom.Lookup(name); a {
			case atom.Script, atom.Style, atom.Template, atom.Noscript:
				if tt == html.StartTagToken {
					skip++
				} else if skip > 0 {
					skip--
				}
			case atom.Br, atom.P, atom.Div, atom.Li, atom.Tr, atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6, atom.Blockquote, atom.Pre:
				r.block(1)
			}
		}
	}
}
