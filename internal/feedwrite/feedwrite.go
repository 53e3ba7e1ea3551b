// Package feedwrite writes stored entries as a feed of their own: Atom
// 1.0 (RFC 4287), RSS 2.0 and JSON Feed 1.1, with the links of RFC 5005
// paged feeds (rel=next) and WebSub (rel=hub). feed-serve serves these
// feeds, and feed-serve publish writes them to files.
package feedwrite

import (
	"cmp"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// The formats.
const (
	Atom = "atom"
	RSS  = "rss"
	JSON = "json"
)

// Formats are the formats, in the order feeds are offered.
var Formats = []string{Atom, RSS, JSON}

// ContentType is the media type of a format.
func ContentType(format string) string {
	switch format {
	case Atom:
		return "application/atom+xml; charset=utf-8"
	case RSS:
		return "application/rss+xml; charset=utf-8"
	case JSON:
		return "application/feed+json; charset=utf-8"
	}
	return ""
}

// Feed is what a written feed says of itself, and its entries, newest
// first.
type Feed struct {
	ID          string // the feed's permanent id (Atom id): a URL or URN
	Title       string
	Description string
	Home        string // the page the feed is about (alternate link); "" for none
	Self        string // the URL of this document
	Next        string // RFC 5005: the next page, older entries; "" on the last
	Hub         string // WebSub hub; "" for none
	// Updated is when the feed last changed: the zero time takes the
	// newest entry's time.
	Updated time.Time
	Entries []ndjson.Entry
}

// Generator names the program that writes the feeds.
const Generator = "feedpipe"

// EntryID is the id an entry has in feedpipe's feeds: stable, and unique
// across the feeds a store holds (entry uids are per feed).
func EntryID(e *ndjson.Entry) string { return "urn:feedpipe:" + e.FeedID + ":" + e.EntryUID }

// Write writes feed in format.
func Write(w io.Writer, format string, feed *Feed) error {
	switch format {
	case Atom:
		return writeAtom(w, feed)
	case RSS:
		return writeRSS(w, feed)
	case JSON:
		return writeJSON(w, feed)
	}
	return fmt.Errorf("feedwrite: unknown format %q: it is atom, rss or json", format)
}

// entryTime is when an entry last changed as a feed says it: updated,
// else published, else first seen.
func entryTime(e *ndjson.Entry) time.Time {
	for _, t := range []ndjson.Time{e.Updated, e.Published, e.FirstSeen} {
		if !t.IsZero() {
			return t.UTC()
		}
	}
	return time.Unix(0, 0).UTC()
}

// UpdatedAt is the time of the feed: Updated, else its newest entry's.
func (f *Feed) UpdatedAt() time.Time {
	if !f.Updated.IsZero() {
		return f.Updated.UTC()
	}
	var t time.Time
	for i := range f.Entries {
		if et := entryTime(&f.Entries[i]); et.After(t) {
			t = et
		}
	}
	if t.IsZero() {
		return time.Unix(0, 0).UTC()
	}
	return t
}

// Atom 1.0.

type atomFeed struct {
	XMLName   xml.Name    `xml:"http://www.w3.org/2005/Atom feed"`
	ID        string      `xml:"id"`
	Title     atomText    `xml:"title"`
	Subtitle  *atomText   `xml:"subtitle,omitempty"`
	Updated   string      `xml:"updated"`
	Author    atomPerson  `xml:"author"`
	Generator string      `xml:"generator"`
	Links     []atomLink  `xml:"link"`
	Entries   []atomEntry `xml:"entry"`
}

type atomText struct {
	Type string `xml:"type,attr,omitempty"`
	Text string `xml:",chardata"`
}

type atomPerson struct {
	Name  string `xml:"name"`
	Email string `xml:"email,omitempty"`
	URI   string `xml:"uri,omitempty"`
}

type atomLink struct {
	Rel    string `xml:"rel,attr,omitempty"`
	Type   string `xml:"type,attr,omitempty"`
	Href   string `xml:"href,attr"`
	Length string `xml:"length,attr,omitempty"`
}

type atomCategory struct {
	Term string `xml:"term,attr"`
}

type atomEntry struct {
	ID         string         `xml:"id"`
	Title      atomText       `xml:"title"`
	Updated    string         `xml:"updated"`
	Published  string         `xml:"published,omitempty"`
	Authors    []atomPerson   `xml:"author"`
	Links      []atomLink     `xml:"link"`
	Categories []atomCategory `xml:"category"`
	Summary    *atomText      `xml:"summary,omitempty"`
	Content    *atomText      `xml:"content,omitempty"`
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func writeAtom(w io.Writer, f *Feed) error {
	out := atomFeed{
		ID:        cmp.Or(f.ID, f.Self),
		Title:     atomText{Type: "text", Text: f.Title},
		Updated:   rfc3339(f.UpdatedAt()),
		Author:    atomPerson{Name: cmp.Or(f.Title, Generator)}, // every entry has an author, its own or the feed's
		Generator: Generator,
	}
	if f.Description != "" {
		out.Subtitle = &atomText{Type: "text", Text: f.Description}
	}
	for _, l := range []atomLink{{"self", "application/atom+xml", f.Self, ""}, {"alternate", "text/html", f.Home, ""},
		{"next", "application/atom+xml", f.Next, ""}, {"hub", "", f.Hub, ""}} {
		if l.Href != "" {
			out.Links = append(out.Links, l)
		}
	}
	for i := range f.Entries {
		e := &f.Entries[i]
		ae := atomEntry{ID: EntryID(e), Title: atomText{Type: "text", Text: e.Title}, Updated: rfc3339(entryTime(e))}
		if !e.Published.IsZero() {
			ae.Published = rfc3339(e.Published.Time)
		}
		for _, a := range e.Authors {
			if a.Name == "" && a.Email == "" && a.URI == "" {
				continue
			}
			ae.Authors = append(ae.Authors, atomPerson{Name: cmp.Or(a.Name, a.Email, a.URI), Email: a.Email, URI: a.URI})
		}
		if e.CanonicalLink != "" {
			ae.Links = append(ae.Links, atomLink{Rel: "alternate", Type: "text/html", Href: e.CanonicalLink})
		}
		for _, enc := range e.Enclosures {
			l := atomLink{Rel: "enclosure", Type: enc.Type, Href: enc.URL}
			if enc.Length > 0 {
				l.Length = strconv.FormatInt(enc.Length, 10)
			}
			ae.Links = append(ae.Links, l)
		}
		for _, c := range e.Categories {
			ae.Categories = append(ae.Categories, atomCategory{Term: c})
		}
		if e.Summary != "" {
			ae.Summary = &atomText{Type: "html", Text: e.Summary}
		}
		if e.Content != "" {
			ae.Content = &atomText{Type: "html", Text: e.Content}
		}
		out.Entries = append(out.Entries, ae)
	}
	return writeXML(w, out)
}

func writeXML(w io.Writer, v any) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", " ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("feedwrite: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// RSS 2.0.

type rssDoc struct {
	XMLName xml.Name   `xml:"rss"`
	Version string     `xml:"version,attr"`
	Atom    string     `xml:"xmlns:atom,attr"`
	Content string     `xml:"xmlns:content,attr"`
	DC      string     `xml:"xmlns:dc,attr"`
	Channel rssChannel `xml:"channel"`
}

type rssChannel struct {
	Title         string    `xml:"title"`
	Link          string    `xml:"link"`
	Description   string    `xml:"description"`
	LastBuildDate string    `xml:"lastBuildDate"`
	Generator     string    `xml:"generator"`
	Links         []rssLink `xml:"atom:link"`
	Items         []rssItem `xml:"item"`
}

type rssLink struct {
	Rel  string `xml:"rel,attr"`
	Type string `xml:"type,attr,omitempty"`
	Href string `xml:"href,attr"`
}

type rssGUID struct {
	IsPermaLink string `xml:"isPermaLink,attr"`
	ID          string `xml:",chardata"`
}

type rssEnclosure struct {
	URL    string `xml:"url,attr"`
	Length int64  `xml:"length,attr"`
	Type   string `xml:"type,attr"`
}

type rssItem struct {
	Title       string        `xml:"title,omitempty"`
	Link        string        `xml:"link,omitempty"`
	GUID        rssGUID       `xml:"guid"`
	PubDate     string        `xml:"pubDate,omitempty"`
	Creators    []string      `xml:"dc:creator"`
	Categories  []string      `xml:"category"`
	Enclosure   *rssEnclosure `xml:"enclosure,omitempty"`
	Description string        `xml:"description,omitempty"`
	Content     string        `xml:"content:encoded,omitempty"`
}

func writeRSS(w io.Writer, f *Feed) error {
	ch := rssChannel{
		Title:         f.Title,
		Link:          cmp.Or(f.Home, f.Self),
		Description:   cmp.Or(f.Description, f.Title),
		LastBuildDate: f.UpdatedAt().Format(time.RFC1123Z),
		Generator:     Generator,
	}
	for _, l := range []rssLink{{"self", "application/rss+xml", f.Self}, {"next", "application/rss+xml", f.Next}, {"hub", "", f.Hub}} {
		if l.Href != "" {
			ch.Links = append(ch.Links, l)
		}
	}
	for i := range f.Entries {
		e := &f.Entries[i]
		it := rssItem{Title: e.Title, Link: e.CanonicalLink, GUID: rssGUID{IsPermaLink: "false", ID: EntryID(e)},
			Categories: e.Categories, Description: e.Summary, Content: e.Content}
		if !e.Published.IsZero() {
			it.PubDate = e.Published.UTC().Format(time.RFC1123Z)
		}
		for _, a := range e.Authors {
			if n := cmp.Or(a.Name, a.Email); n != "" {
				it.Creators = append(it.Creators, n)
			}
		}
		// RSS 2.0 has room for one enclosure an item.
		if len(e.Enclosures) > 0 && e.Enclosures[0].URL != "" {
			enc := e.Enclosures[0]
			it.Enclosure = &rssEnclosure{URL: enc.URL, Length: enc.Length, Type: cmp.Or(enc.Type, "application/octet-stream")}
		}
		ch.Items = append(ch.Items, it)
	}
	return writeXML(w, rssDoc{Version: "2.0", Atom: "http://www.w3.org/2005/Atom", Content: "http://purl.org/rss/1.0/modules/content/",
		DC: "http://purl.org/dc/elements/1.1/", Channel: ch})
}

// JSON Feed 1.1.

type jsonFeed struct {
	Version     string     `json:"version"`
	Title       string     `json:"title"`
	HomePageURL string     `json:"home_page_url,omitempty"`
	FeedURL     string     `json:"feed_url,omitempty"`
	Description string     `json:"description,omitempty"`
	NextURL     string     `json:"next_url,omitempty"`
	Hubs        []jsonHub  `json:"hubs,omitempty"`
	Items       []jsonItem `json:"items"`
}

type jsonHub struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

type jsonAuthor struct {
	Name string `json:"name,omitempty"`
	URL  string `json:"url,omitempty"`
}

type jsonAttachment struct {
	URL      string `json:"url"`
	MimeType string `json:"mime_type"`
	Size     int64  `json:"size_in_bytes,omitempty"`
}

type jsonItem struct {
	ID            string           `json:"id"`
	URL           string           `json:"url,omitempty"`
	Title         string           `json:"title,omitempty"`
	ContentHTML   *string          `json:"content_html,omitempty"`
	ContentText   *string          `json:"content_text,omitempty"`
	Summary       string           `json:"summary,omitempty"`
	DatePublished string           `json:"date_published,omitempty"`
	DateModified  string           `json:"date_modified,omitempty"`
	Authors       []jsonAuthor     `json:"authors,omitempty"`
	Tags          []string         `json:"tags,omitempty"`
	Attachments   []jsonAttachment `json:"attachments,omitempty"`
}

func writeJSON(w io.Writer, f *Feed) error {
	out := jsonFeed{Version: "https://jsonfeed.org/version/1.1", Title: f.Title, HomePageURL: f.Home, FeedURL: f.Self,
		Description: f.Description, NextURL: f.Next, Items: []jsonItem{}}
	if f.Hub != "" {
		out.Hubs = []jsonHub{{Type: "WebSub", URL: f.Hub}}
	}
	for i := range f.Entries {
		e := &f.Entries[i]
		it := jsonItem{ID: EntryID(e), URL: e.CanonicalLink, Title: e.Title, Summary: e.Summary, Tags: e.Categories}
		// An item has content_html or content_text: the content, or an
		// empty text when the feed gave none.
		if e.Content != "" {
			it.ContentHTML = &e.Content
		} else {
			empty := ""
			it.ContentText = &empty
		}
		if !e.Published.IsZero() {
			it.DatePublished = rfc3339(e.Published.Time)
		}
		if !e.Updated.IsZero() {
			it.DateModified = rfc3339(e.Updated.Time)
		}
		for _, a := range e.Authors {
			if a.Name != "" || a.URI != "" {
				it.Authors = append(it.Authors, jsonAuthor{Name: a.Name, URL: a.URI})
			}
		}
		for _, enc := range e.Enclosures {
			if enc.URL != "" {
				it.Attachments = append(it.Attachments, jsonAttachment{URL: enc.URL, MimeType: cmp.Or(enc.Type, "application/octet-stream"), Size: enc.Length})
			}
		}
		out.Items = append(out.Items, it)
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	return enc.Encode(out)
}
