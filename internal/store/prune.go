package store

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"time"

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
	Bytes          int64 // bytes freed
	DryRun         bool
}

func (s PruneSummary) String() string {
	verb := "deleted"
	if s.DryRun {
		verb = "would delete"
	}
	return fmt.Sprintf("%s %d raw payloads (kept %d referenced by entries, %d as a feed's newest), %d entries files, %d events files, %d fetch records (%d fetches files deleted, %d trimmed); %s bytes freed",
		verb, s.Raw, s.RawReferenced, s.RawLastN, s.EntryFiles, s.EventFiles, s.FetchRecords, s.FetchFiles, s.FetchesTrimmed, strconv.FormatInt(s.Bytes, 10))
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

	// Articles: whole days of entries/.
	if cfg.ArticlesKeep > 0 {
		n, err := pruneDays(st, storage.DirEntries, before(now, cfg.ArticlesKeep), today, cp.File, del)
		if err != nil {
			return sum, err
		}
		sum.EntryFiles = n
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
			if deletableDay(f, before(now, cfg.ArticlesKeep), today, cp.File) {
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
