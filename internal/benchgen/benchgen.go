// Package benchgen makes the entries of the benchmark stores: those
// tools/benchstore writes and the benchmarks that mirror its fetches.
package benchgen

import (
	"fmt"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/ids"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// lorem is the text summaries are cut from.
var lorem = strings.Repeat("feedpipe stores what it fetched once and only once, whatever happens. ", 64)

// MaxSummary is the longest summary Entry cuts.
var MaxSummary = len(lorem) - 64

// Entry is feed f's k-th entry, version v (0 as stored), of the feed
// feedID, with a summary of summaryBytes (at most MaxSummary), published
// at published.
func Entry(feedID string, f, k, v, summaryBytes int, published time.Time) ndjson.Entry {
	link := fmt.Sprintf("https://publisher%d.example.org/posts/%d/%d", f%5000, f, k)
	native := fmt.Sprintf("tag:publisher%d.example.org,2026:%d:%d", f%5000, f, k)
	title := fmt.Sprintf("Post %d of feed %d", k, f)
	summary := lorem[(f+k)%64 : (f+k)%64+summaryBytes]
	if v > 0 {
		title += fmt.Sprintf(" (revised %d)", v)
	}
	return ndjson.Entry{
		Header:        ndjson.Head(ndjson.TypeEntry),
		EntryUID:      ids.EntryUID(ids.EntryKey{FeedID: feedID, NativeID: native}),
		FeedID:        feedID,
		NativeID:      native,
		CanonicalLink: link,
		Title:         title,
		Summary:       summary,
		Authors:       []ndjson.Author{{Name: "A. Writer"}},
		Categories:    []string{"bench"},
		Enclosures:    []ndjson.Enclosure{},
		Published:     ndjson.At(published),
		ContentHash:   ids.ContentHash(title, summary, "", []string{link}),
	}
}
