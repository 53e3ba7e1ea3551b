package opml

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Write writes feeds as an OPML 2.0 document titled title: feeds grouped
// into folder outlines by label, a feed with several labels in the folder
// of each (readers that show folders show it in each; feeds without
// labels at the top level), each feed outline with type="rss", text and
// title (the Title, else the URL), xmlUrl, htmlUrl when known, and
// category="label1,label2" holding all its labels that the attribute can
// (none with ',' or '/'). Output is deterministic (folders in order of
// first appearance, feeds in input order), indented, properly escaped,
// and Parse(Write(x)) gives back the same URLs and titles, each feed once
// per folder, the labels of a feed's outlines together its label set.
//
// An outline's SourceType, Fulltext and Scrape are written in attributes
// of feedpipe's namespace (feedpipe:sourceType, feedpipe:fulltext,
// feedpipe:scrape), declared on <opml> when any feed has one: Parse reads
// them back, other readers ignore them.
//
// A label holding ',' or '/' cannot be written in category, whose syntax
// uses both; it is left out there, so such a label survives the round trip
// only as a first label, which the folder carries.
func Write(w io.Writer, title string, feeds []Outline) error {
	type item struct {
		feed   int   // top-level feed, or -1
		folder []int // feeds in one folder
		label  string
	}
	var (
		items    []*item
		folderOf = map[string]*item{}
		labelsOf = make([][]string, len(feeds))
	)
	for i, f := range feeds {
		if strings.TrimSpace(f.URL) == "" {
			return fmt.Errorf("opml: feed %d (%q) has no URL", i+1, f.Title)
		}
		labelsOf[i] = labels(f.Labels, "")
		if len(labelsOf[i]) == 0 {
			items = append(items, &item{feed: i})
			continue
		}
		for _, l := range labelsOf[i] {
			it := folderOf[l]
			if it == nil {
				it = &item{feed: -1, label: l}
				folderOf[l] = it
				items = append(items, it)
			}
			it.folder = append(it.folder, i)
		}
	}

	var b bytes.Buffer
	b.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<opml version=\"2.0\"")
	if slices.ContainsFunc(feeds, Outline.own) {
		attr(&b, "xmlns:feedpipe", Namespace)
	}
	b.WriteString(">\n  <head>\n    <title>")
	escape(&b, strings.TrimSpace(title))
	b.WriteString("</title>\n  </head>\n  <body>\n")
	for _, it := range items {
		if it.feed >= 0 {
			writeFeed(&b, "    ", feeds[it.feed], labelsOf[it.feed])
			continue
		}
		b.WriteString("    <outline")
		attr(&b, "text", it.label)
		attr(&b, "title", it.label)
		b.WriteString(">\n")
		for _, i := range it.folder {
			writeFeed(&b, "      ", feeds[i], labelsOf[i])
		}
		b.WriteString("    </outline>\n")
	}
	b.WriteString("  </body>\n</opml>\n")
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("opml: %w", err)
	}
	return nil
}

func writeFeed(b *bytes.Buffer, indent string, f Outline, labels []string) {
	url := strings.TrimSpace(f.URL)
	title := strings.TrimSpace(f.Title)
	if title == "" {
		title = url
	}
	b.WriteString(indent)
	b.WriteString("<outline")
	attr(b, "type", "rss")
	attr(b, "text", title)
	attr(b, "title", title)
	attr(b, "xmlUrl", url)
	if h := strings.TrimSpace(f.HTMLURL); h != "" {
		attr(b, "htmlUrl", h)
	}
	var cats []string
	for _, l := range labels {
		if !strings.ContainsAny(l, ",/") {
			cats = append(cats, l)
		}
	}
	if len(cats) > 0 {
		attr(b, "category", strings.Join(cats, ","))
	}
	if f.SourceType != "" {
		attr(b, prefix+"sourceType", f.SourceType)
	}
	if f.Fulltext {
		attr(b, prefix+"fulltext", "true")
	}
	if f.Scrape != "" {
		attr(b, prefix+"scrape", f.Scrape)
	}
	b.WriteString("/>\n")
}

// own reports whether the outline has settings of feedpipe's own to write.
func (f Outline) own() bool { return f.SourceType != "" || f.Fulltext || f.Scrape != "" }

func attr(b *bytes.Buffer, name, value string) {
	b.WriteByte(' ')
	b.WriteString(name)
	b.WriteString("=\"")
	escape(b, value)
	b.WriteByte('"')
}

// escape writes s escaped for text and attribute values alike: quotes,
// and tabs and newlines, which attribute normalization would turn to spaces.
func escape(b *bytes.Buffer, s string) {
	_ = xml.EscapeText(b, []byte(s)) // a bytes.Buffer does not fail
}
