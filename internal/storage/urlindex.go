package storage

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/feedpipe/feedpipe/internal/urlnorm"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// The URL index finds, across all feeds, the first entry stored with a
// canonical link, for cross-feed dedup (feed-dedup --cross-feed; seed 001
// §6, seed 000 §12). The link is compared as urlnorm.Key makes it (an
// http/https flip is the same link), and named by the first 16 bytes of its
// SHA-256 (32 hex): no collision in any store one machine holds. Lines
// live in shards by the hash's first hex digits, so that a lookup reads one
// small file whatever the size of the store:
//
//	urls/<2 hex>.tsv           url_hash  feed_id  entry_uid
//	urls/<2 hex>/<2 hex>.tsv   the same, once the first file passed 64 KB
//
// A prefix's lines start in its one file (256 in all); past urlSplitBytes
// they are split into 256 files under a directory of that name, which are
// appended to from then on. At 10 million entries every prefix is split and
// a shard holds about 150 lines (13 KB); a store of 100,000 entries has
// 256 files instead of some 50,000 of two lines each, every one of which
// cost a file creation. A lookup reads both places (the first is gone once
// split), so it never depends on when a split happened.
//
// The first line of a hash is the entry stored first; the lines after it
// are aliases recorded (aliases/), entries of other feeds with the same
// link that were not stored again. New lines go first to one log,
// urls/log.tsv (a single append per batch: creating a shard file per new
// entry costs too much), which a lookup reads whole, once; when it passes
// urlLogMax lines feed-store moves them to their shards. feed-store writes it, under the store
// lock, after the entries and aliases it describes; urls/checkpoint.json
// says how far into entries/ and aliases/ it is complete, and
// CatchUpURLs adds what a crash kept from being written.
const (
	DirURLs           = "urls"
	DirAliases        = "aliases"
	urlsCheckpointKey = DirURLs + "/checkpoint.json"
	urlLogKey         = DirURLs + "/log.tsv"
)

// urlLogMax is how many lines urls/log.tsv may hold before they are moved
// to their shards: about 2 MB, read in a few milliseconds. (A variable,
// as urlSplitBytes, for tests.)
var urlLogMax = 20000

// urlSplitBytes is the size past which a prefix's file is split: a lookup
// reads at most this much (about 750 lines).
var urlSplitBytes int64 = 64 << 10

// EntryRef names one stored entry.
type EntryRef = ndjson.EntryRef

// URLHash is the index's name of a canonical link; ok is false for a link
// that is not an http(s) URL, which the index does not hold.
func URLHash(link string) (hash string, ok bool) {
	k := urlnorm.Key(link)
	if !strings.HasPrefix(k, "//") {
		return "", false
	}
	sum := sha256.Sum256([]byte(k))
	return hex.EncodeToString(sum[:16]), true
}

func urlShard(hash string) string {
	return DirURLs + "/" + hash[:2] + "/" + hash[2:4] + ".tsv"
}

// urlPrefixFile is the file of a hash's prefix until it is split.
func urlPrefixFile(hash string) string { return DirURLs + "/" + hash[:2] + ".tsv" }

// urlShards are the files a hash's lines may be in, oldest lines first.
func urlShards(hash string) [2]string { return [2]string{urlPrefixFile(hash), urlShard(hash)} }

// URLIndex looks links up in the store's URL index and queues additions
// to it. It reads a shard for each lookup and keeps only what this process
// added, so its memory does not grow with the store. It is not safe for
// concurrent use.
type URLIndex struct {
	s        *Store
	readOnly bool                  // additions are for this process's lookups only
	added    map[string][]EntryRef // by hash: first, then aliases, added here
	pending  []byte                // lines not yet written to the log
	buf      []byte                // the last shard read
	shards   map[string]bool       // the writer's listing of urls/, once read
	logged   map[string][]EntryRef // urls/log.tsv by hash; nil until read
	logN     int                   // its lines
}

// URLs returns the store's URL index, for its writer.
func (s *Store) URLs() *URLIndex {
	return &URLIndex{s: s, added: map[string][]EntryRef{}}
}

// URLReader returns the store's URL index for a reader (feed-dedup): what
// it adds counts in its own lookups and is never queued for the log, so
// that its memory holds only the additions.
func (s *Store) URLReader() *URLIndex {
	return &URLIndex{s: s, readOnly: true, added: map[string][]EntryRef{}}
}

// URLOwners is what the index knows of one link: the entry stored first
// with it, and the entries recorded as its aliases.
type URLOwners struct {
	First   EntryRef
	Aliases []EntryRef
}

// Known reports whether the link has a first entry.
func (o URLOwners) Known() bool { return o.First.FeedID != "" }

// Has reports whether ref is the link's first entry or one of its aliases.
func (o URLOwners) Has(ref EntryRef) bool {
	if o.First == ref {
		return true
	}
	for _, a := range o.Aliases {
		if a == ref {
			return true
		}
	}
	return false
}

// Lookup returns what the index, and what this process added, hold for a
// URL hash.
func (x *URLIndex) Lookup(hash string) (URLOwners, error) {
	var o URLOwners
	add := func(r EntryRef) {
		if !o.Known() {
			o.First = r
		} else if !o.Has(r) {
			o.Aliases = append(o.Aliases, r)
		}
	}
	prefix := []byte(hash + "\t")
	for i, key := range urlShards(hash) {
		if !x.mayExist(hash[:2], i == 1) {
			continue
		}
		b, err := x.read(key)
		if err != nil {
			return o, err
		}
		for len(b) > 0 {
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				break // a torn last line
			}
			line := b[:i]
			b = b[i+1:]
			if !bytes.HasPrefix(line, prefix) {
				continue
			}
			f := strings.Split(string(line[len(prefix):]), "\t")
			if len(f) == 2 && f[0] != "" && f[1] != "" {
				add(EntryRef{FeedID: f[0], EntryUID: f[1]})
			}
		}
	}
	var err error
	if x.logged == nil {
		x.logged = map[string][]EntryRef{}
		if x.logN, err = x.s.readLedger(urlLogKey, func(f []string) {
			if len(f) == 3 && len(f[0]) == 32 && f[1] != "" && f[2] != "" {
				x.logged[f[0]] = append(x.logged[f[0]], EntryRef{FeedID: f[1], EntryUID: f[2]})
			}
		}); err != nil {
			return o, err
		}
	}
	for _, r := range x.logged[hash] {
		add(r)
	}
	for _, r := range x.added[hash] {
		add(r)
	}
	return o, nil
}

// mayExist reports whether a prefix's file (or, when split, its directory)
// may exist. The writer lists urls/ once: nothing but its own merges
// changes the shards while it holds the lock (MergeURLLog runs before a
// run's writer is made, and after CatchUpURLs's is done with), and a
// lookup of a link no
// shard holds (every new entry's) then costs no failed opens. A reader
// cannot know that feed-store did not merge since, so it always looks.
func (x *URLIndex) mayExist(prefix string, split bool) bool {
	if x.readOnly {
		return true
	}
	if x.shards == nil {
		names, err := x.s.list(DirURLs)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return true // unknown: look
		}
		x.shards = map[string]bool{}
		for _, name := range names {
			x.shards[name] = true
		}
	}
	if split {
		return x.shards[prefix]
	}
	return x.shards[prefix+".tsv"]
}

// read returns the shard file key, nil if there is none, in a buffer
// that the next read reuses: a lookup reads up to urlSplitBytes, and a
// fresh buffer each time was most of a cycle's garbage.
func (x *URLIndex) read(key string) ([]byte, error) {
	f, err := x.s.open(key)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	defer f.Close()
	buf := bytes.NewBuffer(x.buf[:0])
	_, err = buf.ReadFrom(f)
	x.buf = buf.Bytes()
	if err != nil {
		return nil, fmt.Errorf("storage: read %s: %w", key, err)
	}
	return x.buf, nil
}

// Add queues ref as the link's first entry when it has none, or as an
// alias when alias is set, unless the index already holds it. Flush
// writes what was queued.
func (x *URLIndex) Add(hash string, ref EntryRef, alias bool) error {
	if !clean(ref.FeedID) || !clean(ref.EntryUID) {
		return nil
	}
	o, err := x.Lookup(hash)
	if err != nil {
		return err
	}
	x.AddLooked(hash, o, ref, alias)
	return nil
}

// AddLooked is Add for a caller that has just looked hash up and got o,
// so that the shard is not read a second time.
func (x *URLIndex) AddLooked(hash string, o URLOwners, ref EntryRef, alias bool) {
	if !clean(ref.FeedID) || !clean(ref.EntryUID) || o.Has(ref) || o.Known() != alias {
		return
	}
	x.added[hash] = append(x.added[hash], ref)
	if !x.readOnly {
		x.pending = append(x.pending, hash+"\t"+ref.FeedID+"\t"+ref.EntryUID+"\n"...)
	}
}

// Flush appends the queued lines to the log, not synced: the caller syncs
// the store (feed-store's commit does). The caller holds the store lock.
func (x *URLIndex) Flush() error {
	if len(x.pending) == 0 {
		return nil
	}
	if _, err := x.s.AppendLines(urlLogKey, x.pending, Lazy); err != nil {
		return err
	}
	x.pending = x.pending[:0]
	return nil
}

// MergeURLLog moves the lines of urls/log.tsv to their shards once it holds
// more than urlLogMax: the shards are appended to, the prefix files that
// grew past urlSplitBytes are split, all is synced, then the log emptied.
// A crash in between leaves lines in two places, which a lookup reads as
// one. The caller holds the store lock.
func (s *Store) MergeURLLog() error {
	byPrefix := map[string][]byte{}
	n, err := s.readLedger(urlLogKey, func(f []string) {
		if len(f) == 3 && len(f[0]) == 32 {
			byPrefix[f[0][:2]] = append(byPrefix[f[0][:2]], strings.Join(f, "\t")+"\n"...)
		}
	})
	if err != nil || n <= urlLogMax {
		return err
	}
	var split, stale []string // prefixes to split; prefix files a split left behind
	for prefix, data := range byPrefix {
		file := DirURLs + "/" + prefix + ".tsv"
		if s.isDir(DirURLs + "/" + prefix) {
			if err := s.appendToShards(data, DirURLs+"/"+prefix); err != nil {
				return err
			}
			if _, err := s.Stat(file); err == nil {
				stale = append(stale, file) // a crash came between a split and this removal
			}
			continue
		}
		off, err := s.AppendLines(file, data, Lazy)
		if err != nil {
			return err
		}
		if off+int64(len(data)) > urlSplitBytes {
			split = append(split, prefix)
		}
	}
	for _, prefix := range split {
		if err := s.writeSplit(prefix); err != nil {
			return err
		}
	}
	if err := s.Sync(); err != nil {
		return err
	}
	// Each split is complete and durable under its temporary name: only
	// now does it take the prefix's name, and only then does the prefix
	// file go.
	for _, prefix := range split {
		if err := s.rename(DirURLs+"/"+prefix+".split", DirURLs+"/"+prefix); err != nil {
			return fmt.Errorf("storage: split the URL index: %w", err)
		}
		stale = append(stale, DirURLs+"/"+prefix+".tsv")
	}
	if len(split) > 0 {
		if err := s.Sync(); err != nil {
			return err
		}
	}
	for _, file := range stale {
		if err := s.remove(file); err != nil {
			return fmt.Errorf("storage: %w", err)
		}
	}
	return s.WriteFileAtomic(urlLogKey, nil)
}

// writeSplit writes the lines of a prefix's file into its 256 shards under
// urls/<prefix>.split, not synced.
func (s *Store) writeSplit(prefix string) error {
	tmp := DirURLs + "/" + prefix + ".split"
	if err := s.removeAll(tmp); err != nil { // what a crash left of an earlier try
		return fmt.Errorf("storage: %w", err)
	}
	data, err := s.ReadFile(DirURLs + "/" + prefix + ".tsv")
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i+1] // without a torn last line
	} else {
		data = nil
	}
	return s.appendToShards(data, tmp)
}

// appendToShards appends lines, all of one prefix, to their shards in dir
// (dir/<hex 3-4>.tsv), in the order given, not synced.
func (s *Store) appendToShards(lines []byte, dir string) error {
	byShard := map[string][]byte{}
	for len(lines) > 0 {
		i := bytes.IndexByte(lines, '\n')
		if i < 0 {
			break
		}
		line := lines[:i+1]
		lines = lines[i+1:]
		if bytes.IndexByte(line, '\t') == 32 {
			key := dir + "/" + string(line[2:4]) + ".tsv"
			byShard[key] = append(byShard[key], line...)
		}
	}
	for key, data := range byShard {
		if _, err := s.AppendLines(key, data, Lazy); err != nil {
			return err
		}
	}
	return nil
}

// URLCheckpoint is how far into entries/ and aliases/ the URL index is
// complete.
type URLCheckpoint struct {
	File          string `json:"file"` // in entries/
	Offset        int64  `json:"offset"`
	AliasesFile   string `json:"aliases_file"`
	AliasesOffset int64  `json:"aliases_offset"`
	// Partial: the index was started on a store that had entries already
	// (made before the URL index existed), which it does not hold until
	// feed-store reindex builds it from entries/ (RebuildURLs).
	Partial bool `json:"partial,omitempty"`
}

// CatchUpURLs adds to the URL index the entries and aliases stored past its
// checkpoint (those a crash kept from being indexed), and moves the
// checkpoint to the end. A store without a URL checkpoint (made before the
// URL index existed) starts it at the end of entries/ and aliases/, marked
// partial when entries/ holds any: older entries are not in the index
// until feed-store reindex (RebuildURLs), which would cost a stage's
// start-up a read of all of entries/. The caller holds the store lock.
func (s *Store) CatchUpURLs() error {
	cp, exists, err := s.urlCheckpoint()
	if err != nil {
		return err
	}
	x := s.URLs()
	end := cp
	// Without a checkpoint, the logs are only read to find their ends; an
	// entry line among them means the index starts partial.
	read := func(fn func(string, ndjson.Line) error) func(string, ndjson.Line) error {
		if exists {
			return fn
		}
		return func(key string, _ ndjson.Line) error {
			end.Partial = end.Partial || strings.HasPrefix(key, DirEntries+"/")
			return nil
		}
	}
	end.File, end.Offset, err = s.ReadLogsSince(DirEntries, cp.File, cp.Offset, read(func(_ string, l ndjson.Line) error {
		var e ndjson.Entry
		if l.Type != ndjson.TypeEntry || l.Decode(&e) != nil {
			return nil
		}
		if h, ok := URLHash(e.CanonicalLink); ok {
			return x.Add(h, EntryRef{FeedID: e.FeedID, EntryUID: e.EntryUID}, false)
		}
		return nil
	}))
	if err != nil {
		return err
	}
	end.AliasesFile, end.AliasesOffset, err = s.ReadLogsSince(DirAliases, cp.AliasesFile, cp.AliasesOffset, read(func(_ string, l ndjson.Line) error {
		var a ndjson.Alias
		if l.Type != ndjson.TypeAlias || l.Decode(&a) != nil {
			return nil
		}
		if h, ok := URLHash(a.CanonicalLink); ok {
			if err := x.Add(h, a.AliasOf, false); err != nil {
				return err
			}
			return x.Add(h, EntryRef{FeedID: a.FeedID, EntryUID: a.EntryUID}, true)
		}
		return nil
	}))
	if err != nil {
		return err
	}
	if exists && end == cp {
		return s.MergeURLLog()
	}
	if err := x.Flush(); err != nil {
		return err
	}
	if len(x.added) > 0 {
		if err := s.Sync(); err != nil {
			return err
		}
	}
	if err := s.setURLCheckpoint(end); err != nil {
		return err
	}
	return s.MergeURLLog()
}

// SaveURLCheckpoint records that the URL index covers entries/ and
// aliases/ as far as they go now: feed-store calls it at the end of a run,
// once what it indexed is synced. The caller holds the store lock.
func (s *Store) SaveURLCheckpoint() error {
	old, _, err := s.urlCheckpoint()
	if err != nil {
		return err
	}
	cp := URLCheckpoint{Partial: old.Partial}
	for _, log := range []struct {
		dir  string
		file *string
		off  *int64
	}{{DirEntries, &cp.File, &cp.Offset}, {DirAliases, &cp.AliasesFile, &cp.AliasesOffset}} {
		files, err := s.DayFiles(log.dir)
		if err != nil {
			return err
		}
		if len(files) == 0 {
			continue
		}
		last := files[len(files)-1]
		end, err := s.completeEnd(last)
		if err != nil {
			return err
		}
		*log.file, *log.off = last, end
	}
	return s.setURLCheckpoint(cp)
}

// completeEnd is where the last complete line of a log ends: its size,
// unless it ends in a torn line.
func (s *Store) completeEnd(key string) (int64, error) {
	f, err := s.openAppend(key)
	if err != nil {
		return 0, fmt.Errorf("storage: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return 0, err
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, st.Size()-1); err != nil {
		return 0, fmt.Errorf("storage: %w", err)
	}
	if last[0] == '\n' {
		return st.Size(), nil
	}
	return cutTornTail(f, key) // nothing else appends: the caller holds the lock
}

func (s *Store) urlCheckpoint() (cp URLCheckpoint, exists bool, err error) {
	b, err := s.ReadFile(urlsCheckpointKey)
	if errors.Is(err, os.ErrNotExist) {
		return cp, false, nil
	}
	if err != nil {
		return cp, false, fmt.Errorf("storage: %w", err)
	}
	if json.Unmarshal(b, &cp) != nil {
		return URLCheckpoint{}, true, nil // unreadable: catch up from the start
	}
	return cp, true, nil
}

func (s *Store) setURLCheckpoint(cp URLCheckpoint) error {
	b, err := json.Marshal(cp)
	if err != nil {
		return err
	}
	return s.WriteFileAtomic(urlsCheckpointKey, append(b, '\n'))
}

// AppendAliases appends alias records to aliases/ by the day of at, not
// synced (the caller's commit syncs the store). The caller holds the store
// lock.
func (s *Store) AppendAliases(key string, aliases []ndjson.Alias) error {
	if len(aliases) == 0 {
		return nil
	}
	data, err := encodeLines(aliases)
	if err != nil {
		return err
	}
	_, err = s.AppendLines(key, data, Lazy)
	return err
}
