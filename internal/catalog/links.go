package catalog

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/urlnorm"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// LinkHash is the catalog's name of a canonical link: the first 16 bytes
// of the SHA-256 of its normalized form (urlnorm.Key: http and https
// alike), in hex; ok is false for a link that is not an absolute URL.
func LinkHash(link string) (hash string, ok bool) {
	k := urlnorm.Key(link)
	if !strings.HasPrefix(k, "//") {
		return "", false
	}
	sum := sha256.Sum256([]byte(k))
	return hex.EncodeToString(sum[:16]), true
}

// LinkOwners is what the catalog knows of a link: the entry stored first
// with it, and the entries of other feeds recorded as its aliases.
type LinkOwners struct {
	First   ndjson.EntryRef
	Aliases []ndjson.EntryRef
}

// Known reports whether the link has a first entry.
func (o LinkOwners) Known() bool { return o.First.FeedID != "" }

// Has reports whether ref is the link's first entry or one of its aliases.
func (o LinkOwners) Has(ref ndjson.EntryRef) bool {
	return o.First == ref || slices.Contains(o.Aliases, ref)
}

// add records a row of the link's: an alias, or its first entry.
func (o *LinkOwners) add(alias bool, r ndjson.EntryRef) {
	if alias {
		o.Aliases = append(o.Aliases, r)
	} else {
		o.First = r
	}
}

// Link returns what the catalog, and what this index added, hold of a
// link.
func (x *Index) Link(ctx context.Context, hash string) (LinkOwners, error) {
	x.mu.Lock()
	o, ok := x.links[hash]
	x.mu.Unlock()
	if ok {
		return *o, nil
	}
	got, err := x.c.LinkOwners(ctx, hash)
	if err != nil {
		return got, err
	}
	x.mu.Lock()
	if _, ok := x.links[hash]; !ok {
		x.links[hash] = &got
	}
	o = x.links[hash]
	x.mu.Unlock()
	return *o, nil
}

// linkOwnersSQL is LoadLinks's statement, a constant so that
// TestIndexesEarnTheirWrites reads its plan.
const linkOwnersSQL = `SELECT 0, l.link_hash, f.feed_id, l.entry_uid FROM links l JOIN feeds f ON f.key = l.feed_key
			WHERE l.link_hash IN (SELECT value FROM json_each(:links))
		UNION ALL SELECT 1, a.link_hash, f.feed_id, a.entry_uid FROM aliases a JOIN feeds f ON f.key = a.feed_key
			WHERE a.link_hash IN (SELECT value FROM json_each(:links))`

// LoadLinks reads what the catalog holds of the links hashes that the
// index has not looked up yet, in one query: Link then answers them from
// memory. A batch's new entries each have a link, and a query per link
// was a tenth of feed-store's time storing them.
func (x *Index) LoadLinks(ctx context.Context, hashes []string) error {
	x.mu.Lock()
	var want []string
	for _, h := range hashes {
		if _, ok := x.links[h]; !ok {
			want = append(want, h)
		}
	}
	x.mu.Unlock()
	if len(want) == 0 {
		return nil
	}
	list, err := json.Marshal(want)
	if err != nil {
		return err
	}
	rows, err := x.c.read(ctx, kept, linkOwnersSQL, sql.Named("links", string(list)))
	if err != nil {
		return err
	}
	defer rows.Close()
	got := make(map[string]*LinkOwners, len(want))
	for _, h := range want {
		got[h] = &LinkOwners{}
	}
	for rows.Next() {
		var alias bool
		var h string
		var r ndjson.EntryRef
		if err := rows.Scan(&alias, &h, &r.FeedID, &r.EntryUID); err != nil {
			return err
		}
		if o := got[h]; o != nil {
			o.add(alias, r)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for h, o := range got {
		if _, ok := x.links[h]; !ok { // added meanwhile: that one is newer
			x.links[h] = o
		}
	}
	return nil
}

// AddLink records in memory ref as the link's first entry when it has
// none, or as one of its aliases.
func (x *Index) AddLink(hash string, o LinkOwners, ref ndjson.EntryRef, alias bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	switch {
	case !o.Known() && !alias:
		o.First = ref
	case alias && !o.Has(ref):
		o.Aliases = append(slices.Clone(o.Aliases), ref)
	}
	x.links[hash] = &o
}

// LinkOwners returns what the catalog holds of a link: its first entry
// and its aliases, in one query (feed-dedup asks for every new entry's
// link).
func (c *Catalog) LinkOwners(ctx context.Context, hash string) (LinkOwners, error) {
	var o LinkOwners
	rows, err := c.read(ctx, kept, `SELECT 0, f.feed_id, l.entry_uid FROM links l JOIN feeds f ON f.key = l.feed_key WHERE l.link_hash = :link
		UNION ALL SELECT 1, f.feed_id, a.entry_uid FROM aliases a JOIN feeds f ON f.key = a.feed_key WHERE a.link_hash = :link`, sql.Named("link", hash))
	if err != nil {
		return o, err
	}
	defer rows.Close()
	for rows.Next() {
		var alias bool
		var r ndjson.EntryRef
		if err := rows.Scan(&alias, &r.FeedID, &r.EntryUID); err != nil {
			return o, err
		}
		o.add(alias, r)
	}
	return o, rows.Err()
}

// AddLink records ref as the first entry stored with the link, unless
// another is, or unless the catalog keeps no link index (LinksKept).
func (t *Tx) AddLink(hash string, ref ndjson.EntryRef) error {
	if kept, err := t.LinksKept(); err != nil || !kept {
		return err
	}
	defer t.within(ref.FeedID)()
	key, err := t.feedKey(ref.FeedID)
	if err != nil {
		return err
	}
	_, err = t.write(kept, `INSERT OR IGNORE INTO links (link_hash, feed_key, entry_uid) VALUES (?, ?, ?)`, hash, key, ref.EntryUID)
	return err
}

// AddAlias records the alias a, stored at day in aliases/: the entry it
// names duplicates another feed's entry with the same link.
func (t *Tx) AddAlias(a *ndjson.Alias, day string) error {
	hash, ok := LinkHash(a.CanonicalLink)
	if !ok {
		return nil
	}
	defer t.within(a.FeedID, a.AliasOf.FeedID)()
	key, err := t.feedKey(a.FeedID)
	if err != nil {
		return err
	}
	of, err := t.feedKey(a.AliasOf.FeedID)
	if err != nil {
		return err
	}
	_, err = t.write(kept, `INSERT OR IGNORE INTO aliases (feed_key, entry_uid, link_hash, alias_of_feed_key, alias_of_uid, recorded_at, day)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, key, a.EntryUID, hash, of, a.AliasOf.EntryUID, unixMS(a.RecordedAt.Time), day)
	return err
}

// metaLinksKept is the meta key of a catalog that keeps its link index
// (migrations/0017_links_on_demand.sql): set by KeepLinks, never unset.
const metaLinksKept = "links:kept"

// LinksKept reports whether the catalog keeps its link index: from the
// first feed-dedup --cross-feed run (KeepLinks) on, for good. Without it,
// links holds no row, and LinkOwners knows only aliases.
func (c *Catalog) LinksKept(ctx context.Context) (bool, error) {
	if c.linksKept.Load() {
		return true, nil
	}
	var kept bool
	if _, err := c.Meta(ctx, metaLinksKept, &kept); err != nil || !kept {
		return false, err
	}
	c.linksKept.Store(true)
	return true, nil
}

// LinksKept is Catalog.LinksKept inside the transaction: it sees a
// KeepLinks that committed since the caller last looked.
func (t *Tx) LinksKept() (bool, error) {
	if t.keepsLinks != nil {
		return *t.keepsLinks, nil
	}
	kept := t.c.linksKept.Load()
	if !kept {
		if _, err := t.Meta(metaLinksKept, &kept); err != nil {
			return false, err
		}
	}
	t.keepsLinks = &kept
	return kept, nil
}

// keepLinksOfAliases makes a catalog that holds an alias keep its link
// index: its store compared entries across feeds (migration 17, and a
// catalog made anew from the store's files).
func keepLinksOfAliases(t *Tx) error {
	defer t.within()()
	t.keepsLinks = nil
	_, err := t.write(once, `INSERT OR REPLACE INTO meta (key, value) SELECT ?, 'true' WHERE EXISTS (SELECT 1 FROM aliases)`, metaLinksKept)
	return err
}

// storedLink is a stored version's link and place, and its entry's
// feed and uid. hash is the link's (LinkHash) in binary; ok is false
// for a version without a link, or whose line could not be read.
type storedLink struct {
	hash    [16]byte
	ok      bool
	feedKey int64
	uid     string
	loc     Location
}

// versionKey names a stored version.
type versionKey struct{ id, version int64 }

// KeepLinks makes the catalog keep its link index from now on, for
// feed-dedup --cross-feed, and builds it once from the lines of the
// stored versions in entries/ (every version's link, as feed-store adds
// them), in the order they were stored: a link's first entry is the one
// stored first with it, as feed-store and reindex have it. built counts
// the links. The lines are read before the write transaction, which
// lists the versions again and reads only those stored meanwhile; its
// inserts are in that one transaction, so that the index is whole or not
// kept at all. At 100,000 versions on a 2-CPU machine the build took
// 2.2 s, 1.1 s of it in the write transaction, linear in the versions:
// writers wait that long, far below the catalog's busy timeout.
func (c *Catalog) KeepLinks(ctx context.Context) (built int, err error) {
	if kept, err := c.LinksKept(ctx); err != nil || kept {
		return 0, err
	}
	started := time.Now()
	before, err := c.storedLinks(func(q string) (rows, error) { return c.read(ctx, once, q) }, nil)
	if err != nil {
		return 0, fmt.Errorf("catalog: build the link index for --cross-feed: %w", err)
	}
	afterLinksRead()
	known := make(map[versionKey]int, len(before.links))
	for i, k := range before.keys {
		known[k] = i
	}
	unread, builtHere := 0, false
	err = c.Update(ctx, func(t *Tx) error {
		if kept, err := t.LinksKept(); err != nil || kept {
			return err // another process built it meanwhile
		}
		now, err := c.storedLinks(func(q string) (rows, error) { return t.read(once, q) }, func(k versionKey, loc Location) (storedLink, bool) {
			if i, ok := known[k]; ok && before.links[i].loc == loc {
				return before.links[i], true
			}
			return storedLink{}, false
		})
		if err != nil {
			return err
		}
		defer t.within()() // no reader keeps an answer of the links
		for _, l := range now.links {
			if !l.ok {
				continue
			}
			res, err := t.write(kept, `INSERT OR IGNORE INTO links (link_hash, feed_key, entry_uid) VALUES (?, ?, ?)`, hex.EncodeToString(l.hash[:]), l.feedKey, l.uid)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n > 0 {
				built++
			}
		}
		unread, builtHere = now.unread, true
		*t.keepsLinks = true
		return t.SetMeta(metaLinksKept, true)
	})
	if err != nil {
		return 0, fmt.Errorf("catalog: build the link index for --cross-feed: %w", err)
	}
	c.linksKept.Store(true)
	if !builtHere {
		return 0, nil
	}
	c.log.Info("catalog: built the index of the stored entries' links for --cross-feed, once", "links", built,
		"elapsed_ms", time.Since(started).Milliseconds())
	if unread > 0 {
		c.log.Warn("catalog: the lines of some stored versions could not be read: their links are not in the index; feed-store reindex rebuilds it",
			"versions", unread)
	}
	return built, nil
}

// afterLinksRead runs between KeepLinks's reading and its transaction:
// a test stores a version there.
var afterLinksRead = func() {}

// storedVersions are the stored versions' links in the order they were
// stored (their lines' order in entries/), and how many lines could not
// be read.
type storedVersions struct {
	keys   []versionKey
	links  []storedLink
	unread int
}

// storedLinks reads the link of every stored version from its line, in
// the order they were stored, each day file opened once; read answers a
// version read before at the same place instead (nil: none). A line gone
// or damaged is counted, and left out, as the search index's backfill
// does: feed-store reindex mends the catalog.
func (c *Catalog) storedLinks(query func(q string) (rows, error), read func(versionKey, Location) (storedLink, bool)) (storedVersions, error) {
	var out storedVersions
	rows, err := query(`SELECT v.entry_id, v.version, e.feed_key, e.entry_uid, v.day, v.offset, v.length
		FROM stored_versions v JOIN entries e ON e.id = v.entry_id ORDER BY v.day, v.offset`)
	if err != nil {
		return out, err
	}
	// The list first, then the lines: a read transaction open while they
	// are read would hold the WAL's checkpoints back.
	fresh := []bool{}
	for rows.Next() {
		var k versionKey
		var l storedLink
		if err := rows.Scan(&k.id, &k.version, &l.feedKey, &l.uid, &l.loc.Day, &l.loc.Offset, &l.loc.Length); err != nil {
			rows.Close()
			return out, err
		}
		got, ok := storedLink{}, false
		if read != nil {
			got, ok = read(k, l.loc)
		}
		if !ok {
			got = l
		}
		out.keys, out.links, fresh = append(out.keys, k), append(out.links, got), append(fresh, !ok)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return out, err
	}
	var day dayFile
	defer day.close()
	for i := range out.links {
		if !fresh[i] {
			continue
		}
		l := &out.links[i]
		b, err := day.line(c.st, storedir.DirEntries, l.loc)
		var e struct {
			EntryUID      string `json:"entry_uid"`
			CanonicalLink string `json:"canonical_link"`
		}
		if err != nil || ndjson.Unmarshal(b, &e) != nil || e.EntryUID != l.uid {
			out.unread++
		} else if h, ok := LinkHash(e.CanonicalLink); ok {
			hex.Decode(l.hash[:], []byte(h))
			l.ok = true
		}
	}
	return out, nil
}
