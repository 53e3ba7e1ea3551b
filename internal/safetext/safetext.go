// Package safetext keeps text from feeds and requests from acting on what
// shows it: control characters stripped from feed text, escaped on a
// terminal, and refused, with bidi controls and markup, in the names and
// labels people give subscriptions.
package safetext

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// isControl reports whether r is a control character no text needs: C0
// but tab, line feed and carriage return; DEL; C1 (U+0080 to U+009F,
// which some terminals take as escape sequences).
func isControl(r rune) bool {
	return r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r >= 0x7f && r <= 0x9f
}

// IsBidiControl reports whether r changes the direction of the text
// around it (Unicode's bidi embeddings, overrides, isolates and marks):
// in a name, a U+202E would reverse what follows it on a line.
func IsBidiControl(r rune) bool {
	return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x061c
}

// StripControls returns s without its control characters (isControl).
// It allocates only when there is one to strip.
func StripControls(s string) string {
	i := strings.IndexFunc(s, isControl)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for _, r := range s[i:] {
		if !isControl(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Terminal returns s fit to print on a terminal: each control character
// and bidi control written as a Go escape (\x1b, \u202e), and bytes that
// are not UTF-8 as \xNN, so that a feed's text cannot move the cursor,
// change colours, set the window's title or reorder the line.
func Terminal(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || r == '\t' || r == '\n' || r == '\r' || isControl(r) || IsBidiControl(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80 && isControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case isControl(r), IsBidiControl(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// ErrName is the error CheckName's wrap.
var ErrName = errors.New("not a name")

// CheckName returns an error saying what makes s unfit as a name or a
// label that people give: a control character (a line break among them),
// a bidi control, or markup ('<', '>'); nil when it is fit. It does not
// judge length or emptiness, which its callers decide.
func CheckName(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: it is not UTF-8", ErrName)
	}
	for _, r := range s {
		switch {
		case r == '\t' || r == '\n' || r == '\r' || isControl(r):
			return fmt.Errorf("%w: it has the control character %U", ErrName, r)
		case IsBidiControl(r):
			return fmt.Errorf("%w: it has the bidi control %U, which reorders text around it", ErrName, r)
		case r == '<' || r == '>':
			return fmt.Errorf("%w: it has %q: no markup", ErrName, r)
		}
	}
	return nil
}

// Cell is s as a cell of a table on a terminal: one line (runs of white
// space made one space), escaped (Terminal), cut to n runes with an
// ellipsis, "-" when empty.
func Cell(s string, n int) string {
	s = Terminal(strings.Join(strings.Fields(s), " "))
	if s == "" {
		return "-"
	}
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
