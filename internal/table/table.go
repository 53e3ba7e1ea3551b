// Package table writes the tables commands show people (feed-sub ls,
// feed-stats): columns padded to their widest cell, and, to fit a
// terminal, the wide columns of text cut with "…" down to their minimum.
package table

import (
	"io"
	"strings"
	"unicode"

	"golang.org/x/text/width"
)

// Col says how a column is laid out.
type Col struct {
	// Right aligns the column's cells on the right (numbers).
	Right bool
	// Min is the width the column may be cut down to, to fit; 0: it is
	// never cut.
	Min int
	// Middle cuts a cell in its middle (a URL: its host and its end
	// stay), else at its end.
	Middle bool
}

// Write writes rows (the first the heading) as columns cols, two spaces
// apart, and the rest of each line's cells (beyond cols) as they are. With
// width > 0 the lines fit width columns as far as the columns' minimums
// allow: the column that is longest beyond its minimum is cut first.
func Write(w io.Writer, rows [][]string, cols []Col, width int) error {
	const gap = 2
	widths := make([]int, len(cols))
	for _, r := range rows {
		for i := range cols {
			if i < len(r) {
				widths[i] = max(widths[i], Width(r[i]))
			}
		}
	}
	if width > 0 {
		total := gap * (len(cols) - 1)
		for _, w := range widths {
			total += w
		}
		for total > width {
			cut := -1
			for i, c := range cols {
				if c.Min > 0 && widths[i] > c.Min && (cut < 0 || widths[i]-c.Min > widths[cut]-cols[cut].Min) {
					cut = i
				}
			}
			if cut < 0 {
				break
			}
			widths[cut]--
			total--
		}
	}
	var b strings.Builder
	for _, r := range rows {
		b.Reset()
		for i, c := range cols {
			cell := ""
			if i < len(r) {
				cell = Cut(r[i], widths[i], c.Middle)
			}
			fill := strings.Repeat(" ", widths[i]-Width(cell))
			if c.Right {
				b.WriteString(fill + cell)
			} else {
				b.WriteString(cell + fill)
			}
			if i < len(cols)-1 {
				b.WriteString(strings.Repeat(" ", gap))
			}
		}
		if _, err := io.WriteString(w, strings.TrimRight(b.String(), " ")+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// Width is the columns s takes on a terminal: East Asian wide and
// fullwidth characters two, combining marks and format characters none,
// the rest one.
func Width(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

func runeWidth(r rune) int {
	switch {
	case r < 0x20 || r == 0x7f:
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

// Cut cuts s to at most w columns, with "…" where it cut: at its end, or
// in its middle.
func Cut(s string, w int, middle bool) string {
	if Width(s) <= w {
		return s
	}
	if w <= 1 {
		return "…"[:min(len("…"), 3*w)]
	}
	if !middle {
		return head(s, w-1) + "…"
	}
	h := (w - 1) / 2
	return head(s, h) + "…" + tail(s, w-1-h)
}

// head is the longest start of s of at most w columns.
func head(s string, w int) string {
	n := 0
	for i, r := range s {
		if n+runeWidth(r) > w {
			return s[:i]
		}
		n += runeWidth(r)
	}
	return s
}

// tail is the longest end of s of at most w columns.
func tail(s string, w int) string {
	rs := []rune(s)
	n := 0
	for i := len(rs) - 1; i >= 0; i-- {
		if n+runeWidth(rs[i]) > w {
			return string(rs[i+1:])
		}
		n += runeWidth(rs[i])
	}
	return s
}
