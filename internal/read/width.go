package read

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/width"

	"github.com/feedpipe/feedpipe/internal/safetext"
)

// Display width: what a terminal gives a rune. East Asian wide and
// fullwidth characters (CJK, most emoji) take two columns, combining marks
// and format characters none, the rest one. Titles are cut by this, not by
// bytes or runes, so that columns line up whatever the script.

// runeWidth is the columns r takes on a terminal.
func runeWidth(r rune) int {
	switch {
	case r == 0 || r < 0x20 || r == 0x7f:
		return 0
	case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
		return 0
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}

// displayWidth is the columns s takes on a terminal.
func displayWidth(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

// truncate cuts s to at most w columns, ending it with "…" when it cut.
func truncate(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if displayWidth(s) <= w {
		return s
	}
	n := 0
	for i, r := range s {
		rw := runeWidth(r)
		if n+rw > w-1 {
			return s[:i] + "…"
		}
		n += rw
	}
	return s
}

// pad cuts s to w columns and fills it with spaces to w.
func pad(s string, w int) string {
	s = truncate(s, w)
	return s + strings.Repeat(" ", max(0, w-displayWidth(s)))
}

// clean makes s one line of printable text: runs of white space (newlines
// and tabs included) become one space, and control characters, which a
// feed could use to drive the terminal, are dropped, as is invalid UTF-8.
func clean(s string) string {
	var b strings.Builder
	space := false
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		s = s[size:]
		switch {
		case r == utf8.RuneError && size == 1:
			continue
		case unicode.IsSpace(r):
			space = b.Len() > 0
			continue
		case isControl(r):
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// isControl reports the C0 and C1 control characters, DEL, and the bidi
// controls (a U+202E in a title would reverse the rest of the line):
// what feed-read never prints of a feed's text.
func isControl(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || safetext.IsBidiControl(r)
}
