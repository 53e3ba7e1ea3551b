package parse

import (
	"bytes"
	"strings"
)

type captureMode uint8

const (
	// capText reads the text of an element. Should the element hold
	// elements (HTML written into a description unescaped), the text
	// becomes markup: the elements as written and the text escaped.
	capText captureMode = iota
	// capXHTML reads markup, without the div that wraps Atom's xhtml
	// content.
	capXHTML
	// capXHTMLBody reads markup as it is.
	capXHTMLBody
)

// capture reads the content of the element just opened, up to and
// including its end tag. An end tag of an element around it ends it too
// (and is read again by the caller); one that closes nothing is ignored.
// Elements inside count towards the depth limit: err is errTooDeep when
// one is too deep. A decoder error ends the capture early; the caller
// learns of it from the next token.
func (p *xmlParser) capture(mode captureMode) (string, error) {
	floor := len(p.stack) - 1 // the element whose content this is
	buf := p.scr[:0]
	markup := mode != capText
	open := false // a start tag is written without its ">"
	topElems, topText := 0, false
	firstTop := ""
	defer func() { p.scr = buf[:0] }()
	// Bindings at or past visible are declared in the markup written
	// (xmlns attributes are copied); those before, outside the captured
	// element or on a top element (the div Atom's xhtml loses), are
	// declared again where they are used.
	visible := 0
	closeTop := func() {
		fr := &p.stack[len(p.stack)-1]
		if open {
			buf = append(buf, "/>"...)
			open = false
		} else {
			buf = append(buf, "</"...)
			buf = p.appendName(buf, fr)
			buf = append(buf, '>')
		}
	}
	// The common case, text and the end tag, without the scratch buffer.
	if mode == capText {
		t, off, err := p.next()
		if err != nil {
			return "", nil
		}
		if t.kind != tokText {
			p.hold(t, off)
		} else {
			text := string(t.text)
			t, off, err := p.next()
			if err != nil {
				return text, nil
			}
			if t.kind == tokEnd && p.match(t.name, floor) == floor {
				p.pop(p.offset())
				return text, nil
			}
			buf = append(buf, text...)
			topText = strings.TrimSpace(text) != ""
			p.hold(t, off)
		}
	}
	for {
		t, off, err := p.next()
		if err != nil {
			return string(buf), nil
		}
		switch t.kind {
		case tokText:
			if open {
				buf = append(buf, '>')
				open = false
			}
			if markup {
				buf = escapeText(buf, t.text, false)
			} else {
				buf = append(buf, t.text...)
			}
			if !topText && len(p.stack)-1 == floor && len(bytes.TrimSpace(t.text)) > 0 {
				topText = true
			}
		case tokStart:
			if !markup {
				buf = escapeText(nil, buf, false)
				markup = true
			}
			if open {
				buf = append(buf, '>')
				open = false
			}
			if len(p.stack)-1 == floor {
				topElems++
				if topElems == 1 {
					firstTop = t.name.local
				}
			}
			top := len(p.stack)-1 == floor
			fr, err := p.push(t)
			if err != nil {
				return "", err
			}
			if top {
				visible = fr.nsMark
			}
			buf = p.startTag(buf, fr, t, top, visible, mode != capText)
			if top {
				visible = len(p.ns)
			}
			open = true
		case tokEnd:
			i := p.match(t.name, floor)
			if i < 0 {
				if p.match(t.name, 0) >= 0 {
					// An ancestor's end tag: this element ends here too.
					for len(p.stack)-1 > floor {
						closeTop()
						p.pop(off)
					}
					p.pop(off)
					p.hold(t, off)
					return p.finish(buf, mode, topElems, topText, firstTop), nil
				}
				continue
			}
			for len(p.stack)-1 > i {
				closeTop()
				p.pop(off)
			}
			if i == floor {
				p.pop(p.offset())
				return p.finish(buf, mode, topElems, topText, firstTop), nil
			}
			closeTop()
			p.pop(p.offset())
		}
	}
}

// finish makes the captured bytes a string, without Atom's xhtml div.
func (p *xmlParser) finish(buf []byte, mode captureMode, topElems int, topText bool, firstTop string) string {
	if mode == capXHTML && topElems == 1 && !topText && firstTop == "div" {
		b := bytes.TrimSpace(buf)
		gt := bytes.IndexByte(b, '>')
		switch {
		case gt > 0 && b[gt-1] == '/':
			return ""
		case gt > 0 && bytes.HasSuffix(b, []byte("</div>")) && gt+1 <= len(b)-len("</div>"):
			return string(b[gt+1 : len(b)-len("</div>")])
		}
	}
	return string(buf)
}

// Captured markup is written so that it stays well-formed XML and means
// in a browser's HTML parser what it meant in the feed. XHTML, SVG and
// MathML elements lose their prefix (an HTML parser knows <svg> and
// <math>, not <svg:svg>) and get their namespace as the default one
// (xmlns="...") where it changes. Other prefixes are kept, and declared
// again where their declaration is not in the markup written; a prefix
// the document never declared is dropped.

// elementNS is how an element is written: with its prefix, or without
// and in the namespace uri ("" for none of its own: it stays in its
// parent's).
func (p *xmlParser) elementNS(fr *frame) (prefixed bool, uri string) {
	switch fr.id {
	case nsXHTML:
		return false, xhtmlURI
	case nsSVG:
		return false, svgURI
	case nsMathML:
		return false, mathMLURI
	}
	i := p.declared(fr.prefix)
	switch {
	case fr.prefix == "xml":
		return true, ""
	case fr.prefix == "":
		if i >= 0 {
			return false, p.ns[i].uri
		}
		return false, ""
	}
	return i >= 0, ""
}

// appendName writes an element's name as elementNS says.
func (p *xmlParser) appendName(buf []byte, fr *frame) []byte {
	if prefixed, _ := p.elementNS(fr); prefixed {
		buf = append(buf, fr.prefix...)
		buf = append(buf, ':')
	}
	return append(buf, fr.local...)
}

// startTag writes the start tag of fr (without its closing ">"), with
// the namespace declarations it needs. Bindings from index visible on
// are declared in the markup already. resolve makes URL attributes
// absolute.
func (p *xmlParser) startTag(buf []byte, fr *frame, t *token, top bool, visible int, resolve bool) []byte {
	parentNS := xhtmlURI
	if !top {
		parentNS = p.stack[len(p.stack)-2].outNS
	}
	fr.outNS = parentNS
	buf = append(buf, '<')
	prefixed, uri := p.elementNS(fr)
	if prefixed {
		buf = append(buf, fr.prefix...)
		buf = append(buf, ':')
	}
	buf = append(buf, fr.local...)
	// The element's own default namespace declaration is kept where it
	// is, unless it declares XHTML (the markup's namespace anyway);
	// one is added where the element needs one and has none.
	own, ownAt := "", -1
	for i, a := range t.attrs {
		if a.name.space == "" && a.name.local == "xmlns" && nsOf(string(a.value)) != nsXHTML {
			own, ownAt = canonicalNS(string(a.value)), i
		}
	}
	if prefixed {
		buf = p.redeclare(buf, fr.prefix, visible)
	} else if uri != "" && uri != parentNS && uri != own {
		buf = append(buf, ` xmlns="`...)
		buf = escapeText(buf, []byte(uri), true)
		buf = append(buf, '"')
		fr.outNS = uri
	}
	if ownAt >= 0 && (prefixed || uri == "" || uri == own) {
		fr.outNS = own
	} else {
		ownAt = -1
	}
	for i, a := range t.attrs {
		space := a.name.space
		switch {
		case space == "" && a.name.local == "xmlns":
			if i != ownAt {
				continue
			}
		case space == "xmlns" && nsOf(string(a.value)) == nsXHTML:
			continue
		case space == "xmlns", space == "xml", space == "":
		case p.declared(space) >= 0:
			buf = p.redeclare(buf, space, visible)
		case attrNamed(t.attrs, a.name.local) || !undeclaredFirst(p, t.attrs, i):
			continue // without its undeclared prefix, it would repeat another
		default:
			space = ""
		}
		buf = append(buf, ' ')
		if space != "" {
			buf = append(buf, space...)
			buf = append(buf, ':')
		}
		buf = append(buf, a.name.local...)
		buf = append(buf, `="`...)
		if resolve && a.name.space == "" && urlAttrs[a.name.local] && (isRelative(a.value) || isSpaced(a.value)) {
			// xhtml is resolved here, where each element's base is known.
			buf = escapeText(buf, []byte(resolveRef(fr.base, string(a.value))), true)
		} else {
			buf = escapeText(buf, a.value, true)
		}
		buf = append(buf, '"')
	}
	return buf
}

// canonicalNS is a namespace name as the markup compares it: the known
// ones by their standard spelling.
func canonicalNS(uri string) string {
	switch nsOf(uri) {
	case nsXHTML:
		return xhtmlURI
	case nsSVG:
		return svgURI
	case nsMathML:
		return mathMLURI
	}
	return uri
}

// redeclare writes a declaration of prefix, unless the markup has one in
// force (a binding at visible or after), and records it as in force.
func (p *xmlParser) redeclare(buf []byte, prefix string, visible int) []byte {
	i := p.declared(prefix)
	if i < 0 || i >= visible || prefix == "xml" || prefix == "xmlns" {
		return buf
	}
	b := p.ns[i]
	p.ns = append(p.ns, b)
	buf = append(buf, " xmlns:"...)
	buf = append(buf, prefix...)
	buf = append(buf, `="`...)
	buf = escapeText(buf, []byte(b.uri), true)
	return append(buf, '"')
}

// attrNamed reports whether one of attrs is name, written without a
// prefix.
func attrNamed(attrs []attrTok, name string) bool {
	for _, a := range attrs {
		if a.name.local == name && a.name.space == "" {
			return true
		}
	}
	return false
}

// undeclaredFirst reports whether attrs[i], whose prefix was never
// declared, is the first of the attributes that lose their prefix to
// be called by its local name: the one kept of them.
func undeclaredFirst(p *xmlParser, attrs []attrTok, i int) bool {
	for _, a := range attrs[:i] {
		if a.name.local == attrs[i].name.local && a.name.space != "" && a.name.space != "xmlns" && a.name.space != "xml" && p.declared(a.name.space) < 0 {
			return false
		}
	}
	return true
}

// escapeText appends s to buf with &, < and > (and " in attributes)
// escaped.
func escapeText(buf, s []byte, attr bool) []byte {
	last := 0
	for i, c := range s {
		var esc string
		switch c {
		case '&':
			esc = "&amp;"
		case '<':
			esc = "&lt;"
		case '>':
			esc = "&gt;"
		case '"':
			if !attr {
				continue
			}
			esc = "&quot;"
		default:
			continue
		}
		buf = append(buf, s[last:i]...)
		buf = append(buf, esc...)
		last = i + 1
	}
	return append(buf, s[last:]...)
}
