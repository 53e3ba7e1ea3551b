package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/parse"
	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/storage"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// PruneConfig is what feed-store prune deletes. A zero duration or count
// keeps that kind of data forever: by default nothing goes.
type PruneConfig struct {
	Store *storage.Store
	Out   io.Writer // the key of each file deleted (or, dry, to delete), one per line
	Log   *slog.Logger
	Now   func() time.Time // default time.Now
	// NoWait fails at once, instead of waiting, when a feed-store holds
	// the store's lock.
	NoWait bool
	DryRun bool

	// Raw payloads (seed 000 §4.9): one goes when it is older than RawKeep
	// (last fetched then) and is not among the RawKeepPerFeed newest of
	// any feed that fetched it. Raw pruning is on when either is set.
	RawKeep        time.Duration
	RawKeepPerFeed int
	// EvenReferenced deletes payloads that stored entries come from too.
	EvenReferenced bool

	// TTLs of seed 004 §4, by whole days of the day files. Metadata is
	// fetches/ (less the records stored entries point at) and events/;
	// articles are entries/.
	MetadataKeep time.Duration
	ArticlesKeep time.Duration
	// SeenKeep is the seen-ids TTL: an entry whose latest version was
	// last seen longer ago leaves its feed's index (index/), so that it
	// would be stored again, as new, if it came back; never one the
	// feed's latest payload holds (that would come back at once).
	SeenKeep time.Duration
	// Parser reads the latest payloads for SeenKeep; nil means
	// parse.DefaultParser.
	Parser *parse.Parser
}

// PruneSummary counts what prune deleted (or would delete).
type PruneSummary struct {
	Raw            int   // payloads deleted
	RawReferenced  int   // payloads kept only because entries point at them
	RawLastN       int   // payloads kept only as a feed's newest
	EntryFiles     int   // entries/ day files
	EventFiles     int   // events/ day files
	FetchFiles     int   // fetches/ day files deleted
	FetchesTrimmed int   // fetches/ day files rewritten with the records entries need
	FetchRecords   int   // fetch records deleted
	AliasFiles     int   // aliases/ day files
	LedgerFeeds    int   // feeds' run ledger lines dropped, their fetch records gone
	URLs           int   // links dropped from the URL index, their first entry gone
	SeenForgotten  int   // entries forgotten by the seen-ids TTL
	SeenFeedsKept  int   // feeds with entries past the TTL kept: their latest payload unreadable
	Bytes          int64 // bytes freed
	DryRun         bool
}

func (s PruneSummary) String() string {
	verb := "deleted"
	if s.DryRun {
		verb = "would delete"
	}
	return fmt.Sprintf("%s %d raw payloads (kept %d referenced by entries, %d as a feed's newest), %d entries files, %d events files, %d aliases files, %d fetch records (%d fetches files deleted, %d trimmed), the run ledger lines of %d feeds, %d links of the URL index, %d seen entries (kept all of %d feeds whose latest payload is unreadable); %s bytes freed",
		verb, s.Raw, s.RawReferenced, s.RawLastN, s.EntryFiles, s.EventFiles, s.AliasFiles, s.FetchRecords, s.FetchFiles, s.FetchesTrimmed,
		s.LedgerFeeds, s.URLs, s.SeenForgotten, s.SeenFeedsKept, strconv.FormatInt(s.Bytes, 10))
}

// ParseAge reads an age such as 30d, 2w, 36h or 90m: a Go duration, or a
// whole number of days (d) or weeks (w).
func ParseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	for suffix, unit := range map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			v, err := strconv.Atoi(n)
			if err != nil || v < 0 {
				return 0, fmt.Errorf("store: %q is not an age such as 30d, 2w or 12h", s)
			}
			return time.Duration(v) * unit, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("store: %q is not an age such as 30d, 2w or 12h", s)
	}
	return d, nil
}

// fetchRef is what prune needs of a fetch record.
type fetchRef struct {
	FetchID   string      `json:"fetch_id"`
	FetchedAt ndjson.Time `json:"fetched_at"`
	Due       struct {
		FeedID string `json:"feed_id"`
	} `json:"due"`
	BodyRef *ndjson.BlobRef `json:"body_ref"`
}

// Prune deletes what the config says may go, under the store's lock: the
// articles first, so that only entries still stored protect payloads and
// fetch records, then metadata, then payloads. Today's day files and
// payloads are never deleted (the pipeline is writing them), nor are the
// files recovery after a crash would read (past the index checkpoint).
func Prune(ctx context.Context, cfg PruneConfig) (PruneSummary, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	sum := PruneSummary{DryRun: cfg.DryRun}
	st := cfg.Store
	unlock, err := st.Lock(storage.StoreLock, !cfg.NoWait, func() {
		cfg.Log.Info("waiting for the store lock: a feed-store is writing", "lock", st.Path(storage.StoreLock))
	})
	if err != nil {
		return sum, err
	}
	defer unlock()
	now := cfg.Now()
	today := storage.Day(now)
	cp, err := st.Checkpoint()
	if err != nil {
		return sum, err
	}
	del := func(key string) error {
		size := st.Size(key)
		if _, err := fmt.Fprintln(cfg.Out, key); err != nil {
			return err
		}
		sum.Bytes += size
		if cfg.DryRun {
			return nil
		}
		return st.Remove(key)
	}

	ucp, err := st.URLCheckpointAt()
	if err != nil {
		return sum, err
	}
	entriesFrom := cp.File // recovery reads entries/ from here
	if ucp.File != "" && (entriesFrom == "" || ucp.File < entriesFrom) {
		entriesFrom = ucp.File
	}

	// Articles: whole days of entries/, out of the URL index first.
	if cfg.ArticlesKeep > 0 {
		if sum.URLs, err = dropURLs(st, before(now, cfg.ArticlesKeep), today, entriesFrom, cfg.DryRun); err != nil {
			return sum, err
		}
		n, err := pruneDays(st, storage.DirEntries, before(now, cfg.ArticlesKeep), today, entriesFrom, del)
		if err != nil {
			return sum, err
		}
		sum.EntryFiles = n
	}
	if cfg.SeenKeep > 0 {
		if err := forgetSeen(ctx, cfg, &sum, now); err != nil {
			return sum, err
		}
	}
	if ctx.Err() != nil {
		return sum, ctx.Err()
	}

	// What the stored entries point at: their fetches, and so payloads.
	needRefs := cfg.MetadataKeep > 0 || cfg.RawKeep > 0 || cfg.RawKeepPerFeed > 0
	if !needRefs {
		return sum, nil
	}
	referenced := map[string]bool{} // fetch ids
	files, err := st.DayFiles(storage.DirEntries)
	if err != nil {
		return sum, err
	}
	var gone map[string]bool // entries files a dry run would have deleted
	if cfg.DryRun && cfg.ArticlesKeep > 0 {
		gone = map[string]bool{}
		for _, f := range files {
			if deletableDay(f, before(now, cfg.ArticlesKeep), today, entriesFrom) {
				gone[f] = true
			}
		}
	}
	for _, f := range files {
		if gone[f] {
			continue
		}
		if _, _, err := st.ReadLog(f, 0, func(l ndjson.Line) error {
			var e struct {
				RawRef ndjson.RawRef `json:"raw_ref"`
			}
			if l.Type == ndjson.TypeEntry && l.Decode(&e) == nil && e.RawRef.FetchID != "" {
				referenced[e.RawRef.FetchID] = true
			}
			return nil
		}); err != nil {
			return sum, err
		}
	}

	// Metadata: events/ days, and fetches/ days less what entries need.
	if cfg.MetadataKeep > 0 {
		cutoff := before(now, cfg.MetadataKeep)
		n, err := pruneDays(st, storage.DirEvents, cutoff, today, cp.EventsFile, del)
		if err != nil {
			return sum, err
		}
		sum.EventFiles = n
		// Aliases are metadata too; the URL index keeps what they
		// recorded, so an alias stays one.
		aliasesFrom := ucp.AliasesFile
		if aliasesFrom != "" && st.Size(aliasesFrom) <= ucp.AliasesOffset {
			aliasesFrom += "\x00" // wholly indexed: it may go, the files after it not
		}
		if sum.AliasFiles, err = pruneDays(st, storage.DirAliases, cutoff, today, aliasesFrom, del); err != nil {
			return sum, err
		}
		if err := pruneFetches(cfg, &sum, referenced, cutoff, today, del); err != nil {
			return sum, err
		}
	}
	if ctx.Err() != nil {
		return sum, ctx.Err()
	}
	if cfg.RawKeep > 0 || cfg.RawKeepPerFeed > 0 {
		if err := pruneRaw(cfg, &sum, referenced, now, del); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

// before is the first day kept by a TTL: day files of earlier days go.
func before(now time.Time, keep time.Duration) string { return storage.Day(now.Add(-keep)) }

// deletableDay reports whether a day file may go: before cutoff, not
// today's, not at or past the file recovery starts from.
func deletableDay(key, cutoff, today, recoverFrom string) bool {
	day := strings.TrimSuffix(key[strings.LastIndexByte(key, '/')+1:], ".ndjson")
	return day < cutoff && day < today && (recoverFrom == "" || key < recoverFrom)
}

func pruneDays(st *storage.Store, dir, cutoff, today, recoverFrom string, del func(string) error) (int, error) {
	files, err := st.DayFiles(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, f := range files {
		if !deletableDay(f, cutoff, today, recoverFrom) {
			continue
		}
		if err := del(f); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// pruneFetches deletes the fetches/ day files before cutoff, keeping, in a
// rewritten file, the records stored entries point at: an entry's lineage
// to its payload survives its metadata. It holds the fetch lock, so no
// fetch record is appended meanwhile.
func pruneFetches(cfg PruneConfig, sum *PruneSummary, referenced map[string]bool, cutoff, today string, del func(string) error) error {
	st := cfg.Store
	unlock, err := st.Lock(storage.FetchLock, true, nil)
	if err != nil {
		return err
	}
	defer unlock()
	files, err := st.DayFiles(storage.DirFetches)
	if err != nil {
		return err
	}
	for _, f := range files {
		if !deletableDay(f, cutoff, today, "") {
			continue
		}
		var keep []byte
		records := 0
		if _, _, err := st.ReadLog(f, 0, func(l ndjson.Line) error {
			var r fetchRef
			if l.Decode(&r) == nil && referenced[r.FetchID] {
				keep = append(append(keep, l.Raw...), '\n')
			} else {
				records++
			}
			return nil
		}); err != nil {
			return err
		}
		if len(keep) == 0 {
			sum.FetchFiles++
			sum.FetchRecords += records
			if err := del(f); err != nil {
				return err
			}
			continue
		}
		if records == 0 {
			continue
		}
		sum.FetchesTrimmed++
		sum.FetchRecords += records
		sum.Bytes += st.Size(f) - int64(len(keep))
		cfg.Log.Info("fetch records kept for the entries that point at them", "file", f, "kept", strings.Count(string(keep), "\n"), "deleted", records)
		if !cfg.DryRun {
			if err := st.WriteFileAtomic(f, keep); err != nil {
				return err
			}
		}
	}
	// The run ledgers: a feed whose last line is of a fetch record gone
	// now has nothing to replay (still under the fetch lock).
	sum.LedgerFeeds, err = st.CompactLedgers(func(fetchID string, fetchedAt time.Time) bool {
		return storage.Day(fetchedAt) < cutoff && !referenced[fetchID]
	}, cfg.DryRun)
	return err
}

// pruneRaw deletes payloads older than RawKeep that are not among the
// RawKeepPerFeed newest of a feed and that no stored entry comes from
// (unless EvenReferenced). A payload no fetch record names (a fetch cut
// short by a crash) is as old as its file.
func pruneRaw(cfg PruneConfig, sum *PruneSummary, referencedFetch map[string]bool, now time.Time, del func(string) error) error {
	st := cfg.Store
	lastUse := map[string]time.Time{} // payload key -> last fetched
	byFeed := map[string][]fetchRef{} // feed id -> its fetches with a payload
	referenced := map[string]bool{}   // payload keys stored entries come from
	files, err := st.DayFiles(storage.DirFetches)
	if err != nil {
		return err
	}
	for _, f := range files {
		if _, _, err := st.ReadLog(f, 0, func(l ndjson.Line) error {
			var r fetchRef
			if l.Type != ndjson.TypeFetch || l.Decode(&r) != nil || r.BodyRef == nil || r.BodyRef.Key == "" {
				return nil
			}
			key := r.BodyRef.Key
			if r.FetchedAt.After(lastUse[key]) {
				lastUse[key] = r.FetchedAt.Time
			}
			byFeed[r.Due.FeedID] = append(byFeed[r.Due.FeedID], r)
			if referencedFetch[r.FetchID] {
				referenced[key] = true
			}
			return nil
		}); err != nil {
			return err
		}
	}
	newest := map[string]bool{} // payload keys among a feed's newest
	if n := cfg.RawKeepPerFeed; n > 0 {
		for _, refs := range byFeed {
			sort.SliceStable(refs, func(i, j int) bool { return refs[i].FetchedAt.After(refs[j].FetchedAt.Time) })
			kept := map[string]bool{}
			for _, r := range refs {
				if len(kept) == n {
					break
				}
				kept[r.BodyRef.Key] = true
				newest[r.BodyRef.Key] = true
			}
		}
	}
	raws, err := st.RawFiles()
	if err != nil {
		return err
	}
	today := storage.Day(now)
	for _, rf := range raws {
		if rf.Day >= today {
			continue // a fetch today may be storing it again
		}
		used, named := lastUse[rf.Key]
		if !named {
			used = rf.ModTime
		}
		if cfg.RawKeep > 0 && !used.Before(now.Add(-cfg.RawKeep)) {
			continue
		}
		if newest[rf.Key] {
			sum.RawLastN++
			continue
		}
		if referenced[rf.Key] && !cfg.EvenReferenced {
			sum.RawReferenced++
			continue
		}
		if err := del(rf.Key); err != nil {
			return err
		}
		sum.Raw++
	}
	return nil
}

// dropURLs takes out of the URL index the links whose first entry prune
// is about to delete: every version of it is in an entries/ day file
// that goes. It runs before the files go, so that the index never names
// an entry that is not stored; a crash in between only leaves entries
// that a later one with their link will not be an alias of.
func dropURLs(st *storage.Store, cutoff, today, recoverFrom string, dry bool) (int, error) {
	files, err := st.DayFiles(storage.DirEntries)
	if err != nil {
		return 0, err
	}
	hashes := map[string]bool{}
	gone := map[ndjson.EntryRef]bool{} // entries with a version in a file that goes
	var kept []string
	for _, f := range files {
		if !deletableDay(f, cutoff, today, recoverFrom) {
			kept = append(kept, f)
			continue
		}
		if _, _, err := st.ReadLog(f, 0, func(l ndjson.Line) error {
			var e struct {
				FeedID        string `json:"feed_id"`
				EntryUID      string `json:"entry_uid"`
				CanonicalLink string `json:"canonical_link"`
			}
			if l.Type != ndjson.TypeEntry || l.Decode(&e) != nil {
				return nil
			}
			if h, ok := storage.URLHash(e.CanonicalLink); ok {
				hashes[h] = true
				gone[ndjson.EntryRef{FeedID: e.FeedID, EntryUID: e.EntryUID}] = true
			}
			return nil
		}); err != nil {
			return 0, err
		}
	}
	if len(gone) == 0 {
		return 0, nil
	}
	// A version in a file that stays keeps the entry stored.
	for _, f := range kept {
		if _, _, err := st.ReadLog(f, 0, func(l ndjson.Line) error {
			var e struct {
				FeedID   string `json:"feed_id"`
				EntryUID string `json:"entry_uid"`
			}
			if l.Type == ndjson.TypeEntry && l.Decode(&e) == nil {
				delete(gone, ndjson.EntryRef{FeedID: e.FeedID, EntryUID: e.EntryUID})
			}
			return nil
		}); err != nil {
			return 0, err
		}
	}
	return st.DropURLs(hashes, func(r ndjson.EntryRef) bool { return gone[r] }, dry)
}

// forgetSeen is the seen-ids TTL (seed 004 §4): it takes out of each
// feed's index the entries last seen before now-SeenKeep, except those
// the feed's latest payload holds. A stored entry's last_seen is when its
// latest version was stored, so an entry a feed serves unchanged for
// years looks old: the latest payload, parsed again, says which are still
// served. A feed whose latest payload cannot be read (pruned, a website
// source, a parse error) keeps all its entries.
func forgetSeen(ctx context.Context, cfg PruneConfig, sum *PruneSummary, now time.Time) error {
	st := cfg.Store
	cutoff := now.Add(-cfg.SeenKeep)
	feeds, err := st.IndexedFeeds()
	if err != nil {
		return err
	}
	old := map[string][]string{} // feed id -> uids past the TTL
	for _, feed := range feeds {
		ix, err := st.SeenEntries(feed)
		if err != nil {
			return err
		}
		if uids := ix.SeenBefore(cutoff); len(uids) > 0 {
			old[feed] = uids
		}
	}
	if len(old) == 0 {
		return nil
	}
	served, err := latestServed(ctx, cfg, old)
	if err != nil {
		return err
	}
	for _, feed := range feeds {
		uids := old[feed]
		if len(uids) == 0 {
			continue
		}
		still, known := served[feed]
		if !known {
			sum.SeenFeedsKept++
			cfg.Log.Info("kept the seen entries of a feed whose latest payload cannot be read", "feed_id", feed, "entries", len(uids))
			continue
		}
		forget := map[string]bool{}
		for _, uid := range uids {
			if !still[uid] {
				forget[uid] = true
			}
		}
		if len(forget) == 0 {
			continue
		}
		sum.SeenForgotten += len(forget)
		cfg.Log.Info("forgot entries not seen within the seen-ids TTL", "feed_id", feed, "entries", len(forget))
		if !cfg.DryRun {
			if err := st.ForgetSeen(feed, forget); err != nil {
				return err
			}
		}
	}
	if cfg.DryRun || sum.SeenForgotten == 0 {
		return nil
	}
	return st.Sync()
}

// latestServed parses again the latest payload of each feed of want (the
// newest fetch record with a body, which must be the body the feed's
// state says it served last) and returns the entry ids each holds, for
// the feeds whose payload parsed.
func latestServed(ctx context.Context, cfg PruneConfig, want map[string][]string) (map[string]map[string]bool, error) {
	st := cfg.Store
	latest := map[string]*ndjson.Fetch{}
	files, err := st.DayFiles(storage.DirFetches)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if _, _, err := st.ReadLog(f, 0, func(l ndjson.Line) error {
			if l.Type != ndjson.TypeFetch {
				return nil
			}
			var r ndjson.Fetch
			if l.Decode(&r) != nil || want[r.Due.FeedID] == nil || r.Page != nil || r.Failed() || r.BodyRef == nil || r.BodyRef.Key == "" {
				return nil
			}
			if prev := latest[r.Due.FeedID]; prev == nil || !r.FetchedAt.Before(prev.FetchedAt.Time) {
				latest[r.Due.FeedID] = &r
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	states, err := st.States()
	if err != nil {
		return nil, err
	}
	var in bytes.Buffer
	for _, feed := range slices.Sorted(maps.Keys(latest)) {
		r := latest[feed]
		if last := states.ByFeed[feed].LastBodySHA256; last != "" && r.BodySHA256 != last {
			continue // the record of the body it served last is gone: unknown
		}
		r.Due.ItemLimit = 0 // every item it served counts
		r.Parse, r.Dedup = nil, nil
		b, err := ndjson.Marshal(r)
		if err != nil {
			return nil, err
		}
		in.Write(b)
	}
	p := cfg.Parser
	if p == nil {
		p = parse.DefaultParser
	}
	var out bytes.Buffer
	err = parse.Run(ctx, parse.Config{In: &in, Out: ndjson.NewWriter(&out), Log: cfg.Log, Store: st, Parser: p})
	if err != nil && !errors.Is(err, pipe.ErrFailed) { // a payload that fails keeps its feed's entries
		return nil, err
	}
	served := map[string]map[string]bool{}
	uids := map[string]map[string]bool{}
	rd := ndjson.NewReader(&out)
	for {
		l, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		switch l.Type {
		case ndjson.TypeEntry:
			var e struct {
				FeedID   string `json:"feed_id"`
				EntryUID string `json:"entry_uid"`
			}
			if l.Decode(&e) == nil {
				if uids[e.FeedID] == nil {
					uids[e.FeedID] = map[string]bool{}
				}
				uids[e.FeedID][e.EntryUID] = true
			}
		case ndjson.TypeFetch:
			var r ndjson.Fetch
			if l.Decode(&r) == nil && r.Parse != nil && r.Parse.Error == "" && r.Due.SourceType != ndjson.SourceWebsite {
				served[r.Due.FeedID] = map[string]bool{}
			}
		}
	}
	for feed := range served {
		for uid := range uids[feed] {
			served[feed][uid] = true
		}
	}
	return served, nil
}
