package scrape

import (
	"bytes"
	"context"
	"slices"

	"github.com/feedpipe/feedpipe/internal/ids"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// The full-text stage as a worker on the events stream (docs/bus.md, "The
// intel stream"): with Config.Events, feed-scrape reads the coordinator's
// events rather than feed-parse's records,
//
//	feed-bus take events --group fulltext | feed-scrape --events | feed-bus put enriched
//
// and completes each new_entry with the text of its page as it completes a
// new entry of a feed with fulltext. What it writes is the entry's next
// version, for the coordinator's feed-dedup and feed-store: the event's
// members, the page's content, authors, tags, canonical link and images,
// and a content_hash of its own, so that feed-dedup takes it for an update
// (the feed's own version, stored first, stays known: its next fetch is
// unchanged). It carries the event's "bus" member, so that feed-bus put
// acknowledges the event as it appends the entry. An event it does not
// complete (another type, another label, a page it could not read) is
// consumed: a bus_ack of its stream entry goes on in its place, which put
// acknowledges and appends nothing for.

// eventTypes are the records of the events stream.
var eventTypes = map[string]bool{ndjson.TypeNewEntry: true, ndjson.TypeUpdatedEntry: true, ndjson.TypeBackfilledEntry: true,
	ndjson.TypeFeedDisabled: true, ndjson.TypeFeedReenabled: true}

// takenEvent is an event with the bus member feed-bus take added.
type takenEvent struct {
	ndjson.Event
	Bus *ndjson.BusRef `json:"bus"`
}

// wantEvent reports whether the event is one to complete.
func (s *stage) wantEvent(ev *takenEvent) bool {
	if ev.Type != ndjson.TypeNewEntry || ev.CanonicalLink == "" || !ndjson.IsFeedID(ev.FeedID) {
		return false
	}
	return s.cfg.Label == "" || slices.Contains(ev.Labels, s.cfg.Label)
}

// consumed is what stands for an event not completed: the bus_ack of its
// stream entry, or nothing when it came from no stream.
func consumed(ev *takenEvent) []output {
	if ev.Bus == nil {
		return nil
	}
	return []output{{rec: &ndjson.BusAck{Header: ndjson.Head(ndjson.TypeBusAck), Stream: ev.Bus.Stream, Group: ev.Bus.Group, IDs: []string{ev.Bus.ID}}}}
}

// eventJob completes a new_entry event with the text of its page.
func (s *stage) eventJob(ctx context.Context, ev *takenEvent) ([]output, error) {
	e := &ndjson.Entry{
		Header:        ndjson.Head(ndjson.TypeEntry),
		EntryUID:      ev.EntryUID,
		FeedID:        ev.FeedID,
		CanonicalLink: ev.CanonicalLink,
		Title:         ev.Title,
		Summary:       ev.Summary,
		Authors:       []ndjson.Author{},
		Categories:    []string{},
		Enclosures:    []ndjson.Enclosure{},
		Published:     ev.Published,
		ContentHash:   ev.ContentHash,
	}
	if n := len(ev.RawRefs); n > 0 {
		e.RawRef = ev.RawRefs[n-1]
	}
	// The job's source is the fetch the entry came from (its pages name
	// it), for the entry's link.
	f := &ndjson.Fetch{Header: ndjson.Head(ndjson.TypeFetch), FetchID: e.RawRef.FetchID,
		Due: ndjson.Due{Header: ndjson.Head(ndjson.TypeDue), FeedID: ev.FeedID, URL: ev.CanonicalLink, SourceType: ndjson.SourceAuto}}
	j := &job{s: s, f: f, ctx: ctx, log: s.cfg.Log.With("feed_id", ev.FeedID, "entry_uid", ev.EntryUID),
		sc: &ndjson.Scrape{Mode: ndjson.ScrapeFulltext, Rejections: []ndjson.Rejection{}}}
	s.stats.sources.Add(1)
	out := j.fulltext(e)
	if j.fatal != nil {
		return nil, j.fatal
	}
	if err := j.persist(); err != nil {
		return nil, err
	}
	s.stats.pages.Add(int64(j.sc.PagesFetched))
	s.stats.found.Add(int64(j.sc.ArticlesFound))
	s.stats.known.Add(int64(j.sc.Known))
	s.stats.fresh.Add(int64(j.sc.New))
	s.stats.rejected.Add(int64(j.sc.Rejected))
	if out == nil || j.sc.New == 0 {
		j.log.Info("left as the feed gave it: its page gave no text", "url", ev.CanonicalLink, "reason", j.lastReason)
		return consumed(ev), nil
	}
	// Its own version: a hash of what it holds now.
	out.ContentHash = ids.ContentHash(out.Title, out.Summary, out.Content, links(out))
	line, err := ndjson.Marshal(out)
	if err != nil {
		return nil, err
	}
	line = bytes.TrimSuffix(line, []byte{'\n'})
	if ev.Bus != nil {
		line = ndjson.AppendBusRef(line, ev.Bus)
	}
	return []output{{raw: line}}, nil
}
