package parse

import (
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/feedpipe/feedpipe/internal/plural"
)

// repair finds in an XML text what would stop the tokenizer (as it would
// stop encoding/xml) or what it reads silently in a way worth a warning,
// and fixes what must be fixed:
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
// every "<", so that places in it still map to the body. xmlChars says
// that the text is known to hold no character XML forbids (charsets.Body
// checked it with its UTF-8), which then is not looked for again.
func repair(text []byte, w *warnings, xmlChars bool) (out []byte, changed bool) {
	// Most documents need no fixing, only the counting of their entities
	// for the warnings: a scan of the "&" alone does it.
	if counts, ok := countRefs(text, xmlChars); ok {
		counts.warn(w)
		return text, false
	}
	return repairText(text, w)
}

// repairText is repair, byte by byte.
func repairText(text []byte, w *warnings) (out []byte, changed bool) {
	var (
		last                        int // text[last:i] is not yet in out
		controls, badRefs, nonChars int
		counts                      refCounts
		drop                        = func(i, j int) { out = append(out, text[last:i]...); last, changed = j, true }
		replace                     = func(i, j int, s string) {
			out = append(out, text[last:i]...)
			out = append(out, s...)
			last, changed = j, true
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
			kind, name, next := readRef(text, i)
			switch kind {
			case refBadChar:
				badRefs++
				drop(i, next)
			default:
				counts.add(kind, name)
			}
			i = next
		default:
			scanChars(i, i+1)
			i++
		}
	}
	if controls > 0 {
		w.add(warnRepair, fmt.Sprintf("%d control %s that XML forbids removed", controls, plural.Word(controls, "character", "characters")))
	}
	if badRefs > 0 {
		w.add(warnRepair, fmt.Sprintf("%d character %s to characters that XML forbids removed", badRefs, plural.Word(badRefs, "reference", "references")))
	}
	counts.warnUpperX(w)
	if nonChars > 0 {
		w.add(warnRepair, fmt.Sprintf("%d U+FFFE or U+FFFF replaced by U+FFFD", nonChars))
	}
	counts.warnEntities(w)
	if !changed {
		return text, false
	}
	return append(out, text[last:]...), true
}

// refKind is what an "&" begins, as repair reads it.
type refKind uint8

const (
	refBare    refKind = iota // no reference: "&" stays as written
	refChar                   // a character reference
	refUpperX                 // a character reference written &#X...;
	refBadChar                // a reference to a character XML forbids
	refXML                    // one of XML's five entities
	refHTML                   // an entity of HTML's
	refUnknown                // an entity no one defines: stays as written
)

// readRef reads the reference that may begin at text[i] (an "&"): its
// kind, its name for an entity, and where reading goes on (after it, or
// after the "&" when there is none).
func readRef(text []byte, i int) (kind refKind, name []byte, next int) {
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
		switch {
		case digits == 0 || digits == 9 || j >= len(text) || text[j] != ';' || v > 0x10FFFF:
			return refBare, nil, i + 1
		case v < 0x20 && v != '\t' && v != '\n' && v != '\r' || v == 0xFFFE || v == 0xFFFF:
			return refBadChar, nil, j + 1
		case text[i+2] == 'X':
			return refUpperX, nil, j + 1
		}
		return refChar, nil, j + 1
	}
	for j < len(text) && j-i < 40 && isRefNameByte(text[j]) {
		j++
	}
	if j == i+1 || j >= len(text) || text[j] != ';' {
		return refBare, nil, i + 1
	}
	name = text[i+1 : j]
	switch string(name) {
	case "lt", "gt", "amp", "apos", "quot":
		return refXML, name, j + 1
	}
	if _, ok := xml.HTMLEntity[string(name)]; ok {
		return refHTML, name, j + 1
	}
	return refUnknown, name, j + 1
}

func isRefNameByte(c byte) bool {
	return c|0x20 >= 'a' && c|0x20 <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_' || c == ':'
}

// refCounts counts the references repair warns of.
type refCounts struct {
	upperX, bareAmps      int
	htmlEnts, unknownEnts map[string]int
}

func (r *refCounts) add(kind refKind, name []byte) {
	switch kind {
	case refBare:
		r.bareAmps++
	case refUpperX:
		r.upperX++
	case refHTML:
		if r.htmlEnts == nil {
			r.htmlEnts = map[string]int{}
		}
		r.htmlEnts[string(name)]++
	case refUnknown:
		if r.unknownEnts == nil {
			r.unknownEnts = map[string]int{}
		}
		r.unknownEnts[string(name)]++
	}
}

func (r *refCounts) warnUpperX(w *warnings) {
	if r.upperX > 0 {
		w.add(warnRepair, fmt.Sprintf("%d character %s written &#X...; read as hexadecimal", r.upperX, plural.Word(r.upperX, "reference", "references")))
	}
}

func (r *refCounts) warnEntities(w *warnings) {
	if len(r.htmlEnts) > 0 {
		w.add(warnRepair, "HTML entities that XML does not define, read as their characters: "+entityList(r.htmlEnts))
	}
	if len(r.unknownEnts) > 0 {
		w.add(warnRepair, "undefined entities, kept as written: "+entityList(r.unknownEnts))
	}
	if r.bareAmps > 0 {
		w.add(warnRepair, fmt.Sprintf("%d bare & kept as text", r.bareAmps))
	}
}

// warn adds the warnings of a text that needed no fixing.
func (r *refCounts) warn(w *warnings) {
	r.warnUpperX(w)
	r.warnEntities(w)
}

// countRefs is repair for a text that needs no fixing: it counts the
// references outside CDATA sections and comments, as repair does, going
// from "&" to "&" rather than byte by byte. ok is false when the text
// needs fixing after all (a control character, U+FFFE or U+FFFF, a
// reference to a character XML forbids), which repair then does. The
// characters are not looked at when xmlChars says they are known to be
// allowed.
func countRefs(text []byte, xmlChars bool) (counts refCounts, ok bool) {
	if !xmlChars && (hasControlChar(text) || hasNonChar(text)) {
		return counts, false
	}
	sec, secEnd := nextSection(text, 0)
	for i := 0; i < len(text); {
		a := bytes.IndexByte(text[i:], '&')
		if a < 0 {
			break
		}
		a += i
		if a >= sec {
			// A CDATA section or comment begins before it: skip the "&"
			// if it lies inside, and go on to the next one.
			if a < secEnd {
				i = secEnd
			}
			sec, secEnd = nextSection(text, secEnd)
			continue
		}
		if _, n := xmlEntityAt(text[a:]); n > 0 {
			i = a + n // XML's own: nothing to count
			continue
		}
		kind, name, next := readRef(text, a)
		if kind == refBadChar {
			return counts, false
		}
		counts.add(kind, name)
		i = next
	}
	return counts, true
}

// nextSection finds the first CDATA section or comment that begins at
// or after from, and where it ends as repair reads it (after its closer,
// or at the end of the text); both are len(text) when there is none.
func nextSection(text []byte, from int) (start, end int) {
	for from < len(text) {
		k := bytes.Index(text[from:], []byte("<!"))
		if k < 0 {
			break
		}
		k += from
		var closer string
		switch {
		case bytes.HasPrefix(text[k+1:], []byte("![CDATA[")):
			closer = "]]>"
		case bytes.HasPrefix(text[k+1:], []byte("!--")):
			closer = "-->"
		default:
			from = k + 2
			continue
		}
		e := bytes.Index(text[k+4:], []byte(closer))
		if e < 0 {
			return k, len(text)
		}
		return k, k + 4 + e + len(closer)
	}
	return len(text), len(text)
}

// hasControlChar reports whether b holds a control character XML
// forbids (all below U+0020 but tab, newline and carriage return),
// looking at eight bytes at a time.
func hasControlChar(b []byte) bool {
	const ones, highs, lows = 0x0101010101010101, 0x8080808080808080, 0x7f7f7f7f7f7f7f7f
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		below := ^((x&lows + ones*(0x80-0x20)) | x) & highs // bytes below 0x20
		if below != 0 && below&^byteIs(x, '\t')&^byteIs(x, '\n')&^byteIs(x, '\r') != 0 {
			return true
		}
	}
	for _, c := range b[i:] {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
			return true
		}
	}
	return false
}

// byteIs marks the bytes of x equal to c with their high bit, exactly:
// no carry crosses from one byte to the next.
func byteIs(x uint64, c byte) uint64 {
	const ones, highs, lows = 0x0101010101010101, 0x8080808080808080, 0x7f7f7f7f7f7f7f7f
	v := x ^ ones*uint64(c)
	return ^((v&lows + lows) | v) & highs
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
