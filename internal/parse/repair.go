package parse

import (
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strings"
)

// repair finds in an XML text what would stop encoding/xml or what it
// reads silently in a way worth a warning, and fixes what must be fixed:
//
//   - control characters XML forbids (all below U+0020 but tab, newline
//     and carriage return) are removed, as are character references to
//     them (&#8;);
//   - hexadecimal character references written with an upper-case X
//     (&#X41;) are read as hexadecimal;
//   - U+FFFE and U+FFFF become U+FFFD;
//   - HTML entities that XML does not define (&nbsp;, &ecirc;) are read
//     as their characters by the decoder (a warning says so), and other
//     undefined entities and bare "&" stay as written.
//
// CDATA sections and comments are left alone but for the characters. The
// result is text itself when nothing needed fixing; a fixed copy keeps
// every "<", so that places in it still map to the body.
func repair(text []byte, w *warnings) (out []byte, changed bool) {
	var (
		last                        int // text[last:i] is not yet in out
		controls, badRefs, nonChars int
		upperX                      int // &#X41;: XML wants a lower-case x
		bareAmps                    int
		htmlEnts, unknownEnts       map[string]int
		drop                        = func(i, j int) { out = append(out, text[last:i]...); last, changed = j, true }
		replace                     = func(i, j int, s string) {
			out = append(out, text[last:i]...)
			out = append(out, s...)
			last, changed = j, true
		}
		isNameByte = func(c byte) bool {
			return c|0x20 >= 'a' && c|0x20 <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_' || c == ':'
		}
		scanChars func(i, end int)
	)
	// scanChars fixes the characters of text[i:end], where no markup or
	// references count (CDATA, comments).
	scanChars = func(i, end int) {
		for ; i < end; i++ {
			c := text[i]
			switch {
			case c < 0x20 && c != '\t' && c != '\n' && c != '\r':
				controls++
				drop(i, i+1)
			case c == 0xEF && i+2 < len(text) && text[i+1] == 0xBF && (text[i+2] == 0xBE || text[i+2] == 0xBF):
				nonChars++
				replace(i, i+3, "\uFFFD")
				i += 2
			}
		}
	}
	for i := 0; i < len(text); {
		// Eight bytes at a time up to the first that may be special.
		if i+8 <= len(text) {
			m := repairCandidates(binary.LittleEndian.Uint64(text[i:]))
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3
		}
		c := text[i]
		if !special[c] {
			i++
			continue
		}
		switch {
		case c == '<':
			var closer string
			switch {
			case bytes.HasPrefix(text[i+1:], []byte("![CDATA[")):
				closer = "]]>"
			case bytes.HasPrefix(text[i+1:], []byte("!--")):
				closer = "-->"
			default:
				i++
				continue
			}
			end := bytes.Index(text[i+4:], []byte(closer))
			if end < 0 {
				end = len(text)
			} else {
				end = i + 4 + end + len(closer)
			}
			scanChars(i, end)
			i = end
		case c == '&':
			j := i + 1
			if j < len(text) && text[j] == '#' {
				j++
				hex := j < len(text) && (text[j] == 'x' || text[j] == 'X')
				if hex {
					j++
				}
				v, digits := 0, 0
				for j < len(text) && digits < 9 {
					d := digit(text[j], hex)
					if d < 0 {
						break
					}
					v = v*base(hex) + d
					digits++
					j++
				}
				if digits == 0 || digits == 9 || j >= len(text) || text[j] != ';' || v > 0x10FFFF {
					bareAmps++
					i++
					continue
				}
				if v < 0x20 && v != '\t' && v != '\n' && v != '\r' || v == 0xFFFE || v == 0xFFFF {
					badRefs++
					drop(i, j+1)
				} else if text[i+2] == 'X' {
					upperX++
					replace(i+2, i+3, "x")
				}
				i = j + 1
				continue
			}
			for j < len(text) && j-i < 40 && isNameByte(text[j]) {
				j++
			}
			if j == i+1 || j >= len(text) || text[j] != ';' {
				bareAmps++
				i++
				continue
			}
			name := text[i+1 : j]
			switch string(name) {
			case "lt", "gt", "amp", "apos", "quot":
			default:
				if _, ok := xml.HTMLEntity[string(name)]; ok {
					if htmlEnts == nil {
						htmlEnts = map[string]int{}
					}
					htmlEnts[string(name)]++
				} else {
					if unknownEnts == nil {
						unknownEnts = map[string]int{}
					}
					unknownEnts[string(name)]++
				}
			}
			i = j + 1
		default:
			scanChars(i, i+1)
			i++
		}
	}
	if controls > 0 {
		w.add(warnRepair, fmt.Sprintf("%d control %s that XML forbids removed", controls, plural(controls, "character", "characters")))
	}
	if badRefs > 0 {
		w.add(warnRepair, fmt.Sprintf("%d character %s to characters that XML forbids removed", badRefs, plural(badRefs, "reference", "references")))
	}
	if upperX > 0 {
		w.add(warnRepair, fmt.Sprintf("%d character %s written &#X...; read as hexadecimal", upperX, plural(upperX, "reference", "references")))
	}
	if nonChars > 0 {
		w.add(warnRepair, fmt.Sprintf("%d U+FFFE or U+FFFF replaced by U+FFFD", nonChars))
	}
	if len(htmlEnts) > 0 {
		w.add(warnRepair, "HTML entities that XML does not define, read as their characters: "+entityList(htmlEnts))
	}
	if len(unknownEnts) > 0 {
		w.add(warnRepair, "undefined entities, kept as written: "+entityList(unknownEnts))
	}
	if bareAmps > 0 {
		w.add(warnRepair, fmt.Sprintf("%d bare & kept as text", bareAmps))
	}
	if !changed {
		return text, false
	}
	return append(out, text[last:]...), true
}

// Masks for reading eight bytes as one word (SWAR): a byte's high bit in
// the result marks it.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// byteIs marks the bytes of x equal to c. Only the lowest mark is exact
// (a borrow may mark a byte above it), which is all a scan needs.
func byteIs(x uint64, c byte) uint64 {
	v := x ^ ones*uint64(c)
	return (v - ones) & ^v & highs
}

// byteBelow marks the bytes of x below c (c <= 0x80), as byteIs does.
func byteBelow(x uint64, c byte) uint64 { return (x - ones*uint64(c)) & ^x & highs }

// repairCandidates marks the bytes repair may have to look at: control
// characters (tab, newline and carriage return included, which it then
// passes), "<", "&" and the lead byte of U+FFFE and U+FFFF.
func repairCandidates(x uint64) uint64 {
	return byteBelow(x, 0x20) | byteIs(x, '<') | byteIs(x, '&') | byteIs(x, 0xEF)
}

// special marks the bytes repair looks at.
var special = func() (s [256]bool) {
	for c := 0; c < 0x20; c++ {
		s[c] = c != '\t' && c != '\n' && c != '\r'
	}
	s['<'], s['&'], s[0xEF] = true, true, true
	return s
}()

func digit(c byte, hex bool) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case hex && c|0x20 >= 'a' && c|0x20 <= 'f':
		return int(c|0x20-'a') + 10
	}
	return -1
}

func base(hex bool) int {
	if hex {
		return 16
	}
	return 10
}

// entityList names the entities, most used first, at most five.
func entityList(counts map[string]int) string {
	names := slices.Sorted(maps.Keys(counts))
	slices.SortStableFunc(names, func(a, b string) int { return counts[b] - counts[a] })
	var parts []string
	for i, n := range names {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(names)-5))
			break
		}
		parts = append(parts, fmt.Sprintf("&%s; (%d)", n, counts[n]))
	}
	return strings.Join(parts, ", ")
}
