// Package charsets decides which character encoding a feed body is in and
// reads it as UTF-8, and maps places in the UTF-8 text back to the bytes
// of the body.
//
// The order of evidence is a byte order mark, then the charset of the
// HTTP Content-Type, then the XML declaration, with one rule over all of
// them but the mark: a body that is valid UTF-8 is read as UTF-8, because
// a declaration that disagrees with such a body is almost always a
// server's default rather than the truth. Legacy charsets (ISO-8859-x,
// windows-125x, KOI8, GB2312, Big5, EUC-KR, Shift_JIS and the rest of the
// WHATWG Encoding Standard) go through golang.org/x/net/html/charset;
// UTF-16 and UTF-32 are recognised with or without a byte order mark.
package charsets

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"mime"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/encoding/unicode/utf32"
)

// Text is a body read as UTF-8.
type Text struct {
	// UTF8 is the text. When the body was UTF-8 already it is the body
	// itself after any byte order mark, not a copy.
	UTF8 []byte
	// Charset names the encoding the body was read as, lower-case:
	// "utf-8", "utf-16le", "windows-1251", ...
	Charset string
	// Warnings say what was wrong with the body's declarations or bytes.
	Warnings []string
	// Map maps places in UTF8 (or in a copy of it that keeps every "<")
	// back to the body.
	Map Map
	// XMLChars says that UTF8 holds no character XML forbids: no control
	// character but tab, newline and carriage return, and no U+FFFE or
	// U+FFFF. Body learns it from the check of a body it reads as UTF-8
	// as it is, in the same pass; false says nothing.
	XMLChars bool
}

// Body reads body as UTF-8. contentType is the HTTP Content-Type ("" if
// unknown); xml says whether an XML declaration may name the charset.
func Body(body []byte, contentType string, xml bool) Text {
	// A byte order mark is the strongest evidence there is.
	for _, bom := range boms {
		if bytes.HasPrefix(body, bom.mark) {
			t := Text{Charset: bom.name, Map: Map{orig: body, skip: len(bom.mark), unit: bom.unit, big: bom.big}}
			if bom.enc == nil {
				t.UTF8 = body[len(bom.mark):]
				t.Map.same = true
				var valid bool
				if valid, t.XMLChars = check(t.UTF8); !valid {
					t.UTF8, t.Warnings = mixed(t.UTF8, t.Warnings)
					t.Map.same = false
				}
				return t
			}
			t.UTF8 = decode(bom.enc, body[len(bom.mark):])
			return t
		}
	}
	// UTF-16 and UTF-32 without a mark: the zero bytes around the first
	// character ("<" or "{", or white space before it) give them away.
	if len(body) >= 4 {
		b0, b1, b2, b3 := body[0], body[1], body[2], body[3]
		var w *utfForm
		switch {
		case b0 == 0 && b1 == 0 && b2 == 0 && b3 != 0:
			w = &utfForms[0] // utf-32be
		case b0 != 0 && b1 == 0 && b2 == 0 && b3 == 0:
			w = &utfForms[1] // utf-32le
		case b0 == 0 && b1 != 0 && b2 == 0 && b3 != 0:
			w = &utfForms[2] // utf-16be
		case b0 != 0 && b1 == 0 && b2 != 0 && b3 == 0:
			w = &utfForms[3] // utf-16le
		}
		if w != nil {
			return Text{UTF8: decode(w.enc, body), Charset: w.name, Map: Map{orig: body, unit: w.unit, big: w.big}}
		}
	}

	label, from := httpCharset(contentType), "the Content-Type"
	if label == "" && xml {
		label, from = declaredCharset(body), "the XML declaration"
	}
	t := Text{UTF8: body, Charset: "utf-8", Map: Map{orig: body, unit: 1, same: true}}
	var enc encoding.Encoding
	name := ""
	if label != "" {
		enc, name = charset.Lookup(label)
		if enc == nil || name == "replacement" {
			t.Warnings = append(t.Warnings, fmt.Sprintf("%s names an unknown charset %q", from, clip(label)))
			enc, name = nil, ""
		}
	}
	if valid, xmlChars := check(body); valid {
		t.XMLChars = xmlChars
		if name != "" && name != "utf-8" && !isASCII(body) {
			t.Warnings = append(t.Warnings, fmt.Sprintf("%s says %s, but the body is UTF-8: read as UTF-8", from, name))
		}
		return t
	}
	switch {
	case name == "" && label == "":
		// Nothing declared, and not UTF-8: the charset of the web before
		// UTF-8, as browsers assume.
		t.Warnings = append(t.Warnings, "no charset declared and the body is not UTF-8: read as windows-1252")
		t.UTF8, t.Charset = decode(charmap.Windows1252, body), "windows-1252"
		t.Map.same = false
	case name == "" || name == "utf-8":
		// Declared UTF-8 (or nothing we know) with some bytes that are not:
		// a page assembled from parts in two charsets.
		t.UTF8, t.Warnings = mixed(body, t.Warnings)
		t.Map.same = false
	default:
		t.UTF8, t.Charset = decode(enc, body), name
		t.Map.same = false
		t.Map.unit = 1
		if strings.HasPrefix(name, "utf-16") {
			t.Map.unit, t.Map.big = 2, name == "utf-16be"
		}
		// Stateful encodings use the bytes of "<" inside characters; the
		// double-byte ones those of "{" and "}" (but never "<" or ">").
		t.Map.none = name == "iso-2022-jp" || name == "hz-gb-2312"
		t.Map.wide = enc != nil && !isSingleByte(enc)
	}
	return t
}

type bom struct {
	mark []byte
	name string
	enc  encoding.Encoding // nil for UTF-8
	unit int
	big  bool
}

// boms are the byte order marks, UTF-32 before UTF-16 since FF FE begins
// both little-endian marks.
var boms = []bom{
	{[]byte{0xEF, 0xBB, 0xBF}, "utf-8", nil, 1, false},
	{[]byte{0xFF, 0xFE, 0, 0}, "utf-32le", utf32.UTF32(utf32.LittleEndian, utf32.IgnoreBOM), 4, false},
	{[]byte{0, 0, 0xFE, 0xFF}, "utf-32be", utf32.UTF32(utf32.BigEndian, utf32.IgnoreBOM), 4, true},
	{[]byte{0xFF, 0xFE}, "utf-16le", unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM), 2, false},
	{[]byte{0xFE, 0xFF}, "utf-16be", unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM), 2, true},
}

type utfForm struct {
	name string
	enc  encoding.Encoding
	unit int
	big  bool
}

var utfForms = []utfForm{
	{"utf-32be", utf32.UTF32(utf32.BigEndian, utf32.IgnoreBOM), 4, true},
	{"utf-32le", utf32.UTF32(utf32.LittleEndian, utf32.IgnoreBOM), 4, false},
	{"utf-16be", unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM), 2, true},
	{"utf-16le", unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM), 2, false},
}

// decode converts b to UTF-8; what cannot be converted becomes U+FFFD.
func decode(enc encoding.Encoding, b []byte) []byte {
	out, err := enc.NewDecoder().Bytes(b)
	if err != nil {
		// The decoders replace what they cannot read rather than fail;
		// this is for the impossible case.
		return bytes.ToValidUTF8(b, []byte("\uFFFD"))
	}
	return out
}

// mixed reads b as UTF-8, and each byte that is not part of a UTF-8
// sequence as windows-1252.
func mixed(b []byte, warnings []string) ([]byte, []string) {
	out := make([]byte, 0, len(b)+len(b)/8)
	bad := 0
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] < utf8.RuneSelf {
			i++
		}
		out = append(out, b[:i]...)
		b = b[i:]
		if len(b) == 0 {
			break
		}
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			bad++
			out = utf8.AppendRune(out, charmap.Windows1252.DecodeByte(b[0]))
		} else {
			out = append(out, b[:size]...)
		}
		b = b[size:]
	}
	return out, append(warnings, fmt.Sprintf("%d bytes that are not UTF-8 read as windows-1252", bad))
}

// httpCharset is the charset parameter of a Content-Type.
func httpCharset(contentType string) string {
	if contentType == "" {
		return ""
	}
	if _, params, err := mime.ParseMediaType(contentType); err == nil {
		return strings.TrimSpace(params["charset"])
	}
	// A malformed header may still name its charset.
	i := indexASCIIFold(contentType, "charset=")
	if i < 0 {
		return ""
	}
	v := contentType[i+len("charset="):]
	if j := strings.IndexAny(v, "; "); j >= 0 {
		v = v[:j]
	}
	return strings.Trim(v, `"' `)
}

// indexASCIIFold is strings.Index ignoring ASCII case. Unlike an Index on
// strings.ToLower(s), its offsets are s's own: ToLower changes the length
// of a string with invalid UTF-8.
func indexASCIIFold(s, lowerSubstr string) int {
	for i := 0; i+len(lowerSubstr) <= len(s); i++ {
		if asciiEqualFold(s[i:i+len(lowerSubstr)], lowerSubstr) {
			return i
		}
	}
	return -1
}

func asciiEqualFold(a, lower string) bool {
	for i := 0; i < len(a); i++ {
		c := a[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// declaredCharset is the encoding of an XML declaration near the start of
// body ("" if none).
func declaredCharset(body []byte) string {
	head := body[:min(len(body), 1024)]
	i := bytes.Index(head, []byte("<?xml"))
	if i < 0 {
		return ""
	}
	decl := head[i:]
	if end := bytes.Index(decl, []byte("?>")); end >= 0 {
		decl = decl[:end]
	}
	j := bytes.Index(decl, []byte("encoding"))
	if j < 0 {
		return ""
	}
	v := bytes.TrimLeft(decl[j+len("encoding"):], " \t\r\n")
	if len(v) == 0 || v[0] != '=' {
		return ""
	}
	v = bytes.TrimLeft(v[1:], " \t\r\n")
	if len(v) == 0 || (v[0] != '"' && v[0] != '\'') {
		return ""
	}
	q := v[0]
	v = v[1:]
	k := bytes.IndexByte(v, q)
	if k < 0 {
		return ""
	}
	return strings.TrimSpace(string(v[:k]))
}

// isSingleByte reports whether enc writes every character as one byte.
func isSingleByte(enc encoding.Encoding) bool {
	_, ok := enc.(*charmap.Charmap)
	return ok || enc == charmap.Windows1252
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func clip(s string) string {
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}

// check reads b once and reports whether it is valid UTF-8 (as
// utf8.Valid) and, if it is, whether it holds only characters XML allows
// (no control character but tab, newline and carriage return, no U+FFFE
// or U+FFFF): the check of the body and parse's check for what it must
// repair, in one pass rather than three. Eight bytes at a time: ASCII is
// looked at in bulk, and a character above it decoded where the mask of
// the eight says it begins. FuzzCheck holds it to utf8.Valid and a byte
// by byte search.
func check(b []byte) (valid, xmlChars bool) {
	const ones, highs, lows = 0x0101010101010101, 0x8080808080808080, 0x7f7f7f7f7f7f7f7f
	xmlChars = true
	i := 0
	for i+8 <= len(b) {
		x := binary.LittleEndian.Uint64(b[i:])
		// ASCII bytes below the space; the others are not marked.
		if below := ^((x&lows + ones*(0x80-0x20)) | x) & highs; below != 0 && below&^byteIs(x, '\t')&^byteIs(x, '\n')&^byteIs(x, '\r') != 0 {
			xmlChars = false
		}
		high := x & highs
		if high == 0 {
			i += 8
			continue
		}
		i += bits.TrailingZeros64(high) >> 3
		// Two-byte characters and the three-byte ones of E1-EC (Greek,
		// Cyrillic, accented Latin; Chinese, Japanese) are read here,
		// the others by charLen.
		if c := b[i]; c >= 0xC2 && c < 0xE0 {
			if i+1 < len(b) && b[i+1]&0xC0 == 0x80 {
				i += 2
				continue
			}
			return false, false
		} else if c > 0xE0 && c < 0xED && i+2 < len(b) && b[i+1]&0xC0 == 0x80 && b[i+2]&0xC0 == 0x80 {
			i += 3
			continue
		}
		n, nonChar := charLen(b, i)
		if n == 0 {
			return false, false
		}
		xmlChars = xmlChars && !nonChar
		i += n
	}
	for i < len(b) {
		c := b[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
				xmlChars = false
			}
			i++
			continue
		}
		n, nonChar := charLen(b, i)
		if n == 0 {
			return false, false
		}
		xmlChars = xmlChars && !nonChar
		i += n
	}
	return true, xmlChars
}

// charLen is the length of the valid UTF-8 character at b[i] (whose
// byte is not ASCII), or 0 when there is none: the byte ranges of the
// Unicode standard's table 3-7, as utf8.DecodeRune reads them. nonChar
// says the character is U+FFFE or U+FFFF.
func charLen(b []byte, i int) (n int, nonChar bool) {
	c := b[i]
	switch {
	case c < 0xC2:
		return 0, false
	case c < 0xE0:
		if i+1 < len(b) && b[i+1]&0xC0 == 0x80 {
			return 2, false
		}
		return 0, false
	case c < 0xF0:
		if i+2 >= len(b) || b[i+2]&0xC0 != 0x80 {
			return 0, false
		}
		c1 := b[i+1]
		switch {
		case c == 0xE0 && (c1 < 0xA0 || c1 > 0xBF), c == 0xED && (c1 < 0x80 || c1 > 0x9F), c1&0xC0 != 0x80:
			return 0, false
		}
		return 3, c == 0xEF && c1 == 0xBF && b[i+2] >= 0xBE
	case c < 0xF5:
		if i+3 >= len(b) || b[i+2]&0xC0 != 0x80 || b[i+3]&0xC0 != 0x80 {
			return 0, false
		}
		c1 := b[i+1]
		switch {
		case c == 0xF0 && (c1 < 0x90 || c1 > 0xBF), c == 0xF4 && (c1 < 0x80 || c1 > 0x8F), c1&0xC0 != 0x80:
			return 0, false
		}
		return 4, false
	}
	return 0, false
}

// byteIs marks the bytes of x equal to c with their high bit, exactly:
// no carry crosses from one byte to the next.
func byteIs(x uint64, c byte) uint64 {
	const ones, highs, lows = 0x0101010101010101, 0x8080808080808080, 0x7f7f7f7f7f7f7f7f
	v := x ^ ones*uint64(c)
	return ^((v&lows + lows) | v) & highs
}
