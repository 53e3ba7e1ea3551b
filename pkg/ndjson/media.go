package ndjson

// TypeMedia is the record type of a Media.
const TypeMedia = "media"

// Kinds of media (Media.Kind): what of an entry a file is.
const (
	MediaEnclosure = "enclosure" // an enclosure (RSS 2.0 enclosure, Atom link rel=enclosure, JSON Feed attachment)
	MediaImage     = "image"     // an image the entry's content links to (img src)
)

// Media statuses (Media.Status): how one try at a file ended.
const (
	MediaStored   = "stored"   // the file is in the store, whole and checked
	MediaRefused  = "refused"  // it breaks the feed's settings or the rules: never tried again
	MediaFailed   = "failed"   // it cannot be had (a 404, too many failures): never tried again
	MediaRetrying = "retrying" // cut short, or failed for now: tried again later, resumed where it can be
)

// MediaSettings are a subscription's media settings (feed-sub set
// --media): which of its new entries' files feed-media downloads.
type MediaSettings struct {
	// Types are the media types taken, each type/subtype or type/*
	// (audio/*, video/mp4), lower case; none: no enclosure.
	Types []string `json:"types"`
	// MaxBytes caps each file; 0: feed-media's --max-file-size.
	MaxBytes int64 `json:"max_bytes"`
	// Images takes the images the entries' content links to as well.
	Images bool `json:"images"`
}

// On reports whether the settings ask for any file.
func (m *MediaSettings) On() bool { return m != nil && (len(m.Types) > 0 || m.Images) }

// Media is the outcome of one try at one file of an entry: an enclosure
// or an image, downloaded into the store's media/ (docs/store.md) or not,
// and why. feed-media writes it to stdout and to the store's
// media/YYYY-MM-DD.ndjson.
type Media struct {
	Header
	FeedID   string `json:"feed_id"`
	EntryUID string `json:"entry_uid"`
	Kind     string `json:"kind"`
	// URL is the file's URL as the entry gives it; FinalURL where it was
	// fetched from, after redirects ("" when no request was answered).
	URL      string `json:"url"`
	FinalURL string `json:"final_url"`
	Status   string `json:"status"`
	// Reason is why it was not stored, a short code (http_404, too_large,
	// wrong_type, address_refused, ...); Message says it for people.
	Reason     string `json:"reason"`
	Message    string `json:"message"`
	HTTPStatus int    `json:"http_status"`
	// Key is where the file is in the store, media/ab/<sha256>; "" unless
	// stored.
	Key    string `json:"key"`
	SHA256 string `json:"sha256"`
	// Bytes: the file's size when stored; the bytes held for a resume
	// when retrying; those received when refused.
	Bytes       int64  `json:"bytes"`
	ContentType string `json:"content_type"`
	// ResumedFrom is the offset this try resumed at (a Range request); 0
	// for a download from the start.
	ResumedFrom int64 `json:"resumed_from"`
	// Restarted says the bytes held were dropped: the file changed since
	// (If-Range), or could not be resumed.
	Restarted bool `json:"restarted"`
	Attempt   int  `json:"attempt"`
	StartedAt Time `json:"started_at"`
	At        Time `json:"at"`
	// DurationMS is how long the try took.
	DurationMS int64  `json:"duration_ms"`
	StoredIn   string `json:"stored_in"`
}

// Check reports what makes a media record unusable: its ids, the key of
// its file and the file it names must have their shapes.
func (m *Media) Check() error {
	c := checker{record: TypeMedia}
	c.feedID("feed_id", m.FeedID, false)
	c.entryUID("entry_uid", m.EntryUID, false)
	c.field("key", m.Key, IsMediaKey, wantMediaKey, true)
	c.field("sha256", m.SHA256, IsSHA256, wantSHA256, true)
	c.dayFile("stored_in", m.StoredIn, "media", true)
	return c.err
}

// IsSHA256 reports whether s is a SHA-256 as the store writes it: 64
// lower-case hex digits.
func IsSHA256(s string) bool { return len(s) == 64 && isLowerHex(s) }

// MediaKey is the key of the stored file whose SHA-256 is sum:
// media/ab/<sum>, ab its first two digits.
func MediaKey(sum string) string { return "media/" + sum[:2] + "/" + sum }

// IsMediaKey reports whether s is the key of a stored media file:
// media/<its first two hex digits>/<SHA-256 in 64 lower-case hex digits>.
func IsMediaKey(s string) bool {
	const prefix = "media/"
	if len(s) != len(prefix)+2+1+64 || s[:len(prefix)] != prefix || s[len(prefix)+2] != '/' {
		return false
	}
	sum := s[len(prefix)+3:]
	return IsSHA256(sum) && s[len(prefix):len(prefix)+2] == sum[:2]
}
