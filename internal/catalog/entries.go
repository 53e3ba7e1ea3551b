package catalog

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Seen is what the entry index holds of an entry: its latest version and
// its lineage (docs/design.md#deduplication).
type Seen struct {
	UID  string
	Hash string // the latest version's content_hash
	// FirstSeen is when the entry was first seen, LastSeen when last, and
	// SeenCount in how many fetches: every sighting counts, unchanged or
	// not.
	FirstSeen ndjson.Time
	LastSeen  ndjson.Time
	SeenCount int
	Versions  int // versions stored
}

// Index answers questions about stored entries and their links: feed-dedup
// asks what an entry would be, feed-store what to store. It remembers what
// its user added since it was made, which the catalog does not hold yet
// (the entries feed-dedup passed on; feed-store's batch in the making), so
// that a replay of many fetches of one feed yields each version once.
type Index struct {
	c     *Catalog
	mu    sync.Mutex
	added map[entryKey]*known
	// byFeed lists the uids of each feed's entries in added: Forget
	// drops a feed's without going through every feed's.
	byFeed map[string][]string
	links  map[string]*LinkOwners // by link hash: what this run added
	// The latest entries of the feed looked up last, read in one query
	// (preload): a fetch's entries come together, and most are stored.
	preload bool
	preFeed string
	pre     map[string]Seen
	preAll  bool // pre holds every entry of preFeed
}

// preloadLimit is how many of a feed's latest entries a lookup reads at
// once: more than a feed document holds, and few enough for a feed with
// years of entries.
const preloadLimit = 512

type entryKey struct{ feed, uid string }

// known is an entry as the index knows it: its latest version, the hashes
// of the versions added in memory, and those of the versions stored
// (loaded when a changed hash asks for them).
type known struct {
	seen     Seen
	added    []string
	stored   []string
	loaded   bool // stored holds the catalog's hashes
	inMemory bool // the catalog has no row of it
}

// Index returns an empty index over the catalog.
func (c *Catalog) Index() *Index {
	return &Index{c: c, added: map[entryKey]*known{}, byFeed: map[string][]string{}, links: map[string]*LinkOwners{}, preload: true}
}

// logIndex is an index for indexing the store's logs, whose entries come
// in the order they were stored, their feeds interleaved: each is looked
// up alone, as reading its feed's latest would read them for every one.
func (c *Catalog) logIndex() *Index {
	x := c.Index()
	x.preload = false
	return x
}

// Entry statuses Judge returns, besides "" (a version stored already).
const (
	StatusNew     = ndjson.StatusNew
	StatusUpdated = ndjson.StatusUpdated
)

// Judge says what storing this version of an entry would be: "" for a
// version stored already (the latest or an older one coming back),
// "updated" for a new version of a known entry, "new" for an unknown one.
func (x *Index) Judge(ctx context.Context, feedID, uid, hash string) (string, error) {
	k, err := x.lookup(ctx, feedID, uid)
	switch {
	case err != nil:
		return "", err
	case k == nil:
		return StatusNew, nil
	case k.seen.Hash == hash || slices.Contains(k.added, hash):
		return "", nil // the latest, or one added since the index read it
	}
	if !k.loaded && !k.inMemory {
		hashes, err := x.c.versionHashes(ctx, feedID, uid)
		if err != nil {
			return "", err
		}
		x.mu.Lock()
		k.stored, k.loaded = hashes, true
		if _, ok := x.added[entryKey{feedID, uid}]; !ok {
			x.keep(entryKey{feedID, uid}, k) // one lookup found in the preload
		}
		x.mu.Unlock()
	}
	if slices.Contains(k.stored, hash) {
		return "", nil
	}
	return StatusUpdated, nil
}

// Latest returns what the index holds of an entry; ok is false for one
// never stored.
func (x *Index) Latest(ctx context.Context, feedID, uid string) (s Seen, ok bool, err error) {
	k, err := x.lookup(ctx, feedID, uid)
	if err != nil || k == nil {
		return s, false, err
	}
	return k.seen, true, nil
}

// Add records a new version of an entry, s, in memory. The entry was
// judged first (Judge), which looked it up.
func (x *Index) Add(feedID string, s Seen) {
	x.mu.Lock()
	defer x.mu.Unlock()
	key := entryKey{feedID, s.UID}
	k := x.added[key]
	if k == nil {
		k = &known{}
		x.keep(key, k)
	}
	k.added = append(k.added, s.Hash)
	k.seen = s
}

// Forget drops what the index remembers of a feed's entries: once they
// are committed, the catalog holds them.
func (x *Index) Forget(feedID string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, uid := range x.byFeed[feedID] {
		delete(x.added, entryKey{feedID, uid})
	}
	delete(x.byFeed, feedID)
	if x.preFeed == feedID {
		x.preFeed, x.pre = "", nil
	}
}

// keep sets what the index remembers of the entry key; x.mu is held.
func (x *Index) keep(key entryKey, k *known) {
	if _, ok := x.added[key]; !ok {
		x.byFeed[key.feed] = append(x.byFeed[key.feed], key.uid)
	}
	x.added[key] = k
}

func (x *Index) lookup(ctx context.Context, feedID, uid string) (*known, error) {
	x.mu.Lock()
	k, ok := x.added[entryKey{feedID, uid}]
	x.mu.Unlock()
	if ok {
		if k.seen.UID == "" {
			return nil, nil // looked up, not stored, nothing added
		}
		return k, nil
	}
	s, ok, sure, err := x.preloaded(ctx, feedID, uid)
	if err == nil && ok {
		// Not kept: the preload holds it while its feed's entries come
		// (most are stored unchanged, and a run meets thousands), and
		// Judge keeps it once it has read its versions.
		return &known{seen: s}, nil
	}
	if err == nil && !sure {
		s, ok, err = x.c.seen(ctx, feedID, uid)
	}
	if err != nil {
		return nil, err
	}
	if !ok {
		// Not stored: remembered as such, so that what Add adds to it
		// is all there is.
		x.mu.Lock()
		x.keep(entryKey{feedID, uid}, &known{inMemory: true})
		x.mu.Unlock()
		return nil, nil
	}
	k = &known{seen: s}
	x.mu.Lock()
	if prev, ok := x.added[entryKey{feedID, uid}]; ok {
		k = prev // added meanwhile
	} else {
		x.keep(entryKey{feedID, uid}, k)
	}
	x.mu.Unlock()
	return k, nil
}

// preloaded looks the entry up among its feed's latest entries, read
// when the feed is looked up first; ok is false when they do not hold it.
// sure is set when they are all the feed's entries, so that one they do
// not hold was never stored; else it may be older than those (or numbered
// before entries were numbered by feed), and only the catalog can tell.
func (x *Index) preloaded(ctx context.Context, feedID, uid string) (s Seen, ok, sure bool, err error) {
	if !x.preload {
		return s, false, false, nil
	}
	x.mu.Lock()
	if x.preFeed == feedID {
		s, ok = x.pre[uid]
		sure = x.preAll
		x.mu.Unlock()
		return s, ok, sure, nil
	}
	x.mu.Unlock()
	pre, err := x.c.latestOf(ctx, feedID)
	if err != nil {
		return s, false, false, err
	}
	byFeed, err := x.c.numberedByFeed(ctx)
	if err != nil {
		return s, false, false, err
	}
	x.mu.Lock()
	x.preFeed, x.pre, x.preAll = feedID, pre, byFeed && len(pre) < preloadLimit
	s, ok = pre[uid]
	sure = x.preAll
	x.mu.Unlock()
	return s, ok, sure, nil
}

// numberedByFeed reports whether every entry's id is numbered by its feed
// (entriesPerFeed): true for a catalog made since, or reindexed. It is
// asked once; an entry numbered otherwise is never made again.
func (c *Catalog) numberedByFeed(ctx context.Context) (bool, error) {
	c.byFeedOnce.Lock()
	defer c.byFeedOnce.Unlock()
	if c.byFeed != nil {
		return *c.byFeed, nil
	}
	var least sql.NullInt64
	if err := c.readRow(ctx, once, `SELECT min(id) FROM entries`).Scan(&least); err != nil {
		return false, err
	}
	byFeed := !least.Valid || least.Int64 >= entriesPerFeed
	c.byFeed = &byFeed
	return byFeed, nil
}

// latestOf reads the rows of a feed's latest entries (preloadLimit), by
// uid: a range of ids (entriesPerFeed), a page or two.
func (c *Catalog) latestOf(ctx context.Context, feedID string) (map[string]Seen, error) {
	rows, err := c.read(ctx, kept, `SELECT e.entry_uid, e.content_hash, e.first_seen, e.last_seen, e.seen_count, e.versions
		FROM feeds f, entries e WHERE f.feed_id = ? AND e.id > f.key * `+fmt.Sprint(int64(entriesPerFeed))+`
			AND e.id < (f.key + 1) * `+fmt.Sprint(int64(entriesPerFeed))+`
		ORDER BY e.id DESC LIMIT `+fmt.Sprint(preloadLimit), feedID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	seen := map[string]Seen{}
	for rows.Next() {
		var s Seen
		var first, last int64
		if err := rows.Scan(&s.UID, &s.Hash, &first, &last, &s.SeenCount, &s.Versions); err != nil {
			return nil, err
		}
		s.FirstSeen, s.LastSeen = ndjson.At(time.UnixMilli(first).UTC()), ndjson.At(time.UnixMilli(last).UTC())
		seen[s.UID] = s
	}
	return seen, rows.Err()
}

// seen reads an entry's row.
func (c *Catalog) seen(ctx context.Context, feedID, uid string) (s Seen, ok bool, err error) {
	row := c.readRow(ctx, kept, `SELECT e.content_hash, e.first_seen, e.last_seen, e.seen_count, e.versions
		FROM entries e WHERE e.feed_key = (SELECT key FROM feeds WHERE feed_id = ?) AND e.entry_uid = ?`, feedID, uid)
	var first, last sql.NullInt64
	switch err := row.Scan(&s.Hash, &first, &last, &s.SeenCount, &s.Versions); {
	case errors.Is(err, sql.ErrNoRows):
		return s, false, nil
	case err != nil:
		return s, false, err
	}
	s.UID, s.FirstSeen, s.LastSeen = uid, ndjson.At(fromMS(first)), ndjson.At(fromMS(last))
	return s, true, nil
}

// versionHashes are the content hashes of every stored version of an
// entry: those its latest replaced, in entry_versions, and the latest's,
// in its row (migrations/0016_latest_version_in_entries.sql). Not through
// stored_versions: given the entry's id by a subquery, SQLite 3.40 reads
// the view's tables whole.
func (c *Catalog) versionHashes(ctx context.Context, feedID, uid string) ([]string, error) {
	rows, err := c.read(ctx, kept, `SELECT v.content_hash FROM entry_versions v
		WHERE v.entry_id = (SELECT e.id FROM entries e WHERE e.feed_key = (SELECT key FROM feeds WHERE feed_id = :feed) AND e.entry_uid = :uid)
		UNION ALL SELECT e.content_hash FROM entries e
		WHERE e.feed_key = (SELECT key FROM feeds WHERE feed_id = :feed) AND e.entry_uid = :uid AND e.stored_at IS NOT NULL`,
		sql.Named("feed", feedID), sql.Named("uid", uid))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	hashes := []string{}
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			return nil, err
		}
		hashes = append(hashes, h)
	}
	return hashes, rows.Err()
}

// Location is where a line is in one of the store's day files: its day,
// and its offset and length in the file.
type Location struct {
	Day    string
	Offset int64
	Length int64
}

// An entry's id (entries.id) is its feed's key in the high 32 bits and
// the number of the feed's entries stored before it in the low ones:
// the table, ordered by id, keeps each feed's entries together, in the
// order they were stored. The entries one fetch shows, looks up and
// sights are a feed's latest, so they sit on one or two pages instead of
// one page each across the whole table: feed-dedup reads a feed's in one
// range (Index.lookup), and feed-store's sightings write a page or two
// per fetch, not a hundred. (A catalog made before this numbering keeps
// its entries' ids, all below 1<<32; those it stores from then on are
// numbered so, and feed-store reindex numbers all of them.)
const entriesPerFeed = 1 << 32

// feedIDs is the range of the entry ids of the feed key: (lo, hi).
func feedIDs(key int64) (lo, hi int64) { return key * entriesPerFeed, (key + 1) * entriesPerFeed }

// nextEntryID is the id of the feed key's next entry (entriesPerFeed):
// one past the last given in this transaction, or past the feed's last in
// the table.
func (t *Tx) nextEntryID(key int64) (int64, error) {
	lo, hi := feedIDs(key)
	last, ok := t.ids[key]
	if !ok {
		err := t.readRow(kept, `SELECT id FROM entries WHERE id > ? AND id < ? ORDER BY id DESC LIMIT 1`, lo, hi).Scan(&last)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			last = lo
		case err != nil:
			return 0, err
		}
	}
	if last+1 >= hi {
		return 0, fmt.Errorf("catalog: feed %d has %d entries: no id left", key, entriesPerFeed-1)
	}
	t.ids[key] = last + 1
	return last + 1, nil
}

// StoreVersion records a version of an entry, e with its lineage fields
// set (first_seen, last_seen, seen_count), whose line is at loc in
// entries/: the entry's row, made with its first version and describing
// its latest, and, for a new version, the row of the one it replaces
// (migrations/0016_latest_version_in_entries.sql).
func (t *Tx) StoreVersion(e *ndjson.Entry, loc Location) error {
	defer t.within(e.FeedID)()
	key, err := t.feedKey(e.FeedID)
	if err != nil {
		return err
	}
	// A new entry (most versions stored are) is inserted first, a new
	// version of a stored one updated first; each falls back on the other
	// when the catalog says otherwise (a replay, a catch-up).
	var id, searchKey int64
	inserted, updated := false, false
	if e.Status != ndjson.StatusUpdated {
		if id, searchKey, inserted, err = t.insertEntry(key, e, loc); err != nil {
			return err
		}
	}
	if !inserted {
		if id, searchKey, updated, err = t.updateEntry(key, e, loc); err != nil {
			return err
		}
	}
	if !inserted && !updated {
		if id, searchKey, inserted, err = t.insertEntry(key, e, loc); err != nil {
			return err
		}
		if !inserted {
			return fmt.Errorf("catalog: store entry %s: neither stored nor new", e.EntryUID)
		}
	}
	if inserted && searchKey == 0 {
		return nil // no search key was left for it (newSearchKey said so)
	}
	return t.indexText(id, searchKey, inserted, e)
}

// insertEntry makes the row of a new entry, with its search key (0: none,
// fts.go); inserted is false when the catalog holds the entry already.
func (t *Tx) insertEntry(key int64, e *ndjson.Entry, loc Location) (id, searchKey int64, inserted bool, err error) {
	if id, err = t.nextEntryID(key); err != nil {
		return 0, 0, false, err
	}
	ms := unixMS(publishedOr(e))
	searchKey, ok, err := t.newSearchKey(ms)
	if err != nil {
		return 0, 0, false, err
	}
	var sk any // NULL: out of the search index
	if ok {
		sk = searchKey
	}
	r, err := t.write(kept, `INSERT INTO entries (id, feed_key, entry_uid, content_hash, versions, first_seen, last_seen, seen_count,
		published, day, offset, length, search_key, stored_at) VALUES (?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (feed_key, entry_uid) DO NOTHING`,
		id, key, e.EntryUID, e.ContentHash, unixMS(e.FirstSeen.Time), unixMS(e.LastSeen.Time), e.SeenCount, ms,
		loc.Day, loc.Offset, loc.Length, sk, unixMS(e.LastSeen.Time))
	if err != nil {
		return 0, 0, false, err
	}
	n, err := r.RowsAffected()
	if err != nil {
		return 0, 0, false, fmt.Errorf("catalog: store entry %s: %w", e.EntryUID, err)
	}
	if n == 0 {
		t.ids[key] = id - 1 // not used
		if ok {
			t.searchKeys[searchGroup(ms)] = searchKey - 1
		}
		return 0, 0, false, nil
	}
	return id, searchKey, true, nil
}

// updateEntry makes e the latest version of a stored entry, the one its
// row described until then going to entry_versions (a row made before
// migration 16 has it there already: no stored_at), and returns its
// search key (0: none); updated is false when the catalog does not hold
// it.
func (t *Tx) updateEntry(key int64, e *ndjson.Entry, loc Location) (id, searchKey int64, updated bool, err error) {
	if _, err := t.write(kept, `INSERT INTO entry_versions (entry_id, version, content_hash, stored_at, day, offset, length)
		SELECT id, versions, content_hash, stored_at, day, offset, length FROM entries
		WHERE feed_key = ? AND entry_uid = ? AND stored_at IS NOT NULL`, key, e.EntryUID); err != nil {
		return 0, 0, false, err
	}
	var sk sql.NullInt64
	err = t.writeRow(kept, `UPDATE entries SET content_hash = ?, versions = versions + 1, stored_at = ?,
			last_seen = max(last_seen, ?), seen_count = max(seen_count, ?), published = ?, day = ?, offset = ?, length = ?
		WHERE feed_key = ? AND entry_uid = ? RETURNING id, search_key`,
		e.ContentHash, unixMS(e.LastSeen.Time), unixMS(e.LastSeen.Time), e.SeenCount, unixMS(publishedOr(e)), loc.Day, loc.Offset, loc.Length,
		key, e.EntryUID).Scan(&id, &sk)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, 0, false, nil
	case err != nil:
		return 0, 0, false, err
	}
	return id, sk.Int64, true, nil
}

// sightedSQL is Sighted's statement, a constant so that
// TestIndexesEarnTheirWrites reads its plan.
const sightedSQL = `UPDATE entries SET last_seen = ?, seen_count = seen_count + 1
		WHERE feed_key = ? AND last_seen < ? AND entry_uid IN (SELECT value FROM json_each(?))`

// Sighted records that the entries uids of a feed, unchanged, were seen
// again in a fetch at at: their last_seen moves to at and their
// seen_count grows by one. A sighting no later than the last one (a
// replay) changes nothing.
func (t *Tx) Sighted(feedID string, uids []string, at time.Time) error {
	if len(uids) == 0 {
		return nil
	}
	defer t.within(feedID)()
	key, err := t.feedKey(feedID)
	if err != nil {
		return err
	}
	// The uids as one JSON array: one statement, prepared once, for any
	// number of them.
	list, err := json.Marshal(uids)
	if err != nil {
		return err
	}
	_, err = t.write(kept, sightedSQL, unixMS(at), key, unixMS(at), string(list))
	return err
}

// ListedAt is the time the entry e, its lineage fields set, is listed
// and keyed for search by (publishedOr).
func ListedAt(e *ndjson.Entry) time.Time { return publishedOr(e) }

// publishedOr is when the entry was published, or first seen when its
// feed does not say: the time entries are listed by.
func publishedOr(e *ndjson.Entry) time.Time {
	if !e.Published.IsZero() {
		return e.Published.Time
	}
	return e.FirstSeen.Time
}
