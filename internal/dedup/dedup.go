// Package dedup is feed-dedup: it drops entries the store already holds
// unchanged and marks changed ones as updates. It reads the catalog and
// never writes it: an entry is only seen once feed-store has stored it.
package dedup

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/storage"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Config is everything feed-dedup touches.
type Config struct {
	In      io.Reader
	Out     *ndjson.Writer
	Log     *slog.Logger
	Store   *storage.Store
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
	d := &deduper{
		ctx:       ctx,
		index:     cat.Index(),
		counts:    map[string]*ndjson.Dedup{},
		crossFeed: cfg.CrossFeed,
	}
	var fails pipe.Failures
	// Every entry and fetch record is decoded (an entry dropped unchanged
	// by EntryKey), which checks its JSON: the reader need not.
	in := ndjson.NewReader(cfg.In)
	in.SetDecoded(ndjson.TypeEntry, ndjson.TypeFetch)
	err = pipe.EachFrom(ctx, in, cfg.Log, &fails, func(line ndjson.Line) error {
		switch line.Type {
		case ndjson.TypeEntry:
			// Most entries are dropped unchanged: of those, only the key
			// is read, the rest of the line checked but not decoded. One
			// that goes on is decoded and judged again (the index
			// answers from memory); a line EntryKey does not read is
			// decoded, which reports it if it is not a good entry.
			if k, ok := line.EntryKey(); ok {
				status, err := d.index.Judge(d.ctx, k.FeedID, k.EntryUID, k.ContentHash)
				if err != nil {
					return err
				}
				if status == "" {
					d.unchanged(k.FeedID, k.EntryUID)
					return nil
				}
			}
			var e ndjson.Entry
			if !pipe.Decode(line, &e, cfg.Log, &fails) {
				return nil
			}
			keep, err := d.judge(&e)
			if err != nil || !keep {
				return err
			}
			return cfg.Out.Write(&e)
		case ndjson.TypeFetch:
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
			return cfg.Out.WriteRaw(line.Raw)
		}
	})
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
	// index is the catalog's entry and link index, plus what this run
	// passed on (never written): a replay of many fetches of one feed
	// yields each version once.
	index     *catalog.Index
	counts    map[string]*ndjson.Dedup // by feed id, until the feed's fetch record
	totals    ndjson.Dedup             // the run's, for its summary line
	crossFeed bool                     // --cross-feed
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

// judge sets e.Status and reports whether e goes on.
func (d *deduper) judge(e *ndjson.Entry) (bool, error) {
	c := d.countsOf(e.FeedID)
	status, err := d.index.Judge(d.ctx, e.FeedID, e.EntryUID, e.ContentHash)
	if err != nil {
		return false, err
	}
	switch e.Status = status; e.Status {
	case "":
		d.unchanged(e.FeedID, e.EntryUID)
		return false, nil
	case ndjson.StatusUpdated:
		c.Updated++
	default:
		keep, err := d.byLink(e, c)
		if err != nil || !keep {
			return false, err
		}
	}
	d.index.Add(e.FeedID, catalog.Seen{UID: e.EntryUID, Hash: e.ContentHash})
	return true, nil
}

// byLink judges a new entry by its canonical link. One the store recorded
// as an alias of another feed's entry is dropped as unchanged, with or
// without --cross-feed: it stays an alias (a replay or a reparse must not
// store it after all). With --cross-feed, a link stored first from another
// feed makes the entry an alias of that entry.
func (d *deduper) byLink(e *ndjson.Entry, c *ndjson.Dedup) (bool, error) {
	h, ok := catalog.LinkHash(e.CanonicalLink)
	if !ok {
		c.New++
		return true, nil
	}
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
