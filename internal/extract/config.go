package extract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/andybalholm/cascadia"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Limits of a scrape configuration (docs/design.md#scraping: max_pages
// defaults to 1).
const (
	DefaultMaxPages = 1
	MaxMaxPages     = 100
	// maxSelectorLen keeps a hostile configuration from costing more than
	// a careless one.
	maxSelectorLen = 1000
)

// ErrConfig marks a scrape configuration that cannot be used.
var ErrConfig = errors.New("invalid scrape configuration")

// ParseConfig decodes a scrape configuration and checks it. JSON null or
// nothing gives nil, nil. strict refuses members it does not know, which
// catches a misspelt selector name where a person writes the file (feed-sub
// add); feed-scrape reads configurations leniently, as every record is
// read.
func ParseConfig(raw []byte, strict bool) (*ndjson.ScrapeConfig, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var c ndjson.ScrapeConfig
	dec := json.NewDecoder(bytes.NewReader(raw))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrConfig, strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: more than one JSON value", ErrConfig)
	}
	if err := CheckConfig(&c); err != nil {
		return nil, err
	}
	return &c, nil
}

// CheckConfig reports what makes c unusable: an unknown discovery mode, a
// list without an article selector, a selector that is not CSS, a date
// format that cannot be read, max_pages out of range. It also trims the
// strings and lower-cases the mode, so that a checked configuration is
// written in one form.
func CheckConfig(c *ndjson.ScrapeConfig) error {
	c.DiscoveryMode = strings.ToLower(strings.TrimSpace(c.DiscoveryMode))
	l, a := &c.ListConfig, &c.ArticleConfig
	for _, s := range []*string{&l.ArticleSelector, &l.PaginationSelector, &a.TitleSelector, &a.ContentSelector,
		&a.AuthorSelector, &a.DateSelector, &a.DateFormat, &a.ImageSelector, &a.CanonicalSelector} {
		*s = strings.TrimSpace(*s)
	}
	switch c.DiscoveryMode {
	case "", ndjson.ModeDirect:
	case ndjson.ModeList:
		if l.ArticleSelector == "" {
			return fmt.Errorf("%w: list mode needs list_config.article_selector", ErrConfig)
		}
	default:
		return fmt.Errorf("%w: discovery_mode %q is not direct or list", ErrConfig, c.DiscoveryMode)
	}
	if l.MaxPages < 0 || l.MaxPages > MaxMaxPages {
		return fmt.Errorf("%w: list_config.max_pages %d is not between 0 and %d", ErrConfig, l.MaxPages, MaxMaxPages)
	}
	for _, s := range []struct{ name, sel string }{
		{"list_config.article_selector", l.ArticleSelector},
		{"list_config.pagination_selector", l.PaginationSelector},
		{"article_config.title_selector", a.TitleSelector},
		{"article_config.content_selector", a.ContentSelector},
		{"article_config.author_selector", a.AuthorSelector},
		{"article_config.date_selector", a.DateSelector},
		{"article_config.image_selector", a.ImageSelector},
		{"article_config.canonical_selector", a.CanonicalSelector},
	} {
		if _, err := CompileSelector(s.sel); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrConfig, s.name, err)
		}
	}
	if a.DateFormat != "" {
		if _, err := GoLayout(a.DateFormat); err != nil {
			return fmt.Errorf("%w: article_config.date_format: %v", ErrConfig, err)
		}
	}
	return nil
}

// MaxPages is the number of list pages to read: max_pages, 1 if unset.
func MaxPages(c *ndjson.ScrapeConfig) int {
	if c == nil || c.ListConfig.MaxPages <= 0 {
		return DefaultMaxPages
	}
	return min(c.ListConfig.MaxPages, MaxMaxPages)
}

// Selector is a compiled selector: alternatives tried in order, the first
// that matches anything winning (docs/design.md#scraping). The zero Selector
// matches nothing.
type Selector struct {
	alts []cascadia.Selector
	src  string
}

// String returns the selector as written.
func (s Selector) String() string { return s.src }

// Empty reports whether the selector selects nothing because none was
// given.
func (s Selector) Empty() bool { return len(s.alts) == 0 }

// CompileSelector compiles a selector; "" compiles to the empty Selector.
func CompileSelector(src string) (Selector, error) {
	src = strings.TrimSpace(src)
	if src == "" {
		return Selector{}, nil
	}
	if len(src) > maxSelectorLen {
		return Selector{}, fmt.Errorf("selector longer than %d bytes", maxSelectorLen)
	}
	s := Selector{src: src}
	for _, alt := range splitGroup(src) {
		c, err := cascadia.Compile(alt)
		if err != nil {
			return Selector{}, fmt.Errorf("%q is not a CSS selector: %v", alt, err)
		}
		s.alts = append(s.alts, c)
	}
	if len(s.alts) == 0 {
		return Selector{}, fmt.Errorf("%q is not a CSS selector", src)
	}
	return s, nil
}

// splitGroup splits a selector group at its top-level commas, leaving
// those inside brackets, parentheses and quotes.
func splitGroup(src string) []string {
	var parts []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '\\':
			i++
		case c == '(' || c == '[':
			depth++
		case c == ')' || c == ']':
			depth--
		case c == ',' && depth == 0:
			parts = append(parts, src[start:i])
			start = i + 1
		}
	}
	parts = append(parts, src[start:])
	out := parts[:0]
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
