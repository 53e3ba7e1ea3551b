package storage

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// URLIndexPartial reports whether the URL index lacks the entries stored
// before it existed (feed-store reindex builds them in).
func (s *Store) URLIndexPartial() (bool, error) {
	cp, _, err := s.urlCheckpoint()
	return cp.Partial, err
}

// DropURLs takes out of the URL index every link among hashes whose first
// entry gone says is no longer stored (feed-store prune --articles-keep
// deleted all its versions), with the aliases recorded of it: they are
// aliases of nothing now, so the next entry with the link is stored, as
// the first again. It returns how many links it dropped; with dry set it
// only counts. The caller holds the store lock.
func (s *Store) DropURLs(hashes map[string]bool, gone func(EntryRef) bool, dry bool) (int, error) {
	if len(hashes) == 0 {
		return 0, nil
	}
	first := map[string]EntryRef{} // of each hash asked about
	var shardLines = map[string][][]string{}
	byShard := map[string]bool{}
	for h := range hashes {
		if len(h) == 32 {
			for _, key := range urlShards(h) {
				byShard[key] = true
			}
		}
	}
	keys := make([]string, 0, len(byShard))
	for k := range byShard {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	note := func(f []string) {
		if len(f) == 3 && hashes[f[0]] && f[1] != "" && f[2] != "" {
			if _, ok := first[f[0]]; !ok {
				first[f[0]] = EntryRef{FeedID: f[1], EntryUID: f[2]}
			}
		}
	}
	for _, key := range keys {
		if _, err := s.readLedger(key, func(f []string) {
			shardLines[key] = append(shardLines[key], f)
			note(f)
		}); err != nil {
			return 0, err
		}
	}
	var logLines [][]string
	if _, err := s.readLedger(urlLogKey, func(f []string) {
		logLines = append(logLines, f)
		note(f)
	}); err != nil {
		return 0, err
	}
	drop := map[string]bool{}
	for h, r := range first {
		if gone(r) {
			drop[h] = true
		}
	}
	if dry || len(drop) == 0 {
		return len(drop), nil
	}
	rewrite := func(key string, lines [][]string) error {
		var buf bytes.Buffer
		n := 0
		for _, f := range lines {
			if len(f) > 0 && drop[f[0]] {
				continue
			}
			buf.WriteString(strings.Join(f, "\t") + "\n")
			n++
		}
		if n == len(lines) {
			return nil
		}
		return s.writeFileAtomic(key, buf.Bytes(), Lazy)
	}
	// A shard that does not exist read as no lines, and stays absent.
	for _, key := range keys {
		if err := rewrite(key, shardLines[key]); err != nil {
			return 0, err
		}
	}
	if err := rewrite(urlLogKey, logLines); err != nil {
		return 0, err
	}
	return len(drop), s.Sync()
}

// RebuildURLs builds the URL index afresh from entries/ and aliases/, as
// CatchUpURLs would have built it had it existed from the start: the first
// entry stored with a link, then the aliases recorded of it (an alias whose
// first entry is no longer stored is left out). It sorts in 256 buckets on
// disk (urls/rebuild/), so its memory is that of one bucket: about 40,000
// links at 10 million entries. Readers see each shard replaced whole. It
// returns the links and aliases indexed. The caller holds the store lock.
func (s *Store) RebuildURLs() (links, aliases int, err error) {
	tmp := DirURLs + "/rebuild"
	if err := s.removeAll(tmp); err != nil {
		return 0, 0, fmt.Errorf("storage: %w", err)
	}
	if err := s.mkdirAll(tmp); err != nil {
		return 0, 0, fmt.Errorf("storage: %w", err)
	}
	defer s.removeAll(tmp)
	type bucket struct {
		f *os.File
		w *bufio.Writer
	}
	var buckets [256]*bucket
	put := func(hash, kind string, r EntryRef) error {
		if !clean(r.FeedID) || !clean(r.EntryUID) {
			return nil
		}
		i, _ := strconv.ParseUint(hash[:2], 16, 8) // URLHash makes hex
		b := buckets[i]
		if b == nil {
			f, err := s.create(fmt.Sprintf("%s/%02x", tmp, i))
			if err != nil {
				return fmt.Errorf("storage: %w", err)
			}
			b = &bucket{f, bufio.NewWriterSize(f, 16<<10)}
			buckets[i] = b
		}
		_, err := b.w.WriteString(hash + "\t" + kind + "\t" + r.FeedID + "\t" + r.EntryUID + "\n")
		return err
	}
	defer func() {
		for _, b := range buckets {
			if b != nil {
				b.f.Close()
			}
		}
	}()
	// Every entry, in the order stored ("e"); then every alias ("a").
	cp := URLCheckpoint{}
	for _, log := range []struct {
		dir  string
		file *string
		off  *int64
	}{{DirEntries, &cp.File, &cp.Offset}, {DirAliases, &cp.AliasesFile, &cp.AliasesOffset}} {
		files, err := s.DayFiles(log.dir)
		if err != nil {
			return 0, 0, err
		}
		for _, file := range files {
			end, _, err := s.ReadLog(file, 0, func(l ndjson.Line) error {
				switch {
				case log.dir == DirEntries && l.Type == ndjson.TypeEntry:
					var e ndjson.Entry
					if l.Decode(&e) != nil {
						return nil
					}
					if h, ok := URLHash(e.CanonicalLink); ok {
						return put(h, "e", EntryRef{FeedID: e.FeedID, EntryUID: e.EntryUID})
					}
				case log.dir == DirAliases && l.Type == ndjson.TypeAlias:
					var a ndjson.Alias
					if l.Decode(&a) != nil {
						return nil
					}
					if h, ok := URLHash(a.CanonicalLink); ok {
						return put(h, "a", EntryRef{FeedID: a.FeedID, EntryUID: a.EntryUID})
					}
				}
				return nil
			})
			if err != nil {
				return 0, 0, err
			}
			*log.file, *log.off = file, end
		}
	}
	written := map[string]bool{} // shard keys
	for i, b := range buckets {
		if b == nil {
			continue
		}
		if err := b.w.Flush(); err != nil {
			return 0, 0, fmt.Errorf("storage: rebuild the URL index: %w", err)
		}
		l, a, err := s.rebuildBucket(fmt.Sprintf("%s/%02x", tmp, i), written)
		if err != nil {
			return 0, 0, err
		}
		links += l
		aliases += a
	}
	// Shards of the old index that hold no link now, and its prefix files
	// (the rebuilt index is split throughout) with what a crash left of a
	// split.
	old, err := s.glob(DirURLs + "/??/??.tsv")
	if err != nil {
		return 0, 0, err
	}
	prefixFiles, _ := s.glob(DirURLs + "/??.tsv")
	splits, _ := s.glob(DirURLs + "/??.split")
	for _, key := range append(old, append(prefixFiles, splits...)...) {
		if !written[key] {
			if err := s.removeAll(key); err != nil {
				return 0, 0, fmt.Errorf("storage: %w", err)
			}
		}
	}
	if err := s.Sync(); err != nil {
		return 0, 0, err
	}
	if err := s.WriteFileAtomic(urlLogKey, nil); err != nil {
		return 0, 0, err
	}
	return links, aliases, s.setURLCheckpoint(cp)
}

// rebuildBucket writes the shards of one bucket of RebuildURLs.
func (s *Store) rebuildBucket(key string, written map[string]bool) (links, aliases int, err error) {
	data, err := s.ReadFile(key)
	if err != nil {
		return 0, 0, fmt.Errorf("storage: %w", err)
	}
	type owners struct {
		first   EntryRef
		aliases []EntryRef
	}
	byHash := map[string]*owners{}
	var order []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			continue
		}
		r := EntryRef{FeedID: f[2], EntryUID: f[3]}
		o := byHash[f[0]]
		switch f[1] {
		case "e":
			if o == nil {
				byHash[f[0]] = &owners{first: r}
				order = append(order, f[0])
			}
		case "a":
			// An entry stored with the link must come first, or the
			// alias is of nothing (its first entry was pruned).
			if o != nil && o.first != r && !containsRef(o.aliases, r) {
				o.aliases = append(o.aliases, r)
			}
		}
	}
	byShard := map[string][]byte{}
	for _, h := range order {
		o := byHash[h]
		key := urlShard(h)
		byShard[key] = append(byShard[key], h+"\t"+o.first.FeedID+"\t"+o.first.EntryUID+"\n"...)
		links++
		for _, a := range o.aliases {
			byShard[key] = append(byShard[key], h+"\t"+a.FeedID+"\t"+a.EntryUID+"\n"...)
			aliases++
		}
	}
	for key, b := range byShard {
		if err := s.writeFileAtomic(key, b, Lazy); err != nil {
			return 0, 0, err
		}
		written[key] = true
	}
	return links, aliases, nil
}

func containsRef(refs []EntryRef, r EntryRef) bool {
	for _, x := range refs {
		if x == r {
			return true
		}
	}
	return false
}

// URLCheckpointAt returns the URL index's checkpoint; zero if there is
// none.
func (s *Store) URLCheckpointAt() (URLCheckpoint, error) {
	cp, _, err := s.urlCheckpoint()
	return cp, err
}
