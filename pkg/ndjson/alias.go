package ndjson

// TypeAlias is the record type of an Alias.
const TypeAlias = "alias"

// StatusAlias is the Entry.Status feed-dedup --cross-feed gives an entry
// whose canonical link was stored already from another feed.
const StatusAlias = "alias"

// EntryRef names one stored entry.
type EntryRef struct {
	FeedID   string `json:"feed_id"`
	EntryUID string `json:"entry_uid"`
}

// Alias records an entry that feed-store did not store because its
// canonical link was stored first from another feed (feed-dedup
// --cross-feed): which entry it duplicates. feed-store writes it to stdout
// and to the store's aliases/YYYY-MM-DD.ndjson.
type Alias struct {
	Header
	FeedID        string   `json:"feed_id"`
	EntryUID      string   `json:"entry_uid"`
	CanonicalLink string   `json:"canonical_link"`
	Title         string   `json:"title"`
	Published     Time     `json:"published"`
	ContentHash   string   `json:"content_hash"`
	RawRef        RawRef   `json:"raw_ref"`
	AliasOf       EntryRef `json:"alias_of"`
	RecordedAt    Time     `json:"recorded_at"`
	StoredIn      string   `json:"stored_in"`
}
