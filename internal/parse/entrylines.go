package parse

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/feedpipe/feedpipe/internal/ids"
	"github.com/feedpipe/feedpipe/internal/safetext"
	"github.com/feedpipe/feedpipe/internal/urlnorm"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// FormatEntryLines is the parse.format of a body of NDJSON entry records
// (what a webhook source may POST, docs/design.md#push): a format of its
// own beside RSS, Atom and JSON Feed.
const FormatEntryLines = "ndjson"

// entryLinesTypes are the media types of NDJSON bodies.
var entryLinesTypes = []string{"application/x-ndjson", "application/ndjson", "application/jsonl", "application/x-jsonlines", "application/jsonlines"}

// isEntryLines reports whether body is NDJSON entry records: served as
// NDJSON, or, served as anything, its first line that is not blank a
// JSON object of type "entry" (a JSON Feed document is one object, of no
// type, and most often of many lines).
func isEntryLines(body []byte, contentType string) bool {
	if mt, _, err := mime.ParseMediaType(contentType); err == nil && slices.Contains(entryLinesTypes, mt) {
		return true
	}
	for len(body) > 0 {
		line, rest, _ := bytes.Cut(body, []byte{'\n'})
		body = rest
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var head struct {
			Type string `json:"type"`
		}
		return line[0] == '{' && json.Unmarshal(line, &head) == nil && head.Type == ndjson.TypeEntry
	}
	return false
}

// parseEntryLines reads a body of NDJSON entry records, one a line, as a
// document of entries: each is taken as a feed's item would be, not as
// the sender wrote it. Its feed_id must be the source's (or empty); its
// entry_uid and content_hash are made again from its fields by the rules
// of every entry (docs/design.md#identity), its raw_ref points at its
// line in the body, its texts lose their control characters, and its
// links that are not http(s) go; what feed-dedup and feed-store set
// (status, lineage) is dropped. A line that is blank is skipped; one that
// is not an entry record, or names another feed, is skipped with a
// warning; a body with no entry at all is not a feed.
func (p *Parser) parseEntryLines(body []byte, src Source) (*Feed, error) {
	if !utf8.Valid(body) {
		return nil, fmt.Errorf("parse: %w: an NDJSON body is UTF-8, and this one is not", ErrNotAFeed)
	}
	maxItems := positiveOr(p.MaxItems, MaxItems)
	w := &warnings{}
	type line struct {
		e         ndjson.Entry
		off, size int
	}
	var lines []line
	for off, n := 0, 1; off < len(body); n++ {
		end := bytes.IndexByte(body[off:], '\n')
		if end < 0 {
			end = len(body) - off
		}
		raw := body[off : off+end]
		// The record's own bytes, without the white space around it.
		at, size := off+len(raw)-len(bytes.TrimLeft(raw, " \t\r")), len(bytes.TrimSpace(raw))
		off += end + 1
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		var e ndjson.Entry
		if err := ndjson.Unmarshal(raw, &e); err != nil {
			w.add(warnSkipped, fmt.Sprintf("line %d is not a JSON object: skipped", n))
			continue
		}
		switch {
		case e.Type != ndjson.TypeEntry:
			w.add(warnSkipped, fmt.Sprintf("line %d is a record of type %s, not an entry: skipped", n, quote(e.Type)))
			continue
		case e.FeedID != "" && e.FeedID != src.FeedID:
			w.add(warnSkipped, fmt.Sprintf("line %d names the feed %s, not this one: skipped", n, quote(e.FeedID)))
			continue
		}
		if len(lines) == maxItems {
			return nil, fmt.Errorf("parse: %w: more than %d entries", ErrTooManyItems, maxItems)
		}
		lines = append(lines, line{e, at, size})
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("parse: %w: an NDJSON body without an entry record (it starts %q)", ErrNotAFeed, snippet(body))
	}
	// A native id the body gives more than one entry is no identity.
	natives := map[string]int{}
	for i := range lines {
		if id := nativeOf(&lines[i].e); id != "" {
			natives[urlnorm.Key(id)]++
		}
	}
	f := &Feed{Info: ndjson.Parse{Format: FormatEntryLines, Version: "1", Charset: "utf-8", Hubs: []string{}, SkipHours: []int{},
		SkipDays: []string{}, Items: len(lines)}}
	for i, l := range lines {
		f.Entries = append(f.Entries, p.lineEntry(l.e, src, w, i, natives))
		f.Entries[i].RawRef = ndjson.RawRef{FetchID: src.FetchID, Offset: int64(l.off), Length: int64(l.size)}
	}
	f.Info.Warnings = w.strings()
	return f, nil
}

// nativeOf is the id a sent entry names itself by: its native_id, else the
// entry_uid it was given (a record of another feedpipe's, say).
func nativeOf(e *ndjson.Entry) string {
	return strings.TrimSpace(safetext.StripControls(firstOf(e.NativeID, e.EntryUID)))
}

// lineEntry is the entry a sent one makes: its fields cleaned, its ids
// made again.
func (p *Parser) lineEntry(in ndjson.Entry, src Source, w *warnings, idx int, natives map[string]int) ndjson.Entry {
	text := func(s string) string { return strings.TrimSpace(safetext.StripControls(s)) }
	e := ndjson.Entry{
		Header:     ndjson.Head(ndjson.TypeEntry),
		FeedID:     src.FeedID,
		NativeID:   nativeOf(&in),
		Title:      text(in.Title),
		Summary:    text(in.Summary),
		Content:    text(in.Content),
		Authors:    []ndjson.Author{},
		Categories: []string{},
		Enclosures: []ndjson.Enclosure{},
		Published:  in.Published,
		Updated:    in.Updated,
	}
	if l := httpLink(in.CanonicalLink); l != "" {
		if p.Tracking != nil {
			l = p.Tracking.Strip(l)
		}
		e.CanonicalLink = l
	}
	for _, a := range in.Authors {
		a.URI = httpLink(a.URI)
		e.Authors = addAuthor(e.Authors, a)
	}
	for _, c := range in.Categories {
		if c = text(c); c != "" && !slices.Contains(e.Categories, c) {
			e.Categories = append(e.Categories, c)
		}
	}
	for _, enc := range in.Enclosures {
		if u := httpLink(enc.URL); u != "" && !slices.ContainsFunc(e.Enclosures, func(x ndjson.Enclosure) bool { return x.URL == u }) {
			e.Enclosures = append(e.Enclosures, ndjson.Enclosure{URL: u, Type: text(enc.Type), Length: max(enc.Length, 0)})
		}
	}
	for _, d := range []struct {
		t    ndjson.Time
		name string
	}{{e.Published, "published"}, {e.Updated, "updated"}} {
		if !src.Now.IsZero() && d.t.After(src.Now.Add(futureSlack)) {
			w.count(warnFuture, fmt.Sprintf("%s %s of entry %d", d.name, d.t.UTC().Format("2006-01-02T15:04:05Z"), idx+1))
		}
	}
	links := []string{e.CanonicalLink}
	for _, enc := range e.Enclosures {
		links = append(links, enc.URL)
	}
	var body string
	if e.CanonicalLink == "" && e.Title == "" && e.Published.IsZero() {
		body = e.Summary + e.Content
	}
	e.EntryUID = ids.EntryUID(ids.EntryKey{FeedID: src.FeedID, NativeID: e.NativeID, NativeIDShared: e.NativeID != "" && natives[urlnorm.Key(e.NativeID)] > 1,
		Link: e.CanonicalLink, Title: e.Title, Published: e.Published.Time, Body: body})
	e.ContentHash = ids.ContentHash(e.Title, e.Summary, e.Content, links)
	return e
}

// httpLink is s normalized when it is an absolute http(s) URL, else "".
func httpLink(s string) string {
	if !isHTTP(s) {
		return ""
	}
	n, err := urlnorm.Normalize(strings.TrimSpace(s))
	if err != nil {
		return ""
	}
	return n
}
