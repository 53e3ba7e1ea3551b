package charsets

import "bytes"

// Map takes places in a body's UTF-8 text back to the body. A place is
// given by a span of the text that starts and ends with ASCII characters
// of the markup ("<" and ">" of an element, "{" and "}" of a JSON
// object); the span in the body is found by counting: the encodings Body
// reads write each ASCII character as one code unit that never occurs
// inside another character (but for the stateful ones, which it marks,
// and the trail bytes of the CJK double-byte encodings, which Span
// avoids), so the n-th "<" of the text is the n-th "<" of the body. The
// text may be a copy that dropped or replaced other characters, as long
// as it kept every one of those it counts.
type Map struct {
	orig []byte
	skip int  // bytes before the text in orig (a byte order mark)
	unit int  // bytes per code unit: 1, 2 or 4
	big  bool // big-endian code units
	same bool // the text is orig[skip:] itself
	none bool // places cannot be mapped
	wide bool // a double-byte encoding: only "<" and ">" can be counted

	// Cursors for queries in increasing order, which is how a parser
	// asks, one per character counted.
	cursors [2]cursor
}

// cursor remembers a text offset and the place in orig of the counted
// character that is at it or, if none is, the next one.
type cursor struct {
	ch               byte
	textOff, origOff int
}

// Identity reports whether the text is the body after Skip bytes, byte for
// byte, so that text offsets plus Skip are body offsets.
func (m *Map) Identity() bool { return m.same }

// TextChanged records that the text the places will refer to is a
// repaired copy of the text Body returned, which kept every character
// Span counts.
func (m *Map) TextChanged() { m.same = false }

// Skip is how many bytes of the body come before the text.
func (m *Map) Skip() int { return m.skip }

// Span returns the span in the body of text[start:end], where text is the
// text the places refer to and text[start] and text[end-1] are ASCII. ok
// is false when the span cannot be found.
func (m *Map) Span(text []byte, start, end int) (bodyStart, bodyEnd int, ok bool) {
	if start < 0 || end > len(text) || start >= end || text[start] >= 0x80 || text[end-1] >= 0x80 {
		return 0, 0, false
	}
	if m.same {
		return start + m.skip, end + m.skip, true
	}
	open, close := text[start], text[end-1]
	if m.none || m.unit == 0 || m.wide && (!isAngle(open) || !isAngle(close)) {
		return 0, 0, false
	}
	bs, ok := m.find(&m.cursors[0], text, start)
	if !ok {
		return 0, 0, false
	}
	be, ok := m.find(&m.cursors[1], text, end-1)
	if !ok || be < bs {
		return 0, 0, false
	}
	return bs, be + m.unit, true
}

func isAngle(c byte) bool { return c == '<' || c == '>' }

// find returns the body offset of the character at text[off], counting
// with cursor c.
func (m *Map) find(c *cursor, text []byte, off int) (int, bool) {
	ch := text[off]
	if c.ch != ch || off < c.textOff || c.origOff < m.skip {
		*c = cursor{ch: ch, textOff: 0, origOff: m.skip}
	}
	n := bytes.Count(text[c.textOff:off], []byte{ch})
	c.textOff = off
	// Skip n of them in orig from origOff; the next is the one.
	for k := 0; ; k++ {
		p := m.next(ch, c.origOff)
		if p < 0 {
			return 0, false
		}
		if k == n {
			c.origOff = p
			return p, true
		}
		c.origOff = p + m.unit
	}
}

// next is the offset of the first code unit ch at or after from.
func (m *Map) next(ch byte, from int) int {
	if m.unit == 1 {
		if from > len(m.orig) {
			return -1
		}
		j := bytes.IndexByte(m.orig[from:], ch)
		if j < 0 {
			return -1
		}
		return from + j
	}
	for i := from; i+m.unit <= len(m.orig); i += m.unit {
		if m.unitAt(i) == rune(ch) {
			return i
		}
	}
	return -1
}

func (m *Map) unitAt(i int) rune {
	b := m.orig[i : i+m.unit]
	switch {
	case m.unit == 2 && m.big:
		return rune(b[0])<<8 | rune(b[1])
	case m.unit == 2:
		return rune(b[1])<<8 | rune(b[0])
	case m.big:
		return rune(b[0])<<24 | rune(b[1])<<16 | rune(b[2])<<8 | rune(b[3])
	}
	return rune(b[3])<<24 | rune(b[2])<<16 | rune(b[1])<<8 | rune(b[0])
}
