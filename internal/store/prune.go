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

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/parse"
	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// PruneConfig is what feed-store prune deletes. A zero duration or count
// keeps that kind of data forever: by default nothing goes.
type PruneConfig struct {
	Store   *storedir.Store
	Catalog *catalog.Catalog // the store's catalog; nil: opened for the run
	Out     io.Writer        // the key of each file deleted (or, dry, to delete), one per line
	Log     *slog.Logger
	Now     func() time.Time // default time.Now
	// NoWait fails at once, instead of waiting, when a feed-store holds
	// the store's lock.
	NoWait bool
	DryRun bool

	// Raw payloads (docs/design.md#retention): one goes when it is older than RawKeep
	// (last fetched then) and is not among the RawKeepPerFeed newest of
	// any feed that fetched it. Raw pruning is on when either is set.
	RawKeep        time.Duration
	RawKeepPerFeed int
	// EvenReferenced deletes payloads that stored entries come from too.
	EvenReferenced bool

	// The retention of docs/design.md#retention, by whole days of the
	// day files. Metadata is
	// fetches/ (less the records stored entries point at), events/,
	// aliases/ and decisions/; articles are entries/.
	MetadataKeep time.Duration
	ArticlesKeep time.Duration
	// SeenKeep is the seen-ids TTL: an entry last seen longer ago leaves
	// the catalog's entry index, so that it would be stored again, as
	// new, if it came back; never one the feed's latest payload holds
	// (that would come back at once).
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
	DecisionFiles  int   // decisions/ day files
	Entries        int   // entries that left the index, every version of them deleted
	URLs           int   // links dropped from the index, their first entry gone
	SeenForgotten  int   // entries forgotten by the seen-ids TTL
	SeenFeedsKept  int   // feeds with entries past the TTL kept: their latest payload unreadable
	MediaForgotten int   // media rows forgotten with their entries
	MediaFiles     int   // media files (stored and partial) deleted
	MediaRecords   int   // media records deleted
	Bytes          int64 // bytes freed
	DryRun         bool
}

func (s PruneSummary) String() string {
	verb := "deleted"
	if s.DryRun {
		verb = "would delete"
	}
	media := ""
	if s.MediaForgotten+s.MediaFiles+s.MediaRecords > 0 {
		media = fmt.Sprintf(", %d media files (%d of entries gone), %d media records", s.MediaFiles, s.MediaForgotten, s.MediaRecords)
	}
	return fmt.Sprintf("%s %d raw payloads (kept %d referenced by entries, %d as a feed's newest), %d entries files (%d entries, %d links), %d events files, %d aliases files, %d decisions files, %d fetch records (%d fetches files deleted, %d trimmed), %d seen entries (kept all of %d feeds whose latest payload is unreadable)%s; %s bytes freed",
		verb, s.Raw, s.RawReferenced, s.RawLastN, s.EntryFiles, s.Entries, s.URLs, s.EventFiles, s.AliasFiles, s.DecisionFiles, s.FetchRecords, s.FetchFiles, s.FetchesTrimmed,
		s.SeenForgotten, s.SeenFeedsKept, media, strconv.FormatInt(s.Bytes, 10))
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
	cat, done, err := catalog.Use(ctx, cfg.Catalog, st, cfg.Log)
	if err != nil {
		return sum, err
	}
	defer done()
	cfg.Catalog = cat
	unlock, err := st.Lock(storedir.StoreLock, !cfg.NoWait, func() {
		cfg.Log.Info("waiting for the store lock: a feed-store is writing", "lock", st.Path(storedir.StoreLock))
	})
	if err != nil {
		return sum, err
	}
	defer unlock()
	now := cfg.Now()
	today := storedir.Day(now)
	// The files past the catalog's checkpoints are read again when the
	// next feed-store catches up: they stay.
	var cp, events, aliases catalog.Checkpoint
	for tap, dst := range map[string]*catalog.Checkpoint{catalog.TapEntries: &cp, catalog.TapEvents: &events, catalog.TapAliases: &aliases} {
		if *dst, err = cat.Checkpoint(ctx, tap); err != nil {
			return sum, err
		}
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

	entriesFrom := cp.File // recovery reads entries/ from here

	// Articles: whole days of entries/, out of the index first, so that
	// it never names an entry that is not stored.
	if cfg.ArticlesKeep > 0 {
		cutoff := before(now, cfg.ArticlesKeep)
		if entriesFrom != "" && storedir.KeyDay(entriesFrom) < cutoff {
			cutoff = storedir.KeyDay(entriesFrom)
		}
		cutoff = min(cutoff, today)
		if sum.Entries, sum.URLs, err = cat.ForgetEntryDays(ctx, cutoff, cfg.DryRun); err != nil {
			return sum, err
		}
		n, err := pruneDays(st, storedir.DirEntries, cutoff, today, entriesFrom, del)
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
	// The media of the entries gone go with them.
	if cfg.ArticlesKeep > 0 || cfg.SeenKeep > 0 {
		cutoff := ""
		if cfg.ArticlesKeep > 0 {
			cutoff = min(before(now, cfg.ArticlesKeep), today)
			if entriesFrom != "" && storedir.KeyDay(entriesFrom) < cutoff {
				cutoff = storedir.KeyDay(entriesFrom)
			}
		}
		if err := pruneMedia(ctx, cfg, &sum, cutoff); err != nil {
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
	files, err := st.DayFiles(storedir.DirEntries)
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
		n, err := pruneDays(st, storedir.DirEvents, cutoff, today, events.File, del)
		if err != nil {
			return sum, err
		}
		sum.EventFiles = n
		// Aliases are metadata too; the catalog keeps what they
		// recorded, so an alias stays one.
		aliasesFrom := aliases.File
		if aliasesFrom != "" && st.Size(aliasesFrom) <= aliases.Offset {
			aliasesFrom += "\x00" // wholly indexed: it may go, the files after it not
		}
		if sum.AliasFiles, err = pruneDays(st, storedir.DirAliases, cutoff, today, aliasesFrom, del); err != nil {
			return sum, err
		}
		// Nothing is rebuilt from the decisions: no file recovery reads.
		if sum.DecisionFiles, err = pruneDays(st, storedir.DirDecisions, cutoff, today, "", del); err != nil {
			return sum, err
		}
		if err := pruneFetches(ctx, cfg, &sum, referenced, cutoff, today, del); err != nil {
			return sum, err
		}
		if err := pruneMediaRecords(ctx, cfg, &sum, cutoff, today); err != nil {
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
func before(now time.Time, keep time.Duration) string { return storedir.Day(now.Add(-keep)) }

// deletableDay reports whether a day file may go: before cutoff, not
// today's, not at or past the file recovery starts from.
func deletableDay(key, cutoff, today, recoverFrom string) bool {
	day := storedir.KeyDay(key)
	return day < cutoff && day < today && (recoverFrom == "" || key < recoverFrom)
}

func pruneDays(st *storedir.Store, dir, cutoff, today, recoverFrom string, del func(string) error) (int, error) {
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
func pruneFetches(ctx context.Context, cfg PruneConfig, sum *PruneSummary, referenced map[string]bool, cutoff, today string, del func(string) error) error {
	st, cat := cfg.Store, cfg.Catalog
	unlock, err := st.Lock(storedir.FetchLock, true, nil)
	if err != nil {
		return err
	}
	defer unlock()
	// The catalog indexes fetches/ to its end before any of it changes.
	if err := cat.CatchUpFetches(ctx); err != nil {
		return err
	}
	files, err := st.DayFiles(storedir.DirFetches)
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
		if records == 0 {
			continue
		}
		if len(keep) == 0 {
			sum.FetchFiles++
			sum.FetchRecords += records
			if err := del(f); err != nil {
				return err
			}
		} else {
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
		if !cfg.DryRun {
			// The records left moved, the others are gone.
			if err := cat.ReindexFetchFile(ctx, f); err != nil {
				return err
			}
		}
	}
	return nil
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
	files, err := st.DayFiles(storedir.DirFetches)
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
	today := storedir.Day(now)
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

// forgetSeen is the seen-ids TTL (docs/design.md#retention): it takes out of the index
// the entries last seen before now-SeenKeep, except those the feed's
// latest payload holds. An entry's last_seen moves with every fetch that
// shows it, but a feed answering 304, or with the same body, for months
// shows nothing: the latest payload, parsed again, says which entries are
// still served. A feed whose latest payload cannot be read (pruned, a
// website source, a parse error) keeps all its entries.
func forgetSeen(ctx context.Context, cfg PruneConfig, sum *PruneSummary, now time.Time) error {
	cat := cfg.Catalog
	old, err := cat.SeenBefore(ctx, now.Add(-cfg.SeenKeep))
	if err != nil || len(old) == 0 {
		return err
	}
	served, err := latestServed(ctx, cfg, old)
	if err != nil {
		return err
	}
	forgotten := map[string][]string{}
	for _, feed := range slices.Sorted(maps.Keys(old)) {
		uids := old[feed]
		still, known := served[feed]
		if !known {
			sum.SeenFeedsKept++
			cfg.Log.Info("kept the seen entries of a feed whose latest payload cannot be read", "feed_id", feed, "entries", len(uids))
			continue
		}
		var forget []string
		for _, uid := range uids {
			if !still[uid] {
				forget = append(forget, uid)
			}
		}
		if len(forget) == 0 {
			continue
		}
		sum.SeenForgotten += len(forget)
		forgotten[feed] = forget
	}
	if !cfg.DryRun {
		if err := cat.ForgetEntries(ctx, forgotten); err != nil {
			return err
		}
	}
	msg := "forgot entries not seen within the seen-ids TTL"
	if cfg.DryRun {
		msg = "would forget entries not seen within the seen-ids TTL (--dry-run)"
	}
	for _, feed := range slices.Sorted(maps.Keys(forgotten)) {
		cfg.Log.Info(msg, "feed_id", feed, "entries", len(forgotten[feed]))
	}
	return nil
}

// latestServed parses again the latest payload of each feed of want (its
// newest fetch with a body, which must be the body the feed's state says
// it served last) and returns the entry ids each holds, for the feeds
// whose payload parsed.
func latestServed(ctx context.Context, cfg PruneConfig, want map[string][]string) (map[string]map[string]bool, error) {
	st, cat := cfg.Store, cfg.Catalog
	var in bytes.Buffer
	for _, feed := range slices.Sorted(maps.Keys(want)) {
		ref, ok, err := cat.LatestPayload(ctx, feed)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		r, ok, err := cat.FetchRecord(ctx, ref.FetchID)
		if err != nil || !ok || r.Page != nil || r.Failed() {
			continue // its record is gone, or not the feed's own: unknown
		}
		fs, _, err := cat.State(ctx, feed)
		if err != nil {
			return nil, err
		}
		if last := fs.LastBodySHA256; last != "" && r.BodySHA256 != last {
			continue // the record of the body it served last is gone: unknown
		}
		r.Due.ItemLimit = 0 // every item it served counts
		r.Parse, r.Dedup = nil, nil
		b, err := ndjson.Marshal(&r)
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
	err := parse.Run(ctx, parse.Config{In: &in, Out: ndjson.NewWriter(&out), Log: cfg.Log, Store: st, Parser: p})
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
