package parse

import (
	"bytes"
	"encoding/xml"
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
	closeTop := func() {
		fr := &p.stack[len(p.stack)-1]
		if open {
			buf = append(buf, "/>"...)
			open = false
		} else {
			buf = append(buf, "</"...)
			buf = p.appendName(buf, fr.prefix, fr.local, fr.id)
			buf = append(buf, '>')
		}
	}
	// The common case, text and the end tag, without the scratch buffer.
	if mode == capText {
		t, off, err := p.next()
		if err != nil {
			return "", nil
		}
		cd, ok := t.(xml.CharData)
		if !ok {
			p.hold(t, off)
		} else {
			text := string(cd)
			t, off, err := p.next()
			if err != nil {
				return text, nil
			}
			if e, ok := t.(xml.EndElement); ok && p.match(e, floor) == floor {
				p.pop(p.offset())
				return text, nil
			}
			buf = append(buf, text...)
			topText = strings.TrimSpace(text) != "" // cd is the decoder's again

			p.hold(t, off)
		}
	}
	for {
		t, off, err := p.next()
		if err != nil {
			return string(buf), nil
		}
		switch t := t.(type) {
		case xml.CharData:
			if open {
				buf = append(buf, '>')
				open = false
			}
			if markup {
				buf = escapeText(buf, t, false)
			} else {
				buf = append(buf, t...)
			}
			if !topText && len(p.stack)-1 == floor && len(bytes.TrimSpace(t)) > 0 {
				topText = true
			}
		case xml.StartElement:
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
					firstTop = t.Name.Local
				}
			}
			fr, err := p.push(t)
			if err != nil {
				return "", err
			}
			buf = append(buf, '<')
			buf = p.appendName(buf, fr.prefix, fr.local, fr.id)
			for _, a := range t.Attr {
				if (a.Name.Space == "xmlns" || a.Name.Space == "" && a.Name.Local == "xmlns") && nsOf(a.Value) == nsXHTML {
					continue
				}
				buf = append(buf, ' ')
				if a.Name.Space != "" {
					buf = append(buf, a.Name.Space...)
					buf = append(buf, ':')
				}
				buf = append(buf, a.Name.Local...)
				buf = append(buf, `="`...)
				v := a.Value
				if mode != capText && a.Name.Space == "" && urlAttrs[a.Name.Local] {
					v = resolveRef(fr.base, v) // xhtml is resolved here, where each element's base is known
				}
				buf = escapeText(buf, []byte(v), true)
				buf = append(buf, '"')
			}
			open = true
		case xml.EndElement:
			i := p.match(t, floor)
			if i < 0 {
				if p.match(t, 0) >= 0 {
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

// appendName writes an element's name as the document did, without a
// prefix that stands for XHTML.
func (p *xmlParser) appendName(buf []byte, prefix, local string, id nsID) []byte {
	if prefix != "" && id != nsXHTML {
		buf = append(buf, prefix...)
		buf = append(buf, ':')
	}
	return append(buf, local...)
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
