package parse

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
)

// The XML formats are read from raw tokens (tokenizer.go, which reads as
// encoding/xml's RawToken does in its non-strict mode), which give
// feedpipe what gofeed cannot: the byte span of every item, recovery from
// the errors real feeds make, and a fraction of the work. Bare "&" and
// unknown entities stay text, as written, and the HTML entities are
// known; no DTD is ever read, so no entity beyond the predefined five and
// the HTML ones is ever expanded, and nothing outside the document is
// ever read.

// nsID names the namespaces the parser knows.
type nsID uint8

const (
	nsNone nsID = iota // no namespace: RSS 0.9x and 2.0
	nsOther
	nsRSS10  // RSS 1.0 and RSS 2.0 written with a namespace
	nsRSS090 // RSS 0.90
	nsAtom   // Atom 1.0
	nsAtom03
	nsRDF
	nsContent
	nsDC
	nsDCTerms
	nsMedia
	nsITunes
	nsFeedBurner
	nsXHTML
	nsXML
	nsSVG
	nsMathML
)

// The namespaces markup is written in, as the output names them.
const (
	xhtmlURI  = "http://www.w3.org/1999/xhtml"
	svgURI    = "http://www.w3.org/2000/svg"
	mathMLURI = "http://www.w3.org/1998/Math/MathML"
)

var nsByURI = map[string]nsID{
	"http://purl.org/rss/1.0/":                     nsRSS10,
	"http://backend.userland.com/rss2":             nsRSS10,
	"http://blogs.law.harvard.edu/tech/rss":        nsRSS10,
	"http://my.netscape.com/rdf/simple/0.9/":       nsRSS090,
	"http://www.w3.org/2005/Atom":                  nsAtom,
	"http://www.w3.org/2005/atom":                  nsAtom,
	"http://purl.org/atom/ns#":                     nsAtom03,
	"http://www.w3.org/1999/02/22-rdf-syntax-ns#":  nsRDF,
	"http://purl.org/rss/1.0/modules/content/":     nsContent,
	"http://purl.org/dc/elements/1.1/":             nsDC,
	"http://purl.org/dc/elements/1.0/":             nsDC,
	"http://purl.org/dc/terms/":                    nsDCTerms,
	"http://search.yahoo.com/mrss/":                nsMedia,
	"http://search.yahoo.com/mrss":                 nsMedia,
	"http://tools.search.yahoo.com/mrss/":          nsMedia,
	"http://www.itunes.com/dtds/podcast-1.0.dtd":   nsITunes,
	"http://www.itunes.com/DTDs/Podcast-1.0.dtd":   nsITunes,
	"https://www.itunes.com/dtds/podcast-1.0.dtd":  nsITunes,
	"http://rssnamespace.org/feedburner/ext/1.0":   nsFeedBurner,
	"http://www.w3.org/1999/xhtml":                 nsXHTML,
	"http://www.w3.org/XML/1998/namespace":         nsXML,
	"http://purl.org/rss/1.0/modules/rss091#":      nsRSS10,
	"http://channel.netscape.com/rdf/simple/0.9/":  nsRSS090,
	"http://purl.org/net/rss1.1#":                  nsRSS10,
	"http://www.w3.org/2005/Atom/":                 nsAtom,
	"http://purl.org/rss/1.0/modules/dc/":          nsDC,
	"http://purl.org/rss/1.0/modules/dcterms/":     nsDCTerms,
	"http://www.rssboard.org/media-rss":            nsMedia,
	"http://video.search.yahoo.com/mrss":           nsMedia,
	"http://search.yahoo.com/mrss/ ":               nsMedia,
	"http://purl.org/dc/elements/1.1":              nsDC,
	"http://www.itunes.com/dtds/podcast-1.0.dtd/":  nsITunes,
	"http://www.itunes.com/DTDs/podcast-1.0.dtd":   nsITunes,
	"http://www.w3.org/1999/xhtml/":                nsXHTML,
	"http://rssnamespace.org/feedburner/ext/1.0/":  nsFeedBurner,
	"http://purl.org/rss/1.0/modules/content":      nsContent,
	"http://www.w3.org/1999/02/22-rdf-syntax-ns#/": nsRDF,
	svgURI:    nsSVG,
	mathMLURI: nsMathML,
}

// nsByPrefix guesses the namespace of a prefix the document uses without
// declaring it, as feeds do.
var nsByPrefix = map[string]nsID{
	"atom": nsAtom, "a10": nsAtom, "content": nsContent, "dc": nsDC, "dcterms": nsDCTerms,
	"media": nsMedia, "itunes": nsITunes, "feedburner": nsFeedBurner, "rdf": nsRDF,
	"xhtml": nsXHTML, "xml": nsXML,
}

// kind is what an open element is to the parser.
type kind uint8

const (
	kOther kind = iota
	kRSS
	kRDF
	kFeed // Atom feed
	kChannel
	kItem
	kPerson // Atom author
	kImage  // RSS image
	kSkipHours
	kSkipDays
	kMedia  // media:group, media:content: holders of media elements
	kSource // Atom source: another feed's facts, not this entry's
)

type binding struct {
	prefix string
	id     nsID
	uri    string // as declared, for markup that must declare it again
}

type frame struct {
	prefix, local string
	id            nsID
	kind          kind
	nsMark        int // len(p.ns) before this element's declarations
	base          *url.URL
	outNS         string // in captured markup: the default namespace in force inside it, as written
}

// Errors the parse stops at.
var (
	errTooDeep  = errors.New("too deep")
	errTooMany  = errors.New("too many items")
	errNotAFeed = errors.New("not a feed root")
)

type xmlParser struct {
	text     []byte // the whole text
	origin   int    // where in text the current decoder began
	z        tokenizer
	held     *token // a token read ahead and put back
	heldOff  int
	err      error // the decoder's error, once it has one
	stack    []frame
	ns       []binding
	maxDepth int
	maxItems int

	feed      *rawFeed
	item      *rawItem
	itemBlock []rawItem // items allocated and not yet used (newItem)
	person    *rawPerson
	warn      *warnings
	docBase   *url.URL // the document's URL
	scr       []byte   // scratch for text
	rootAt    int      // where the root element begins; -1 before it
	coreNS    nsID     // the namespace of the root, read as the format's

	// The name and depth of the last item, to find the next after an
	// error.
	itemPrefix, itemLocal string
	itemDepth             int
	resynced              bool // the parse went on after an error
}

// newDecoder starts reading tokens at text[at:].
func (p *xmlParser) newDecoder(at int) {
	p.z.reset(p.text, at)
	p.z.validUTF8 = true // charsets.Body and repair see to it
	p.origin, p.held, p.err = at, nil, nil
}

// next returns the next token and the offset in text where it begins.
// The token is valid until the next call (see tokenizer).
func (p *xmlParser) next() (*token, int, error) {
	if p.held != nil {
		t, off := p.held, p.heldOff
		p.held = nil
		return t, off, nil
	}
	if p.err != nil {
		return nil, 0, p.err
	}
	off := p.z.pos
	t, err := p.z.next()
	if err != nil {
		p.err = err
		return nil, off, err
	}
	return t, off, nil
}

// hold puts back the token just read, for the next call of next.
func (p *xmlParser) hold(t *token, off int) { p.held, p.heldOff = t, off }

// offset is where the tokenizer is now, in text.
func (p *xmlParser) offset() int { return p.z.pos }

// push opens an element: its namespace declarations, xml:base and depth.
func (p *xmlParser) push(t *token) (*frame, error) {
	if len(p.stack) >= p.maxDepth {
		return nil, errTooDeep
	}
	fr := frame{prefix: t.name.space, local: t.name.local, nsMark: len(p.ns), base: p.docBase}
	if n := len(p.stack); n > 0 {
		fr.base = p.stack[n-1].base
	}
	for _, a := range t.attrs {
		switch {
		case a.name.space == "xmlns":
			uri := string(a.value)
			p.ns = append(p.ns, binding{a.name.local, nsOf(uri), uri})
		case a.name.space == "" && a.name.local == "xmlns":
			uri := string(a.value)
			p.ns = append(p.ns, binding{"", nsOf(uri), uri})
		case a.name.space == "xml" && a.name.local == "base":
			fr.base = resolveBase(fr.base, string(a.value))
		}
	}
	fr.id = p.lookup(fr.prefix)
	p.stack = append(p.stack, fr)
	return &p.stack[len(p.stack)-1], nil
}

// resolveBase is the base an xml:base attribute sets.
func resolveBase(parent *url.URL, ref string) *url.URL {
	r, err := url.Parse(strings.TrimSpace(ref))
	if err != nil {
		return parent
	}
	if parent == nil {
		return r
	}
	return parent.ResolveReference(r)
}

func nsOf(uri string) nsID {
	if id, ok := nsByURI[strings.TrimSpace(uri)]; ok {
		return id
	}
	return nsOther
}

// declared returns the index in p.ns of the declaration in force for a
// prefix, or -1.
func (p *xmlParser) declared(prefix string) int {
	for i := len(p.ns) - 1; i >= 0; i-- {
		if p.ns[i].prefix == prefix {
			return i
		}
	}
	return -1
}

// lookup resolves a prefix to a namespace.
func (p *xmlParser) lookup(prefix string) nsID {
	if prefix == "xml" {
		return nsXML
	}
	for i := len(p.ns) - 1; i >= 0; i-- {
		if p.ns[i].prefix == prefix {
			return p.ns[i].id
		}
	}
	if prefix == "" {
		return nsNone
	}
	if id, ok := nsByPrefix[strings.ToLower(prefix)]; ok {
		return id
	}
	return nsOther
}

// pop closes the top element.
func (p *xmlParser) pop(end int) {
	fr := &p.stack[len(p.stack)-1]
	p.closed(fr, end)
	p.ns = p.ns[:fr.nsMark]
	p.stack = p.stack[:len(p.stack)-1]
}

// match returns the index of the open element an end tag closes, or -1:
// like encoding/xml's non-strict mode, an end tag closes the elements left
// open inside its own, and one that closes nothing is ignored.
func (p *xmlParser) match(name qname, floor int) int {
	for i := len(p.stack) - 1; i >= floor; i-- {
		if p.stack[i].local == name.local && p.stack[i].prefix == name.space {
			return i
		}
	}
	return -1
}

// parse reads the document from text[at:] into feed.
func (p *xmlParser) parse(at int) error {
	p.rootAt = -1
	p.newDecoder(at)
	resyncs := 0
	for {
		t, off, err := p.next()
		if err == io.EOF {
			return p.atEOF()
		}
		if err != nil {
			// A syntax error: skip to the next item and go on, unless
			// the document never got as far as its items.
			if p.feed.format == "" {
				return err
			}
			if resyncs < maxResyncs && p.resync(err) {
				resyncs++
				continue
			}
			return p.stopAt(err)
		}
		switch t.kind {
		case tokStart:
			if err := p.start(t, off); err != nil {
				return err
			}
		case tokEnd:
			if i := p.match(t.name, 0); i >= 0 {
				end := p.offset()
				for len(p.stack) > i+1 {
					p.pop(off) // closed by an ancestor's end tag
				}
				p.pop(end)
			}
		}
	}
}

// maxResyncs caps how often a document may be resumed after an error.
const maxResyncs = 100

// atEOF ends a document. One that ends with elements still open was cut
// short: its complete items are kept.
func (p *xmlParser) atEOF() error {
	if p.feed.format == "" {
		return errNotAFeed
	}
	if len(p.stack) == 0 {
		return nil
	}
	return p.stopAt(io.ErrUnexpectedEOF)
}

// stopAt ends the parse at an error it cannot recover from: the complete
// items so far are kept, if there are any or the document broke only
// after its last item.
func (p *xmlParser) stopAt(err error) error {
	inItem := p.item != nil
	depth := len(p.stack)
	p.item = nil // an item cut short is dropped
	what := errText(err)
	switch {
	case len(p.feed.items) > 0:
		p.warn.add(warnTruncated, fmt.Sprintf("the document breaks off at byte %d (%s): kept the %d complete items before it", p.offset(), what, len(p.feed.items)))
	case !inItem && depth <= 2:
		p.warn.add(warnTruncated, fmt.Sprintf("the document breaks off at byte %d (%s), after its last item", p.offset(), what))
	default:
		return err
	}
	return nil
}

func errText(err error) string {
	var se *xml.SyntaxError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected end"
	case errors.As(err, &se):
		return se.Msg
	}
	return err.Error()
}

// resync recovers from a syntax error inside the items: the item being
// read is dropped, and reading resumes at the next item's start tag with
// the elements around the items still open.
func (p *xmlParser) resync(err error) bool {
	itemDepth := -1
	for i, fr := range p.stack {
		if fr.kind == kItem {
			itemDepth = i
			break
		}
	}
	var prefix, local string
	switch {
	case itemDepth >= 0:
		prefix, local = p.stack[itemDepth].prefix, p.stack[itemDepth].local
	case len(p.feed.items) > 0:
		// Between items: the next one has the name of the last.
		prefix, local = p.itemPrefix, p.itemLocal
		itemDepth = p.itemDepth
	default:
		return false
	}
	tag := "<" + local
	if prefix != "" {
		tag = "<" + prefix + ":" + local
	}
	from := p.offset()
	if from <= 0 || from > len(p.text) {
		return false
	}
	at := -1
	for i := from; i < len(p.text); {
		j := bytes.Index(p.text[i:], []byte(tag))
		if j < 0 {
			break
		}
		k := i + j + len(tag)
		if k < len(p.text) && (p.text[k] == '>' || p.text[k] == ' ' || p.text[k] == '/' || p.text[k] == '\t' || p.text[k] == '\r' || p.text[k] == '\n') {
			at = i + j
			break
		}
		i = k
	}
	p.item = nil
	if at < 0 || itemDepth < 0 || itemDepth > len(p.stack) {
		return false
	}
	for len(p.stack) > itemDepth {
		fr := &p.stack[len(p.stack)-1]
		if fr.kind == kItem {
			fr.kind = kOther // dropped, not finished
		}
		p.pop(from)
	}
	p.warn.add(warnSkipped, fmt.Sprintf("an XML error at byte %d (%s): skipped to the next item", from, errText(err)))
	p.resynced = true
	p.newDecoder(at)
	return true
}
