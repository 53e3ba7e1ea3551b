package ndjson

import (
	"cmp"
	"encoding/json"
	"strconv"
)

// Version is the schema version this package writes in every record's "v".
const Version = 1

// Record types: the value of every record's "type" field.
const (
	TypeSubscription = "subscription"
	TypeDue          = "due"
	TypeFetch        = "fetch"
	TypeEntry        = "entry"
	TypeNewEntry     = "new_entry"
	TypeUpdatedEntry = "updated_entry"
	// TypeBackfilledEntry announces an entry stored from a feed's
	// archive (RFC 5005): history, not news.
	TypeBackfilledEntry = "backfilled_entry"
)

// Source types of a subscription (Subscription.SourceType, Due.SourceType).
const (
	SourceAuto    = "auto"
	SourceRSS     = "rss"
	SourceAtom    = "atom"
	SourceJSON    = "json"
	SourceWebsite = "website"
	// SourceWebhook is a source with no URL to poll: what it publishes is
	// POSTed to feed-serve (docs/design.md#push).
	SourceWebhook = "webhook"
)

// Error classes (Error.Class): what kind of failure a fetch met, which decides
// how the scheduler reacts.
const (
	ClassTransient   = "transient"    // timeouts, 5xx, resets, DNS: retry later
	ClassPermanent   = "permanent"    // 404, 410, bad URL, bad certificate
	ClassRateLimited = "rate_limited" // 429 or 503 from the publisher
	ClassBlocked     = "blocked"      // 403 and bot-challenge pages; a private address refused (address_refused)
	ClassParse       = "parse"        // the body is not a feed feed-parse can read
)

// Entry statuses (Entry.Status), set by feed-dedup.
const (
	StatusNew     = "new"
	StatusUpdated = "updated"
	// StatusBackfilled is an entry feed-store stored from an archive page
	// (RFC 5005): its event is backfilled_entry.
	StatusBackfilled = "backfilled"
)

// Header is the part every record shares. It is embedded first in each
// record type so that "type" leads every line.
type Header struct {
	Type string `json:"type"`
	V    int    `json:"v"`
}

// Head returns the header of a record of type t at the current Version.
func Head(t string) Header { return Header{Type: t, V: Version} }

// Subscription is one feed or website the user follows: a line of the
// store's subscriptions.ndjson and of `feed-sub ls --json`.
type Subscription struct {
	Header
	FeedID      string          `json:"feed_id"`
	URL         string          `json:"url"`
	Name        string          `json:"name"`
	Labels      []string        `json:"labels"`
	SourceType  string          `json:"source_type"`
	IntervalSec int             `json:"interval_sec"`
	Cron        string          `json:"cron"`
	Disabled    bool            `json:"disabled"`
	CreatedAt   Time            `json:"created_at"`
	Fulltext    bool            `json:"fulltext"`
	Scrape      json.RawMessage `json:"scrape"`
	Access
	// Scheduler overrides (feed-sub set): clamps of this feed's interval,
	// narrower than the global ones, and a pause.
	MinIntervalSec int  `json:"min_interval_sec"`
	MaxIntervalSec int  `json:"max_interval_sec"`
	PausedUntil    Time `json:"paused_until"`
	// Media are its media settings (feed-sub set --media); nil: none,
	// and then left out of the line, as a subscription was written
	// before them.
	Media *MediaSettings `json:"media,omitempty"`
	// Push, Backfill and WebhookSecret are left out of the line when
	// empty, so that the records written before them read as they did
	// (docs/design.md#push, #backfill).
	Push          string `json:"push,omitempty"`
	Backfill      bool   `json:"backfill,omitempty"`
	WebhookSecret string `json:"webhook_secret,omitempty"`
}

// Push modes of a subscription (Subscription.Push, docs/design.md#push);
// "" is PushPreferred.
const (
	PushOff       = "off"       // never subscribe at a hub
	PushPreferred = "preferred" // subscribe; poll daily while the subscription lives
	PushOnly      = "only"      // subscribe; no poll while the subscription lives
)

// TypeSubscriptionRemoved is the record type of a SubscriptionRemoved.
const TypeSubscriptionRemoved = "subscription_removed"

// SubscriptionRemoved marks, in the store's subscriptions.ndjson, a
// subscription removed (feed-sub rm). That file is the log of every change
// to the subscription list: a subscription record each time one is added
// or changed, this record when one is removed; the last line of a feed
// wins.
type SubscriptionRemoved struct {
	Header
	FeedID    string `json:"feed_id"`
	RemovedAt Time   `json:"removed_at"`
}

// Check reports what makes a removal unusable: its feed_id must be a feed
// id.
func (r *SubscriptionRemoved) Check() error {
	c := checker{record: TypeSubscriptionRemoved}
	c.feedID("feed_id", r.FeedID, false)
	return c.err
}

// Access is how a feed is to be requested: its own User-Agent, extra
// headers, and credentials. It travels from the subscription in the due
// record to feed-fetch; the copy inside a fetch record has its secrets
// redacted.
type Access struct {
	UserAgent string            `json:"user_agent"`
	Headers   map[string]string `json:"headers"`
	Auth      *Auth             `json:"auth"`
	// AllowPrivate lets the feed be fetched from a loopback, private or
	// link-local address (feed-sub add --allow-private). feed-fetch and
	// feed-scrape believe it only from the store's subscription, never
	// from a record alone.
	AllowPrivate bool `json:"allow_private"`
}

// Auth holds HTTP basic authentication credentials.
type Auth struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// Validators are the HTTP cache validators of a feed's last response that
// carried them, sent back as If-None-Match and If-Modified-Since.
type Validators struct {
	ETag         string `json:"etag"`
	LastModified string `json:"last_modified"`
}

// Due asks feed-fetch to fetch one feed now.
type Due struct {
	Header
	FeedID      string          `json:"feed_id"`
	URL         string          `json:"url"`
	SourceType  string          `json:"source_type"`
	Name        string          `json:"name"`
	Labels      []string        `json:"labels"`
	ScheduledAt Time            `json:"scheduled_at"`
	Reason      string          `json:"reason"`
	Validators  Validators      `json:"validators"`
	ItemLimit   int             `json:"item_limit"`
	Fulltext    bool            `json:"fulltext"`
	Scrape      json.RawMessage `json:"scrape"`
	Access
	Last LastFetch `json:"last"`
	// Bus is the stream entry the record was taken from (feed-bus take);
	// left out of the line when nil.
	Bus *BusRef `json:"bus,omitempty"`
}

// LastFetch is what a due record carries from the feed's last fetches.
type LastFetch struct {
	BodySHA256    string `json:"body_sha256"`
	ContentLength int64  `json:"content_length"`
	MovedTo       string `json:"moved_to"`
	MovedCount    int    `json:"moved_count"`
}

// Reasons a feed is due (Due.Reason).
const (
	ReasonNew       = "new"       // never fetched
	ReasonScheduled = "scheduled" // its next_fetch_at has passed
	ReasonForced    = "forced"    // asked for by --all or --feed
	ReasonManual    = "manual"    // a nudge: feed-sub refetch
	// ReasonArchive is an archive page of a backfill walk (RFC 5005,
	// docs/design.md#backfill), not the feed's own URL.
	ReasonArchive = "archive"
	// ReasonPush is the due of a fetch record whose body was pushed to
	// feed-serve (Fetch.Origin), not fetched.
	ReasonPush = "push"
)

// Origins of a fetch record's body (Fetch.Origin): "" for one feed-fetch
// fetched.
const (
	OriginWebSub  = "websub"  // a hub's content distribution (W3C WebSub §7)
	OriginWebhook = "webhook" // a POST to a webhook source's endpoint
)

// Redirect is one hop of a redirect chain: the URL that answered with a
// redirect and the status it answered with.
type Redirect struct {
	URL    string `json:"url"`
	Status int    `json:"status"`
}

// BlobRef points at a stored payload.
type BlobRef struct {
	Storage string `json:"storage"`
	Key     string `json:"key"`
}

// Error describes why a fetch, or the parse of its body, failed.
type Error struct {
	Class   string `json:"class"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Fetch is the outcome of one HTTP fetch of a feed, written by feed-fetch and
// completed by feed-parse (Parse) and feed-dedup (Dedup).
type Fetch struct {
	Header
	FetchID         string            `json:"fetch_id"`
	Due             Due               `json:"due"`
	RequestedURL    string            `json:"requested_url"`
	URL             string            `json:"url"`
	Redirects       []Redirect        `json:"redirects"`
	FetchedAt       Time              `json:"fetched_at"`
	DurationMS      int64             `json:"duration_ms"`
	HTTPStatus      int               `json:"http_status"`
	NotModified     bool              `json:"not_modified"`
	RequestHeaders  map[string]string `json:"request_headers"`
	ResponseHeaders map[string]string `json:"response_headers"`
	BodyRef         *BlobRef          `json:"body_ref"`
	BodySHA256      string            `json:"body_sha256"`
	ContentType     string            `json:"content_type"`
	ContentLength   int64             `json:"content_length"`
	Truncated       bool              `json:"truncated"`
	Unchanged       bool              `json:"unchanged"`
	BytesSaved      int64             `json:"bytes_saved"`
	RetryAfterSec   int               `json:"retry_after_sec"`
	MovedTo         string            `json:"moved_to"`
	MovedCount      int               `json:"moved_count"`
	NewURL          string            `json:"new_url"`
	Error           *Error            `json:"error"`
	Parse           *Parse            `json:"parse"`
	Dedup           *Dedup            `json:"dedup"`
	Scrape          *Scrape           `json:"scrape"`
	Page            *Page             `json:"page"`
	// Origin says where a body that was not fetched came from (OriginWebSub,
	// OriginWebhook); left out of the line for a fetch, so that the
	// records written before it read as they did.
	Origin string `json:"origin,omitempty"`
}

// Pushed reports whether the record's body was pushed to feedpipe
// (WebSub, a webhook) rather than fetched.
func (f *Fetch) Pushed() bool { return f.Origin != "" }

// Failed reports whether the fetch, or the parse of its body, failed.
func (f *Fetch) Failed() bool { return f.Error != nil }

// HasBody reports whether the fetch brought a body for feed-parse or
// feed-scrape to read: a 2xx whose payload was stored, not a 304 and not
// the same as the last one, whole or cut at the size cap (its complete
// items are worth having).
func (f *Fetch) HasBody() bool {
	return f.BodyRef != nil && !f.NotModified && !f.Unchanged && f.HTTPStatus >= 200 && f.HTTPStatus <= 299 &&
		(f.Error == nil || f.Error.Code == "body_too_large")
}

// Parse is what feed-parse found in a fetched body.
type Parse struct {
	Format      string   `json:"format"`
	Version     string   `json:"version"`
	Charset     string   `json:"charset"`
	Title       string   `json:"title"`
	Link        string   `json:"link"`
	Description string   `json:"description"`
	Language    string   `json:"language"`
	Image       string   `json:"image"`
	Publisher   string   `json:"publisher"`
	Self        string   `json:"self"`
	Hubs        []string `json:"hubs"`
	PrevArchive string   `json:"prev_archive"`
	NextArchive string   `json:"next_archive"`
	Current     string   `json:"current"`
	// Next is the rel="next" link of a paged feed (RFC 5005 §3); left out
	// of the line when there is none, so that the parse sections written
	// before it read as they did.
	Next            string   `json:"next,omitempty"`
	TTLMinutes      int      `json:"ttl_minutes"`
	SkipHours       []int    `json:"skip_hours"`
	SkipDays        []string `json:"skip_days"`
	Items           int      `json:"items"`
	Entries         int      `json:"entries"`
	NewestPublished Time     `json:"newest_published"`
	OldestPublished Time     `json:"oldest_published"`
	Warnings        []string `json:"warnings"`
	Error           string   `json:"error"`
}

// Dedup counts what feed-dedup made of a fetch's entries.
type Dedup struct {
	New       int `json:"new"`
	Updated   int `json:"updated"`
	Unchanged int `json:"unchanged"`
	// Aliases: entries of status alias (feed-dedup --cross-feed).
	Aliases int `json:"aliases"`
	// UnchangedUIDs are the entry_uids of the unchanged entries, which
	// feed-dedup dropped: feed-store counts their sighting.
	UnchangedUIDs []string `json:"unchanged_uids"`
}

// Author is one author of an entry; any field may be empty.
type Author struct {
	Name  string `json:"name"`
	Email string `json:"email"`
	URI   string `json:"uri"`
}

// Enclosure is a media file attached to an entry.
type Enclosure struct {
	URL    string `json:"url"`
	Type   string `json:"type"`
	Length int64  `json:"length"`
}

// RawRef points from an entry back to the fetch whose payload held it.
type RawRef struct {
	FetchID string `json:"fetch_id"`
	Offset  int64  `json:"offset"`
	Length  int64  `json:"length"`
}

// Entry is one normalized item of a feed (docs/design.md#data-model).
type Entry struct {
	Header
	EntryUID      string      `json:"entry_uid"`
	FeedID        string      `json:"feed_id"`
	NativeID      string      `json:"native_id"`
	CanonicalLink string      `json:"canonical_link"`
	Title         string      `json:"title"`
	Summary       string      `json:"summary"`
	Content       string      `json:"content"`
	Authors       []Author    `json:"authors"`
	Categories    []string    `json:"categories"`
	Enclosures    []Enclosure `json:"enclosures"`
	Published     Time        `json:"published"`
	Updated       Time        `json:"updated"`
	ContentHash   string      `json:"content_hash"`
	RawRef        RawRef      `json:"raw_ref"`
	// Derivations is left out of the line when empty, so that entries
	// nothing was derived from read as they did before it existed.
	Derivations []Derivation `json:"derivations,omitempty"`
	// AliasOf is set by feed-dedup --cross-feed on an entry of status
	// "alias"; left out of the line otherwise, as Derivations.
	AliasOf   *EntryRef `json:"alias_of,omitempty"`
	Status    string    `json:"status"`
	FirstSeen Time      `json:"first_seen"`
	LastSeen  Time      `json:"last_seen"`
	SeenCount int       `json:"seen_count"`
}

// Event announces one entry durably stored by feed-store: type new_entry the
// first time its entry_uid is stored, updated_entry when its content changed.
type Event struct {
	Header
	EntryUID string `json:"entry_uid"`
	FeedID   string `json:"feed_id"`
	// FeedName and Labels are the feed's, as feed-sub ls shows them, so
	// that a consumer needs no lookup (docs/design.md#events).
	FeedName      string   `json:"feed_name"`
	Labels        []string `json:"labels"`
	Title         string   `json:"title"`
	Summary       string   `json:"summary"`
	CanonicalLink string   `json:"canonical_link"`
	Published     Time     `json:"published"`
	ContentHash   string   `json:"content_hash"`
	RawRefs       []RawRef `json:"raw_refs"`
	IngestedAt    Time     `json:"ingested_at"`
	StoredIn      string   `json:"stored_in"`
}

// Check reports what makes a due record unusable: it needs a url, and a
// feed_id, when it has one, must be a feed id, and its bus reference,
// when it has one, must name a stream entry. (A missing feed_id is
// derived from the url by feed-fetch.)
func (d *Due) Check() error {
	c := checker{record: TypeDue}
	c.nonEmpty("url", d.URL)
	c.feedID("feed_id", d.FeedID, true)
	if d.Bus != nil {
		d.Bus.check(&c, "bus")
	}
	return c.err
}

// Check reports what makes a fetch record unusable: its fetch_id and the
// feed_id of its due record must be ids, and its payload key, when it has
// one, a key of the raw store.
func (f *Fetch) Check() error {
	c := checker{record: TypeFetch}
	c.fetchID("fetch_id", f.FetchID, false)
	c.feedID("due.feed_id", f.Due.FeedID, false)
	if f.Due.Bus != nil {
		f.Due.Bus.check(&c, "due.bus")
	}
	if f.BodyRef != nil {
		c.field("body_ref.key", f.BodyRef.Key, IsRawKey, wantRawKey, false)
	}
	if f.Page != nil {
		c.fetchID("page.source_fetch_id", f.Page.SourceFetchID, true)
		c.entryUID("page.entry_uid", f.Page.EntryUID, true)
	}
	return c.err
}

// Check reports what makes an entry unusable: it needs an entry_uid and a
// feed_id of the right shapes, and a content_hash; raw_ref.fetch_id, when
// set, must be a fetch id.
func (e *Entry) Check() error {
	c := checker{record: TypeEntry}
	c.entryUID("entry_uid", e.EntryUID, false)
	c.feedID("feed_id", e.FeedID, false)
	c.nonEmpty("content_hash", e.ContentHash)
	c.fetchID("raw_ref.fetch_id", e.RawRef.FetchID, true)
	if e.AliasOf != nil {
		c.feedID("alias_of.feed_id", e.AliasOf.FeedID, false)
		c.entryUID("alias_of.entry_uid", e.AliasOf.EntryUID, false)
	}
	return c.err
}

// Check reports what makes a new_entry or updated_entry event unusable:
// its ids and the entries file it names must have their shapes.
func (ev *Event) Check() error {
	c := checker{record: cmp.Or(ev.Type, "event")}
	c.entryUID("entry_uid", ev.EntryUID, false)
	c.feedID("feed_id", ev.FeedID, false)
	c.dayFile("stored_in", ev.StoredIn, "entries", true)
	for i, r := range ev.RawRefs {
		c.fetchID("raw_refs["+strconv.Itoa(i)+"].fetch_id", r.FetchID, true)
	}
	return c.err
}

// Check reports what makes a subscription unusable: its feed_id must be a
// feed id, and it needs a url.
func (s *Subscription) Check() error {
	c := checker{record: TypeSubscription}
	c.feedID("feed_id", s.FeedID, false)
	c.nonEmpty("url", s.URL)
	return c.err
}

// Discovery modes of a website's scraper configuration
// (ScrapeConfig.DiscoveryMode, docs/design.md#scraping).
const (
	ModeDirect = "direct" // the page is the article
	ModeList   = "list"   // the page lists links to articles
)

// ScrapeConfig tells feed-scrape how to read a website
// (docs/design.md#scraping): Subscription.Scrape and Due.Scrape hold it as JSON. Every
// selector is a CSS selector; "a, b" tries a, then b, the first that
// matches winning.
type ScrapeConfig struct {
	DiscoveryMode string        `json:"discovery_mode"`
	ListConfig    ListConfig    `json:"list_config"`
	ArticleConfig ArticleConfig `json:"article_config"`
}

// ListConfig finds the articles of a list page.
type ListConfig struct {
	ArticleSelector    string `json:"article_selector"`
	PaginationSelector string `json:"pagination_selector"`
	MaxPages           int    `json:"max_pages"`
}

// ArticleConfig reads one article page. An empty selector means the
// page's own metadata, or readability for the title and content.
type ArticleConfig struct {
	TitleSelector     string `json:"title_selector"`
	ContentSelector   string `json:"content_selector"`
	AuthorSelector    string `json:"author_selector"`
	DateSelector      string `json:"date_selector"`
	DateFormat        string `json:"date_format"`
	ImageSelector     string `json:"image_selector"`
	CanonicalSelector string `json:"canonical_selector"`
}

// Scrape is what feed-scrape did for the source of a fetch record: a
// website's pages, or a feed's full-text pages.
type Scrape struct {
	Mode          string      `json:"mode"`
	PagesFetched  int         `json:"pages_fetched"`
	ArticlesFound int         `json:"articles_found"`
	Known         int         `json:"known"`
	New           int         `json:"new"`
	Rejected      int         `json:"rejected"`
	Rejections    []Rejection `json:"rejections"`
	// RejectedBefore counts the articles an earlier run rejected, not
	// fetched again.
	RejectedBefore int    `json:"rejected_before"`
	Error          string `json:"error"`
}

// Scrape modes (Scrape.Mode): a website's discovery mode, or fulltext.
const ScrapeFulltext = "fulltext"

// Rejection is one article feed-scrape did not turn into an entry, and
// why.
type Rejection struct {
	URL     string `json:"url"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Page marks the fetch record of a page feed-scrape fetched on behalf of a
// source (Fetch.Page): it is not a fetch of the source itself.
type Page struct {
	Role          string `json:"role"`
	SourceFetchID string `json:"source_fetch_id"`
	EntryUID      string `json:"entry_uid"`
}

// Page roles (Page.Role).
const (
	PageList     = "list"     // a further list page, followed by pagination
	PageArticle  = "article"  // an article linked from a list page
	PageFulltext = "fulltext" // the page of a feed entry, for its full text
)

// Derivation is one set of features derived from an entry's text
// (docs/design.md#scraping): what kind, and the name and version of the extractor that made
// them, so that a better extractor can be told apart later.
type Derivation struct {
	Kind      string    `json:"kind"`
	Extractor string    `json:"extractor"`
	Version   string    `json:"version"`
	Keywords  []Keyword `json:"keywords"`
}

// DerivationKeywords is the Kind of a keyword list.
const DerivationKeywords = "keywords"

// Keyword is one keyword and its score, higher meaning more telling.
type Keyword struct {
	Term  string  `json:"term"`
	Score float64 `json:"score"`
}

// NonNil is s, or an empty slice for a nil one: a record's lists are
// written as [], never null (writers write the whole record).
func NonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
