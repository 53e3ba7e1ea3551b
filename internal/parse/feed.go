package parse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/charsets"
	"github.com/feedpipe/feedpipe/internal/plural"
	"github.com/feedpipe/feedpipe/internal/urlnorm"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Errors a parse fails with, for errors.Is. Each says what happened in
// its message; the fetch record's error code names it.
var (
	// ErrNotAFeed: the body is not RSS, Atom or JSON Feed (not_a_feed).
	ErrNotAFeed = errors.New("not an RSS, Atom or JSON feed")
	// ErrTooDeep: elements nest deeper than the limit (too_deep).
	ErrTooDeep = errors.New("the document nests elements too deep")
	// ErrTooManyItems: more items than the limit (too_many_items).
	ErrTooManyItems = errors.New("the document has too many items")
	// ErrTooLarge: the body is over the size limit (payload_too_large).
	ErrTooLarge = errors.New("the body is over the size limit")
)

// Limits, each overridable per Parser (and by feed-parse's flags).
const (
	// MaxXMLDepth caps how deeply a document may nest elements
	// (docs/design.md#security; MAX_XML_DEPTH). Real feeds stay under 20 levels; a cap keeps
	// the work and memory of a hostile document in proportion to its
	// size, whatever its shape.
	MaxXMLDepth = 1000
	// MaxItems caps the items of one document. Real feeds have tens,
	// archives thousands; a million empty items in 64 MB would cost a
	// gigabyte of entries.
	MaxItems = 10_000
	// MaxBodyBytes caps the payloads feed-parse will parse.
	MaxBodyBytes = 64 << 20
)

// Source says where a body came from: it is what the ids and relative
// links of its entries derive from.
type Source struct {
	FeedID      string
	FetchID     string
	BaseURL     string    // the document's final URL
	ContentType string    // the HTTP Content-Type, for its charset
	Now         time.Time // when it was fetched: dates after it are flagged; zero for no check
}

// Feed is a parsed document in feedpipe's terms: the feed-level facts and
// the entries, in document order.
type Feed struct {
	Info    ndjson.Parse
	Entries []ndjson.Entry
}

// Parser parses feed documents. The zero value uses the default limits
// and strips no tracking parameters; it is safe for concurrent use.
type Parser struct {
	MaxDepth     int   // 0 means MaxXMLDepth
	MaxItems     int   // 0 means MaxItems
	MaxBodyBytes int64 // 0 means MaxBodyBytes
	// Tracking removes tracking parameters from entry links; nil removes
	// none.
	Tracking *urlnorm.Tracking
	// repairFirst makes Parse repair a text before it parses it, as it
	// once did always, for the tests that hold parseXMLCounting to it.
	repairFirst bool
}

// DefaultParser is the Parser of ParseFeed: the default limits, and the
// default tracking parameters removed.
var DefaultParser = &Parser{Tracking: urlnorm.NewTracking(urlnorm.DefaultTrackingParams)}

// ParseFeed parses an RSS, Atom or JSON Feed body with DefaultParser.
func ParseFeed(body []byte, src Source) (*Feed, error) { return DefaultParser.Parse(body, src) }

// Parse parses an RSS, Atom or JSON Feed body, or one of NDJSON entry
// records (parseEntryLines). What it recovers from is
// in Info.Warnings; a body it cannot read as a feed is an error, with no
// Feed.
func (p *Parser) Parse(body []byte, src Source) (*Feed, error) {
	if limit := positiveOr(p.MaxBodyBytes, MaxBodyBytes); int64(len(body)) > limit {
		return nil, fmt.Errorf("parse: %w: %d bytes, over %d", ErrTooLarge, len(body), limit)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, fmt.Errorf("parse: %w: the body is empty", ErrNotAFeed)
	}
	if isEntryLines(body, src.ContentType) {
		return p.parseEntryLines(body, src)
	}
	base, _ := url.Parse(src.BaseURL)
	if base != nil && !base.IsAbs() {
		base = nil
	}
	text := charsets.Body(body, src.ContentType, true)
	w := &warnings{}
	for _, msg := range text.Warnings {
		w.add(warnCharset, msg)
	}
	buf := text.UTF8
	start := 0
	for start < len(buf) && isSpace(buf[start]) {
		start++
	}
	var rf *rawFeed
	var err error
	if start < len(buf) && buf[start] == '{' {
		rf, err = parseJSON(buf, base, positiveOr(p.MaxItems, MaxItems))
		if err != nil {
			if errors.Is(err, errTooMany) {
				return nil, p.xmlError(err, body)
			}
			if errors.Is(err, ErrNotAFeed) {
				return nil, fmt.Errorf("parse: %w (it starts %q)", err, snippet(body))
			}
			return nil, fmt.Errorf("parse: JSON Feed: %w", err)
		}
	} else {
		var changed bool
		if text.XMLChars && !p.repairFirst {
			// The text holds no character XML forbids: the tokenizer
			// counts its references for repair's warnings as it reads.
			buf, changed, rf, err = p.parseXMLCounting(buf, base, w)
		} else {
			buf, changed = repair(buf, w, text.XMLChars)
			rf, err = p.parseXML(buf, base, w)
		}
		if changed {
			text.Map.TextChanged()
		}
		if err != nil {
			if binaryErr := binaryBody(body, src.ContentType, text.Charset); binaryErr != nil && !errors.Is(err, errTooDeep) && !errors.Is(err, errTooMany) {
				return nil, binaryErr
			}
			return nil, p.xmlError(err, body)
		}
	}
	a := &adapter{p: p, src: src, w: w, span: func(s, e int) (int, int, bool) { return text.Map.Span(buf, s, e) }}
	return a.feed(rf, text.Charset), nil
}

// parseXMLCounting is repair and then parseXML for a text that holds no
// character XML forbids, in one pass rather than two: what repair may
// still find in it (references to count for the warnings, and to
// characters XML forbids, which it removes) the tokenizer counts as it
// reads. When the tokenizer cannot say what countRefs would (a reference
// hidden where it does not look, an error that stopped its reading),
// countRefs is asked; when the text needs repairing after all, it is
// repaired and parsed again. Either way the result and the warnings are
// repair's and parseXML's, in their order (FuzzParseCounting).
func (p *Parser) parseXMLCounting(text []byte, base *url.URL, w *warnings) (out []byte, changed bool, rf *rawFeed, err error) {
	w.hold() // the parse's warnings go after repair's
	rf, counts, counted, err := p.parseXMLWith(text, base, w, true)
	if !counted {
		var ok bool
		if counts, ok = countRefs(text, true); !ok {
			w.discard()
			if out, changed = repairText(text, w); changed {
				text = out
			}
			rf, err = p.parseXML(text, base, w)
			return text, changed, rf, err
		}
	}
	w.release(func() { counts.warn(w) })
	return text, false, rf, err
}

// parseXML reads an RSS or Atom document.
func (p *Parser) parseXML(text []byte, base *url.URL, w *warnings) (*rawFeed, error) {
	rf, _, _, err := p.parseXMLWith(text, base, w, false)
	return rf, err
}

// parseXMLWith is parseXML, with the tokenizer counting the references
// of the text when count is set: counted says the counts are those of
// countRefs(text), for the whole text, read once and to its end.
func (p *Parser) parseXMLWith(text []byte, base *url.URL, w *warnings, count bool) (_ *rawFeed, counts refCounts, counted bool, _ error) {
	xp := &xmlParser{text: text, maxDepth: positiveOr(p.MaxDepth, MaxXMLDepth), maxItems: positiveOr(p.MaxItems, MaxItems), feed: &rawFeed{}, warn: w, docBase: base}
	xp.z.count = count
	at := prolog(text, w)
	err := xp.parse(at)
	counted = count && err == nil && xp.z.err == io.EOF && !xp.z.uncounted && !xp.resynced && !mayHideRefs(text[:at])
	if err != nil && xp.feed.format == "" && !errors.Is(err, errTooDeep) {
		// No feed's root element came first (or before an error): junk
		// before the feed (an error page of the publisher's software) is
		// skipped.
		if later := laterRoot(text, max(at, xp.rootAt)+1); later > 0 {
			w.add(warnRepair, fmt.Sprintf("%d bytes before the feed's root element skipped: %s", later, quote(string(text[:min(later, 60)]))))
			xp = &xmlParser{text: text, maxDepth: xp.maxDepth, maxItems: xp.maxItems, feed: &rawFeed{}, warn: w, docBase: base}
			err = xp.parse(later)
		}
	}
	if err != nil {
		return nil, counts, false, err
	}
	return xp.feed, xp.z.refs, counted, nil
}

// ErrBinary marks a body that is not text at all (an image, an archive):
// an ErrNotAFeed of its own, which no web page's feed list can mend.
var ErrBinary = errors.New("a binary payload")

// binaryBody is the error of a body that failed to parse and is no text: its
// first bytes are those of a binary format (WHATWG MIME sniffing, as
// http.DetectContentType does it), not a text in UTF-16 or UTF-32. It
// says what the server called it, what it looks like and how it starts,
// escaped. nil for a text.
func binaryBody(body []byte, contentType, charset string) error {
	sniffed := http.DetectContentType(body)
	if strings.HasPrefix(sniffed, "text/") || strings.HasPrefix(charset, "utf-16") || strings.HasPrefix(charset, "utf-32") {
		return nil
	}
	served := "no Content-Type"
	if ct := strings.TrimSpace(contentType); ct != "" {
		served = "Content-Type " + safeQuote([]byte(ct[:min(len(ct), 80)]))
	}
	return fmt.Errorf("parse: %w: %w (%s, it looks like %s), starting %s", ErrNotAFeed, ErrBinary, served, sniffed, safeQuote(body[:min(len(body), 24)]))
}

// safeQuote quotes b in ASCII, any other byte escaped (\x89, \u00e9), so
// that no byte of a payload reaches a terminal or a log as it is.
func safeQuote(b []byte) string { return strconv.QuoteToASCII(string(b)) }

// xmlError words a failed XML parse.
func (p *Parser) xmlError(err error, body []byte) error {
	switch {
	case errors.Is(err, errNotAFeed):
		return fmt.Errorf("parse: %w (it starts %q)", ErrNotAFeed, snippet(body))
	case errors.Is(err, errTooDeep):
		return fmt.Errorf("parse: %w: it nests elements more than %d deep", ErrTooDeep, positiveOr(p.MaxDepth, MaxXMLDepth))
	case errors.Is(err, errTooMany):
		return fmt.Errorf("parse: %w: more than %d", ErrTooManyItems, positiveOr(p.MaxItems, MaxItems))
	}
	return fmt.Errorf("parse: XML: %s", errText(err))
}

// prolog returns where the parse begins: after the XML declaration, which
// the bytes before it (white space, junk from the publisher's software)
// must not hide.
func prolog(text []byte, w *warnings) int {
	i := 0
	for i < len(text) {
		switch {
		case isSpace(text[i]):
			i++
			continue
		case bytes.HasPrefix(text[i:], []byte("\uFEFF")):
			i += 3
			continue
		}
		break
	}
	decl := findDecl(text, i, i+1)
	if decl < 0 && !markupStart(text[i:]) {
		decl = findDecl(text, i, min(len(text), 64<<10))
		if decl < 0 {
			return i
		}
	}
	if decl < 0 {
		return i
	}
	switch {
	case decl > 0 && len(bytes.TrimLeft(text[:decl], " \t\r\n\uFEFF")) == 0:
		w.add(warnRepair, fmt.Sprintf("%d %s of white space before the XML declaration skipped", decl, plural.Word(decl, "byte", "bytes")))
	case decl > 0:
		w.add(warnRepair, fmt.Sprintf("%d bytes before the XML declaration skipped: %s", decl, quote(string(text[:min(decl, 60)]))))
	}
	end := bytes.Index(text[decl:], []byte("?>"))
	if end < 0 {
		return decl
	}
	return decl + end + 2
}

// markupStart reports whether text starts as a feed may: with a
// declaration, comment, processing instruction or root element.
func markupStart(text []byte) bool {
	for _, p := range []string{"<?", "<!", "<rss", "<feed", "<rdf:RDF", "<RDF", "<channel"} {
		if bytes.HasPrefix(text, []byte(p)) {
			return true
		}
	}
	return false
}

// findDecl returns the offset of the first XML declaration that begins
// in text[from:to], or -1.
func findDecl(text []byte, from, to int) int {
	for i := from; i < to && i < len(text); {
		j := bytes.Index(text[i:min(len(text), to+5)], []byte("<?xml"))
		if j < 0 {
			return -1
		}
		k := i + j + 5
		if k < len(text) && (isSpace(text[k]) || text[k] == '?') {
			return i + j
		}
		i = k
	}
	return -1
}

// laterRoot finds a feed's root element after from: "<rss", "<feed" or
// "<rdf:RDF", followed by white space or ">".
func laterRoot(text []byte, from int) int {
	best := -1
	for _, tag := range []string{"<rss", "<feed", "<rdf:RDF", "<RDF:RDF"} {
		for i := from; i < len(text); {
			j := bytes.Index(text[i:], []byte(tag))
			if j < 0 {
				break
			}
			k := i + j + len(tag)
			if k < len(text) && (isSpace(text[k]) || text[k] == '>') {
				if best < 0 || i+j < best {
					best = i + j
				}
				break
			}
			i = k
		}
	}
	return best
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// positiveOr is v when it is above 0 (a limit set), else def.
func positiveOr[T int | int64](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// snippet is the start of a body, for an error message.
func snippet(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 40 {
		b = b[:40]
	}
	return strings.ToValidUTF8(string(b), "?")
}

// newestFirst orders entries by publication (or update) time, newest
// first; undated entries follow the dated ones in document order, since
// feeds list their newest items first.
func newestFirst(entries []ndjson.Entry) []ndjson.Entry {
	out := make([]ndjson.Entry, 0, len(entries))
	for _, i := range newestOrder(entries) {
		out = append(out, entries[i])
	}
	return out
}

// newestOrder is newestFirst as indexes into entries.
func newestOrder(entries []ndjson.Entry) []int {
	when := func(i int) time.Time {
		if e := &entries[i]; !e.Published.IsZero() {
			return e.Published.Time
		}
		return entries[i].Updated.Time
	}
	order := make([]int, len(entries))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ta, tb := when(a), when(b)
		switch {
		case ta.IsZero() && tb.IsZero():
			return 0
		case ta.IsZero():
			return 1
		case tb.IsZero():
			return -1
		}
		return tb.Compare(ta)
	})
	return order
}
