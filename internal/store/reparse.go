package store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/dedup"
	"github.com/feedpipe/feedpipe/internal/parse"
	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// maxHeld bounds the entries held for a fetch record that does not come
// (a stream of entries alone, such as feed-parse FILE...).
const maxHeld = 4 * maxBatch

// hold decides when each entry of a batch was seen: the fetched_at of the
// fetch record that closes its feed's group, which follows the entries
// (docs/design.md#records). That time is in the data, so a replay of the same fetch
// records stores byte-identical entries. An entry whose fetch record has not
// arrived yet is held back to a later batch; at the end of the input
// (c.final), or past maxHeld, or before a bus_ack (which would
// acknowledge them on their stream once passed on: docs/bus.md), the
// entries still held were seen now. It returns the items to commit, in
// input order, and the time of each entry.
func (c *committer) hold(batch []item, now time.Time) ([]item, map[*ndjson.Entry]time.Time) {
	all := batch
	if len(c.held) > 0 {
		all = append(c.held, batch...)
		c.held = nil
	}
	seenAt := make(map[*ndjson.Entry]time.Time)
	closing := map[string]time.Time{} // feed id -> fetched_at of its next fetch record
	release := c.final || len(all) > maxHeld
	keep := make([]bool, len(all))
	acked := false // a bus_ack follows: nothing before it is held
	for i := len(all) - 1; i >= 0; i-- {
		it := all[i]
		switch {
		case it.fetch != nil && it.fetch.Page == nil && !it.fetch.FetchedAt.IsZero():
			closing[it.fetch.Due.FeedID] = it.fetch.FetchedAt.Time
			keep[i] = true
		case it.entry != nil:
			if at, ok := closing[it.entry.FeedID]; ok {
				seenAt[it.entry], keep[i] = at, true
			} else if release || acked {
				seenAt[it.entry], keep[i] = now, true
			}
		default:
			acked = acked || it.ack
			keep[i] = true
		}
	}
	ready := make([]item, 0, len(all))
	for i, it := range all {
		if keep[i] {
			ready = append(ready, it)
		} else {
			c.held = append(c.held, it)
		}
	}
	return ready, seenAt
}

// ReparseConfig is what feed-store reparse re-parses.
type ReparseConfig struct {
	Store   *storedir.Store
	Catalog *catalog.Catalog // the store's catalog; nil: opened for the run
	Out     *ndjson.Writer   // the events of the versions stored
	Log     *slog.Logger
	Now     func() time.Time // default time.Now
	// Since is the first day of fetches/ re-parsed.
	Since time.Time
	// Parser parses the payloads again; nil means parse.DefaultParser.
	Parser  *parse.Parser
	NoWait  bool
	Summary *ReparseSummary
}

// ReparseSummary counts what a re-parse found.
type ReparseSummary struct {
	Fetches   int // fetch records read
	Entries   int // entries the payloads hold now (the newest of each)
	Unchanged int // entries parsed as they are stored
	Updated   int // new versions stored
	New       int // entries never stored before (a payload that failed to parse, say)
	Renamed   int // entries whose id the parser now makes differently: not stored again
	// Refetch counts the sources whose last body is still not read (a
	// website's page, a payload that fails again): their validators are
	// dropped, so that their next fetch brings the body whole.
	Refetch int
	Store   Summary
}

// Reparse parses the payloads of the fetch records of fetches/ since
// cfg.Since again, through the code of feed-parse and feed-dedup, and
// stores what a parser change made of them. Of each entry only its newest
// parse counts (the last fetch that held it): an entry that parses as it
// is stored now is not touched; one that parses differently is stored as
// a new version in place of the stored one and announced as updated_entry.
// An entry whose id changed (its item sits in the payload where a stored
// entry's did) is not stored again under its new id: the next fetch of
// the feed brings it, once. Versions made now were seen now.
func Reparse(ctx context.Context, cfg ReparseConfig) error {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Parser == nil {
		cfg.Parser = parse.DefaultParser
	}
	if cfg.Summary == nil {
		cfg.Summary = &ReparseSummary{}
	}
	sum := cfg.Summary
	st := cfg.Store
	cat, done, err := catalog.Use(ctx, cfg.Catalog, st, cfg.Log)
	if err != nil {
		return err
	}
	defer done()
	cfg.Catalog = cat
	since := storedir.DirFetches + "/" + storedir.Day(cfg.Since)
	files, err := st.DayFiles(storedir.DirFetches)
	if err != nil {
		return err
	}
	var fetches bytes.Buffer
	for _, f := range files {
		if f < since {
			continue
		}
		if _, _, err := st.ReadLog(f, 0, func(l ndjson.Line) error {
			if l.Type == ndjson.TypeFetch {
				sum.Fetches++
				fetches.Write(l.Raw)
				fetches.WriteByte('\n')
			}
			return nil
		}); err != nil {
			return err
		}
	}

	var parsed bytes.Buffer
	err = parse.Run(ctx, parse.Config{In: &fetches, Out: ndjson.NewWriter(&parsed), Log: cfg.Log, Store: st, Parser: cfg.Parser})
	if err != nil && !errors.Is(err, pipe.ErrFailed) { // a payload that fails is reported and skipped
		return err
	}
	unread := unreadBodies(parsed.Bytes())
	changed, err := reparsed(ctx, cfg, &parsed)
	if err != nil {
		return err
	}
	var deduped bytes.Buffer
	if err := dedup.Run(ctx, dedup.Config{In: changed, Out: ndjson.NewWriter(&deduped), Log: cfg.Log, Store: st, Catalog: cat}); err != nil {
		return err
	}
	err = Run(ctx, Config{In: &deduped, Out: cfg.Out, Log: cfg.Log, Store: st, Catalog: cat, Now: cfg.Now, NoWait: cfg.NoWait, Summary: &sum.Store})
	sum.Updated, sum.New = sum.Store.Updated, sum.Store.New
	if err == nil {
		sum.Refetch, err = forgetValidators(ctx, cfg, unread)
	}
	cfg.Log.Info("reparsed", "fetches", sum.Fetches, "entries", sum.Entries, "unchanged", sum.Unchanged,
		"updated", sum.Updated, "new", sum.New, "renamed", sum.Renamed, "refetch", sum.Refetch)
	return err
}

// unreadBodies lists the sources whose last fetch with a body, in the
// fetch records re-parsed, was not read: a website's (feed-store reparse
// does not scrape), or a payload that did not parse again. A store that
// ran without feed-parse or feed-scrape, or before feed-store kept only
// the validators of bodies read, may hold those bodies' validators.
func unreadBodies(parsed []byte) map[string]bool {
	last := map[string]bool{} // feed id -> its last body was read
	rd := ndjson.NewReader(bytes.NewReader(parsed))
	for {
		l, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		var f ndjson.Fetch
		if err != nil || l.Type != ndjson.TypeFetch || l.Decode(&f) != nil || f.Page != nil || !f.HasBody() {
			continue
		}
		last[f.Due.FeedID] = bodyRead(&f)
	}
	unread := map[string]bool{}
	for feed, read := range last {
		if !read {
			unread[feed] = true
		}
	}
	return unread
}

// forgetValidators drops the validators of the sources in feeds, under
// the store's lock, and returns how many had any.
func forgetValidators(ctx context.Context, cfg ReparseConfig, feeds map[string]bool) (int, error) {
	if len(feeds) == 0 {
		return 0, nil
	}
	unlock, err := cfg.Store.Lock(storedir.StoreLock, !cfg.NoWait, nil)
	if err != nil {
		return 0, err
	}
	defer unlock()
	n := 0
	err = cfg.Catalog.Update(ctx, func(t *catalog.Tx) error {
		for _, feed := range slices.Sorted(maps.Keys(feeds)) {
			fs, ok, err := t.State(feed)
			if err != nil {
				return err
			}
			if ok && fs.Validators != (ndjson.Validators{}) {
				fs.Validators = ndjson.Validators{}
				if err := t.PutStates(fs); err != nil {
					return err
				}
				n++
				cfg.Log.Info("the last body of this source was not read: its next fetch brings it whole", "feed_id", feed)
			}
		}
		return nil
	})
	return n, err
}

// reparsed keeps, of feed-parse's output, the newest parse of each entry
// that differs from the entry's stored latest version.
func reparsed(ctx context.Context, cfg ReparseConfig, parsed io.Reader) (io.Reader, error) {
	type key struct{ feed, uid string }
	var order []key
	newest := map[key][]byte{}
	entries := map[key]*ndjson.Entry{}
	refs := map[key][]ndjson.RawRef{} // where each parse of it came from
	rd := ndjson.NewReader(parsed)
	for {
		l, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if l.Type != ndjson.TypeEntry {
			continue
		}
		var e ndjson.Entry
		if l.Decode(&e) != nil || e.Check() != nil {
			continue
		}
		k := key{e.FeedID, e.EntryUID}
		if _, ok := newest[k]; !ok {
			order = append(order, k)
		}
		newest[k] = bytes.Clone(l.Raw)
		entries[k] = &e
		refs[k] = append(refs[k], e.RawRef)
	}
	sum := cfg.Summary
	sum.Entries = len(order)
	st := cfg.Store
	idx := cfg.Catalog.Index()
	var stored map[ndjson.RawRef]bool // raw refs of the entries stored since
	var out bytes.Buffer
	for _, k := range order {
		e := entries[k]
		latest, known, err := idx.Latest(ctx, k.feed, k.uid)
		if err != nil {
			return nil, err
		}
		switch {
		case known && latest.Hash == e.ContentHash:
			sum.Unchanged++
			continue
		case !known:
			if stored == nil {
				var err error
				if stored, err = storedRawRefs(st, cfg.Since); err != nil {
					return nil, err
				}
			}
			if slices.ContainsFunc(refs[k], func(r ndjson.RawRef) bool { return stored[r] }) {
				sum.Renamed++
				cfg.Log.Debug("entry id changed: not stored again", "feed_id", k.feed, "entry_uid", k.uid, "fetch_id", e.RawRef.FetchID)
				continue
			}
		}
		out.Write(newest[k])
		out.WriteByte('\n')
	}
	return &out, nil
}

// storedRawRefs is where in their payloads the entries stored since a day
// came from.
func storedRawRefs(st *storedir.Store, since time.Time) (map[ndjson.RawRef]bool, error) {
	refs := map[ndjson.RawRef]bool{}
	first := storedir.DirEntries + "/" + storedir.Day(since)
	files, err := st.DayFiles(storedir.DirEntries)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if f < first {
			continue
		}
		if _, _, err := st.ReadLog(f, 0, func(l ndjson.Line) error {
			var e struct {
				RawRef ndjson.RawRef `json:"raw_ref"`
			}
			if l.Type == ndjson.TypeEntry && l.Decode(&e) == nil && e.RawRef.FetchID != "" {
				refs[e.RawRef] = true
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return refs, nil
}
