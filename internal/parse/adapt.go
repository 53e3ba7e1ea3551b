package parse

import (
	"fmt"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/feedpipe/feedpipe/internal/dates"
	"github.com/feedpipe/feedpipe/internal/ids"
	"github.com/feedpipe/feedpipe/internal/safetext"
	"github.com/feedpipe/feedpipe/internal/urlnorm"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// futureSlack is how far after the fetch a date may be before it is
// flagged as in the future: clocks differ by minutes, while a publisher
// that writes local time as UTC is hours off.
const futureSlack = 5 * time.Minute

// adapter applies feedpipe's mapping rules (docs/parse.md#mapping) to what
// a decoder read.
type adapter struct {
	p    *Parser
	src  Source
	w    *warnings
	span func(start, end int) (int, int, bool)
	// norm remembers urlnorm.Normalize of the absolute URLs of the
	// document's ids and links: an item's guid is often its link.
	norm map[string]string
}

func (a *adapter) feed(rf *rawFeed, charset string) *Feed {
	atom := rf.format == "atom"
	info := ndjson.Parse{
		Format:      rf.format,
		Version:     rf.version,
		Charset:     charset,
		Title:       safetext.StripControls(firstOf(htmlOf(rf.title), rf.dcTitle)),
		Description: safetext.StripControls(firstOf(rf.description, htmlOf(rf.subtitle))),
		Language:    strings.TrimSpace(rf.language),
		SkipHours:   []int{},
		SkipDays:    []string{},
		Hubs:        []string{},
		Items:       len(rf.items),
	}
	// The home page: RSS <link>, else an alternate link.
	info.Link = resolveLink(rf.link)
	if info.Link == "" {
		info.Link = resolveLink(alternate(rf.links))
	}
	for _, l := range rf.links {
		switch strings.ToLower(l.rel) {
		case "self":
			if info.Self == "" {
				info.Self = resolveLink(l)
			}
		case "hub":
			if u := resolveLink(l); u != "" && !slices.Contains(info.Hubs, u) {
				info.Hubs = append(info.Hubs, u)
			}
		case "prev-archive":
			info.PrevArchive = firstOf(info.PrevArchive, resolveLink(l))
		case "next-archive":
			info.NextArchive = firstOf(info.NextArchive, resolveLink(l))
		case "current":
			info.Current = firstOf(info.Current, resolveLink(l))
		case "next":
			info.Next = firstOf(info.Next, resolveLink(l))
		}
	}
	if info.Self == "" {
		info.Self = resolveLink(rf.self)
	}
	if info.Next == "" {
		info.Next = resolveLink(rf.next)
	}
	for _, l := range rf.hubs {
		if u := resolveLink(l); u != "" && !slices.Contains(info.Hubs, u) {
			info.Hubs = append(info.Hubs, u)
		}
	}
	// The image: Atom's logo before its icon; RSS's image before iTunes'.
	if atom {
		info.Image = firstOf(resolveLink(rf.logo), resolveLink(rf.image))
	} else {
		info.Image = firstOf(resolveLink(rf.image), resolveLink(rf.logo))
	}
	// The publisher (docs/design.md#mapping): who the feed says publishes it, else the
	// feed's title, else its editor or author.
	info.Publisher = firstOf(safetext.StripControls(clean(rf.publisher)), info.Title)
	if info.Publisher == "" {
		if ps := persons(rf.managingEditor); len(ps) > 0 {
			info.Publisher = firstOf(ps[0].Name, ps[0].Email)
		}
	}
	if info.Publisher == "" && len(rf.authors) > 0 {
		info.Publisher = firstOf(rf.authors[0].name, rf.authors[0].email)
	}
	info.TTLMinutes, _ = strconv.Atoi(strings.TrimSpace(rf.ttl))
	info.TTLMinutes = max(info.TTLMinutes, 0)
	for _, h := range rf.skipHours {
		if n, err := strconv.Atoi(strings.TrimSpace(h)); err == nil && n >= 0 && n <= 24 && !slices.Contains(info.SkipHours, n%24) {
			info.SkipHours = append(info.SkipHours, n%24)
		}
	}
	for _, d := range rf.skipDays {
		if d = strings.TrimSpace(d); d != "" && !slices.Contains(info.SkipDays, d) {
			info.SkipDays = append(info.SkipDays, d)
		}
	}

	var feedAuthors []ndjson.Author
	if atom || rf.format == "json" {
		// Atom and JSON Feed entries without authors have the feed's.
		for _, p := range rf.authors {
			feedAuthors = addAuthor(feedAuthors, ndjson.Author{Name: p.name, Email: p.email, URI: resolveLink(rawLink{href: p.uri, base: p.base})})
		}
	}

	// How many items share each native id, by its key: computed once per
	// item, it is a tenth of the adapter's time.
	a.norm = make(map[string]string, len(rf.items))
	guidKeys := make([]string, len(rf.items))
	guidCount := make(map[string]int, len(rf.items))
	for i := range rf.items {
		if g := strings.TrimSpace(rf.items[i].id); g != "" {
			// What is not an http(s) URL is its own key (urlnorm.Key
			// returns it trimmed), without Key's error for it.
			guidKeys[i] = g
			n, plain := plainNormal(g)
			switch {
			case plain:
				// Key drops the scheme of a URL that is normalized as
				// written (or but for escapes), and changes nothing else.
				guidKeys[i] = n[strings.IndexByte(n, ':')+1:]
			case isHTTP(g) && !strings.Contains(g, "#"):
				// Without a fragment, Key is the normalized URL without its
				// scheme; the link of the item will want the normalized URL.
				if n, err := urlnorm.Normalize(g); err == nil {
					a.norm[g] = n
					guidKeys[i] = n[strings.IndexByte(n, ':')+1:]
				} else {
					guidKeys[i] = urlnorm.Key(g)
				}
			case isHTTP(g):
				guidKeys[i] = urlnorm.Key(g)
			}
			guidCount[guidKeys[i]]++
		}
	}
	f := &Feed{Entries: make([]ndjson.Entry, 0, len(rf.items))}
	for i := range rf.items {
		f.Entries = append(f.Entries, a.entry(rf, rf.items[i], i, feedAuthors, guidKeys[i], guidCount[guidKeys[i]] > 1))
	}
	info.Warnings = a.w.strings()
	f.Info = info
	return f
}

func (a *adapter) entry(rf *rawFeed, it *rawItem, idx int, feedAuthors []ndjson.Author, idKey string, sharedID bool) ndjson.Entry {
	atom := rf.format == "atom"
	native := strings.TrimSpace(it.id)
	e := ndjson.Entry{
		Header:     ndjson.Head(ndjson.TypeEntry),
		FeedID:     a.src.FeedID,
		NativeID:   native,
		Title:      htmlOf(it.title, rawText{s: it.mediaTitle}),
		Summary:    htmlOf(it.description, it.summary, rawText{s: it.itunesSummary}, rawText{s: it.mediaDescription}),
		Content:    htmlOf(it.content, rawText{s: it.contentText}),
		Authors:    []ndjson.Author{},
		Categories: []string{},
		Enclosures: []ndjson.Enclosure{},
		RawRef:     ndjson.RawRef{FetchID: a.src.FetchID},
	}
	if it.end > it.start {
		if s, end, ok := a.span(it.start, it.end); ok {
			e.RawRef.Offset, e.RawRef.Length = int64(s), int64(end-s)
		}
	}

	// The link: FeedBurner's original over its proxy, then the item's
	// link, an Atom alternate (text/html first), a JSON Feed
	// external_url, and last an RSS guid that is a permalink.
	link := a.link(rawLink{href: it.origLink, base: it.base})
	if link == "" {
		link = a.link(it.link)
	}
	if link == "" {
		link = a.link(alternate(it.links))
	}
	if link == "" {
		link = a.link(it.extLink)
	}
	if link == "" && it.guid && it.guidPermaLink && isHTTP(native) {
		link = a.link(rawLink{href: native, base: it.base})
	}
	if link != "" && a.p.Tracking != nil {
		link = a.p.Tracking.Strip(link)
	}
	e.CanonicalLink = link

	for _, p := range it.authors {
		e.Authors = addAuthor(e.Authors, ndjson.Author{Name: p.name, Email: p.email, URI: resolveLink(rawLink{href: p.uri, base: p.base})})
	}
	for _, s := range it.persons {
		for _, p := range persons(s) {
			e.Authors = addAuthor(e.Authors, p)
		}
	}
	if len(e.Authors) == 0 && it.itunesBy != "" {
		for _, p := range persons(it.itunesBy) {
			e.Authors = addAuthor(e.Authors, p)
		}
	}
	if len(e.Authors) == 0 {
		e.Authors = append(e.Authors, feedAuthors...)
	}

	for _, c := range it.categories {
		if c = strings.TrimSpace(safetext.StripControls(c)); c != "" && !slices.Contains(e.Categories, c) {
			e.Categories = append(e.Categories, c)
		}
	}

	for _, enc := range it.enclosures {
		e.Enclosures = addEnclosure(e.Enclosures, enc)
	}
	for _, l := range it.links {
		if strings.EqualFold(l.rel, "enclosure") {
			e.Enclosures = addEnclosure(e.Enclosures, rawEnclosure{url: l.href, typ: l.typ, length: l.length, base: l.base})
		}
	}

	e.Published = a.date(it.published, idx)
	e.Updated = a.date(it.updated, idx)
	if atom && e.Published.IsZero() {
		e.Published = e.Updated // Atom requires updated, and not published
	}

	links := make([]string, 0, 1+len(e.Enclosures))
	links = append(links, e.CanonicalLink)
	for _, enc := range e.Enclosures {
		links = append(links, enc.URL)
	}
	// The body counts only for an item without link, title and date
	// (ids.EntryUID): spare the copy for the others.
	var body string
	if e.CanonicalLink == "" && strings.TrimSpace(e.Title) == "" && e.Published.IsZero() {
		body = e.Summary + e.Content
	}
	e.EntryUID = ids.EntryUID(ids.EntryKey{
		FeedID: a.src.FeedID,
		// The id's key: EntryUID keys it again, which changes nothing
		// (Key(Key(x)) is Key(x)) and costs nothing.
		NativeID:       idKey,
		NativeIDShared: native != "" && sharedID,
		Link:           e.CanonicalLink,
		Title:          e.Title,
		Published:      e.Published.Time,
		Body:           body,
	})
	e.ContentHash = ids.ContentHash(e.Title, e.Summary, e.Content, links)
	return e
}

// htmlOf is the first of texts that is not empty, trimmed, without
// control characters (a NUL or an ESC of a publisher's reaches no page,
// app or terminal), with the relative URLs of HTML resolved.
func htmlOf(texts ...rawText) string {
	for _, t := range texts {
		if s := strings.TrimSpace(safetext.StripControls(t.s)); s != "" {
			if t.html {
				return resolveHTML(s, t.base)
			}
			return s
		}
	}
	return ""
}

// date reads the first candidate that is a date. Those that are not are
// counted in a warning; one in the future is kept, and counted too.
func (a *adapter) date(cands []rawDate, idx int) ndjson.Time {
	if len(cands) > 1 {
		slices.SortStableFunc(cands, func(x, y rawDate) int { return datePriority[x.field] - datePriority[y.field] })
	}
	for _, c := range cands {
		v := strings.TrimSpace(c.value)
		if v == "" {
			continue
		}
		t, err := dates.Parse(v)
		tm := ndjson.At(t)
		if err != nil || tm.IsZero() {
			a.w.count(warnDate, fmt.Sprintf("%s %s of item %d", c.field, quote(v), idx+1))
			continue
		}
		if !a.src.Now.IsZero() && t.After(a.src.Now.Add(futureSlack)) {
			a.w.count(warnFuture, fmt.Sprintf("%s %s of item %d", c.field, quote(v), idx+1))
		}
		return tm
	}
	return ndjson.Time{}
}

// datePriority orders the elements a date may come from, whatever their
// order in the item: lower first.
var datePriority = map[string]int{
	"pubDate": 0, "published": 0, "updated": 0, "atom:updated": 0,
	"issued": 1, "atom:published": 1, "modified": 1,
	"created": 2, "dc:date": 2, "dcterms:modified": 2,
	"dcterms:issued": 3, "dcterms:created": 4,
}

// alternate picks an entry's or feed's link among Atom links: the first
// alternate of type text/html, else the first alternate.
func alternate(links []rawLink) rawLink {
	var first rawLink
	found := false
	for _, l := range links {
		if !strings.EqualFold(l.rel, "alternate") || strings.TrimSpace(l.href) == "" {
			continue
		}
		typ := strings.ToLower(l.typ)
		if typ == "text/html" || typ == "application/xhtml+xml" {
			return l
		}
		if !found {
			first, found = l, true
		}
	}
	return first
}

func addEnclosure(list []ndjson.Enclosure, enc rawEnclosure) []ndjson.Enclosure {
	u := resolveLink(rawLink{href: enc.url, base: enc.base})
	if u == "" {
		return list
	}
	typ := strings.TrimSpace(enc.typ)
	if typ == "" && enc.thumbnail {
		typ = imageType(u)
	}
	length, _ := strconv.ParseInt(strings.TrimSpace(enc.length), 10, 64)
	length = max(length, 0)
	for i := range list {
		if list[i].URL == u {
			if list[i].Type == "" {
				list[i].Type = typ
			}
			if list[i].Length == 0 {
				list[i].Length = length
			}
			return list
		}
	}
	return append(list, ndjson.Enclosure{URL: u, Type: typ, Length: length})
}

// imageType guesses the type of a thumbnail from its name.
func imageType(u string) string {
	p := u
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	switch strings.ToLower(path.Ext(p)) {
	case ".jpg", ".jpeg":
		return "image/jpeg"
	case ".png":
		return "image/png"
	case ".gif":
		return "image/gif"
	case ".webp":
		return "image/webp"
	case ".svg":
		return "image/svg+xml"
	case ".avif":
		return "image/avif"
	}
	return ""
}

// isHTTP reports whether s, trimmed, begins with http:// or https:// in
// any case. The scheme is compared byte by byte, ASCII letters folded:
// no other character lower-cases to one of its letters, and
// strings.ToLower's copy of every link was a fortieth of the time
// (FuzzIsHTTP holds it to ToLower).
func isHTTP(s string) bool {
	s = strings.TrimSpace(s)
	if len(s) < len("http://") || s[0]|0x20 != 'h' || s[1]|0x20 != 't' || s[2]|0x20 != 't' || s[3]|0x20 != 'p' {
		return false
	}
	if s[4]|0x20 == 's' {
		s = s[1:]
	}
	return len(s) >= len("http://") && s[4] == ':' && s[5] == '/' && s[6] == '/'
}

// link is resolveLink, with the normalized forms of absolute URLs
// remembered in a.norm.
func (a *adapter) link(l rawLink) string {
	ref := strings.TrimSpace(l.href)
	if ref == "" || !isHTTP(ref) {
		return resolve(l.base, ref)
	}
	if n, ok := plainNormal(ref); ok {
		return n
	}
	if n, ok := a.norm[ref]; ok {
		return n
	}
	n := resolve(l.base, ref)
	a.norm[ref] = n
	return n
}

// resolveLink makes a link absolute against its base and canonicalises it.
func resolveLink(l rawLink) string { return resolve(l.base, l.href) }

// resolve makes ref absolute against base and canonicalises it; a link
// that is not http(s) after resolution is kept as written.
func resolve(base *url.URL, ref string) string {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return ""
	}
	if n, ok := plainNormal(ref); ok {
		return n // normalized as it is written, or but for escapes: spare two parses
	}
	if base != nil && !isHTTP(ref) { // an absolute link needs no base: spare a parse
		if r, err := url.Parse(ref); err == nil {
			ref = base.ResolveReference(r).String()
		}
	}
	if n, err := urlnorm.Normalize(ref); err == nil {
		return n
	}
	return ref
}

// plainURL reports whether s is an http(s) URL that urlnorm.Normalize
// leaves as it is: a lower-case scheme and host (letters, digits, "-"
// and "."; no port, no user), a path that begins with "/" and needs no
// escaping, and a query (not empty) of printable ASCII but "#": the
// links of most feeds, whose parse and rebuilding it spares.
// FuzzPlainURL holds it to urlnorm.
func plainURL(s string) bool {
	n, ok := plainNormal(s)
	return ok && len(n) == len(s)
}

// plainNormal is urlnorm.Normalize(s) for a URL that plainURL takes but
// for bytes above ASCII in its path (words in French, Russian or
// Japanese), which net/url writes percent-encoded, in upper-case hex:
// without the parse and the rebuilding. ok is false for any other s.
// FuzzPlainURL holds it to urlnorm.
func plainNormal(s string) (n string, ok bool) {
	var rest string
	switch {
	case strings.HasPrefix(s, "https://"):
		rest = s[len("https://"):]
	case strings.HasPrefix(s, "http://"):
		rest = s[len("http://"):]
	default:
		return "", false
	}
	slash := strings.IndexByte(rest, '/')
	if slash <= 0 || rest[slash-1] == '.' || rest[0] == '.' || rest[0] == '-' {
		return "", false
	}
	for i := 0; i < slash; i++ {
		if c := rest[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.') {
			return "", false
		}
	}
	i := slash
	high := 0 // bytes above ASCII in the path
	for ; i < len(rest) && rest[i] != '?'; i++ {
		if c := rest[i]; !plainPathByte[c] {
			if c < utf8.RuneSelf {
				return "", false
			}
			high++
		}
	}
	if i < len(rest) {
		if i == len(rest)-1 {
			return "", false // an empty query, which url.URL.String leaves out
		}
		for _, c := range []byte(rest[i+1:]) {
			if c <= ' ' || c >= 0x7F || c == '#' {
				return "", false
			}
		}
	}
	if high == 0 {
		return s, true
	}
	const hex = "0123456789ABCDEF"
	path := len(s) - len(rest) + i // where the path ends in s
	b := make([]byte, 0, len(s)+2*high)
	for j := 0; j < path; j++ {
		if c := s[j]; c >= utf8.RuneSelf {
			b = append(b, '%', hex[c>>4], hex[c&15])
		} else {
			b = append(b, c)
		}
	}
	return string(append(b, s[path:]...)), true
}

// plainPathByte marks the bytes net/url writes as they are in a path.
var plainPathByte = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.~/$&+,:;=@", byte(c)) >= 0
	}
	return t
}()

// clean trims a title.
func clean(s string) string { return strings.TrimSpace(s) }
