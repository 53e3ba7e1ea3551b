// Package opml reads OPML subscription lists leniently and writes them.
package opml

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Outline is one feed found in an OPML document.
type Outline struct {
	URL     string // the xmlUrl attribute, trimmed, otherwise as written (not normalized, not validated)
	Title   string // the title attribute, else the text attribute, trimmed
	HTMLURL string // htmlUrl attribute
	Type    string // type attribute as written ("rss", "atom", ...)
	// What feedpipe writes in attributes of its own namespace (Namespace)
	// and reads back; other readers ignore them. SourceType is
	// feedpipe:sourceType (website, rss, ...; "" for auto), Fulltext
	// feedpipe:fulltext="true", Scrape feedpipe:scrape, the scraper
	// configuration as JSON.
	SourceType string
	Fulltext   bool
	Scrape     string
	Labels     []string // names of the enclosing folder outlines, each whole (never split at ',' or '/'), outermost first, then the entries of the OPML 2 `category` attribute (comma-separated; each entry may be a slash path like "/Tech/Go", which gives "Tech" and "Go"); trimmed, empty ones dropped, duplicates dropped, order kept. Never nil (empty slice).
	Line       int      // 1-based line where the outline element starts, 0 if unknown
}

// Result is what Parse found.
type Result struct {
	Title    string    // <head><title>
	Outlines []Outline // every feed outline in document order, repeats included (the caller counts duplicates)
	Warnings []string  // one line each, e.g. "line 23: not well-formed XML (...); recovered the rest by scanning for <outline> tags"
}

// maxInput caps what Parse reads; subscription lists are kilobytes.
const maxInput = 64 << 20

// maxFolderLabels caps the folder labels an outline inherits, so deeply
// nested folders around many feeds cannot make memory grow quadratically.
const maxFolderLabels = 16

var errNotOPML = errors.New("opml: no <outline> elements found (is this an OPML file?)")

// note is a warning with the line it refers to, so warnings can be sorted.
type note struct {
	line int
	msg  string
}

// Parse reads an OPML 1.0/1.1/2.0 document leniently.
//
// A strict pass runs first: if the document is well-formed it is the only
// pass. Otherwise a lenient pass (HTML entities, bare '&', auto-closed
// elements) reads as far as it can, and whatever follows the point where it
// gave up is recovered by scanning for <outline> tags.
func Parse(r io.Reader) (Result, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return Result{}, fmt.Errorf("opml: reading: %w", err)
	}
	if len(data) > maxInput {
		return Result{}, errors.New("opml: file over 64 MiB")
	}
	data, transcoded := fromUTF16(data)

	strict := decode(data, true, transcoded)
	if strict.err == nil {
		if !strict.sawOPML && !strict.sawOutline {
			return Result{}, errNotOPML
		}
		return strict.result(strict.notes), nil
	}

	p := decode(data, false, transcoded)
	var notes []note
	switch {
	case p.err != nil && strict.restOff > p.restOff:
		// Leniency went wrong first (auto-closing an element that was
		// closed later, say): the strict pass got further, keep that.
		p = strict
	case p.err == nil || strict.errLine < p.errLine:
		notes = append(notes, note{strict.errLine, fmt.Sprintf("line %d: not well-formed XML (%s); read it leniently", strict.errLine, strict.errMsg)})
	}
	notes = append(notes, p.notes...)
	if p.err != nil {
		notes = append(notes, note{p.errLine, fmt.Sprintf("line %d: not well-formed XML (%s); recovered the rest by scanning for <outline> tags", p.errLine, p.errMsg)})
		sc := scanner{line: p.restLine, nest: p.nest}
		sc.scan(p.rest())
		p.outlines = append(p.outlines, sc.outlines...)
		notes = append(notes, sc.notes...)
		p.sawOPML = p.sawOPML || sc.sawOPML
		p.sawOutline = p.sawOutline || sc.sawOutline
	}
	if !p.sawOPML && !p.sawOutline {
		return Result{}, errNotOPML
	}
	return p.result(notes), nil
}

func (p *pass) result(notes []note) Result {
	res := Result{Title: strings.TrimSpace(p.title.String()), Outlines: p.outlines}
	if res.Outlines == nil {
		res.Outlines = []Outline{}
	}
	sort.SliceStable(notes, func(i, j int) bool { return notes[i].line < notes[j].line })
	for _, n := range notes {
		res.Warnings = append(res.Warnings, n.msg)
	}
	return res
}

// feedAttrs are the outline attributes Parse uses, from either reader.
type feedAttrs struct {
	url, title, text, htmlURL, typ, category string
	sourceType, fulltext, scrape             string // feedpipe's own
}

// Namespace is the XML namespace of feedpipe's own outline attributes,
// written with the prefix "feedpipe".
const Namespace = "https://github.com/feedpipe/feedpipe/opml"

// prefix is how feedpipe's attributes are named in a document read as
// text (a damaged one the scanner reads): by their usual prefix.
const prefix = "feedpipe:"

// field is where the attribute of that case-insensitive name goes, or nil
// if Parse does not use it.
func (a *feedAttrs) field(name string) *string {
	switch strings.ToLower(name) {
	case "xmlurl":
		return &a.url
	case "title":
		return &a.title
	case "text":
		return &a.text
	case "htmlurl":
		return &a.htmlURL
	case "type":
		return &a.typ
	case "category":
		return &a.category
	case prefix + "sourcetype":
		return &a.sourceType
	case prefix + "fulltext":
		return &a.fulltext
	case prefix + "scrape":
		return &a.scrape
	}
	return nil
}

// set records an attribute; the first non-empty value of each wins.
func (a *feedAttrs) set(name, value string) {
	if dst := a.field(name); dst != nil && *dst == "" {
		*dst = strings.TrimSpace(value)
	}
}

// name is the folder label or feed title: title, else text.
func (a *feedAttrs) name() string {
	if a.title != "" {
		return a.title
	}
	return a.text
}

// outline builds the feed for a, inheriting the enclosing folder labels.
func (a *feedAttrs) outline(folders []string, line int) Outline {
	return Outline{
		URL:     a.url,
		Title:   a.name(),
		HTMLURL: a.htmlURL,
		Type:    a.typ,
		Labels:  labels(folders, a.category),
		// A scraper configuration is kept as written; the importer checks it.
		SourceType: strings.ToLower(a.sourceType),
		Fulltext:   strings.EqualFold(a.fulltext, "true") || a.fulltext == "1",
		Scrape:     a.scrape,
		Line:       line,
	}
}

// nesting is the stack of open <outline> elements, with the labels of the
// folders among them. The decoder keeps one while it reads; where it gives
// up, the scanner carries on with it, so the feeds after the failure point
// still get the labels of the folders they sit in.
type nesting struct {
	labeled []bool   // one per open outline, outermost first: whether it added a label
	folders []string // those labels, outermost first; at most maxFolderLabels
	deep    bool     // warned about folders past maxFolderLabels
}

// push opens the outline a, which starts on line. A folder (no xmlUrl)
// gives its name, as it is, as a label to everything inside it; a feed
// outline with children, or a folder without a name, gives none. It returns
// a warning when folders first nest deeper than labels are kept for.
func (n *nesting) push(a *feedAttrs, line int) string {
	warn, label := "", false
	switch {
	case a.url != "" || a.name() == "":
	case len(n.folders) < maxFolderLabels:
		n.folders = append(n.folders, a.name())
		label = true
	case !n.deep:
		n.deep = true
		warn = fmt.Sprintf("line %d: folders nested more than %d deep; the deeper folder names are not used as labels", line, maxFolderLabels)
	}
	n.labeled = append(n.labeled, label)
	return warn
}

// pop closes the innermost open outline; with none open it does nothing.
func (n *nesting) pop() {
	k := len(n.labeled)
	if k == 0 {
		return
	}
	if n.labeled[k-1] {
		n.folders = n.folders[:len(n.folders)-1]
	}
	n.labeled = n.labeled[:k-1]
}

// labels joins folder labels and the OPML 2 category entries ("a,/b/c"
// gives a, b, c), trimmed, without empties or repeats, order kept.
func labels(folders []string, category string) []string {
	out := make([]string, 0, len(folders))
	var seen map[string]bool
	add := func(l string) {
		l = strings.TrimSpace(l)
		if l == "" {
			return
		}
		// A map only once the list is long, so the common case stays cheap
		// and a huge category attribute stays linear.
		if seen == nil && len(out) >= 8 {
			seen = make(map[string]bool, len(out)*2)
			for _, o := range out {
				seen[o] = true
			}
		}
		if seen != nil {
			if seen[l] {
				return
			}
			seen[l] = true
		} else {
			for _, o := range out {
				if o == l {
					return
				}
			}
		}
		out = append(out, l)
	}
	for _, f := range folders {
		add(f)
	}
	for _, entry := range strings.Split(category, ",") {
		for _, part := range strings.Split(entry, "/") {
			add(part)
		}
	}
	return out
}
