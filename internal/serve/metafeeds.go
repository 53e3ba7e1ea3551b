package serve

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/feedwrite"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// FeedLimit is how many entries a meta-feed's page has unless ?limit=
// says; MaxFeedLimit is the most it may ask.
const (
	FeedLimit    = 50
	MaxFeedLimit = 500
)

// formatOf is the feed format of a file name's extension: feed.atom is
// atom; "" for none.
func formatOf(name string) string {
	switch path.Ext(name) {
	case ".atom":
		return feedwrite.Atom
	case ".rss", ".xml":
		return feedwrite.RSS
	case ".json":
		return feedwrite.JSON
	}
	return ""
}

// collection is a set of entries a meta-feed shows.
type collection struct {
	id, title, description string
	entries                func(ctx context.Context, q catalog.EntryQuery) (catalog.EntryPage, error)
}

// feedFeed is GET /feeds/{id}/feed.{atom,rss,json}.
func (s *Server) feedFeed(w http.ResponseWriter, r *http.Request) {
	id, ok := s.feedParam(w, r)
	if !ok {
		return
	}
	sb, fs, ok := s.feed(w, r, id)
	if !ok {
		return
	}
	title := cmp.Or(sb.Name, fs.Title, sb.URL)
	dependsOn(w, id)
	s.serveFeed(w, r, formatOf(r.URL.Path), collection{id: "urn:feedpipe:feed:" + id, title: title, description: "The entries feedpipe stored of " + sb.URL,
		entries: func(ctx context.Context, q catalog.EntryQuery) (catalog.EntryPage, error) {
			return s.cat.FeedEntries(ctx, id, q)
		}})
}

// labelFeed is GET /labels/{label}.{atom,rss,json}.
func (s *Server) labelFeed(w http.ResponseWriter, r *http.Request) {
	file := r.PathValue("file")
	format := formatOf(file)
	if format == "" || path.Ext(file) == ".xml" {
		problem(w, r, http.StatusNotFound, "no such feed", "a label's feed is /labels/LABEL.atom, .rss or .json")
		return
	}
	label := strings.TrimSuffix(file, path.Ext(file))
	if !validLabel(w, r, "label", label) {
		return
	}
	c := labelCollection(s.cat, label)
	// A label no subscription has is a 404; one whose feeds have no
	// entries yet is an empty feed. Asked only of an empty page.
	entries := c.entries
	c.entries = func(ctx context.Context, q catalog.EntryQuery) (catalog.EntryPage, error) {
		p, err := entries(ctx, q)
		if err == nil && len(p.Entries) == 0 {
			if ok, err := s.cat.HasLabel(ctx, label); err != nil {
				return p, err
			} else if !ok {
				return p, fmt.Errorf("%w: no subscription has the label %q: GET /feeds lists the labels", errNoLabel, label)
			}
		}
		return p, err
	}
	s.serveFeed(w, r, format, c)
}

func labelCollection(cat *catalog.Catalog, label string) collection {
	return collection{id: "urn:feedpipe:label:" + label, title: "feedpipe: " + label, description: "The newest entries of the feeds labelled " + label,
		entries: func(ctx context.Context, q catalog.EntryQuery) (catalog.EntryPage, error) {
			return cat.LabelEntries(ctx, label, q)
		}}
}

func allCollection(cat *catalog.Catalog) collection {
	return collection{id: "urn:feedpipe:all", title: "feedpipe: all", description: "The newest entries of every feed",
		entries: func(ctx context.Context, q catalog.EntryQuery) (catalog.EntryPage, error) {
			return cat.AllEntries(ctx, q)
		}}
}

var errNoLabel = errors.New("no such label")

// allFeed is GET /all.{atom,rss,json}.
func (s *Server) allFeed(w http.ResponseWriter, r *http.Request) {
	s.serveFeed(w, r, formatOf(r.URL.Path), allCollection(s.cat))
}

// serveFeed answers with a page of a collection's entries as a feed, and
// the Link header of its self, next (RFC 5005) and hub links.
func (s *Server) serveFeed(w http.ResponseWriter, r *http.Request, format string, c collection) {
	limit, ok := limitParam(w, r, FeedLimit, MaxFeedLimit)
	if !ok {
		return
	}
	cursor := r.URL.Query().Get("cursor")
	if cursor != "" && !IsCursor(cursor) {
		badParam(w, r, "cursor", "cursor "+strconv.Quote(clip(cursor))+" is not one a page of this feed gave: take it from its next link")
		return
	}
	self := s.absolute(r, selfPath(r))
	f, next, err := buildFeed(r.Context(), s.entry, c, catalog.EntryQuery{Limit: limit, Cursor: cursor}, self)
	if errors.Is(err, errNoLabel) {
		problem(w, r, http.StatusNotFound, "no such label", strings.TrimPrefix(err.Error(), errNoLabel.Error()+": "))
		return
	}
	if err == nil {
		err = pointEnclosures(r.Context(), s.cat, f, s.cfg.MediaURL)
	}
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	if next != "" {
		f.Next = s.absolute(r, nextURL(r, "cursor", next))
	}
	f.Hub = s.cfg.Hub
	f.Home = s.absolute(r, "/")
	var links []string
	for _, l := range []struct{ rel, href string }{{"self", f.Self}, {"next", f.Next}, {"hub", f.Hub}} {
		if l.href != "" {
			links = append(links, "<"+l.href+`>; rel="`+l.rel+`"`)
		}
	}
	w.Header().Set("Link", strings.Join(links, ", "))
	var b bytes.Buffer
	if err := feedwrite.Write(&b, format, f); err != nil {
		s.serverError(w, r, err)
		return
	}
	send(w, r, http.StatusOK, feedwrite.ContentType(format), b.Bytes(), f.UpdatedAt())
}

// buildFeed reads a page of a collection's entries into a feed; next is
// the cursor of the page after ("" for the last).
func buildFeed(ctx context.Context, entryOf func(catalog.EntryRow) (ndjson.Entry, error), c collection, q catalog.EntryQuery, self string) (*feedwrite.Feed, string, error) {
	page, err := c.entries(ctx, q)
	if err != nil {
		return nil, "", err
	}
	f := &feedwrite.Feed{ID: c.id, Title: c.title, Description: c.description, Self: self, Entries: make([]ndjson.Entry, 0, len(page.Entries))}
	for _, row := range page.Entries {
		e, err := entryOf(row)
		if err != nil {
			continue // pruned meanwhile
		}
		f.Entries = append(f.Entries, publishable(e))
	}
	// The feed's time is its newest entry's (feedwrite): it changes when
	// its content does, and only then.
	return f, page.Next, nil
}

// publishable is e as a meta-feed republishes it: its HTML through the
// web page's policy (sanitise), and no link of a scheme but http and
// https: a reader app that trusts this feed must not get a publisher's
// script or javascript: link from it.
func publishable(e ndjson.Entry) ndjson.Entry {
	e.Content = string(sanitise(e.Content, e.CanonicalLink))
	e.Summary = string(sanitise(e.Summary, e.CanonicalLink))
	e.CanonicalLink = webLink(e.CanonicalLink)
	encs := make([]ndjson.Enclosure, 0, len(e.Enclosures))
	for _, enc := range e.Enclosures {
		if enc.URL = webLink(enc.URL); enc.URL != "" {
			encs = append(encs, enc)
		}
	}
	e.Enclosures = encs
	authors := make([]ndjson.Author, len(e.Authors))
	for i, a := range e.Authors {
		a.URI = webLink(a.URI)
		authors[i] = a
	}
	e.Authors = authors
	return e
}

// webLink is u when it is an absolute http or https URL, else "".
func webLink(u string) string {
	p, err := url.Parse(strings.TrimSpace(u))
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return ""
	}
	return u
}
