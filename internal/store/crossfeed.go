package store

import (
	"time"

	"github.com/feedpipe/feedpipe/internal/storage"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// ledgers is what keeps feed-store from committing one fetch twice (the
// stored run ledger) and records cross-feed duplicates (the URL index and
// aliases/). It is made on first use.
type ledgers struct {
	runs      *storage.Ledger
	urls      *storage.URLIndex
	committed []storage.Committed // fetches of this batch, for the ledger once their states are durable
	aliases   []ndjson.Alias      // of this batch
	wrote     bool                // entries or aliases this batch
	moved     bool                // entries or aliases this run: the URL checkpoint moves at the end
	err       error               // of noteURL, returned by flushCross
}

func (c *committer) ledgers() *ledgers {
	if c.idem == nil {
		c.idem = &ledgers{runs: c.cfg.Store.Ledger(true), urls: c.cfg.Store.URLs()}
	}
	return c.idem
}

// replayed reports whether feed-store committed the fetch f already (or a
// later fetch of its feed): its state, counts and decision were made then,
// and are not made twice. Its entries are judged as any others.
func (c *committer) replayed(f *ndjson.Fetch) bool {
	l := c.ledgers()
	done, err := l.runs.IsCommitted(f.Due.FeedID, f.FetchID, f.FetchedAt.Time)
	if err != nil {
		// An unreadable ledger: process the fetch, as feed-store did
		// before it had one (state only moves forward anyway).
		c.cfg.Log.Warn("cannot read the run ledger", "feed_id", f.Due.FeedID, "error", err)
		done = false
	}
	if done {
		c.cfg.Summary.Replayed++
		c.cfg.Log.Info("skipped a fetch record stored already", "feed_id", f.Due.FeedID, "fetch_id", f.FetchID)
	}
	return done
}

// noteCommitted notes the fetch f, about to be committed, for the ledger.
func (c *committer) noteCommitted(f *ndjson.Fetch) {
	l := c.ledgers()
	cm := storage.Committed{FeedID: f.Due.FeedID, FetchID: f.FetchID, FetchedAt: f.FetchedAt.Time}
	l.committed = append(l.committed, cm)
	l.runs.NoteCommitted(cm)
}

// crossFeed handles an entry feed-dedup --cross-feed made an alias: when
// the URL index confirms that another feed's entry was stored first with
// its link, it returns the alias record to announce (and queues it), or
// skip for an alias recorded already; otherwise the entry is stored as
// any other, its alias status dropped.
func (c *committer) crossFeed(e *ndjson.Entry, now time.Time) (alias *ndjson.Alias, skip bool, err error) {
	if e.Status != ndjson.StatusAlias {
		return nil, false, nil
	}
	l := c.ledgers()
	e.Status, e.AliasOf = "", nil
	h, ok := storage.URLHash(e.CanonicalLink)
	if !ok {
		return nil, false, nil
	}
	o, err := l.urls.Lookup(h)
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
		RawRef: e.RawRef, AliasOf: o.First, RecordedAt: ndjson.At(now), StoredIn: storage.DayFile(storage.DirAliases, now)}
	l.urls.AddLooked(h, o, ref, true)
	l.aliases = append(l.aliases, a)
	c.cfg.Summary.Aliases++
	c.cfg.Log.Info("recorded an alias: the same link was stored from another feed", "feed_id", e.FeedID, "entry_uid", e.EntryUID,
		"alias_of_feed_id", o.First.FeedID, "alias_of_entry_uid", o.First.EntryUID, "link", e.CanonicalLink)
	return &a, false, nil
}

// noteURL queues a stored entry's link for the URL index, unless another
// entry has it already.
func (c *committer) noteURL(e *ndjson.Entry) {
	l := c.ledgers()
	l.wrote = true
	if h, ok := storage.URLHash(e.CanonicalLink); ok && l.err == nil {
		l.err = l.urls.Add(h, ndjson.EntryRef{FeedID: e.FeedID, EntryUID: e.EntryUID}, false)
	}
}

// flushCross writes the batch's aliases and URL index lines, not synced:
// the commit syncs them with the states, after the entries.
func (c *committer) flushCross() error {
	l := c.ledgers()
	if l.err != nil {
		return l.err
	}
	if len(l.aliases) > 0 {
		l.wrote = true
		// One file: a batch's aliases carry one recorded_at.
		if err := c.cfg.Store.AppendAliases(l.aliases[0].StoredIn, l.aliases); err != nil {
			return err
		}
		l.aliases = l.aliases[:0]
	}
	return l.urls.Flush()
}

// wroteCross reports whether the batch has aliases or index lines to sync.
func (c *committer) wroteCross() bool { return c.idem != nil && c.idem.wrote }

// afterSync, once the batch is durable, appends its fetches to the run
// ledger.
func (c *committer) afterSync() error {
	l := c.ledgers()
	if err := c.cfg.Store.RecordCommitted(l.committed); err != nil {
		return err
	}
	l.committed = l.committed[:0]
	l.moved = l.moved || l.wrote
	l.wrote = false
	return nil
}

// closeCross moves the URL checkpoint to the end of what the run stored,
// all of it synced by then; once a run, not once a batch, since a run
// killed before catches up from the last checkpoint (CatchUpURLs).
func (c *committer) closeCross() error {
	if c == nil || c.idem == nil || !c.idem.moved {
		return nil
	}
	c.idem.moved = false
	return c.cfg.Store.SaveURLCheckpoint()
}
