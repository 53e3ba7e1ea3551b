package opml

import (
	"bytes"
	"fmt"
	"html"
	"strings"
)

// scanner recovers feed outlines from text encoding/xml gave up on, by
// reading the attributes of every <outline> tag. It tracks folders by the
// tags alone: an <outline> start tag that is not self-closing opens an
// outline (a folder if it has no xmlUrl) and </outline> closes the
// innermost open one, starting from the outlines the decoder left open.
type scanner struct {
	line       int     // line of the first byte handed to scan
	nest       nesting // the open outlines
	outlines   []Outline
	notes      []note
	sawOPML    bool
	sawOutline bool
}

func (s *scanner) scan(b []byte) {
	line, counted := s.line, 0
	for i := 0; i < len(b); {
		lt := bytes.IndexByte(b[i:], '<')
		if lt < 0 {
			return
		}
		lt += i
		i = lt + 1
		switch {
		case tagIs(b[lt+1:], "opml"):
			s.sawOPML = true
		case tagIs(b[lt+1:], "outline"):
			s.sawOutline = true
			line += bytes.Count(b[counted:lt], []byte{'\n'})
			counted = lt
			i = s.outline(b, lt+1+len("outline"), line)
		case tagIs(b[lt+1:], "/outline"):
			s.nest.pop()
		}
	}
}

// tagIs reports whether b starts with the element name (any case) followed
// by the end of the name.
func tagIs(b []byte, name string) bool {
	if len(b) < len(name) || !strings.EqualFold(string(b[:len(name)]), name) {
		return false
	}
	return len(b) == len(name) || !isNameByte(b[len(name)])
}

// isBoundary reports whether b, at a '<', starts a tag of the OPML
// structure, which no attribute value can hold: a value that reaches one
// was never closed.
func isBoundary(b []byte) bool {
	b = b[1:]
	if len(b) > 0 && b[0] == '/' {
		b = b[1:]
	}
	return tagIs(b, "outline") || tagIs(b, "body") || tagIs(b, "opml") || tagIs(b, "head")
}

// outline reads the attributes of the <outline> tag whose name ends at
// b[i] and returns where the tag ends.
func (s *scanner) outline(b []byte, i int, line int) int {
	var a feedAttrs
	unterminatedURL := false
	opens := false // the tag ends in '>', not "/>": the outline has content
	t := tag{b: b}
loop:
	for i < len(b) {
		c := b[i]
		switch {
		case c == '>':
			opens = b[i-1] != '/'
			i++
			break loop
		case c == '<':
			break loop // cut off: this is the next tag
		case isNameByte(c):
			j := i
			for j < len(b) && isNameByte(b[j]) {
				j++
			}
			name := string(b[i:j])
			k := skipSpace(b, j)
			if k >= len(b) || b[k] != '=' {
				i = j // an attribute without a value
				continue
			}
			start, end, next, ok := t.value(skipSpace(b, k+1))
			i = next
			switch {
			case a.field(name) == nil:
			case !ok && strings.EqualFold(name, "xmlurl"):
				unterminatedURL = unterminatedURL || a.url == ""
			default:
				a.set(name, unescape(string(b[start:end])))
			}
		default:
			// Whitespace, '/', or a stray quote from a value that held one.
			i++
		}
	}
	// A type is one word: what follows a quote was swallowed from a
	// damaged tag.
	if q := strings.IndexAny(a.typ, "\"' "); q >= 0 {
		a.typ = a.typ[:q]
	}
	switch {
	case a.url != "":
		s.outlines = append(s.outlines, a.outline(s.nest.folders, line))
	case unterminatedURL:
		s.notes = append(s.notes, note{line, fmt.Sprintf("line %d: skipped an <outline> whose xmlUrl value is cut off", line)})
	}
	// A tag cut off by the next one or by the end opens nothing: whether
	// it was self-closing is lost, and a wrong guess would mislabel every
	// feed after it.
	if opens {
		if w := s.nest.push(&a, line); w != "" {
			s.notes = append(s.notes, note{line, w})
		}
	}
	return i
}

// tag is the text of one tag.
type tag struct {
	b []byte
	// simple is set once a value had no plausible end: later values then
	// end at their first matching quote, which keeps reading linear.
	simple bool
}

// value reads the value starting at b[i], which is b[start:end]. Generated
// OPML often puts unescaped quotes and raw HTML in values, so a quoted
// value ends at the first matching quote followed by what can follow a
// value, skipping embedded HTML tags; failing that, at its first matching
// quote. ok is false if it never ends.
func (t *tag) value(i int) (start, end, next int, ok bool) {
	b := t.b
	if i >= len(b) {
		return i, i, i, false
	}
	q := b[i]
	if q != '"' && q != '\'' {
		j := i
		for j < len(b) && !isSpace(b[j]) && b[j] != '>' && b[j] != '<' {
			j++
		}
		return i, j, j, true
	}
	first := -1
	j := i + 1
	for ; j < len(b); j++ {
		switch c := b[j]; {
		case c == q:
			if first < 0 {
				first = j
				if t.simple {
					return i + 1, j, j + 1, true
				}
			}
			if endsValue(b, j+1) {
				return i + 1, j, j + 1, true
			}
		case c == '<' && isBoundary(b[j:]):
			goto end
		case c == '<' && j+1 < len(b) && (isAlnum(b[j+1]) || b[j+1] == '/' || b[j+1] == '!'):
			// An embedded HTML tag: its quotes are its own.
			for j+1 < len(b) && b[j+1] != '>' && b[j+1] != '<' {
				j++
			}
		}
	}
end:
	t.simple = true
	if first >= 0 {
		return i + 1, first, first + 1, true
	}
	return i + 1, j, j, false
}

// endsValue reports whether b[i:] can follow an attribute value: the end
// of the tag, or another attribute. It reads only up to the next quote,
// which keeps value linear.
func endsValue(b []byte, i int) bool {
	j := skipSpace(b, i)
	if j >= len(b) || b[j] == '>' || b[j] == '<' && isBoundary(b[j:]) {
		return true
	}
	if b[j] == '/' {
		return j+1 >= len(b) || b[j+1] == '>'
	}
	k := j
	for k < len(b) && isNameByte(b[k]) {
		k++
	}
	if k == j {
		return false
	}
	k = skipSpace(b, k)
	return k < len(b) && b[k] == '='
}

// unescape decodes character and entity references ending in ';', XML's
// and HTML's. Unlike html.UnescapeString alone, it leaves "&para=1" in a
// URL alone, as a bare '&' followed by text is not a reference here.
func unescape(s string) string {
	amp := strings.IndexByte(s, '&')
	if amp < 0 {
		return s
	}
	var out strings.Builder
	out.Grow(len(s))
	for amp >= 0 {
		out.WriteString(s[:amp])
		s = s[amp:]
		n := 1
		for n < len(s) && n <= 40 && (isAlnum(s[n]) || (n == 1 && s[n] == '#')) {
			n++
		}
		ref := ""
		if n > 1 && n < len(s) && s[n] == ';' {
			ref = s[:n+1]
		}
		// A reference decodes fully or not at all: html also matches a
		// prefix ("&ampx;" -> "&x;"), which leaves the ';' behind.
		if dec := html.UnescapeString(ref); ref != "" && dec != ref && (!strings.HasSuffix(dec, ";") || dec == ";") {
			out.WriteString(dec)
			s = s[len(ref):]
		} else {
			out.WriteByte('&')
			s = s[1:]
		}
		amp = strings.IndexByte(s, '&')
	}
	out.WriteString(s)
	return out.String()
}

func isNameByte(c byte) bool {
	return c >= 0x80 || isAlnum(c) || c == '_' || c == '-' || c == '.' || c == ':'
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}
