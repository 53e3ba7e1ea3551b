package serve

import (
	"encoding/xml"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
)

// The items of the Google Reader API: an entry's latest version with the
// user's marks, as JSON (stream/contents, stream/items/contents) and as
// Atom with Google Reader's categories (reader/atom, which newsboat
// reads).

type grLink struct {
	Href string `json:"href"`
	Type string `json:"type,omitempty"`
}

type grContent struct {
	Direction string `json:"direction"`
	Content   string `json:"content"`
}

type grOrigin struct {
	StreamID string `json:"streamId"`
	Title    string `json:"title"`
	HTMLURL  string `json:"htmlUrl"`
}

type grEnclosure struct {
	Href   string `json:"href"`
	Type   string `json:"type,omitempty"`
	Length string `json:"length,omitempty"`
}

// grItem is an item as the API shows it.
type grItem struct {
	ID            string        `json:"id"`
	CrawlTimeMsec string        `json:"crawlTimeMsec"`
	TimestampUsec string        `json:"timestampUsec"`
	Published     int64         `json:"published"`
	Updated       int64         `json:"updated"`
	Title         string        `json:"title"`
	Canonical     []grLink      `json:"canonical"`
	Alternate     []grLink      `json:"alternate"`
	Summary       grContent     `json:"summary"`
	Author        string        `json:"author,omitempty"`
	Categories    []string      `json:"categories"`
	Origin        grOrigin      `json:"origin"`
	Enclosure     []grEnclosure `json:"enclosure,omitempty"`

	read, starred bool
	uid           string
	updatedAt     time.Time
}

// feedInfo is what an item shows of its feed.
type feedInfo struct {
	title, url string
	labels     []string
}

// feedInfo looks up a feed's title and labels, once a request.
func (g *greq) feedInfo(cache map[string]feedInfo, id string) feedInfo {
	if fi, ok := cache[id]; ok {
		return fi
	}
	var fi feedInfo
	if sb, ok, err := g.s.cat.Subscription(g.ctx(), id); err == nil && ok {
		fs, _, _ := g.s.cat.State(g.ctx(), id)
		fi = feedInfo{title: feedTitle(sb, fs.Title), url: siteOf(sb, fs)}
		for _, l := range sb.Labels {
			if labelProblem(l) == "" {
				fi.labels = append(fi.labels, l)
			}
		}
	} else {
		fi.title = id // unsubscribed: its entries stay
	}
	cache[id] = fi
	return fi
}

// items are the rows' entries as items, their records read from
// entries/ (an entry whose line cannot be read is left out, and logged).
func (g *greq) items(rows []catalog.EntryRow) []grItem {
	before := g.s.readBefore(g.now)
	feeds := map[string]feedInfo{}
	out := make([]grItem, 0, len(rows))
	for _, row := range rows {
		e, err := g.s.cat.Entry(row)
		if err != nil {
			g.s.cfg.Log.Warn("an indexed entry cannot be read", "feed_id", row.FeedID, "entry_uid", row.UID, "err", err)
			continue
		}
		fi := g.feedInfo(feeds, row.FeedID)
		it := grItem{ID: itemLong(row.UID), uid: row.UID,
			CrawlTimeMsec: strconv.FormatInt(row.FirstSeen.UnixMilli(), 10),
			TimestampUsec: strconv.FormatInt(row.FirstSeen.UnixMicro(), 10),
			Published:     row.Published.Unix(), Title: e.Title, Canonical: []grLink{}, Alternate: []grLink{},
			Summary:   grContent{Direction: "ltr", Content: e.Content},
			Origin:    grOrigin{StreamID: "feed/" + row.FeedID, Title: fi.title, HTMLURL: fi.url},
			read:      row.Read || (!before.IsZero() && row.FirstSeen.Before(before)),
			starred:   row.Starred,
			updatedAt: row.Published,
		}
		it.Updated = it.Published
		if !e.Updated.IsZero() {
			it.Updated, it.updatedAt = e.Updated.Unix(), e.Updated.Time
		}
		if it.Summary.Content == "" {
			it.Summary.Content = e.Summary
		}
		if e.CanonicalLink != "" {
			it.Canonical = []grLink{{Href: e.CanonicalLink}}
			it.Alternate = []grLink{{Href: e.CanonicalLink, Type: "text/html"}}
		}
		var authors []string
		for _, a := range e.Authors {
			if a.Name != "" {
				authors = append(authors, a.Name)
			}
		}
		it.Author = strings.Join(authors, ", ")
		it.Categories = []string{stateReadingList}
		for _, l := range fi.labels {
			it.Categories = append(it.Categories, labelStream(l))
		}
		if it.read {
			it.Categories = append(it.Categories, stateRead)
		}
		if it.starred {
			it.Categories = append(it.Categories, stateStarred)
		}
		for _, enc := range e.Enclosures {
			ge := grEnclosure{Href: enc.URL, Type: enc.Type}
			if enc.Length > 0 {
				ge.Length = strconv.FormatInt(enc.Length, 10)
			}
			it.Enclosure = append(it.Enclosure, ge)
		}
		out = append(out, it)
	}
	return out
}

// The Atom of a stream, as Google Reader served it at /reader/atom/:
// each entry's id the item's long id, its marks as categories of the
// scheme http://www.google.com/reader/ with a label (read, fresh,
// starred), which is what newsboat reads them from.

const greaderScheme = "http://www.google.com/reader/"

type atomFeed struct {
	XMLName      xml.Name    `xml:"http://www.w3.org/2005/Atom feed"`
	GR           string      `xml:"xmlns:gr,attr"`
	ID           string      `xml:"id"`
	Title        string      `xml:"title"`
	Updated      string      `xml:"updated"`
	Links        []atomLink  `xml:"link"`
	Continuation string      `xml:"gr:continuation,omitempty"`
	Entries      []atomEntry `xml:"entry"`
}

type atomLink struct {
	Rel    string `xml:"rel,attr,omitempty"`
	Href   string `xml:"href,attr"`
	Type   string `xml:"type,attr,omitempty"`
	Length string `xml:"length,attr,omitempty"`
}

type atomText struct {
	Type string `xml:"type,attr"`
	Text string `xml:",chardata"`
}

type atomCategory struct {
	Term   string `xml:"term,attr"`
	Scheme string `xml:"scheme,attr,omitempty"`
	Label  string `xml:"label,attr,omitempty"`
}

type atomEntry struct {
	Crawl      string         `xml:"gr:crawl-timestamp-msec,attr"`
	ID         string         `xml:"id"`
	Title      atomText       `xml:"title"`
	Published  string         `xml:"published"`
	Updated    string         `xml:"updated"`
	Links      []atomLink     `xml:"link"`
	Categories []atomCategory `xml:"category"`
	Author     *atomAuthor    `xml:"author,omitempty"`
	Content    atomText       `xml:"content"`
	Source     atomSource     `xml:"source"`
}

type atomAuthor struct {
	Name string `xml:"name"`
}

type atomSource struct {
	StreamID string `xml:"gr:stream-id,attr"`
	ID       string `xml:"id"`
	Title    string `xml:"title"`
}

// atom answers with the items as an Atom feed.
func (g *greq) atom(st stream, items []grItem, next string) {
	rfc := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	f := atomFeed{GR: "http://www.google.com/schemas/reader/atom/", ID: "tag:google.com,2005:reader/" + st.id(),
		Title: g.streamTitle(st), Updated: rfc(g.now), Continuation: next,
		Links: []atomLink{{Rel: "self", Href: g.s.absolute(g.r, selfPath(g.r))}}}
	for _, it := range items {
		e := atomEntry{Crawl: it.CrawlTimeMsec, ID: it.ID, Title: atomText{Type: "html", Text: escapeHTMLText(it.Title)},
			Published: rfc(time.Unix(it.Published, 0)), Updated: rfc(it.updatedAt),
			Content: atomText{Type: "html", Text: it.Summary.Content},
			Source:  atomSource{StreamID: it.Origin.StreamID, ID: "tag:google.com,2005:reader/" + it.Origin.StreamID, Title: it.Origin.Title}}
		for _, l := range it.Alternate {
			e.Links = append(e.Links, atomLink{Rel: "alternate", Href: l.Href, Type: "text/html"})
		}
		for _, enc := range it.Enclosure {
			e.Links = append(e.Links, atomLink{Rel: "enclosure", Href: enc.Href, Type: enc.Type, Length: enc.Length})
		}
		if it.Author != "" {
			e.Author = &atomAuthor{Name: it.Author}
		}
		for _, c := range it.Categories {
			ac := atomCategory{Term: c, Scheme: greaderScheme}
			switch {
			case c == stateRead:
				ac.Label = "read"
			case c == stateStarred:
				ac.Label = "starred"
			case c == stateReadingList:
				ac.Label = "reading-list"
			case strings.HasPrefix(c, "user/-/label/"):
				ac.Label = strings.TrimPrefix(c, "user/-/label/")
			}
			e.Categories = append(e.Categories, ac)
		}
		if !it.read {
			e.Categories = append(e.Categories, atomCategory{Term: stateFresh, Scheme: greaderScheme, Label: "fresh"})
		}
		f.Entries = append(f.Entries, e)
	}
	b, err := xml.MarshalIndent(f, "", " ")
	if err != nil {
		g.s.serverError(g.w, g.r, err)
		return
	}
	g.w.Header().Set("Cache-Control", "private, no-cache")
	send(g.w, g.r, http.StatusOK, "application/atom+xml; charset=utf-8", append([]byte(xml.Header), append(b, '\n')...), time.Time{})
}

// escapeHTMLText makes a plain-text title the HTML an Atom type="html"
// title holds.
func escapeHTMLText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
