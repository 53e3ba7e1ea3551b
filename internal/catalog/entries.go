package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Seen is what the entry index holds of an entry: its latest version and
// its lineage (seed 000 §4.4).
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
	links map[string]*LinkOwners // by link hash: what this run added
}

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
	return &Index{c: c, added: map[entryKey]*known{}, links: map[string]*LinkOwners{}}
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
		return "", nil
	}
	if !k.loaded && !k.inMemory {
		hashes, err := x.c.versionHashes(ctx, feedID, uid)
		if err != nil {
			return "", err
		}
		x.mu.Lock()
		k.stored, k.loaded = hashes, true
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
		x.added[key] = k
	}
	k.added = append(k.added, s.Hash)
	k.seen = s
}

// Forget drops what the index remembers of a feed's entries: once they
// are committed, the catalog holds them.
func (x *Index) Forget(feedID string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for k := range x.added {
		if k.feed == feedID {
			delete(x.added, k)
		}
	}
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
	s, ok, err := x.c.seen(ctx, feedID, uid)
	if err != nil {
		return nil, err
	}
	if !ok {
		// Not stored: remembered as such, so that what Add adds to it
		// is all there is.
		x.mu.Lock()
		x.added[entryKey{feedID, uid}] = &known{inMemory: true}
		x.mu.Unlock()
		return nil, nil
	}
	k = &known{seen: s}
	x.mu.Lock()
	if prev, ok := x.added[entryKey{feedID, uid}]; ok {
		k = prev // added meanwhile
	} else {
		x.added[entryKey{feedID, uid}] = k
	}
	x.mu.Unlock()
	return k, nil
}

// seen reads an entry's row.
func (c *Catalog) seen(ctx context.Context, feedID, uid string) (s Seen, ok bool, err error) {
	row, err := c.queryRow(ctx, `SELECT e.content_hash, e.first_seen, e.last_seen, e.seen_count, e.versions
		FROM entries e WHERE e.feed_key = (SELECT key FROM feeds WHERE feed_id = ?) AND e.entry_uid = ?`, feedID, uid)
	if err != nil {
		return s, false, err
	}
	var first, last sql.NullInt64
	switch err := row.Scan(&s.Hash, &first, &last, &s.SeenCount, &s.Versions); {
	case errors.Is(err, sql.ErrNoRows):
		return s, false, nil
	case err != nil:
		return s, false, c.damaged(fmt.Errorf("catalog: entry %s of %s: %w", uid, feedID, err))
	}
	s.UID, s.FirstSeen, s.LastSeen = uid, ndjson.At(fromMS(first)), ndjson.At(fromMS(last))
	return s, true, nil
}

// versionHashes are the content hashes of every stored version of an
// entry, oldest first.
func (c *Catalog) versionHashes(ctx context.Context, feedID, uid string) ([]string, error) {
	rows, err := c.db.QueryContext(ctx, `SELECT v.content_hash FROM entry_versions v
		WHERE v.entry_id = (SELECT e.id FROM entries e WHERE e.feed_key = (SELECT key FROM feeds WHERE feed_id = ?) AND e.entry_uid = ?)
		ORDER BY v.version`, feedID, uid)
	if err != nil {
		return nil, c.damaged(fmt.Errorf("catalog: versions of %s: %w", uid, err))
	}
	defer rows.Close()
	hashes := []string{}
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			return nil, c.damaged(fmt.Errorf("catalog: versions of %s: %w", uid, err))
		}
		hashes = append(hashes, h)
	}
	return hashes, c.damaged(rows.Err())
}

// Location is where a line is in one of the store's day files: its day,
// and its offset and length in the file.
type Location struct {
	Day    string
	Offset int64
	Length int64
}

// StoreVersion records a version of an entry, e with its lineage fields
// set (first_seen, last_seen, seen_count), whose line is at loc in
// entries/: the entry's row, made with its first version, and the
// version's row.
func (t *Tx) StoreVersion(e *ndjson.Entry, loc Location) error {
	key, err := t.feedKey(e.FeedID)
	if err != nil {
		return err
	}
	var id, version int64
	err = t.tx.QueryRowContext(t.ctx, `INSERT INTO entries (feed_key, entry_uid, content_hash, versions, first_seen, last_seen, seen_count,
		published, day, offset, length) VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (feed_key, entry_uid) DO UPDATE SET content_hash = excluded.content_hash, versions = versions + 1,
			last_seen = max(last_seen, excluded.last_seen), seen_count = max(seen_count, excluded.seen_count),
			published = excluded.published, day = excluded.day, offset = excluded.offset, length = excluded.length
		RETURNING id, versions`,
		key, e.EntryUID, e.ContentHash, unixMS(e.FirstSeen.Time), unixMS(e.LastSeen.Time), e.SeenCount, unixMS(publishedOr(e)),
		loc.Day, loc.Offset, loc.Length).Scan(&id, &version)
	if err != nil {
		return fmt.Errorf("catalog: store entry %s: %w", e.EntryUID, err)
	}
	_, err = t.exec(`INSERT INTO entry_versions (entry_id, version, content_hash, stored_at, day, offset, length) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		id, version, e.ContentHash, unixMS(e.LastSeen.Time), loc.Day, loc.Offset, loc.Length)
	if err != nil {
		return err
	}
	return t.indexText(id, e)
}

// Sighted records that the entries uids of a feed, unchanged, were seen
// again in a fetch at at: their last_seen moves to at and their
// seen_count grows by one. A sighting no later than the last one (a
// replay) changes nothing.
func (t *Tx) Sighted(feedID string, uids []string, at time.Time) error {
	if len(uids) == 0 {
		return nil
	}
	key, err := t.feedKey(feedID)
	if err != nil {
		return err
	}
	for chunk := range slices.Chunk(uids, 500) {
		args := make([]any, 0, len(chunk)+3)
		args = append(args, unixMS(at), key, unixMS(at))
		for _, u := range chunk {
			args = append(args, u)
		}
		_, err := t.exec(`UPDATE entries SET last_seen = ?, seen_count = seen_count + 1
			WHERE feed_key = ? AND last_seen < ? AND entry_uid IN (`+placeholders(len(chunk))+`)`, args...)
		if err != nil {
			return err
		}
	}
	return nil
}

// placeholders is "?, ?, ..." for n values.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// publishedOr is when the entry was published, or first seen when its
// feed does not say: the time entries are listed by.
func publishedOr(e *ndjson.Entry) time.Time {
	if !e.Published.IsZero() {
		return e.Published.Time
	}
	return e.FirstSeen.Time
}
