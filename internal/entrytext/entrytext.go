// Package entrytext says an entry in words where feedpipe shows it to
// people: its title, or, for an entry without one (JSON Feed items need
// none), the start of its text, so that feed-read and feed-serve's web
// page show the same.
package entrytext

import (
	"cmp"
	"strings"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Untitled is the title of an entry with neither a title nor a text.
const Untitled = "(untitled)"

// titleRunes is how much of an untitled entry's text stands for its title.
const titleRunes = 80

// Title is the title to show of e: its own, trimmed; else the first 80
// characters of the text of its summary (else its content), cut with
// "…"; else Untitled.
func Title(e *ndjson.Entry) string {
	if t := strings.TrimSpace(e.Title); t != "" {
		return t
	}
	if t := Cut(catalog.TextOf(cmp.Or(e.Summary, e.Content)), titleRunes); t != "" {
		return t
	}
	return Untitled
}

// Cut is s cut to at most n characters, the last of them "…" when it cut.
func Cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
