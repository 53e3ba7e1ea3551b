package ndjson

import (
	"errors"
	"strings"
	"testing"
)

const (
	goodFeed  = "6ba7b811-9dad-51d1-80b4-00c04fd430c8"
	goodFetch = "019a8c7e-1b2c-7d3e-8f40-123456789abc"
	goodUID   = "0123456789abcdef"
	goodKey   = "raw/2026-11-21/e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855.zst"
)

// hostile are values an attacker might put in a field that becomes a path
// or a key: each must fail every shape.
var hostile = []string{
	"..", "../../x", "/etc/passwd", "raw/../../outside.zst", "a\x00b", "%2e%2e%2f", "..%2F..%2Fx",
	"..\\..\\x", strings.Repeat("a", 4096), " " + goodFeed, goodFeed + "\n", strings.ToUpper(goodFeed),
	"raw/2026-11-21/../../../etc/passwd", "raw/2026-13-45/" + strings.Repeat("0", 64) + ".zst",
	"raw/2026-11-21/" + strings.Repeat("0", 63) + "/.zst", "entries/../x.ndjson", "entries/2026-11-21.ndjson/..",
}

func TestShapes(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   func(string) bool
		good []string
	}{
		{"feed id", IsFeedID, []string{goodFeed, "00000000-0000-0000-0000-000000000000"}},
		{"fetch id", IsFetchID, []string{goodFetch}},
		{"entry uid", IsEntryUID, []string{goodUID, "ffffffffffffffff"}},
		{"raw key", IsRawKey, []string{goodKey}},
		{"entries file", func(s string) bool { return IsDayFile(s, "entries") }, []string{"entries/2026-11-21.ndjson", "entries/2024-02-29.ndjson"}},
		{"media key", IsMediaKey, []string{"media/e3/" + goodKey[15:79], MediaKey(strings.Repeat("0", 64))}},
		{"sha256", IsSHA256, []string{goodKey[15:79]}},
	} {
		for _, v := range tc.good {
			if !tc.ok(v) {
				t.Errorf("%s: %q refused", tc.name, v)
			}
		}
		for _, v := range append(hostile, "", "0123456789ABCDEF", "entries/2025-02-29.ndjson", "fetches/2026-11-21.ndjson",
			"media/00/"+goodKey[15:79], "media/e3/"+strings.ToUpper(goodKey[15:79]), "media/e3/../"+goodKey[15:79]) {
			if tc.ok(v) {
				t.Errorf("%s: %q accepted", tc.name, v)
			}
		}
	}
}

// TestChecksNameTheField: every field of every record type that becomes a
// path or a key is checked, and the error names the field.
func TestChecksNameTheField(t *testing.T) {
	type checked interface{ Check() error }
	for _, tc := range []struct {
		field string
		make  func(bad string) checked
	}{
		{"url", func(string) checked { return &Due{FeedID: goodFeed} }},
		{"feed_id", func(v string) checked { return &Due{URL: "https://x.test/", FeedID: v + "x"} }},
		{"fetch_id", func(v string) checked { return &Fetch{FetchID: v, Due: Due{FeedID: goodFeed}} }},
		{"due.feed_id", func(v string) checked { return &Fetch{FetchID: goodFetch, Due: Due{FeedID: v}} }},
		{"body_ref.key", func(v string) checked {
			return &Fetch{FetchID: goodFetch, Due: Due{FeedID: goodFeed}, BodyRef: &BlobRef{Storage: "localfs", Key: v}}
		}},
		{"page.source_fetch_id", func(v string) checked {
			return &Fetch{FetchID: goodFetch, Due: Due{FeedID: goodFeed}, Page: &Page{Role: PageArticle, SourceFetchID: v + "x"}}
		}},
		{"page.entry_uid", func(v string) checked {
			return &Fetch{FetchID: goodFetch, Due: Due{FeedID: goodFeed}, Page: &Page{Role: PageFulltext, EntryUID: v + "x"}}
		}},
		{"entry_uid", func(v string) checked { return &Entry{EntryUID: v, FeedID: goodFeed, ContentHash: "h"} }},
		{"feed_id", func(v string) checked { return &Entry{EntryUID: goodUID, FeedID: v, ContentHash: "h"} }},
		{"content_hash", func(string) checked { return &Entry{EntryUID: goodUID, FeedID: goodFeed} }},
		{"raw_ref.fetch_id", func(v string) checked {
			return &Entry{EntryUID: goodUID, FeedID: goodFeed, ContentHash: "h", RawRef: RawRef{FetchID: v + "x"}}
		}},
		{"alias_of.feed_id", func(v string) checked {
			return &Entry{EntryUID: goodUID, FeedID: goodFeed, ContentHash: "h", AliasOf: &EntryRef{FeedID: v, EntryUID: goodUID}}
		}},
		{"stored_in", func(v string) checked {
			return &Event{EntryUID: goodUID, FeedID: goodFeed, StoredIn: v + "x"}
		}},
		{"raw_refs[1].fetch_id", func(v string) checked {
			return &Event{EntryUID: goodUID, FeedID: goodFeed, RawRefs: []RawRef{{FetchID: goodFetch}, {FetchID: v + "x"}}}
		}},
		{"alias_of.entry_uid", func(v string) checked {
			return &Alias{FeedID: goodFeed, EntryUID: goodUID, AliasOf: EntryRef{FeedID: goodFeed, EntryUID: v}}
		}},
		{"stored_in", func(v string) checked {
			return &Alias{FeedID: goodFeed, EntryUID: goodUID, AliasOf: EntryRef{FeedID: goodFeed, EntryUID: goodUID}, StoredIn: v + "x"}
		}},
		{"feed_id", func(v string) checked { return &Decision{FeedID: v} }},
		{"fetch_id", func(v string) checked { return &Decision{FeedID: goodFeed, FetchID: v + "x"} }},
		{"feed_id", func(v string) checked { return &FeedEvent{FeedID: v} }},
		{"feed_id", func(v string) checked { return &Subscription{FeedID: v, URL: "https://x.test/"} }},
		{"entry_uid", func(v string) checked { return &Media{FeedID: goodFeed, EntryUID: v} }},
		{"key", func(v string) checked { return &Media{FeedID: goodFeed, EntryUID: goodUID, Key: v + "x"} }},
		{"sha256", func(v string) checked { return &Media{FeedID: goodFeed, EntryUID: goodUID, SHA256: v + "x"} }},
		{"stored_in", func(v string) checked { return &Media{FeedID: goodFeed, EntryUID: goodUID, StoredIn: v + "x"} }},
	} {
		for _, v := range append(hostile, "") {
			err := tc.make(v).Check()
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field || !strings.Contains(err.Error(), "field "+tc.field+" ") {
				t.Errorf("%T with %s %q: %v", tc.make(v), tc.field, v, err)
			}
			if err != nil && (strings.ContainsRune(err.Error(), 0) || strings.Contains(err.Error(), "\n")) {
				t.Errorf("the error is not one clean line: %q", err)
			}
		}
	}
	// The good records pass.
	for _, c := range []checked{
		&Due{URL: "https://x.test/"},
		&Fetch{FetchID: goodFetch, Due: Due{FeedID: goodFeed}, BodyRef: &BlobRef{Storage: "localfs", Key: goodKey}},
		&Entry{EntryUID: goodUID, FeedID: goodFeed, ContentHash: "h", RawRef: RawRef{FetchID: goodFetch}},
		&Event{EntryUID: goodUID, FeedID: goodFeed, StoredIn: "entries/2026-11-21.ndjson", RawRefs: []RawRef{{FetchID: goodFetch}}},
		&Media{FeedID: goodFeed, EntryUID: goodUID, Key: MediaKey(goodKey[15:79]), SHA256: goodKey[15:79], StoredIn: "media/2026-11-29.ndjson"},
	} {
		if err := c.Check(); err != nil {
			t.Errorf("%T: %v", c, err)
		}
	}
}
