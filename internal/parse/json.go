package parse

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// JSON Feed 1.0 and 1.1 (https://jsonfeed.org/version/1.1). Publishers
// bend its types (numbers for ids, a single author object where a list
// belongs), so the fields that are bent in practice take what comes.

type jsonFeed struct {
	Version     flexString        `json:"version"`
	Title       flexString        `json:"title"`
	HomePageURL flexString        `json:"home_page_url"`
	FeedURL     flexString        `json:"feed_url"`
	Description flexString        `json:"description"`
	Icon        flexString        `json:"icon"`
	Favicon     flexString        `json:"favicon"`
	Language    flexString        `json:"language"`
	Author      *jsonAuthor       `json:"author"`
	Authors     flexAuthors       `json:"authors"`
	Hubs        []jsonHub         `json:"hubs"`
	NextURL     flexString        `json:"next_url"`
	Items       []json.RawMessage `json:"items"`
}

type jsonHub struct {
	Type flexString `json:"type"`
	URL  flexString `json:"url"`
}

type jsonAuthor struct {
	Name   flexString `json:"name"`
	URL    flexString `json:"url"`
	Avatar flexString `json:"avatar"`
}

type jsonItem struct {
	ID            flexString       `json:"id"`
	URL           flexString       `json:"url"`
	ExternalURL   flexString       `json:"external_url"`
	Title         flexString       `json:"title"`
	ContentHTML   flexString       `json:"content_html"`
	ContentText   flexString       `json:"content_text"`
	Summary       flexString       `json:"summary"`
	Image         flexString       `json:"image"`
	BannerImage   flexString       `json:"banner_image"`
	DatePublished flexString       `json:"date_published"`
	DateModified  flexString       `json:"date_modified"`
	Author        *jsonAuthor      `json:"author"`
	Authors       flexAuthors      `json:"authors"`
	Tags          flexStrings      `json:"tags"`
	Attachments   []jsonAttachment `json:"attachments"`
}

type jsonAttachment struct {
	URL      flexString `json:"url"`
	MimeType flexString `json:"mime_type"`
	Size     flexString `json:"size_in_bytes"`
}

// flexString takes a string, or a number or boolean written as such; any
// other value is "".
type flexString string

func (s *flexString) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) > 0 && b[0] == '"':
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = flexString(v)
	case len(b) > 0 && (b[0] == '-' || b[0] >= '0' && b[0] <= '9' || b[0] == 't' || b[0] == 'f'):
		*s = flexString(b)
	default:
		*s = ""
	}
	return nil
}

// flexAuthors takes a list of authors or one author.
type flexAuthors []jsonAuthor

func (a *flexAuthors) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) > 0 && b[0] == '[':
		var list []json.RawMessage
		if err := json.Unmarshal(b, &list); err != nil {
			return err
		}
		for _, m := range list {
			var one jsonAuthor
			if json.Unmarshal(m, &one) == nil {
				*a = append(*a, one)
			}
		}
	case len(b) > 0 && b[0] == '{':
		var one jsonAuthor
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		*a = flexAuthors{one}
	}
	return nil
}

// flexStrings takes a list of strings or one string.
type flexStrings []string

func (s *flexStrings) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) > 0 && b[0] == '[':
		var list []flexString
		if err := json.Unmarshal(b, &list); err != nil {
			return err
		}
		for _, v := range list {
			*s = append(*s, string(v))
		}
	case len(b) > 0 && b[0] == '"':
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = flexStrings{v}
	}
	return nil
}

// errJSONItems is returned for a JSON Feed whose items are not a list.
var errJSONItems = errors.New(`"items" is not a list of objects`)

// parseJSON reads a JSON Feed.
func parseJSON(text []byte, base *url.URL, maxItems int) (*rawFeed, error) {
	var jf jsonFeed
	if err := json.Unmarshal(text, &jf); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field == "items" {
			return nil, errJSONItems
		}
		if errors.As(err, &te) && te.Field == "" {
			return nil, fmt.Errorf("%w: JSON that is not an object", ErrNotAFeed)
		}
		return nil, fmt.Errorf("JSON: %w", err)
	}
	version := string(jf.Version)
	if !strings.Contains(version, "jsonfeed.org/version/") && len(jf.Items) == 0 {
		return nil, fmt.Errorf("%w: JSON without a JSON Feed version or items", ErrNotAFeed)
	}
	if len(jf.Items) > maxItems {
		return nil, errTooMany
	}
	rf := &rawFeed{
		format:      "json",
		version:     jsonVersion(version),
		title:       rawText{s: string(jf.Title)},
		link:        rawLink{href: string(jf.HomePageURL), base: base},
		self:        rawLink{href: string(jf.FeedURL), base: base},
		next:        rawLink{href: string(jf.NextURL), base: base},
		description: string(jf.Description),
		language:    string(jf.Language),
		image:       rawLink{href: firstOf(string(jf.Icon), string(jf.Favicon)), base: base},
	}
	for _, a := range jsonAuthors(jf.Author, jf.Authors) {
		rf.authors = append(rf.authors, rawPerson{name: string(a.Name), uri: string(a.URL), base: base})
	}
	for _, h := range jf.Hubs {
		rf.hubs = append(rf.hubs, rawLink{href: string(h.URL), base: base})
	}
	spans := jsonItemSpans(text)
	if len(spans) != len(jf.Items) {
		spans = nil
	}
	rf.items = make([]*rawItem, 0, len(jf.Items))
	for i, m := range jf.Items {
		var ji jsonItem
		if err := json.Unmarshal(m, &ji); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && te.Field == "" {
				return nil, errJSONItems
			}
			return nil, fmt.Errorf("JSON Feed item %d: %w", i+1, err)
		}
		it := rawItem{
			id:          strings.TrimSpace(string(ji.ID)),
			title:       rawText{s: string(ji.Title)},
			link:        rawLink{href: string(ji.URL), base: base},
			extLink:     rawLink{href: string(ji.ExternalURL), base: base},
			summary:     rawText{s: string(ji.Summary)},
			content:     rawText{s: string(ji.ContentHTML), html: true, base: base},
			contentText: string(ji.ContentText),
			base:        base,
		}
		if spans != nil {
			it.start, it.end = spans[i][0], spans[i][1]
		}
		for _, a := range jsonAuthors(ji.Author, ji.Authors) {
			it.authors = append(it.authors, rawPerson{name: string(a.Name), uri: string(a.URL), base: base})
		}
		it.categories = ji.Tags
		for _, at := range ji.Attachments {
			it.enclosures = append(it.enclosures, rawEnclosure{url: string(at.URL), typ: string(at.MimeType), length: jsonInt(string(at.Size)), base: base})
		}
		for _, img := range []flexString{ji.Image, ji.BannerImage} {
			if img != "" {
				it.enclosures = append(it.enclosures, rawEnclosure{url: string(img), base: base, thumbnail: true})
			}
		}
		if ji.DatePublished != "" {
			it.published = []rawDate{{value: string(ji.DatePublished), field: "date_published"}}
		}
		if ji.DateModified != "" {
			it.updated = []rawDate{{value: string(ji.DateModified), field: "date_modified"}}
		}
		rf.items = append(rf.items, &it)
	}
	return rf, nil
}

// jsonVersion writes a JSON Feed version URL as its number.
func jsonVersion(v string) string {
	v = strings.TrimSpace(v)
	i := strings.Index(v, "jsonfeed.org/version/")
	if i < 0 {
		return v
	}
	n := strings.TrimSuffix(v[i+len("jsonfeed.org/version/"):], "/")
	if !strings.Contains(n, ".") {
		n += ".0"
	}
	return n
}

// jsonAuthors are the authors of 1.1, else the author of 1.0.
func jsonAuthors(one *jsonAuthor, list flexAuthors) []jsonAuthor {
	if len(list) > 0 {
		return list
	}
	if one != nil {
		return []jsonAuthor{*one}
	}
	return nil
}

// jsonInt is a size written as a number (possibly with a fraction) or a
// numeric string, as an integer string.
func jsonInt(s string) string {
	if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil && f >= 0 && f < 1<<62 {
		return strconv.FormatInt(int64(f), 10)
	}
	return ""
}

// jsonItemSpans returns the byte spans of the elements of the top-level
// "items" list (of its last, as encoding/json reads the last of repeated
// keys); an element that is not an object has the span {0, 0}.
func jsonItemSpans(b []byte) [][2]int {
	var (
		spans   [][2]int
		depth   int
		inItems bool // inside the items list, at depth 2
		itemAt  = -1
		lastKey []byte
		keyEnd  int
	)
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case '"':
			j := i + 1
			for j < len(b) && b[j] != '"' {
				if b[j] == '\\' {
					j++
				}
				j++
			}
			if depth == 1 {
				lastKey, keyEnd = b[i+1:min(j, len(b))], j+1
			}
			i = j
		case '{', '[':
			if depth == 1 && c == '[' && string(lastKey) == "items" && isKeyValue(b, keyEnd, i) {
				inItems, spans = true, spans[:0]
			} else if depth == 2 && inItems {
				if c == '{' {
					itemAt = i
				} else {
					spans = append(spans, [2]int{})
				}
			}
			depth++
		case '}', ']':
			depth--
			if depth == 2 && inItems && itemAt >= 0 {
				spans = append(spans, [2]int{itemAt, i + 1})
				itemAt = -1
			}
			if depth == 1 {
				inItems = false
			}
		default:
			// A scalar element of the list.
			if depth == 2 && inItems && (c == 't' || c == 'f' || c == 'n' || c == '-' || c >= '0' && c <= '9') && (prevSignificant(b, i) == '[' || prevSignificant(b, i) == ',') {
				spans = append(spans, [2]int{})
			}
		}
	}
	return spans
}

// isKeyValue reports whether only a colon and white space lie between the
// end of a key and a value.
func isKeyValue(b []byte, keyEnd, value int) bool {
	if keyEnd > value {
		return false
	}
	return string(bytes.TrimSpace(b[keyEnd:value])) == ":"
}

func prevSignificant(b []byte, i int) byte {
	for i--; i >= 0; i-- {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return b[i]
	}
	return 0
}
