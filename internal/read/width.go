package read

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/feedpipe/feedpipe/internal/safetext"
	"github.com/feedpipe/feedpipe/internal/table"
)

// pad cuts s to w columns (table.Width: by what a terminal gives each
// rune, so that columns line up whatever the script) and fills it with spaces to w.
func pad(s string, w int) string {
	s = table.Cut(s, w, false)
	return s + strings.Repeat(" ", max(0, w-table.Width(s)))
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
