package opml

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
)

// pass is one run of encoding/xml over the document.
type pass struct {
	data       []byte
	br         *bytes.Reader
	transcoded bool // data was UTF-16 and is now UTF-8: ignore declared encodings

	outlines   []Outline
	title      strings.Builder
	sawOPML    bool
	sawOutline bool
	notes      []note
	nest       nesting // the open outlines; where the decoder gave up, what the scanner starts with

	// Where the decoder gave up.
	err      error
	errMsg   string
	errLine  int
	restOff  int64 // decoder offset before the token that failed
	restLine int

	// The decoder counts offsets in the stream it reads, which after an
	// encoding declaration is the converted one; remember where that began.
	switched bool
	switchAt int64
	label    string // encoding converted from; "" if bytes were used as is
}

// frame is one open element.
type frame struct {
	name string // lower-cased local name
}

// decode runs encoding/xml over data, strictly or leniently, collecting
// feed outlines until the end or the first error.
func decode(data []byte, strict, transcoded bool) *pass {
	p := &pass{data: data, br: bytes.NewReader(data), transcoded: transcoded}
	dec := xml.NewDecoder(p.br)
	dec.Strict = strict
	if !strict {
		dec.AutoClose = xml.HTMLAutoClose
		dec.Entity = xml.HTMLEntity
	}
	dec.CharsetReader = p.charsetReader

	var (
		stack    []frame
		inTitle  bool
		seenHead bool // the first <head><title> is the title
	)
	for {
		off := dec.InputOffset()
		line, _ := dec.InputPos()
		tok, err := dec.Token()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return p
			}
			p.fail(err, off, line, dec)
			return p
		}
		switch t := tok.(type) {
		case xml.StartElement:
			name := strings.ToLower(t.Name.Local)
			f := frame{name: name}
			switch name {
			case "opml":
				p.sawOPML = true
			case "title":
				if !seenHead && len(stack) > 0 && stack[len(stack)-1].name == "head" {
					seenHead, inTitle = true, true
				}
			case "outline":
				p.sawOutline = true
				var a feedAttrs
				for _, at := range t.Attr {
					name := at.Name.Local
					if at.Name.Space == Namespace || at.Name.Space == "feedpipe" { // declared, or not
						name = prefix + name
					} else if at.Name.Space != "" {
						continue // another namespace's
					}
					a.set(name, at.Value)
				}
				if a.url != "" {
					p.outlines = append(p.outlines, a.outline(p.nest.folders, line))
				}
				if w := p.nest.push(&a, line); w != "" {
					p.notes = append(p.notes, note{line, w})
				}
			}
			stack = append(stack, f)
		case xml.EndElement:
			// Token keeps start and end elements balanced, even leniently.
			if n := len(stack); n > 0 {
				switch stack[n-1].name {
				case "outline":
					p.nest.pop()
				case "title":
					inTitle = false
				}
				stack = stack[:n-1]
			}
		case xml.CharData:
			if inTitle {
				p.title.Write(t)
			}
		}
	}
}

// fail records where and why the decoder stopped.
func (p *pass) fail(err error, off int64, line int, dec *xml.Decoder) {
	p.err, p.restOff, p.restLine = err, off, line
	var se *xml.SyntaxError
	if errors.As(err, &se) {
		p.errMsg, p.errLine = se.Msg, se.Line
	} else {
		p.errMsg = strings.TrimPrefix(err.Error(), "xml: ")
		p.errLine, _ = dec.InputPos()
	}
	if p.errLine < line {
		p.errLine = line
	}
}

// rest is the document from where the decoder failed, as the decoder saw
// it: converted to UTF-8 if it declared another encoding.
func (p *pass) rest() []byte {
	if !p.switched || p.label == "" || p.restOff < p.switchAt {
		return clip(p.data, p.restOff)
	}
	conv, err := convert(p.label, p.data[p.switchAt:])
	if err != nil {
		return clip(p.data, p.restOff)
	}
	return clip(conv, p.restOff-p.switchAt)
}

func clip(b []byte, off int64) []byte {
	if off < 0 || off > int64(len(b)) {
		return nil
	}
	return b[off:]
}
