package ndjson

// EntryKey is what a stage needs of an entry to look it up in the store:
// its ids and its content hash.
type EntryKey struct {
	FeedID      string
	EntryUID    string
	ContentHash string
}

// EntryKey reads the key of an entry line without decoding the rest, for
// a stage that drops most entries unread (feed-dedup). It reads only the
// form feedpipe writes an entry in: no spaces, every name one of Entry's
// in lower case and at most once, no derivations or alias_of, plain ASCII
// ids. ok is true only for a line that Decode into an Entry accepts (the
// line is checked whole: its JSON, a value of a type its field takes for
// every field, the entry's Check), and then k is what Decode would give.
// ok is false for any other line, good or bad: its caller decodes it into
// an Entry, which reports what is wrong with it, if anything.
func (l Line) EntryKey() (k EntryKey, ok bool) {
	s := keyScanner{b: l.Raw}
	var fetchID string
	var met uint32 // the fields met, each once at most
	read := s.object(func(name []byte) bool {
		var ok bool
		f := entryField(name)
		if f < 0 || met&(1<<f) != 0 {
			return false
		}
		met |= 1 << f
		switch f {
		case fEntryUID:
			k.EntryUID, ok = s.plainString()
			return ok
		case fFeedID:
			k.FeedID, ok = s.plainString()
			return ok
		case fContentHash:
			k.ContentHash, ok = s.plainString()
			return ok
		case fV, fSeenCount:
			return s.intOrNull()
		case fPublished, fUpdated, fFirstSeen, fLastSeen:
			return s.time()
		case fAuthors:
			return s.arrayOrNull(func() bool {
				return s.objectOrNull(authorFields, func(int) bool { return s.stringOrNull() })
			})
		case fCategories:
			return s.arrayOrNull(s.stringOrNull)
		case fEnclosures:
			return s.arrayOrNull(func() bool {
				return s.objectOrNull(enclosureFields, func(f int) bool {
					if f == fLength {
						return s.intOrNull()
					}
					return s.stringOrNull()
				})
			})
		case fRawRef:
			return s.objectOrNull(rawRefFields, func(f int) bool {
				if f == fFetchID {
					var ok bool
					fetchID, ok = s.plainString()
					return ok
				}
				return s.intOrNull()
			})
		case fDerivations:
			return s.literal("null") || s.literal("[]")
		case fAliasOf:
			return s.literal("null")
		default: // type, native_id, canonical_link, title, summary, content, status
			return s.stringOrNull()
		}
	})
	if !read || s.i != len(s.b) {
		return EntryKey{}, false
	}
	e := Entry{EntryUID: k.EntryUID, FeedID: k.FeedID, ContentHash: k.ContentHash, RawRef: RawRef{FetchID: fetchID}}
	if e.Check() != nil {
		return EntryKey{}, false
	}
	return k, true
}

// Entry's fields by JSON name (TestEntryFieldsAreEntrys keeps them in
// step with Entry), and those of the structs it holds.
const (
	fType = iota
	fV
	fEntryUID
	fFeedID
	fNativeID
	fCanonicalLink
	fTitle
	fSummary
	fContent
	fAuthors
	fCategories
	fEnclosures
	fPublished
	fUpdated
	fContentHash
	fRawRef
	fDerivations
	fAliasOf
	fStatus
	fFirstSeen
	fLastSeen
	fSeenCount
)

var entryNames = [...]string{
	fType: "type", fV: "v", fEntryUID: "entry_uid", fFeedID: "feed_id", fNativeID: "native_id",
	fCanonicalLink: "canonical_link", fTitle: "title", fSummary: "summary", fContent: "content",
	fAuthors: "authors", fCategories: "categories", fEnclosures: "enclosures", fPublished: "published",
	fUpdated: "updated", fContentHash: "content_hash", fRawRef: "raw_ref", fDerivations: "derivations",
	fAliasOf: "alias_of", fStatus: "status", fFirstSeen: "first_seen", fLastSeen: "last_seen",
	fSeenCount: "seen_count",
}

// entryField is the field named name (entryNames), or -1. A switch: a map
// lookup per name was a third of EntryKey's time.
func entryField(name []byte) int {
	switch string(name) {
	case "type":
		return fType
	case "v":
		return fV
	case "entry_uid":
		return fEntryUID
	case "feed_id":
		return fFeedID
	case "native_id":
		return fNativeID
	case "canonical_link":
		return fCanonicalLink
	case "title":
		return fTitle
	case "summary":
		return fSummary
	case "content":
		return fContent
	case "authors":
		return fAuthors
	case "categories":
		return fCategories
	case "enclosures":
		return fEnclosures
	case "published":
		return fPublished
	case "updated":
		return fUpdated
	case "content_hash":
		return fContentHash
	case "raw_ref":
		return fRawRef
	case "derivations":
		return fDerivations
	case "alias_of":
		return fAliasOf
	case "status":
		return fStatus
	case "first_seen":
		return fFirstSeen
	case "last_seen":
		return fLastSeen
	case "seen_count":
		return fSeenCount
	}
	return -1
}

const (
	fFetchID = iota // RawRef
	fOffset
	fLength // RawRef, Enclosure
)

var (
	authorFields    = []string{"name", "email", "uri"}
	enclosureFields = []string{"url", "type", fLength: "length"}
	rawRefFields    = []string{fFetchID: "fetch_id", fOffset: "offset", fLength: "length"}
)

// keyScanner reads the JSON of a line as EntryKey does: it checks its
// syntax as it goes, and gives up (false) at anything outside the form
// feedpipe writes.
type keyScanner struct {
	b []byte
	i int
}

// next consumes c if it comes next.
func (s *keyScanner) next(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// literal consumes lit if it comes next.
func (s *keyScanner) literal(lit string) bool {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// object reads an object, calling member after each name and its colon
// to read the value.
func (s *keyScanner) object(member func(name []byte) bool) bool {
	if !s.next('{') {
		return false
	}
	if s.next('}') {
		return true
	}
	for {
		name, ok := s.plain()
		if !ok || !s.next(':') || !member(name) {
			return false
		}
		if s.next('}') {
			return true
		}
		if !s.next(',') {
			return false
		}
	}
}

// objectOrNull reads null or an object whose names are among names, each
// once at most, calling value with the name's index to read its value.
func (s *keyScanner) objectOrNull(names []string, value func(int) bool) bool {
	if s.literal("null") {
		return true
	}
	var met uint32
	return s.object(func(name []byte) bool {
		for f, n := range names {
			if n == string(name) && met&(1<<f) == 0 {
				met |= 1 << f
				return value(f)
			}
		}
		return false
	})
}

// arrayOrNull reads null or an array, calling elem to read each element.
func (s *keyScanner) arrayOrNull(elem func() bool) bool {
	if s.literal("null") {
		return true
	}
	if !s.next('[') {
		return false
	}
	if s.next(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if s.next(']') {
			return true
		}
		if !s.next(',') {
			return false
		}
	}
}

// plain reads a string of printable ASCII without escapes, which decodes
// to its bytes as they are.
func (s *keyScanner) plain() ([]byte, bool) {
	if !s.next('"') {
		return nil, false
	}
	start := s.i
	for ; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], true
		case c < 0x20 || c >= 0x7f || c == '\\':
			return nil, false
		}
	}
	return nil, false
}

// plainString is plain as a string.
func (s *keyScanner) plainString() (string, bool) {
	b, ok := s.plain()
	return string(b), ok
}

// stringOrNull reads null or any string, which a string field takes:
// escapes are checked, and bytes that are not UTF-8 allowed, as Decode
// allows them.
func (s *keyScanner) stringOrNull() bool {
	if s.literal("null") {
		return true
	}
	if !s.next('"') {
		return false
	}
	for s.i < len(s.b) {
		c := s.b[s.i]
		s.i++
		switch {
		case c == '"':
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if s.i >= len(s.b) {
				return false
			}
			switch s.b[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				if len(s.b)-s.i < 5 {
					return false
				}
				for _, h := range s.b[s.i+1 : s.i+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return false
					}
				}
				s.i += 5
			default:
				return false
			}
		}
	}
	return false
}

// intOrNull reads null or an integer of at most 18 digits, which any int
// field takes.
func (s *keyScanner) intOrNull() bool {
	if s.literal("null") {
		return true
	}
	s.next('-')
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	n := s.i - start
	return n > 0 && n <= 18 && (n == 1 || s.b[start] != '0')
}

// time reads what a Time field takes, as its UnmarshalJSON judges it.
func (s *keyScanner) time() bool {
	start := s.i
	if !s.stringOrNull() {
		return false
	}
	var t Time
	return t.UnmarshalJSON(s.b[start:s.i]) == nil
}
