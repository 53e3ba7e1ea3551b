package parse

import (
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// tokenizer reads the tokens of an XML text held in memory: what
// encoding/xml's Decoder.RawToken gives in its non-strict mode with
// xml.HTMLEntity, the same tokens, errors and offsets, but over a []byte
// instead of one byte at a time through an interface, and without a copy
// of every name and text. feed-parse spent half its time in RawToken.
//
// Like RawToken it reads no DTD and expands no entity but XML's five,
// HTML's (xml.HTMLEntity) and character references; an unknown entity,
// a bare "&" and a malformed reference stay as written. It differs from
// RawToken in one way on purpose: a character reference written with an
// upper-case X (&#X41;) is hexadecimal, as feeds mean it. FuzzTokenizer
// holds it to encoding/xml on any input.
//
// A token's names are interned strings; its text and attribute values
// point into the input when they are as written (no reference to
// expand, no carriage return), else into the tokenizer's buffers: they
// are valid until the next call of next.
type tokenizer struct {
	b      []byte // the input
	origin int    // where in b reading began: offsets and lines count from it
	pos    int    // the next byte to read
	err    error  // once set, every call returns it

	needClose bool // the last start tag was self-closing: its end comes next
	toClose   qname

	// validUTF8 says the input is UTF-8 without U+FFFE and U+FFFF, as
	// charsets.Body and repair make the parser's: the check of the
	// non-ASCII characters of each text is spared.
	validUTF8 bool

	// With count set, the tokenizer counts the references of the text it
	// reads as repair's countRefs counts them (refs), to spare the text a
	// pass of its own for the warnings. uncounted says that a reference
	// may lie where it does not look (a processing instruction or a
	// directive with "&" or "<!") or that it found one repair must fix:
	// the counts are then not countRefs', which must be asked.
	count     bool
	refs      refCounts
	uncounted bool

	tok   token
	buf   []byte // text and values that differ from the input
	names map[string]qname
	// recent caches the last names read, by a hash of their bytes: a map
	// lookup for each of a feed's few names cost a tenth of the tokenizer.
	recent [64]struct {
		b []byte
		n qname
	}
}

type tokKind uint8

const (
	tokStart tokKind = iota + 1
	tokEnd
	tokText // character data, CDATA sections included
	tokComment
	tokProcInst
	tokDirective
)

// qname is a name as written: its prefix (space) and local part.
type qname struct{ space, local string }

type attrTok struct {
	name  qname
	value []byte
}

// token is one token; see tokenizer for how long its slices are valid.
type token struct {
	kind   tokKind
	name   qname     // tokStart, tokEnd
	attrs  []attrTok // tokStart
	text   []byte    // tokText; the data of tokComment, tokProcInst, tokDirective
	target string    // tokProcInst
}

// set makes t a token, field by field: assigning a whole token literal
// copied it with a bulk write barrier for its pointers whenever the
// collector was running (2% of feed-parse's time).
func (t *token) set(kind tokKind, name qname, attrs []attrTok, text []byte, target string) {
	t.kind, t.name, t.attrs, t.text, t.target = kind, name, attrs, text, target
}

// maxInterned caps the names a tokenizer keeps: real feeds use a few
// dozen, and a hostile one with millions must not grow the table.
const maxInterned = 4096

// reset makes z read b from at.
func (z *tokenizer) reset(b []byte, at int) {
	z.b, z.origin, z.pos, z.err, z.needClose = b, at, at, nil, false
}

// knownNames are the names of the elements and attributes of feeds,
// interned once for every tokenizer (a map of its own for each document
// was a twentieth of the allocations).
var knownNames = func() map[string]qname {
	m := map[string]qname{}
	for _, s := range strings.Fields(`rss channel item title link description guid pubDate category author
		enclosure comments source language ttl image url width height copyright lastBuildDate generator docs
		managingEditor webMaster skipHours skipDays hour day textInput name cloud rating version isPermaLink
		domain length type href rel feed entry id updated published summary content subtitle rights icon logo
		email uri term label scheme xml:base xml:lang xmlns xmlns:content xmlns:dc xmlns:atom xmlns:media
		xmlns:itunes xmlns:feedburner xmlns:dcterms xmlns:rdf xmlns:slash xmlns:wfw xmlns:sy
		content:encoded dc:creator dc:date dc:subject dc:title dc:description dc:language dc:publisher
		dc:rights dcterms:modified atom:link media:content media:thumbnail media:group media:title
		media:description media:player media:credit media:keywords media:category itunes:author
		itunes:summary itunes:image itunes:duration itunes:explicit itunes:keywords itunes:subtitle
		itunes:category itunes:owner itunes:email itunes:name feedburner:origLink rdf:RDF rdf:about
		rdf:resource slash:comments wfw:commentRss sy:updatePeriod sy:updateFrequency medium fileSize
		div p a img br span em strong b i ul ol li h1 h2 h3 h4 blockquote pre code src alt class style
		cite target`) {
		n := qname{local: s}
		if i := strings.IndexByte(s, ':'); i >= 0 {
			n = qname{space: s[:i], local: s[i+1:]}
		}
		m[s] = n
	}
	return m
}()

// offset is where z is in the input, counted from where it began, as
// Decoder.InputOffset: the end of the last token.
func (z *tokenizer) offset() int { return z.pos - z.origin }

// syntaxError sets z.err to an error at the current position.
func (z *tokenizer) syntaxError(msg string) error {
	line := 1 + bytes.Count(z.b[z.origin:min(z.pos, len(z.b))], []byte{'\n'})
	z.err = &xml.SyntaxError{Msg: msg, Line: line}
	return z.err
}

// eof sets z.err for input that ends inside a token.
func (z *tokenizer) eof() error {
	z.pos = len(z.b)
	return z.syntaxError("unexpected EOF")
}

// next reads the next token into z.tok. At the end of the input it
// returns io.EOF.
func (z *tokenizer) next() (*token, error) {
	if z.err != nil {
		return nil, z.err
	}
	t := &z.tok
	if z.needClose {
		z.needClose = false
		t.set(tokEnd, z.toClose, t.attrs[:0], nil, "")
		return t, nil
	}
	if z.pos >= len(z.b) {
		z.err = io.EOF
		return nil, z.err
	}
	z.buf = z.buf[:0]
	if z.b[z.pos] != '<' {
		data, ok := z.text(-1, false)
		if !ok {
			return nil, z.err
		}
		t.set(tokText, qname{}, t.attrs[:0], data, "")
		return t, nil
	}
	z.pos++
	if z.pos >= len(z.b) {
		return nil, z.eof()
	}
	switch c := z.b[z.pos]; c {
	case '/':
		z.pos++
		name, ok := z.nsname()
		if !ok {
			if z.err == nil {
				z.syntaxError("expected element name after </")
			}
			return nil, z.err
		}
		z.space()
		if z.pos >= len(z.b) {
			return nil, z.eof()
		}
		z.pos++
		if z.b[z.pos-1] != '>' {
			return nil, z.syntaxError("invalid characters between </" + name.local + " and >")
		}
		t.set(tokEnd, name, t.attrs[:0], nil, "")
		return t, nil
	case '?':
		z.pos++
		return z.procInst()
	case '!':
		z.pos++
		return z.bang()
	}
	return z.startTag()
}

// procInst reads a processing instruction after its "<?".
func (z *tokenizer) procInst() (*token, error) {
	name, ok := z.name()
	if !ok {
		if z.err == nil {
			z.syntaxError("expected target name after <?")
		}
		return nil, z.err
	}
	target := name.local
	if name.space != "" {
		target = name.space + ":" + name.local
	}
	z.space()
	end := bytes.Index(z.b[z.pos:], []byte("?>"))
	if end < 0 {
		return nil, z.eof()
	}
	data := z.b[z.pos : z.pos+end]
	z.pos += end + 2
	if z.count && mayHideRefs(data) {
		z.uncounted = true
	}
	if target == "xml" {
		// The text is UTF-8 whatever the declaration says; only its
		// version can stop it, as it stops encoding/xml.
		if ver := declParam("version", string(data)); ver != "" && ver != "1.0" {
			z.err = fmt.Errorf("xml: unsupported version %q; only version 1.0 is supported", ver)
			return nil, z.err
		}
	}
	t := &z.tok
	t.set(tokProcInst, qname{}, t.attrs[:0], data, target)
	return t, nil
}

// declParam is the value of param="..." (or '...') in an XML
// declaration, as encoding/xml finds it: the first occurrence of param=
// that a quote follows.
func declParam(param, s string) string {
	param += "="
	i := 0
	var sep byte
	for i < len(s) {
		k := bytes.Index([]byte(s[i:]), []byte(param))
		if k < 0 || i+k+len(param) >= len(s) {
			return ""
		}
		c := s[i+k+len(param)]
		i += k + len(param) + 1
		if c == '\'' || c == '"' {
			sep = c
			break
		}
	}
	if sep == 0 {
		return ""
	}
	j := bytes.IndexByte([]byte(s[i:]), sep)
	if j < 0 {
		return ""
	}
	return s[i : i+j]
}

// bang reads what follows "<!": a comment, a CDATA section or a
// directive (a DOCTYPE, read and ignored: no entity it declares is ever
// used).
func (z *tokenizer) bang() (*token, error) {
	t := &z.tok
	if z.pos >= len(z.b) {
		return nil, z.eof()
	}
	switch z.b[z.pos] {
	case '-':
		z.pos++
		if z.pos >= len(z.b) {
			return nil, z.eof()
		}
		z.pos++
		if z.b[z.pos-1] != '-' {
			return nil, z.syntaxError("invalid sequence <!- not part of <!--")
		}
		// The comment ends at the first "--", which must be followed by
		// ">".
		start := z.pos
		i := bytes.Index(z.b[start:], []byte("--"))
		if i < 0 || start+i+2 >= len(z.b) {
			return nil, z.eof()
		}
		z.pos = start + i + 3
		if z.b[start+i+2] != '>' {
			return nil, z.syntaxError(`invalid sequence "--" not allowed in comments`)
		}
		t.set(tokComment, qname{}, t.attrs[:0], z.b[start:start+i], "")
		return t, nil
	case '[':
		z.pos++
		for i := 0; i < 6; i++ {
			if z.pos >= len(z.b) {
				return nil, z.eof()
			}
			z.pos++
			if z.b[z.pos-1] != "CDATA["[i] {
				return nil, z.syntaxError("invalid <![ sequence")
			}
		}
		data, ok := z.text(-1, true)
		if !ok {
			return nil, z.err
		}
		t.set(tokText, qname{}, t.attrs[:0], data, "")
		return t, nil
	}
	return z.directive()
}

// directive reads a directive after its "<!" as encoding/xml does:
// nested angle brackets count, quoted ones do not, and a comment inside
// becomes a space.
func (z *tokenizer) directive() (*token, error) {
	b := z.b
	if start := z.pos; z.count {
		defer func() {
			if mayHideRefs(b[start:min(z.pos, len(b))]) {
				z.uncounted = true
			}
		}()
	}
	z.buf = append(z.buf[:0], b[z.pos])
	z.pos++
	var inquote byte
	depth := 0
	for {
		if z.pos >= len(b) {
			return nil, z.eof()
		}
		c := b[z.pos]
		z.pos++
		if inquote == 0 && c == '>' && depth == 0 {
			break
		}
	handle:
		z.buf = append(z.buf, c)
		switch {
		case c == inquote:
			inquote = 0
		case inquote != 0:
		case c == '\'' || c == '"':
			inquote = c
		case c == '>':
			depth--
		case c == '<':
			const open = "!--"
			for i := 0; i < len(open); i++ {
				if z.pos >= len(b) {
					return nil, z.eof()
				}
				c = b[z.pos]
				z.pos++
				if c != open[i] {
					z.buf = append(z.buf, open[:i]...)
					depth++
					goto handle
				}
			}
			z.buf = z.buf[:len(z.buf)-1] // the "<" of the comment
			end := bytes.Index(b[z.pos:], []byte("-->"))
			if end < 0 {
				return nil, z.eof()
			}
			z.pos += end + 3
			z.buf = append(z.buf, ' ')
		}
	}
	t := &z.tok
	t.set(tokDirective, qname{}, t.attrs[:0], z.buf, "")
	return t, nil
}

// startTag reads a start tag after its "<".
func (z *tokenizer) startTag() (*token, error) {
	t := &z.tok
	name, ok := z.nsname()
	if !ok {
		if z.err == nil {
			z.syntaxError("expected element name after <")
		}
		return nil, z.err
	}
	attrs := t.attrs[:0]
	b := z.b
	empty := false
	for {
		z.space()
		if z.pos >= len(b) {
			return nil, z.eof()
		}
		c := b[z.pos]
		z.pos++
		if c == '/' {
			if z.pos >= len(b) {
				return nil, z.eof()
			}
			z.pos++
			if b[z.pos-1] != '>' {
				return nil, z.syntaxError("expected /> in element")
			}
			empty = true
			break
		}
		if c == '>' {
			break
		}
		z.pos--
		var a attrTok
		if a.name, ok = z.nsname(); !ok {
			if z.err == nil {
				z.syntaxError("expected attribute name in element")
			}
			return nil, z.err
		}
		z.space()
		if z.pos >= len(b) {
			return nil, z.eof()
		}
		if b[z.pos] != '=' {
			// Non-strict: an attribute without a value has its name.
			a.value = []byte(a.name.local)
		} else {
			z.pos++
			z.space()
			if a.value, ok = z.attrValue(); !ok {
				return nil, z.err
			}
		}
		attrs = append(attrs, a)
	}
	if empty {
		z.needClose, z.toClose = true, name
	}
	t.set(tokStart, name, attrs, nil, "")
	return t, nil
}

// attrValue reads an attribute value, quoted or (non-strict) not.
func (z *tokenizer) attrValue() ([]byte, bool) {
	if z.pos >= len(z.b) {
		z.eof()
		return nil, false
	}
	c := z.b[z.pos]
	z.pos++
	if c == '"' || c == '\'' {
		return z.text(int(c), false)
	}
	// Unquoted, as HTML writes it: letters, digits and "_:-".
	z.pos--
	start := z.pos
	for z.pos < len(z.b) && unquotedByte[z.b[z.pos]] {
		z.pos++
	}
	if z.pos >= len(z.b) {
		z.eof()
		return nil, false
	}
	return z.b[start:z.pos], true
}

var unquotedByte = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == ':' || c == '-'
	}
	return t
}()

// space skips white space.
func (z *tokenizer) space() {
	for z.pos < len(z.b) {
		switch z.b[z.pos] {
		case ' ', '\r', '\n', '\t':
			z.pos++
		default:
			return
		}
	}
}

// nameByte marks the bytes a name is read as: ASCII name characters and
// every byte of a multi-byte character (checked once the name is read).
var nameByte = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == ':' || c == '.' || c == '-'
	}
	return t
}()

// readName reads the bytes of a name. ok is false when there is none;
// z.err is set when the input ends inside it.
func (z *tokenizer) readName() (name []byte, ok bool) {
	start := z.pos
	for z.pos < len(z.b) && nameByte[z.b[z.pos]] {
		z.pos++
	}
	if z.pos >= len(z.b) {
		z.eof()
		return nil, false
	}
	return z.b[start:z.pos], z.pos > start
}

// name reads a name, split at its colon, as encoding/xml's name and nsname
// do; its qname is interned. A name with two colons is not ok (and no
// error is set, as in nsname).
func (z *tokenizer) nsname() (qname, bool) {
	n, ok := z.name()
	if !ok {
		return qname{}, false
	}
	if n.space == "" && strings.IndexByte(n.local, ':') >= 0 && strings.Count(n.local, ":") > 1 {
		return qname{}, false
	}
	return n, true
}

func (z *tokenizer) name() (qname, bool) {
	b, ok := z.readName()
	if !ok {
		return qname{}, false
	}
	slot := &z.recent[(len(b)*7+int(b[0])*3+int(b[len(b)-1]))&63]
	if bytes.Equal(slot.b, b) {
		return slot.n, true
	}
	if n, ok := knownNames[string(b)]; ok {
		slot.b, slot.n = b, n
		return n, true
	}
	if n, ok := z.names[string(b)]; ok {
		slot.b, slot.n = b, n
		return n, true
	}
	if !isXMLName(b) {
		z.syntaxError("invalid XML name: " + string(b))
		return qname{}, false
	}
	s := string(b)
	n := qname{local: s}
	if i := bytes.IndexByte(b, ':'); i > 0 && i < len(b)-1 && bytes.IndexByte(b[i+1:], ':') < 0 {
		n = qname{space: s[:i], local: s[i+1:]}
	}
	if z.names == nil {
		z.names = make(map[string]qname)
	}
	if len(z.names) < maxInterned {
		z.names[s] = n
		slot.b, slot.n = b, n
	}
	return n, true
}

// isXMLName reports whether b is an XML name. ASCII names are checked
// here; the others by encoding/xml itself, whose tables of name
// characters (XML 1.0's) are not exported: they are rare in feeds.
func isXMLName(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	ascii := true
	for _, c := range b {
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		c := b[0]
		return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || c == '_' || c == ':'
	}
	// A colon is a name character anywhere; without them the name is
	// checked as an element name.
	probe := append(append([]byte{'<'}, bytes.ReplaceAll(b, []byte(":"), []byte("a"))...), '/', '>')
	d := xml.NewDecoder(bytes.NewReader(probe))
	_, err := d.RawToken()
	return err == nil
}

// textSpecial marks the bytes text reading stops at: the end of text,
// references, carriage returns, the "]" of "]]>", and the characters XML
// forbids (checked once the text is read). valueSpecial adds the quotes
// that may end an attribute value; in text they are text.
var textSpecial, valueSpecial = func() (t, v [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = c != '\t' && c != '\n'
	}
	t['<'], t['&'], t[']'] = true, true, true
	v = t
	v['"'], v['\''] = true, true
	return t, v
}()

// cdataPlain reports whether the text of a CDATA section needs nothing
// done to it: no carriage return and no control character (bytes below
// the space but tab and newline), looked at eight bytes at a time.
func cdataPlain(b []byte) bool {
	const ones, highs, lows = 0x0101010101010101, 0x8080808080808080, 0x7f7f7f7f7f7f7f7f
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		below := ^((x&lows + ones*(0x80-0x20)) | x) & highs
		if below != 0 && below&^byteIs(x, '\t')&^byteIs(x, '\n') != 0 {
			return false
		}
	}
	for _, c := range b[i:] {
		if c < 0x20 && c != '\t' && c != '\n' {
			return false
		}
	}
	return true
}

// text reads character data up to a "<" (quote < 0; not consumed), the
// quote that ends an attribute value (quote >= 0; consumed), or the "]]>"
// that ends a CDATA section (cdata), as encoding/xml's text does:
// references expanded (but in CDATA), carriage returns made newlines, and
// the result checked for characters XML forbids.
func (z *tokenizer) text(quote int, cdata bool) ([]byte, bool) {
	b := z.b
	start := z.pos
	// The text read so far, once it differs from the input (copied), in
	// z.buf after what earlier values of the same tag keep there.
	out := z.buf[len(z.buf):]
	copied := false // out holds b[start:last] as read
	last := start
	// Whether a control character, or a reference to one, was seen: the
	// check of the characters is spared text without one (and, but for
	// valid UTF-8 input, without non-ASCII characters).
	control := false
	if cdata {
		// A CDATA section is most often HTML: its end found at once, and
		// what lies before it taken as it is when it holds no carriage
		// return and no control character, else read below.
		if e := bytes.Index(b[start:], []byte("]]>")); e >= 0 && cdataPlain(b[start:start+e]) {
			z.pos = start + e + 3
			return z.result(start, start+e, out, false, start, false)
		}
	}
	special := &textSpecial
	if quote >= 0 {
		special = &valueSpecial
	}
	for {
		i := z.pos
		for i < len(b) && !special[b[i]] {
			i++
		}
		z.pos = i
		end := -1 // where the text ends, once it does
		if i >= len(b) {
			switch {
			case cdata:
				z.syntaxError("unexpected EOF in CDATA section")
				return nil, false
			case quote >= 0:
				// The value is checked before the end is an error.
				if _, ok := z.result(start, i, out, copied, last, control); ok {
					z.eof()
				}
				return nil, false
			}
			data, ok := z.result(start, i, out, copied, last, control)
			if ok {
				z.err = io.EOF // the text ends the input: the next call says so
			}
			return data, ok
		}
		switch c := b[i]; {
		case c == ']':
			// "]]>" ends a CDATA section, and is an error in text.
			if quote < 0 && i+2 < len(b) && b[i+1] == ']' && b[i+2] == '>' {
				z.pos = i + 3
				if !cdata {
					z.syntaxError("unescaped ]]> not in CDATA section")
					return nil, false
				}
				end = i
			} else {
				z.pos++
			}
		case c == '<':
			switch {
			case cdata:
				z.pos++
			case quote >= 0:
				z.pos++
				z.syntaxError("unescaped < inside quoted string")
				return nil, false
			default:
				end = i
			}
		case c == '"' || c == '\'':
			z.pos++
			if quote >= 0 && c == byte(quote) {
				end = i
			}
		case c == '&' && !cdata:
			out, copied = append(out, b[last:i]...), true
			if ch, n := xmlEntityAt(b[i:]); n > 0 {
				out = append(out, ch) // the references escaped HTML is made of
				z.pos += n
			} else {
				if z.count {
					z.countRef(i)
				}
				n := len(out)
				z.reference(&out)
				if z.err != nil {
					return nil, false
				}
				for _, c := range out[n:] {
					control = control || c < 0x20
				}
			}
			last = z.pos
		case c == '\r':
			out, copied = append(out, b[last:i]...), true
			out = append(out, '\n')
			z.pos++
			if z.pos < len(b) && b[z.pos] == '\n' {
				z.pos++ // \r\n is one newline
			}
			last = z.pos
		default:
			// A control character, which the check refuses, or an "&" in
			// CDATA.
			control = control || c < 0x20
			z.pos++
		}
		if end >= 0 {
			return z.result(start, end, out, copied, last, control)
		}
	}
}

// countRef counts the reference at b[i] (an "&") as countRefs does.
func (z *tokenizer) countRef(i int) {
	kind, name, _ := readRef(z.b, i)
	if kind == refBadChar {
		z.uncounted = true // repair removes it: countRefs says so
		return
	}
	z.refs.add(kind, name)
}

// mayHideRefs reports whether b, the text of a processing instruction or
// a directive, holds what countRefs would count or take for the start of
// a CDATA section or comment, where the tokenizer looks at neither.
func mayHideRefs(b []byte) bool {
	return bytes.IndexByte(b, '&') >= 0 || bytes.Contains(b, []byte("<!"))
}

// result is text's text, b[start:end] as read: the input itself, or,
// when copied, out with the input from last; checked for the characters
// XML forbids unless nothing calls for it.
func (z *tokenizer) result(start, end int, out []byte, copied bool, last int, control bool) ([]byte, bool) {
	data := z.b[start:end]
	if copied {
		data = append(out, z.b[last:end]...)
		if base := len(z.buf); cap(data) == cap(z.buf)-base {
			z.buf = z.buf[:base+len(data)] // data is in z.buf: keep it
		} else {
			z.buf = data // in a larger array: the values before keep the old one
		}
	}
	if control || !z.validUTF8 && (!utf8.Valid(data) || hasNonChar(data)) {
		return z.check(data)
	}
	return data, true
}

// reference reads a reference at z.pos (an "&") into *out: an entity or
// character reference is expanded; anything else stays as written, as
// in non-strict encoding/xml. It reports whether it expanded one.
func (z *tokenizer) reference(out *[]byte) bool {
	b := z.b
	amp := z.pos
	// The references escaped HTML is made of, at once.
	if c, n := xmlEntityAt(b[amp:]); n > 0 {
		*out = append(*out, c)
		z.pos += n
		return true
	}
	z.pos++
	if z.pos >= len(b) {
		z.eof()
		return false
	}
	if b[z.pos] == '#' {
		z.pos++
		if z.pos >= len(b) {
			z.eof()
			return false
		}
		base := 10
		if c := b[z.pos]; c == 'x' || c == 'X' {
			base = 16
			z.pos++
			if z.pos >= len(b) {
				z.eof()
				return false
			}
		}
		digits := z.pos
		for z.pos < len(b) && (isDigit(b[z.pos]) || base == 16 && isHexLetter(b[z.pos])) {
			z.pos++
		}
		if z.pos >= len(b) {
			z.eof()
			return false
		}
		if b[z.pos] == ';' {
			n, ok := refValue(b[digits:z.pos], base)
			z.pos++
			if ok {
				*out = utf8.AppendRune(*out, n)
				return true
			}
		}
		*out = append(*out, b[amp:z.pos]...)
		return false
	}
	name, ok := z.readName()
	if z.err != nil {
		return false
	}
	if z.pos >= len(b) {
		z.eof()
		return false
	}
	if b[z.pos] == ';' {
		z.pos++
		if ok {
			if s, found := entityText(name); found {
				*out = append(*out, s...)
				return true
			}
		}
	}
	*out = append(*out, b[amp:z.pos]...)
	return false
}

// refValue is the character a reference's digits name, if they name one
// at most utf8.MaxRune (as strconv.ParseUint, without its copy).
func refValue(digits []byte, base int) (rune, bool) {
	if len(digits) == 0 {
		return 0, false
	}
	var n rune
	for _, c := range digits {
		d := rune(c - '0')
		if c > '9' {
			d = rune(c|0x20-'a') + 10
		}
		n = n*rune(base) + d
		if n > utf8.MaxRune {
			return 0, false
		}
	}
	return n, true
}

func isDigit(c byte) bool     { return '0' <= c && c <= '9' }
func isHexLetter(c byte) bool { return 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// xmlEntityAt reads &lt;, &gt;, &amp; or &quot; at the start of b: its
// character and length, or n 0 for anything else.
func xmlEntityAt(b []byte) (c byte, n int) {
	if len(b) >= 4 && b[3] == ';' && b[2] == 't' {
		switch b[1] {
		case 'l':
			return '<', 4
		case 'g':
			return '>', 4
		}
	}
	if len(b) >= 5 && b[1] == 'a' && b[2] == 'm' && b[3] == 'p' && b[4] == ';' {
		return '&', 5
	}
	if len(b) >= 6 && string(b[1:6]) == "quot;" {
		return '"', 6
	}
	return 0, 0
}

// entityText is the text of a named entity: XML's five, then HTML's.
// Every name these know is an XML name, so no name check is needed.
func entityText(name []byte) (string, bool) {
	switch string(name) {
	case "lt":
		return "<", true
	case "gt":
		return ">", true
	case "amp":
		return "&", true
	case "apos":
		return "'", true
	case "quot":
		return `"`, true
	}
	s, ok := xml.HTMLEntity[string(name)]
	return s, ok
}

// check returns data if it holds only characters XML allows, else sets
// the error encoding/xml gives for the first that it does not.
func (z *tokenizer) check(data []byte) ([]byte, bool) {
	if validXMLChars(data) {
		return data, true
	}
	for rest := data; len(rest) > 0; {
		r, size := utf8.DecodeRune(rest)
		if r == utf8.RuneError && size == 1 {
			z.syntaxError("invalid UTF-8")
			return nil, false
		}
		rest = rest[size:]
		if !isXMLChar(r) {
			z.syntaxError(fmt.Sprintf("illegal character code %U", r))
			return nil, false
		}
	}
	return data, true
}

// validXMLChars reports, quickly, whether b is UTF-8 of characters XML
// allows: no control characters but tab, newline and carriage return,
// no U+FFFE or U+FFFF (the only others valid UTF-8 can hold).
func validXMLChars(b []byte) bool {
	for i, c := range b {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
		if c == 0xEF && i+2 < len(b) && b[i+1] == 0xBF && b[i+2] >= 0xBE {
			return false
		}
	}
	return utf8.Valid(b)
}

// hasNonChar reports whether UTF-8 text holds U+FFFE or U+FFFF.
func hasNonChar(b []byte) bool {
	for {
		i := bytes.IndexByte(b, 0xEF)
		if i < 0 || i+2 >= len(b) {
			return false
		}
		if b[i+1] == 0xBF && b[i+2] >= 0xBE {
			return true
		}
		b = b[i+1:]
	}
}

func isXMLChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D || r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}
