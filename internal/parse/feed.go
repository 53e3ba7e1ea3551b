package parse

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mmcdole/gofeed"
	"github.com/mmcdole/gofeed/rss"

	"github.com/feedpipe/feedpipe/internal/ids"
	"github.com/feedpipe/feedpipe/internal/urlnorm"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// ErrNotAFeed is returned for a body that is not RSS, Atom or JSON Feed.
var ErrNotAFeed = errors.New("not an RSS, Atom or JSON feed")

// Source says where a body came from: it is what the ids and relative
// links of its entries derive from.
type Source struct {
	FeedID  string
	FetchID string
	BaseURL string // the document's final URL
}

// Feed is a parsed document in feedpipe's terms: the feed-level facts and
// the entries, in document order.
type Feed struct {
	Info    ndjson.Parse
	Entries []ndjson.Entry
}

// gofeed's Parser keeps no per-parse state, so one serves every goroutine.
var parser = func() *gofeed.Parser {
	p := gofeed.NewParser()
	p.KeepOriginalFeed = true // for RSS ttl, skipHours, skipDays and guid isPermaLink
	return p
}()

// MaxXMLDepth caps how deeply a document may nest elements (DESIGN.md §6).
// Real feeds stay under 20 levels. gofeed walks some elements recursively:
// a document a hundred thousand levels deep takes seconds, and one a few
// million deep (15 MB) overflows the goroutine stack, a fatal error that
// no recover catches and that would end the whole stage.
const MaxXMLDepth = 1000

// ParseFeed parses an RSS, Atom or JSON Feed body.
func ParseFeed(body []byte, src Source) (*Feed, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, fmt.Errorf("parse: %w: the body is empty", ErrNotAFeed)
	}
	if tooDeep(body, MaxXMLDepth) {
		return nil, fmt.Errorf("parse: the document nests elements more than %d deep", MaxXMLDepth)
	}
	gf, err := parser.Parse(bytes.NewReader(body))
	if errors.Is(err, gofeed.ErrFeedTypeNotDetected) {
		return nil, fmt.Errorf("parse: %w (it starts %q)", ErrNotAFeed, snippet(body))
	}
	if err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	// gofeed takes any body starting with "{" for a JSON Feed, so an API
	// error such as {"error":"rate limited"} would pass as an empty feed.
	// A JSON Feed names its version or at least has items.
	if gf.FeedType == "json" && !strings.Contains(gf.FeedVersion, "jsonfeed.org/version/") && len(gf.Items) == 0 {
		return nil, fmt.Errorf("parse: %w: JSON without a JSON Feed version or items (it starts %q)", ErrNotAFeed, snippet(body))
	}
	return adapt(gf, src), nil
}

// adapt converts gofeed's universal feed into feedpipe's Feed. It is the one
// place gofeed's types are read.
func adapt(gf *gofeed.Feed, src Source) *Feed {
	base, _ := url.Parse(src.BaseURL)
	f := &Feed{Info: ndjson.Parse{
		Format:      gf.FeedType,
		Version:     gf.FeedVersion,
		Title:       strings.TrimSpace(gf.Title),
		Link:        resolve(base, gf.Link),
		Description: strings.TrimSpace(gf.Description),
		Language:    strings.TrimSpace(gf.Language),
		SkipHours:   []int{},
		SkipDays:    []string{},
		Warnings:    []string{},
		Items:       len(gf.Items),
	}}
	var rssItems []*rss.Item
	if orig, ok := gf.OriginalFeed().(*rss.Feed); ok {
		f.Info.TTLMinutes, _ = strconv.Atoi(strings.TrimSpace(orig.TTL))
		for _, h := range orig.SkipHours {
			if n, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && n >= 0 && n <= 24 {
				f.Info.SkipHours = append(f.Info.SkipHours, n%24)
			}
		}
		for _, d := range orig.SkipDays {
			if d = strings.TrimSpace(d); d != "" {
				f.Info.SkipDays = append(f.Info.SkipDays, d)
			}
		}
		if len(orig.Items) == len(gf.Items) {
			rssItems = orig.Items
		}
	}

	guidCount := map[string]int{}
	for _, it := range gf.Items {
		if g := strings.TrimSpace(it.GUID); g != "" {
			guidCount[urlnorm.Key(g)]++
		}
	}
	f.Entries = make([]ndjson.Entry, 0, len(gf.Items))
	for i, it := range gf.Items {
		var ri *rss.Item
		if rssItems != nil {
			ri = rssItems[i]
		}
		f.Entries = append(f.Entries, adaptItem(it, ri, base, src, guidCount))
	}
	return f
}

func adaptItem(it *gofeed.Item, ri *rss.Item, base *url.URL, src Source, guidCount map[string]int) ndjson.Entry {
	guid := strings.TrimSpace(it.GUID)
	e := ndjson.Entry{
		Header:        ndjson.Head(ndjson.TypeEntry),
		FeedID:        src.FeedID,
		NativeID:      guid,
		CanonicalLink: resolve(base, entryLink(it, ri)),
		Title:         strings.TrimSpace(it.Title),
		Summary:       strings.TrimSpace(it.Description),
		Content:       strings.TrimSpace(it.Content),
		Authors:       []ndjson.Author{},
		Categories:    []string{},
		Enclosures:    []ndjson.Enclosure{},
		Published:     ndjson.At(deref(it.PublishedParsed)),
		Updated:       ndjson.At(deref(it.UpdatedParsed)),
		RawRef:        ndjson.RawRef{FetchID: src.FetchID},
	}
	for _, p := range it.Authors {
		if p != nil && (p.Name != "" || p.Email != "") {
			e.Authors = append(e.Authors, ndjson.Author{Name: strings.TrimSpace(p.Name), Email: strings.TrimSpace(p.Email)})
		}
	}
	for _, c := range it.Categories {
		if c = strings.TrimSpace(c); c != "" && !slices.Contains(e.Categories, c) {
			e.Categories = append(e.Categories, c)
		}
	}
	links := []string{e.CanonicalLink}
	for _, enc := range it.Enclosures {
		if enc == nil || strings.TrimSpace(enc.URL) == "" {
			continue
		}
		length, _ := strconv.ParseInt(strings.TrimSpace(enc.Length), 10, 64)
		u := resolve(base, enc.URL)
		e.Enclosures = append(e.Enclosures, ndjson.Enclosure{URL: u, Type: strings.TrimSpace(enc.Type), Length: max(length, 0)})
		links = append(links, u)
	}
	e.EntryUID = ids.EntryUID(ids.EntryKey{
		FeedID:         src.FeedID,
		NativeID:       guid,
		NativeIDShared: guid != "" && guidCount[urlnorm.Key(guid)] > 1,
		Link:           e.CanonicalLink,
		Title:          e.Title,
		Published:      e.Published.Time,
		Body:           e.Summary + e.Content,
	})
	e.ContentHash = ids.ContentHash(e.Title, e.Summary, e.Content, links)
	return e
}

// entryLink picks the entry's link: FeedBurner's origLink over its proxy
// link, then the item link, then an RSS guid that is a permalink.
func entryLink(it *gofeed.Item, ri *rss.Item) string {
	if orig := extensionValue(it, "feedburner", "origLink"); orig != "" {
		return orig
	}
	if l := strings.TrimSpace(it.Link); l != "" {
		return l
	}
	if ri != nil && ri.GUID != nil && !strings.EqualFold(strings.TrimSpace(ri.GUID.IsPermalink), "false") {
		if g := strings.TrimSpace(ri.GUID.Value); strings.HasPrefix(g, "http://") || strings.HasPrefix(g, "https://") {
			return g
		}
	}
	return ""
}

func extensionValue(it *gofeed.Item, ns, name string) string {
	for _, e := range it.Extensions[ns][name] {
		if v := strings.TrimSpace(e.Value); v != "" {
			return v
		}
	}
	return ""
}

// resolve makes ref absolute against base and canonicalises it; a link
// that is not http(s) after resolution is kept as written.
func resolve(base *url.URL, ref string) string {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return ""
	}
	if base != nil {
		if r, err := url.Parse(ref); err == nil {
			ref = base.ResolveReference(r).String()
		}
	}
	if n, err := urlnorm.Normalize(ref); err == nil {
		return n
	}
	return ref
}

// snippet is the start of a body, for an error message.
func snippet(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > 40 {
		b = b[:40]
	}
	return strings.ToValidUTF8(string(b), "?")
}

// newestFirst orders entries by publication (or update) time, newest
// first; undated entries follow the dated ones in document order, since
// feeds list their newest items first.
func newestFirst(entries []ndjson.Entry) []ndjson.Entry {
	out := make([]ndjson.Entry, 0, len(entries))
	for _, i := range newestOrder(entries) {
		out = append(out, entries[i])
	}
	return out
}

// newestOrder is newestFirst as indexes into entries.
func newestOrder(entries []ndjson.Entry) []int {
	when := func(e ndjson.Entry) time.Time {
		if !e.Published.IsZero() {
			return e.Published.Time
		}
		return e.Updated.Time
	}
	order := make([]int, len(entries))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ta, tb := when(entries[a]), when(entries[b])
		switch {
		case ta.IsZero() && tb.IsZero():
			return 0
		case ta.IsZero():
			return 1
		case tb.IsZero():
			return -1
		}
		return tb.Compare(ta)
	})
	return order
}

// tooDeep reports whether an XML body nests elements more than limit
// deep. It scans bytes rather than tokens, so that no encoding or
// character the decoder would stop at can hide what follows from it.
// Like gofeed's non-strict decoder, an end tag closes the elements left
// open inside its own; an end tag that closes nothing ends the scan, as
// the parser fails there too. JSON needs no scan (encoding/json caps
// nesting at 10000), nor does UTF-16, which gofeed cannot read: a body
// decoded from UTF-16 before parsing must be scanned after decoding.
func tooDeep(body []byte, limit int) bool {
	if b := bytes.TrimLeft(body, " \t\r\n\ufeff"); len(b) == 0 || b[0] == '{' || bytes.IndexByte(b[:min(len(b), 4)], 0) >= 0 {
		return false
	}
	var open [][]byte // names of the open elements
	for i := 0; i < len(body); {
		lt := bytes.IndexByte(body[i:], '<')
		if lt < 0 {
			return false
		}
		i += lt + 1
		rest := body[i:]
		var skipTo string
		switch {
		case bytes.HasPrefix(rest, []byte("!--")):
			skipTo = "-->"
		case bytes.HasPrefix(rest, []byte("![CDATA[")):
			skipTo = "]]>"
		case bytes.HasPrefix(rest, []byte("?")):
			skipTo = "?>"
		case bytes.HasPrefix(rest, []byte("!")), bytes.HasPrefix(rest, []byte("/")): // declarations, end tags
			skipTo = ">"
		}
		if skipTo != "" {
			if rest[0] == '/' {
				name := tagName(rest[1:])
				k := len(open) - 1
				for k >= 0 && !bytes.Equal(open[k], name) {
					k--
				}
				if k < 0 {
					return false
				}
				open = open[:k]
			}
			end := bytes.Index(rest, []byte(skipTo))
			if end < 0 {
				return false
			}
			i += end + len(skipTo)
			continue
		}
		name := tagName(rest)
		if len(name) == 0 {
			continue // a stray "<" in text
		}
		// The start tag ends at the first ">" outside a quoted value.
		var quote byte
		end := -1
		for j := len(name); j < len(rest) && end < 0; j++ {
			switch c := rest[j]; {
			case quote != 0:
				if c == quote {
					quote = 0
				}
			case c == '"' || c == '\'':
				quote = c
			case c == '>':
				end = j
			}
		}
		if end < 0 {
			return false
		}
		if rest[end-1] != '/' {
			if open = append(open, name); len(open) > limit {
				return true
			}
		}
		i += end + 1
	}
	return false
}

// tagName is the name at the start of b, up to white space, "/" or ">".
func tagName(b []byte) []byte {
	n := bytes.IndexAny(b, " \t\r\n/>")
	if n < 0 {
		return b
	}
	return b[:n]
}

func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
