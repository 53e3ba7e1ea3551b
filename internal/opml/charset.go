package opml

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
)

// charsetReader is the decoder's CharsetReader: it converts from the
// declared encoding, except where the declaration is evidently wrong.
func (p *pass) charsetReader(label string, in io.Reader) (io.Reader, error) {
	if p.switched {
		// A second declaration: the stream is already UTF-8.
		return in, nil
	}
	p.switched = true
	p.switchAt = int64(len(p.data) - p.br.Len())
	if p.transcoded {
		return in, nil
	}
	_, name := charset.Lookup(label)
	rest := p.data[p.switchAt:]
	line := 1 + bytes.Count(p.data[:p.switchAt], []byte{'\n'})
	switch {
	case name == "" || name == "replacement":
		p.notes = append(p.notes, note{line, fmt.Sprintf("line %d: unknown encoding %q; read as UTF-8", line, label)})
		return in, nil
	case name == "utf-8", strings.HasPrefix(name, "utf-16"):
		// The declaration was read as ASCII, so this is not UTF-16.
		return in, nil
	case !isASCII(rest) && utf8.Valid(rest):
		// Exports often declare ISO-8859-1 and write UTF-8; text that
		// decodes as UTF-8 is almost never really in a legacy encoding.
		p.notes = append(p.notes, note{line, fmt.Sprintf("line %d: declared encoding %q but the content is UTF-8; read as UTF-8", line, label)})
		return in, nil
	}
	p.label = label
	return charset.NewReaderLabel(label, in)
}

// convert decodes b from the encoding label to UTF-8.
func convert(label string, b []byte) ([]byte, error) {
	r, err := charset.NewReaderLabel(label, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// fromUTF16 converts a UTF-16 document (by its byte order mark, or by a
// leading '<' encoded as UTF-16) to UTF-8, which is all encoding/xml reads.
func fromUTF16(b []byte) ([]byte, bool) {
	var big bool
	switch {
	case bytes.HasPrefix(b, []byte{0xFE, 0xFF}):
		big, b = true, b[2:]
	case bytes.HasPrefix(b, []byte{0xFF, 0xFE}):
		b = b[2:]
	case len(b) >= 4 && b[0] == 0 && b[1] == '<' && b[2] == 0 && b[3] != 0:
		big = true
	case len(b) >= 4 && b[0] == '<' && b[1] == 0 && b[2] != 0 && b[3] == 0:
	default:
		return b, false
	}
	out := make([]byte, 0, len(b)+len(b)/2)
	unit := func(i int) rune {
		if big {
			return rune(b[i])<<8 | rune(b[i+1])
		}
		return rune(b[i+1])<<8 | rune(b[i])
	}
	for i := 0; i+1 < len(b); i += 2 {
		r := unit(i)
		if utf16.IsSurrogate(r) {
			r2 := utf8.RuneError
			if i+3 < len(b) {
				r2 = unit(i + 2)
			}
			if dr := utf16.DecodeRune(r, r2); dr != utf8.RuneError {
				r = dr
				i += 2
			} else {
				r = utf8.RuneError
			}
		}
		out = utf8.AppendRune(out, r)
	}
	return out, true
}
