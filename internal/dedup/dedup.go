// Package dedup is feed-dedup: it drops entries the store already holds
// unchanged and marks changed ones as updates. It reads the catalog and
// never writes it: an entry is only seen once feed-store has stored it.
package dedup

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"unicode/utf8"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Config is everything feed-dedup touches.
type Config struct {
	In      io.Reader
	Out     *ndjson.Writer
	Log     *slog.Logger
	Store   *storedir.Store
	Catalog *catalog.Catalog // the store's catalog; nil: opened for the run
	// CrossFeed turns a new entry whose canonical link was stored first
	// from another feed into an alias of that entry (status "alias",
	// alias_of), for feed-store to record instead of storing it
	// (docs/design.md#deduplication).
	CrossFeed bool
}

// Run passes on each entry that is new (status "new") or a version never
// stored (status "updated"), drops the rest and repeats within the run, and
// adds the counts to each fetch record as its dedup section, with the uids
// of the entries dropped as unchanged, for feed-store to count the
// sighting. Other records pass through.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	// A signal does not stop feed-dedup: it reads to the end of its input,
	// which ends once the stages upstream have stopped (pipe.Drain).
	ctx = pipe.Drain(ctx)
	cat, done, err := catalog.Use(ctx, cfg.Catalog, cfg.Store, cfg.Log)
	if err != nil {
		return err
	}
	defer done()
	if cfg.CrossFeed {
		// Every stored entry's link is in the index before the first is
		// judged by it: built once, from entries/, for a store that never
		// compared entries across feeds.
		if _, err := cat.KeepLinks(ctx); err != nil {
			return err
		}
	}
	d := &deduper{
		ctx:       ctx,
		out:       cfg.Out,
		index:     cat.Index(),
		counts:    map[string]*ndjson.Dedup{},
		crossFeed: cfg.CrossFeed,
		linked:    map[entryKey]bool{},
	}
	var fails pipe.Failures
	// Every entry and fetch record is decoded (an entry dropped unchanged
	// by EntryKey, which checks the rest of its line).
	in := pipe.Decoded(cfg.In, ndjson.TypeEntry, ndjson.TypeFetch)
	err = pipe.EachFrom(ctx, in, cfg.Log, &fails, func(line ndjson.Line) error {
		switch line.Type {
		case ndjson.TypeEntry:
			// Most entries are dropped unchanged: of those, only the key
			// is read, the rest of the line checked but not decoded. One
			// that goes on is decoded and judged again (the index
			// answers from memory); a line EntryKey does not read is
			// decoded, which reports it if it is not a good entry.
			if k, ok := line.EntryKey(); ok {
				if err := d.before(k.FeedID, k.EntryUID); err != nil {
					return err
				}
				status, err := d.index.Judge(d.ctx, k.FeedID, k.EntryUID, k.ContentHash)
				if err != nil {
					return err
				}
				if status == "" {
					d.unchanged(k.FeedID, k.EntryUID)
					return nil
				}
				if done, err := d.passRaw(line.Raw, k, status); done || err != nil {
					return err
				}
			}
			e := new(ndjson.Entry)
			if !pipe.Decode(line, e, cfg.Log, &fails) {
				return nil
			}
			if err := d.before(e.FeedID, e.EntryUID); err != nil {
				return err
			}
			return d.judge(e)
		case ndjson.TypeFetch:
			// The counts are complete once the entries before are judged.
			if err := d.flush(); err != nil {
				return err
			}
			var f ndjson.Fetch
			if !pipe.Decode(line, &f, cfg.Log, &fails) {
				return nil
			}
			// A feed's entries come before its fetch record, so the counts
			// since the feed's last fetch record are this fetch's. (They
			// are kept by feed, not fetch id: a website's entries point
			// at the page fetches they came from.)
			c, ok := d.counts[f.Due.FeedID]
			if !ok && f.Parse == nil && f.Scrape == nil {
				return cfg.Out.WriteRaw(line.Raw) // nothing was parsed: nothing to count
			}
			if !ok {
				c = &ndjson.Dedup{UnchangedUIDs: []string{}}
			}
			delete(d.counts, f.Due.FeedID)
			d.total(c)
			f.Dedup = c
			return cfg.Out.Write(&f)
		default:
			if err := d.flush(); err != nil {
				return err
			}
			return cfg.Out.WriteRaw(line.Raw)
		}
	})
	if err == nil {
		err = d.flush()
	}
	if err != nil {
		return err
	}
	if err := cfg.Out.Flush(); err != nil {
		return fmt.Errorf("write stdout: %w", err)
	}
	for _, c := range d.counts { // entries no fetch record followed
		d.total(c)
	}
	t := d.totals
	cfg.Log.Info("dedup done", "new", t.New, "updated", t.Updated, "unchanged", t.Unchanged, "aliases", t.Aliases)
	return fails.Err("entry", "entries")
}

// total adds a fetch's counts to the run's.
func (d *deduper) total(c *ndjson.Dedup) {
	d.totals.New += c.New
	d.totals.Updated += c.Updated
	d.totals.Unchanged += c.Unchanged
	d.totals.Aliases += c.Aliases
}

type deduper struct {
	ctx context.Context
	out *ndjson.Writer
	// index is the catalog's entry and link index, plus what this run
	// passed on (never written): a replay of many fetches of one feed
	// yields each version once.
	index     *catalog.Index
	counts    map[string]*ndjson.Dedup // by feed id, until the feed's fetch record
	totals    ndjson.Dedup             // the run's, for its summary line
	crossFeed bool                     // --cross-feed
	// queue holds the entries that go on, in input order, until the new
	// ones among them are judged by their links (flush); linked has the
	// keys of those, which the index does not hold yet.
	queue  []queued
	linked map[entryKey]bool
}

// queued is an entry that goes on unless link, its link's hash when it
// is a new entry to judge by it (byLink), says otherwise. It is e, or,
// when e is nil, the line raw that passRaw read, as it came but for its
// status, status.
type queued struct {
	e      *ndjson.Entry
	link   string
	raw    []byte
	key    ndjson.EntryKey
	status string
}

type entryKey struct{ feed, uid string }

// maxQueue bounds the entries queued for one look-up of their links.
const maxQueue = 256

// before readies the queue for the entry (feedID, uid): one of its keys
// waiting for its link is judged first, so that the index holds it.
func (d *deduper) before(feedID, uid string) error {
	if d.linked[entryKey{feedID, uid}] {
		return d.flush()
	}
	return nil
}

// flush judges the queued new entries by their links, the links read in
// one query (Index.LoadLinks): a query per new entry was a third of
// feed-dedup's CPU on a cycle of new entries. Then it writes the queue.
func (d *deduper) flush() error {
	if len(d.queue) == 0 {
		return nil
	}
	var hashes []string
	for _, q := range d.queue {
		if q.link != "" {
			hashes = append(hashes, q.link)
		}
	}
	if err := d.index.LoadLinks(d.ctx, hashes); err != nil {
		return err
	}
	for i, q := range d.queue {
		d.queue[i] = queued{}
		if q.e == nil && q.link != "" {
			// Judged by the line's key, as byLink needs no more of it
			// unless the entry becomes an alias, which adds alias_of.
			e := &ndjson.Entry{FeedID: q.key.FeedID, EntryUID: q.key.EntryUID, Status: q.status}
			keep, err := d.byLink(e, q.link, d.countsOf(e.FeedID))
			if err != nil {
				return err
			}
			if !keep {
				continue
			}
			d.index.Add(e.FeedID, catalog.Seen{UID: e.EntryUID, Hash: q.key.ContentHash})
			if e.Status != q.status {
				full := new(ndjson.Entry)
				if err := ndjson.Unmarshal(q.raw, full); err != nil {
					return fmt.Errorf("dedup: %w", err) // EntryKey read it: cannot fail
				}
				full.Status, full.AliasOf = e.Status, e.AliasOf
				q.e = full
			}
		} else if q.link != "" {
			keep, err := d.byLink(q.e, q.link, d.countsOf(q.e.FeedID))
			if err != nil {
				return err
			}
			if !keep {
				continue
			}
			d.index.Add(q.e.FeedID, catalog.Seen{UID: q.e.EntryUID, Hash: q.e.ContentHash})
		}
		var err error
		if q.e != nil {
			err = d.out.Write(q.e)
		} else {
			err = d.out.WriteRaw(withStatus(q.raw, q.status))
		}
		if err != nil {
			return err
		}
	}
	d.queue = d.queue[:0]
	clear(d.linked)
	return nil
}

// countsOf are the counts of a feed's entries since its last fetch record.
func (d *deduper) countsOf(feedID string) *ndjson.Dedup {
	c := d.counts[feedID]
	if c == nil {
		c = &ndjson.Dedup{UnchangedUIDs: []string{}}
		d.counts[feedID] = c
	}
	return c
}

// unchanged counts an entry dropped as stored already.
func (d *deduper) unchanged(feedID, uid string) {
	c := d.countsOf(feedID)
	c.Unchanged++
	c.UnchangedUIDs = append(c.UnchangedUIDs, uid)
}

// judge sets e.Status and queues e when it goes on: a new entry with a
// link waits for flush to be judged by it.
func (d *deduper) judge(e *ndjson.Entry) error {
	c := d.countsOf(e.FeedID)
	status, err := d.index.Judge(d.ctx, e.FeedID, e.EntryUID, e.ContentHash)
	if err != nil {
		return err
	}
	switch e.Status = status; e.Status {
	case "":
		d.unchanged(e.FeedID, e.EntryUID)
		return nil
	case ndjson.StatusUpdated:
		c.Updated++
	default:
		if h, ok := catalog.LinkHash(e.CanonicalLink); ok {
			d.queue = append(d.queue, queued{e: e, link: h})
			d.linked[entryKey{e.FeedID, e.EntryUID}] = true
			if len(d.queue) >= maxQueue {
				return d.flush()
			}
			return nil
		}
		c.New++
	}
	d.index.Add(e.FeedID, catalog.Seen{UID: e.EntryUID, Hash: e.ContentHash})
	d.queue = append(d.queue, queued{e: e})
	if len(d.queue) >= maxQueue {
		return d.flush()
	}
	return nil
}

// byLink judges a new entry by its canonical link, whose hash is h. One the store recorded
// as an alias of another feed's entry is dropped as unchanged, with or
// without --cross-feed: it stays an alias (a replay or a reparse must not
// store it after all). With --cross-feed, a link stored first from another
// feed makes the entry an alias of that entry.
func (d *deduper) byLink(e *ndjson.Entry, h string, c *ndjson.Dedup) (bool, error) {
	o, err := d.index.Link(d.ctx, h)
	if err != nil {
		return false, err
	}
	ref := ndjson.EntryRef{FeedID: e.FeedID, EntryUID: e.EntryUID}
	switch {
	case !o.Known() || o.First.FeedID == e.FeedID:
		// The first with this link, or its own feed's (which dedups by
		// entry_uid alone).
		c.New++
		if d.crossFeed { // so that another feed's entry with the link is its alias
			d.index.AddLink(h, o, ref, false)
		}
		return true, nil
	case o.Has(ref):
		e.Status = ""
		c.Unchanged++
		return false, nil
	case !d.crossFeed:
		c.New++
		return true, nil
	default:
		e.Status, e.AliasOf = ndjson.StatusAlias, &o.First
		c.Aliases++
		d.index.AddLink(h, o, ref, true)
		return true, nil
	}
}

// passRaw queues an entry that goes on (status new or updated) as its
// line, raw, whose key EntryKey read: the line is written out as it came
// with its status set (withStatus), neither decoded nor encoded again,
// which was 40% of feed-dedup's CPU on a cycle of new entries. done is
// false for a line it leaves to the decoder: one without an empty status,
// or with a canonical link it cannot read as it is.
func (d *deduper) passRaw(raw []byte, k ndjson.EntryKey, status string) (done bool, err error) {
	at := bytes.Index(raw, emptyStatus)
	if at < 0 {
		return false, nil
	}
	link, ok := rawLink(raw)
	if !ok {
		return false, nil
	}
	c := d.countsOf(k.FeedID)
	q := queued{raw: bytes.Clone(raw), key: k, status: status}
	switch status {
	case ndjson.StatusUpdated:
		c.Updated++
		d.index.Add(k.FeedID, catalog.Seen{UID: k.EntryUID, Hash: k.ContentHash})
	default:
		if h, ok := catalog.LinkHash(link); ok {
			q.link = h
			d.linked[entryKey{k.FeedID, k.EntryUID}] = true
		} else {
			c.New++
			d.index.Add(k.FeedID, catalog.Seen{UID: k.EntryUID, Hash: k.ContentHash})
		}
	}
	d.queue = append(d.queue, q)
	if len(d.queue) >= maxQueue {
		return true, d.flush()
	}
	return true, nil
}

// In a line EntryKey read, every name is one of Entry's, at most once,
// and the nested objects (authors, enclosures, raw_ref) have none of
// these: each of these byte strings, whose quotes no string value can
// hold unescaped, is the top-level field.
var (
	emptyStatus   = []byte(`"status":""`)
	canonicalLink = []byte(`"canonical_link":"`)
)

// withStatus is a copy of the line raw with its empty status set to
// status.
func withStatus(raw []byte, status string) []byte {
	at := bytes.Index(raw, emptyStatus) + len(emptyStatus) - 1
	out := make([]byte, 0, len(raw)+len(status))
	out = append(append(append(out, raw[:at]...), status...), raw[at:]...)
	return out
}

// rawLink is the canonical link of an entry line EntryKey read, when its
// JSON string is the link as it is: no escape, valid UTF-8 (which the
// decoder would change); "" when the line has none.
func rawLink(raw []byte) (string, bool) {
	at := bytes.Index(raw, canonicalLink)
	if at < 0 {
		return "", true // absent: empty, as the decoder has it
	}
	v := raw[at+len(canonicalLink):]
	end := bytes.IndexByte(v, '"')
	if end < 0 || bytes.IndexByte(v[:end], '\\') >= 0 || !utf8.Valid(v[:end]) {
		return "", false
	}
	return string(v[:end]), true
}
