package parse

import (
	"strings"

	"github.com/feedpipe/feedpipe/internal/ids"
	"github.com/feedpipe/feedpipe/internal/safetext"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// persons reads an RSS author or a dc:creator: "jo@example.org (Jo
// Doe)", "Jo Doe <jo@example.org>", an address alone, or one name or
// several ("A, B and C").
func persons(s string) []ndjson.Author {
	s = ids.CollapseSpace(s) // strings.Join(strings.Fields(s), " "), without a copy when it is so
	if s == "" {
		return nil
	}
	// The common case: a name of at most four words, with nothing that
	// marks an address or a list. (Two names joined by a conjunction
	// need two words each.)
	if !strings.ContainsAny(s, "@(<,;") && strings.Count(s, " ") < 4 {
		return []ndjson.Author{{Name: s}}
	}
	// email (Name)
	if open := strings.IndexByte(s, '('); open > 0 && strings.HasSuffix(s, ")") {
		addr := strings.TrimSpace(s[:open])
		name := strings.TrimSpace(s[open+1 : len(s)-1])
		if isEmail(addr) {
			return []ndjson.Author{{Name: name, Email: cleanEmail(addr)}}
		}
		if isEmail(name) {
			return []ndjson.Author{{Name: addr, Email: cleanEmail(name)}}
		}
	}
	// Name <email>
	if open := strings.IndexByte(s, '<'); open >= 0 && strings.HasSuffix(s, ">") {
		addr := strings.TrimSpace(s[open+1 : len(s)-1])
		if isEmail(addr) {
			return []ndjson.Author{{Name: strings.Trim(strings.TrimSpace(s[:open]), `"`), Email: cleanEmail(addr)}}
		}
	}
	if isEmail(s) && !strings.Contains(s, " ") {
		return []ndjson.Author{{Email: cleanEmail(s)}}
	}
	var out []ndjson.Author
	for _, n := range splitNames(s) {
		out = append(out, ndjson.Author{Name: n})
	}
	return out
}

func isEmail(s string) bool {
	s = strings.TrimPrefix(s, "mailto:")
	at := strings.IndexByte(s, '@')
	return at > 0 && at < len(s)-1 && !strings.ContainsAny(s, " ,;<>()")
}

func cleanEmail(s string) string { return strings.TrimPrefix(strings.TrimSpace(s), "mailto:") }

// conjunctions join the last two of a list of names.
var conjunctions = []string{" and ", " & ", " und ", " et ", " y ", " e ", " en ", " och ", " og ", " i "}

// splitNames splits one field holding several names: "A, B and C",
// "A; B", "Ann Lee, Bo Chen", "Ann Lee and Bo Chen". It keeps together
// what is more likely one name: "Doe, John", "Simon & Garfunkel".
func splitNames(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ";") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, splitList(part)...)
		}
	}
	return out
}

func splitList(s string) []string {
	commas := strings.Split(s, ",")
	names := make([]string, 0, len(commas)+1)
	for _, c := range commas[:len(commas)-1] {
		names = append(names, strings.TrimSpace(c))
	}
	// The last piece may join two names with a conjunction.
	pad := " " + strings.TrimSpace(commas[len(commas)-1]) + " "
	low := lowerASCII(pad)
	at, cw := -1, ""
	for _, c := range conjunctions {
		if i := strings.LastIndex(low, c); i > at {
			at, cw = i, c
		}
	}
	var before, after string
	if at >= 0 {
		before, after = strings.TrimSpace(pad[:at]), strings.TrimSpace(pad[at+len(cw):])
	}
	switch {
	case after != "" && before == "" && len(commas) > 1:
		// "A, B, and C"
		names = append(names, after)
	case after != "" && before != "" && len(commas) > 1:
		// "A, B and C"
		names = append(names, before, after)
	case after != "" && before != "":
		// "X and Y": two people when both have a full name, else one
		// ("Simon & Garfunkel").
		if words(before) < 2 || words(after) < 2 {
			return []string{s}
		}
		names = []string{before, after}
	case len(commas) > 1:
		names = append(names, strings.TrimSpace(pad))
		full := true
		for _, n := range names {
			full = full && words(n) >= 2
		}
		if len(names) < 3 && !full {
			return []string{s} // "Doe, John"
		}
	default:
		return []string{s}
	}
	var out []string
	for _, n := range names {
		if n = trimConj(n); n != "" {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return []string{s}
	}
	return out
}

// lowerASCII lower-cases the ASCII letters of s, keeping its length.
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// trimConj removes a leading conjunction: "and C" is C.
func trimConj(s string) string {
	s = strings.TrimSpace(s)
	for _, c := range conjunctions {
		c = strings.TrimSpace(c) + " "
		if len(s) > len(c) && strings.EqualFold(s[:len(c)], c) {
			return strings.TrimSpace(s[len(c):])
		}
	}
	return s
}

func words(s string) int { return len(strings.Fields(s)) }

// addAuthor adds a to list, or completes the entry already there for the
// same person.
func addAuthor(list []ndjson.Author, a ndjson.Author) []ndjson.Author {
	a.Name, a.Email, a.URI = strings.TrimSpace(safetext.StripControls(a.Name)), strings.TrimSpace(safetext.StripControls(a.Email)), strings.TrimSpace(a.URI)
	if a.Name == "" && a.Email == "" && a.URI == "" {
		return list
	}
	for i := range list {
		b := &list[i]
		same := a.Name != "" && strings.EqualFold(a.Name, b.Name) || a.Name == "" && a.Email != "" && strings.EqualFold(a.Email, b.Email) ||
			b.Name == "" && b.Email != "" && strings.EqualFold(a.Email, b.Email)
		if same {
			if b.Name == "" {
				b.Name = a.Name
			}
			if b.Email == "" {
				b.Email = a.Email
			}
			if b.URI == "" {
				b.URI = a.URI
			}
			return list
		}
	}
	return append(list, a)
}
