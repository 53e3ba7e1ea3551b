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

// Check reports what makes an alias record unusable: the ids of the entry
// and of the one it duplicates, and the file it names, must have their
// shapes.
func (a *Alias) Check() error {
	c := checker{record: TypeAlias}
	c.feedID("feed_id", a.FeedID, false)
	c.entryUID("entry_uid", a.EntryUID, false)
	c.fetchID("raw_ref.fetch_id", a.RawRef.FetchID, true)
	c.feedID("alias_of.feed_id", a.AliasOf.FeedID, false)
	c.entryUID("alias_of.entry_uid", a.AliasOf.EntryUID, false)
	c.dayFile("stored_in", a.StoredIn, "aliases", true)
	return c.err
}
