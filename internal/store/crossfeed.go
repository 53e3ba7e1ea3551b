package store

import (
	"slices"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// replayed reports whether feed-store committed the fetch f already (or a
// later fetch of its feed): its state, counts and decision were made then,
// and are not made twice. Its entries are judged as any others.
func (c *committer) replayed(f *ndjson.Fetch, prev priorState) bool {
	st, known, err := prev.st, prev.known, prev.err
	if err != nil {
		// An unreadable state: process the fetch (state only moves
		// forward anyway).
		c.cfg.Log.Warn("cannot read the feed's state", "feed_id", f.Due.FeedID, "error", err)
		return false
	}
	if !known || f.FetchedAt.After(st.LastFetchAt.Time) {
		return false
	}
	c.cfg.Summary.Replayed++
	c.cfg.Log.Info("skipped a fetch record stored already", "feed_id", f.Due.FeedID, "fetch_id", f.FetchID)
	return true
}

// crossFeed handles an entry feed-dedup --cross-feed made an alias: when
// the catalog confirms that another feed's entry was stored first with
// its link, it returns the alias record to announce (and record), or skip
// for an alias recorded already; otherwise the entry is stored as any
// other, its alias status dropped. h is its link's hash ("" for none).
func (c *committer) crossFeed(e *ndjson.Entry, h string, now time.Time) (alias *ndjson.Alias, skip bool, err error) {
	if e.Status != ndjson.StatusAlias {
		return nil, false, nil
	}
	e.Status, e.AliasOf = "", nil
	if h == "" {
		return nil, false, nil
	}
	o, err := c.index.Link(c.ctx, h)
	if err != nil {
		return nil, false, err
	}
	ref := ndjson.EntryRef{FeedID: e.FeedID, EntryUID: e.EntryUID}
	switch {
	case !o.Known() || o.First.FeedID == e.FeedID:
		return nil, false, nil // the first entry with this link after all
	case o.Has(ref):
		c.cfg.Summary.Known++
		return nil, true, nil
	}
	a := ndjson.Alias{Header: ndjson.Head(ndjson.TypeAlias), FeedID: e.FeedID, EntryUID: e.EntryUID,
		CanonicalLink: e.CanonicalLink, Title: e.Title, Published: e.Published, ContentHash: e.ContentHash,
		RawRef: e.RawRef, AliasOf: o.First, RecordedAt: ndjson.At(now), StoredIn: storedir.DayFile(storedir.DirAliases, now)}
	c.index.AddLink(h, o, ref, true)
	c.cfg.Summary.Aliases++
	c.cfg.Log.Info("recorded an alias: the same link was stored from another feed", "feed_id", e.FeedID, "entry_uid", e.EntryUID,
		"alias_of_feed_id", o.First.FeedID, "alias_of_entry_uid", o.First.EntryUID, "link", e.CanonicalLink)
	return &a, false, nil
}

// loadLinks sets the link hash of each of a batch's entries and reads
// what the catalog holds of those links in one query
// (catalog.Index.LoadLinks), for newLink and crossFeed, when the catalog
// keeps its link index (kept: once a feed-dedup --cross-feed run asked
// for it, catalog.KeepLinks). Otherwise no entry has a link here: none
// is added, and none is an alias the catalog can confirm.
func (c *committer) loadLinks(batch []item) (kept bool, err error) {
	if kept, err = c.cat.LinksKept(c.ctx); err != nil || !kept {
		return false, err
	}
	var hashes []string
	for i := range batch {
		if e := batch[i].entry; e != nil {
			if h, ok := catalog.LinkHash(e.CanonicalLink); ok {
				batch[i].link = h
				hashes = append(hashes, h)
			}
		}
	}
	return true, c.index.LoadLinks(c.ctx, hashes)
}

// newLink returns the link of a stored entry for the catalog's links,
// unless another entry has it already; ok is false then, or when the
// entry has no link (h, its hash, is "").
func (c *committer) newLink(e *ndjson.Entry, h string) (l linkRef, ok bool, err error) {
	if h == "" {
		return l, false, nil
	}
	o, err := c.index.Link(c.ctx, h)
	if err != nil || o.Known() {
		return l, false, err
	}
	ref := ndjson.EntryRef{FeedID: e.FeedID, EntryUID: e.EntryUID}
	c.index.AddLink(h, o, ref, false)
	return linkRef{h, ref}, true, nil
}

// feedEventLines encodes the feed_disabled and feed_reenabled events among
// out, for events/.
func feedEventLines(out []any) ([]byte, error) {
	var lines []byte
	for _, o := range out {
		if ev, ok := o.(*ndjson.FeedEvent); ok {
			line, err := ndjson.Marshal(ev)
			if err != nil {
				return nil, err
			}
			lines = append(lines, line...)
		}
	}
	return lines, nil
}

// encodeAll encodes records as NDJSON lines. Each record goes to Append
// as it is, a value or a pointer: Append's own encoders take those, and
// the address of a pointer would go through encoding/json instead (a
// 304's decision took 8 µs so).
func encodeAll[T any](records []T) ([]byte, error) {
	var b []byte
	for i, r := range records {
		var err error
		if b, err = ndjson.Append(b, r); err != nil {
			return nil, err
		}
		if i == 0 {
			// Room for the rest at the first one's size: grown by
			// doubling, the buffer of 2,000 decisions was allocated
			// twice over, a sixth of a run of 304s' allocations.
			b = slices.Grow(b, len(b)*(len(records)-1))
		}
	}
	return b, nil
}

// addLinks records the links a batch's entries brought first. A batch
// begun while the catalog kept no link index has none, unless a
// feed-dedup --cross-feed run made it keep one since (catalog.KeepLinks,
// which read none of the batch's lines): then every stored version's link
// is added, as the index's build would have.
func addLinks(t *catalog.Tx, w *batchWrites) error {
	links := w.links
	if !w.linksKept {
		kept, err := t.LinksKept()
		if err != nil || !kept {
			return err
		}
		for _, v := range w.versions {
			if h, ok := catalog.LinkHash(v.entry.CanonicalLink); ok {
				links = append(links, linkRef{h, ndjson.EntryRef{FeedID: v.entry.FeedID, EntryUID: v.entry.EntryUID}})
			}
		}
	}
	for _, l := range links {
		if err := t.AddLink(l.hash, l.ref); err != nil {
			return err
		}
	}
	return nil
}
