package fetch

import (
	"context"
	"errors"
	"fmt"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/spool"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Pushed bodies (docs/design.md#push): feed-serve keeps each in the raw
// store and spools its fetch record (internal/spool); every feed-fetch
// first hands the spooled records on, as its own: each is appended to
// fetches/ and the catalog's fetch index, written to stdout, and only then
// is its spool file removed. A crash between the two hands a record on
// twice (it is not appended twice: one indexed already is only written
// out), which feed-store absorbs: an entry stored is not stored again.

// spoolLock is held by the feed-fetch that drains the spool, to its end:
// two at once would hand each record on twice.
const spoolLock = "lock.spool"

// drainSpool sends the spooled records to results, oldest first, and
// returns the spool lock's release: nothing to release when another
// feed-fetch drains it now.
func (cfg *Config) drainSpool(ctx context.Context, results chan<- result) (func(), error) {
	unlock, err := cfg.Store.Lock(spoolLock, false, nil)
	if errors.Is(err, storedir.ErrLocked) {
		return func() {}, nil
	}
	if err != nil {
		return nil, err
	}
	items, bad, err := spool.Read(cfg.Store)
	if err != nil {
		unlock()
		return nil, err
	}
	for _, b := range bad {
		cfg.Log.Error("set aside a spool file that holds no fetch record", "file", b)
	}
	for i := range items {
		it := &items[i]
		_, indexed, err := cfg.Catalog.Fetch(ctx, it.Fetch.FetchID)
		if err != nil {
			unlock()
			return nil, err
		}
		if indexed {
			// Appended by a feed-fetch that stopped before it removed
			// the file: written out again, not appended again.
			results <- result{raw: it.Line, spooled: it}
			continue
		}
		results <- result{fetch: &it.Fetch, spooled: it}
	}
	if len(items) > 0 {
		cfg.Log.Info("handed on the pushed bodies feed-serve spooled", "records", len(items))
	}
	return unlock, nil
}

// doneSpooled removes the spool files of the records of batch once they
// are written out (stdout flushed: the next stage has them).
func (cfg *Config) doneSpooled(batch []result) error {
	var items []spool.Item
	for _, r := range batch {
		if r.spooled != nil {
			items = append(items, *r.spooled)
		}
	}
	if len(items) == 0 {
		return nil
	}
	if err := cfg.Out.Flush(); err != nil {
		return fmt.Errorf("write stdout: %w", err)
	}
	return spool.Remove(cfg.Store, items)
}

// archive claims (docs/design.md#backfill): an archive page is claimed by
// its feed and URL (catalog.ClaimArchivePages), not by a scheduled run:
// fetched once whoever asks, its record passed on once fetched and not
// read, never fetched again once read.

// isArchive reports whether due asks for a page of a feed's archive.
func isArchive(due *ndjson.Due) bool { return due.Reason == ndjson.ReasonArchive }

// claimArchives routes the archive pages of batch as claim routes runs:
// those to fetch go to fetch, a page fetched and not read passes its
// record on, the others are skipped. It marks them done in the batch
// (FeedID "") for claim, which then routes the rest.
func (cfg *Config) claimArchives(ctx context.Context, rs *runs, batch []ndjson.Due, fetch func(ndjson.Due) error, results chan<- result) error {
	var (
		claims []catalog.ArchiveClaim
		of     []int
	)
	for i := range batch {
		if isArchive(&batch[i]) && batch[i].FeedID != "" {
			claims = append(claims, catalog.ArchiveClaim{FeedID: batch[i].FeedID, URL: batch[i].URL})
			of = append(of, i)
		}
	}
	if len(claims) == 0 {
		return nil
	}
	res, err := rs.cat.ClaimArchivePages(ctx, claims, cfg.Clock.Now())
	if err != nil {
		return err
	}
	for j, r := range res {
		due := batch[of[j]]
		batch[of[j]].FeedID = "" // routed here
		log := cfg.Log.With("feed_id", due.FeedID, "url", due.URL)
		switch r.Claim {
		case catalog.ClaimStored:
			rs.skipped++
			log.Info("skipped: this archive page was read already")
		case catalog.ClaimBusy:
			rs.skipped++
			log.Info("skipped: another pipeline is fetching this archive page")
		case catalog.ClaimFetched:
			line, err := rs.cat.Line(storedir.DirFetches, r.Fetch.Location)
			if err == nil {
				rs.resumed++
				log.Info("not fetched again: passing on the stored fetch record of this archive page", "fetch_id", r.Fetch.FetchID)
				results <- result{raw: line}
				continue
			}
			log.Warn("fetching again: the stored fetch record of this archive page cannot be read", "error", err)
			fallthrough
		default:
			if err := fetch(due); err != nil {
				return err
			}
		}
	}
	return nil
}

// archivesFetched notes in the catalog the fetch of each archive page in
// records, now appended: a pipeline that stops before feed-store reads one
// passes its record on next time.
func (cfg *Config) archivesFetched(records []*ndjson.Fetch) error {
	fetched := map[catalog.ArchiveClaim]string{}
	for _, f := range records {
		if isArchive(&f.Due) && f.FetchID != "" {
			fetched[catalog.ArchiveClaim{FeedID: f.Due.FeedID, URL: f.Due.URL}] = f.FetchID
		}
	}
	return cfg.Catalog.ArchiveFetched(context.Background(), fetched)
}
