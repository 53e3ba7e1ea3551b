package catalog

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"

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
// another is.
func (t *Tx) AddLink(hash string, ref ndjson.EntryRef) error {
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
