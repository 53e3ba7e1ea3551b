// Package catalog keeps the store's catalog, everything feedpipe looks up,
// queries or updates in place (subscriptions, feed state, the entry index,
// links and aliases, the fetch index, run claims, the scheduler's budget),
// in one SQLite database, STORE/catalog.db, derived from the store's files
// and rebuilt from them by feed-store reindex.
//
// SQLite is the most trusted embedded database: many processes read it while
// one writes (WAL), a writer waits for another (busy timeout), a
// transaction is all or nothing, and anyone can look inside with sqlite3.
// It is used through database/sql and modernc.org/sqlite, a translation of
// SQLite's C to Go, so that building feedpipe needs no C compiler.
// docs/store.md documents every table and column.
package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/feedpipe/feedpipe/internal/storedir"
)

// File is the catalog's name in the store.
const File = "catalog.db"

// BusyTimeout is how long a writer waits for another's transaction before
// it gives up: feed-sub waits out a feed-store commit instead of failing.
const BusyTimeout = 60 * time.Second

// Catalog is an open catalog. It is safe for concurrent use.
type Catalog struct {
	db    *sql.DB
	path  string
	st    *storedir.Store
	log   *slog.Logger
	stmts stmtCache
	// byFeed caches numberedByFeed.
	byFeedOnce sync.Mutex
	byFeed     *bool
	// labels caches labelFeeds.
	labels labelCache
	// linksKept caches LinksKept once it is true: it stays so.
	linksKept atomic.Bool
}

// ErrDamaged marks a catalog SQLite cannot read.
var ErrDamaged = errors.New("catalog damaged")

// Open opens the catalog of the store st, creating it, bringing its schema
// up to date, and migrating a store written before the catalog existed
// (once, with a log line). It refuses a catalog file that is a link.
func Open(ctx context.Context, st *storedir.Store, log *slog.Logger) (*Catalog, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	path := st.Path(File)
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if fi, err := os.Lstat(p); err == nil && !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("catalog: %s is not a regular file: refusing to open it (remove it, then rebuild the catalog with feed-store reindex)", p)
		}
	}
	_, err := os.Stat(path)
	fresh := errors.Is(err, fs.ErrNotExist)
	locked := fresh
	if fresh {
		// Two processes starting on a store without a catalog: one
		// makes it (and migrates), the other waits and opens it.
		unlock, err := st.Lock(catalogLock, true, nil)
		if err != nil {
			return nil, err
		}
		defer unlock()
		if _, err := os.Stat(path); err == nil {
			fresh = false
		} else if err := st.CreatePrivate(File); err != nil {
			// The catalog holds credentials: its owner's only (SQLite
			// gives its -wal and -shm files the same mode).
			return nil, err
		} else if err := fillFresh(ctx, path); err != nil {
			return nil, err
		}
	}
	if !locked {
		// Another process may be making the catalog (above) still: its
		// file exists before its schema does. Wait for it to be done.
		// A store we may not write to has no maker: go on.
		if unlock, err := st.Lock(catalogLock, true, nil); err == nil {
			unlock()
		}
	}
	c, err := open(ctx, st, path, log)
	if err != nil {
		return nil, err
	}
	if fresh {
		if err := c.buildFromFiles(ctx); err != nil {
			c.Close()
			return nil, err
		}
	}
	if err := c.catchUpSubscriptions(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// MaxConns is how many connections a Catalog opens at most: readers
// beyond them wait for one (feed-serve keeps its own line before them).
const MaxConns = 4

// catalogLock is held while a catalog is made for a store that has none.
const catalogLock = "lock.catalog"

// open opens the catalog at path and brings its schema up to date.
func open(ctx context.Context, st *storedir.Store, path string, log *slog.Logger) (*Catalog, error) {
	c, err := connect(st, path, log)
	if err != nil {
		return nil, err
	}
	if err := c.migrate(ctx, len(migrations)); err != nil {
		c.Close()
		return nil, c.damaged(err)
	}
	// Entries stored before the search index existed (migration 4) or
	// was keyed by time (migration 8).
	if err := c.backfillFTS(ctx); err != nil {
		c.Close()
		return nil, c.damaged(err)
	}
	return c, nil
}

// Path is the catalog file's path.
func (c *Catalog) Path() string { return c.path }

// Store is the store the catalog belongs to.
func (c *Catalog) Store() *storedir.Store { return c.st }

// Check runs SQLite's quick_check over the whole catalog (a few seconds
// for millions of entries): nil, or an error that says what is wrong.
func (c *Catalog) Check(ctx context.Context) error {
	rows, err := c.read(ctx, once, `PRAGMA quick_check`)
	if err != nil {
		return err
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return err
		}
		if s != "ok" {
			problems = append(problems, s)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("catalog: %w: %s: %s; rebuild it from the store's files: feed-store reindex", ErrDamaged, c.path, strings.Join(problems, "; "))
	}
	return nil
}

// Sizes counts the rows of the catalog's tables, by table: how tests see
// what a run indexed, or that a reader wrote nothing.
func (c *Catalog) Sizes(ctx context.Context) (map[string]int, error) {
	sizes := map[string]int{}
	for _, table := range []string{"feeds", "subscriptions", "feed_state", "entries", "entry_versions", "links", "aliases", "fetches", "runs"} {
		var n int
		if err := c.readRow(ctx, once, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
			return nil, err
		}
		sizes[table] = n
	}
	return sizes, nil
}

// pageSize is the page size of a catalog made now; one made before keeps
// its own (4096 before schema version 6; docs/store.md says how to change
// it). SQLite writes a changed
// page whole, to the WAL and again at the checkpoint, and a fetch changes
// its feed's state row, alone on its page among the feeds fetched in a
// run: the page is what a fetch of an unchanged feed costs.
var pageSize = 1024

// walAutocheckpoint is the WAL's size, in pages, past which a commit
// copies it into catalog.db.
const walAutocheckpoint = 10000

// writerCacheKB is the page cache of a connection that has written, in KB
// (SQLite's default is 2,000 KB). A batch of new entries changes pages of
// six indexes at random places; when they do not fit the cache, SQLite
// spills them to the WAL before the commit, which writes them again.
// Readers keep the default: feed-due --all reads every state row, and its
// peak RSS must stay under 150 MB.
const writerCacheKB = 16384

// feedKey is the key of feedID in this catalog, made if it has none. It
// is looked up first: an upsert would write the feeds table's page for
// every feed of every batch.
func (t *Tx) feedKey(feedID string) (int64, error) {
	if k, ok := t.keys[feedID]; ok {
		return k, nil
	}
	var k int64
	err := t.readRow(kept, `SELECT key FROM feeds WHERE feed_id = ?`, feedID).Scan(&k)
	if errors.Is(err, sql.ErrNoRows) {
		err = t.writeRow(kept, `INSERT INTO feeds(feed_id) VALUES (?) RETURNING key`, feedID).Scan(&k)
	}
	if err != nil {
		return 0, err
	}
	t.keys[feedID] = k
	return k, nil
}

// ms is t as the catalog keeps times: Unix milliseconds, NULL for the zero
// time.
func ms(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}

// fromMS reads a time column written by ms.
func fromMS(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.UnixMilli(v.Int64).UTC()
}

// Use returns c, or when c is nil the catalog of the store st, opened now
// and closed by done: a stage's Config may carry an open catalog or not.
func Use(ctx context.Context, c *Catalog, st *storedir.Store, log *slog.Logger) (_ *Catalog, done func(), err error) {
	if c != nil {
		return c, func() {}, nil
	}
	if st == nil {
		return nil, nil, errors.New("catalog: no store")
	}
	c, err = Open(ctx, st, log)
	if err != nil {
		return nil, nil, err
	}
	return c, func() { c.Close() }, nil
}
