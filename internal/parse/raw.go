package parse

import "net/url"

// rawFeed is what a format decoder (XML or JSON) read from a document,
// before any of feedpipe's rules are applied: values as the document
// wrote them, each link with the base it is relative to. The adapter
// (adapt.go) turns it into a Feed.
type rawFeed struct {
	format, version string
	title           rawText // HTML in Atom, when it says so
	dcTitle         string  // dc:title, for a feed without a title
	link            rawLink // the <link> text of RSS, or home_page_url
	links           []rawLink
	description     string
	subtitle        rawText // Atom subtitle, itunes:summary: stand-ins for a description
	language        string
	image           rawLink
	logo            rawLink // Atom logo; icon is image
	publisher       string  // dc:publisher
	managingEditor  string
	authors         []rawPerson
	ttl             string
	skipHours       []string
	skipDays        []string
	hubs            []rawLink // JSON Feed hubs
	self            rawLink   // JSON Feed feed_url
	next            rawLink   // JSON Feed next_url (RFC 5005 §3's next, for JSON)
	items           []*rawItem
}

// rawLink is a URL as written, and the base it is relative to.
type rawLink struct {
	href, rel, typ, length string
	base                   *url.URL
}

type rawPerson struct {
	name, email, uri string
	base             *url.URL
}

type rawEnclosure struct {
	url, typ, length string
	base             *url.URL
	thumbnail        bool // an image: media:thumbnail, itunes:image, a JSON Feed image; its type is guessed from its name
}

// rawDate is a date as written and the element it came from, for the
// warning when it cannot be read.
type rawDate struct {
	value, field string
}

type rawItem struct {
	start, end int // the element's span in the parsed text; end 0 if unknown

	id            string
	guid          bool // id is an RSS guid
	guidPermaLink bool // ... whose isPermaLink is not "false"

	title      rawText // HTML only in Atom, when it says so
	mediaTitle string

	link     rawLink // RSS <link>, JSON url
	extLink  rawLink // JSON external_url
	links    []rawLink
	origLink string

	description, summary, content                rawText
	mediaDescription, itunesSummary, contentText string

	authors  []rawPerson
	persons  []string // RSS author, dc:creator: text to be read as people
	itunesBy string

	categories []string
	enclosures []rawEnclosure

	published, updated []rawDate  // candidates, best first
	dates              [2]rawDate // room for the first date of each, spared an allocation
	base               *url.URL
}

// rawText is a summary or a content: the text, whether it is HTML whose
// relative URLs are still to be resolved, and the base they resolve
// against.
type rawText struct {
	s    string
	html bool
	base *url.URL
}
