package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/feedpipe/feedpipe/internal/storedir"
)

// Every statement reaches the database through the helpers of this file:
// read and readRow, on the catalog's pool of connections (Catalog) or in
// a write transaction (Tx), and write and writeRow (an INSERT or UPDATE
// ... RETURNING), in a write transaction only. They prepare the statement
// (prep), map its errors (dbError: damaged, the package's prefix), and a
// write notes what it changed for the changes table (Tx.wrote): a
// statement writes because it is run by a write helper, whatever its
// text. Nothing else in the package holds the database (Catalog.db) or a
// transaction (Tx.tx) but Update, which begins and ends transactions, and
// bulkUpdate, which holds a connection of its own for the bulk load's
// settings (TestOneWayToTheDatabase). Callers return the helpers' errors as
// they are (Update and open map again what was wrapped on the way).

// prep is how a statement is prepared.
type prep bool

const (
	// kept: prepared once and kept, for the catalog's life on the pool
	// (stmtCache) and for the transaction's in one (Tx.stmt): a statement
	// of fixed text, or one of a few texts, run again and again, which
	// preparing each time cost as much as running.
	kept prep = true
	// once: prepared for this run only: a statement run rarely, or one
	// whose text varies without bound, which kept would fill the cache.
	once prep = false
)

// connect opens the database at path, as it is.
func connect(st *storedir.Store, path string, log *slog.Logger) (*Catalog, error) {
	// WAL: readers never block the writer nor it them. synchronous FULL:
	// a commit is on disk when it returns, as every write of the store's
	// files is. _txlock=immediate: a write transaction takes the write
	// lock at BEGIN, so that two writers queue on the busy timeout
	// instead of one failing half-way. wal_autocheckpoint: a checkpoint
	// every 10,000 pages of WAL (40 MB) rather than 1,000, so that a page a
	// large run writes again and again is copied into catalog.db once,
	// not at every thousandth page.
	// page_size applies to a catalog being made only, and must come before
	// WAL mode, which fixes it: modernc.org/sqlite runs the _pragma list in
	// sorted order, then the _journal_mode key.
	dsn := "file:" + filepath.ToSlash(path) + "?_pragma=busy_timeout(" + fmt.Sprint(BusyTimeout.Milliseconds()) + ")" +
		"&_pragma=page_size(" + fmt.Sprint(pageSize) + ")&_journal_mode=WAL&_pragma=synchronous(FULL)&_pragma=foreign_keys(OFF)" +
		"&_pragma=wal_autocheckpoint(" + fmt.Sprint(walAutocheckpoint) + ")&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	db.SetMaxOpenConns(MaxConns)
	db.SetConnMaxIdleTime(time.Minute)
	return &Catalog{db: db, path: path, st: st, log: log}, nil
}

// Close closes the catalog.
func (c *Catalog) Close() error {
	c.stmts.close()
	return c.db.Close()
}

// dbError maps an error of the database: a damaged catalog or a full disk
// to an error that says so (damaged), any other with the package's
// prefix. nil and sql.ErrNoRows stay as they are.
func (c *Catalog) dbError(err error) error {
	if err == nil || errors.Is(err, sql.ErrNoRows) {
		return err
	}
	return c.damaged(fmt.Errorf("catalog: %w", err))
}

// damaged turns SQLite's "this is not a database" and "malformed" into
// an error that names the file and the command that rebuilds it, and its
// "disk full" and I/O errors into one that asks about the disk. It keeps
// SQLite's error inside, so that mapping again what a caller wrapped
// (Update, open) gives the same error, first.
func (c *Catalog) damaged(err error) error {
	var se *sqlite.Error
	if err == nil || !errors.As(err, &se) {
		return err
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return fmt.Errorf("catalog: %w: %s: %w; rebuild it from the store's files: feed-store reindex", ErrDamaged, c.path, se)
	case sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR:
		return fmt.Errorf("catalog: cannot write %s: %w: is the disk full?", c.path, se)
	}
	return err
}

// rows are the rows of a read, their errors mapped as the read's.
type rows struct {
	*sql.Rows
	c *Catalog
}

func (r rows) Scan(dest ...any) error { return r.c.dbError(r.Rows.Scan(dest...)) }

func (r rows) Err() error { return r.c.dbError(r.Rows.Err()) }

func (r rows) Close() error { return r.c.dbError(r.Rows.Close()) }

// row is the row of a readRow or writeRow: its Scan's error is mapped as
// the statement's (sql.ErrNoRows when there is none).
type row struct {
	r   *sql.Row
	err error // the statement could not be prepared
	c   *Catalog
}

func (r row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	return r.c.dbError(r.r.Scan(dest...))
}

// read runs the query q on the pool.
func (c *Catalog) read(ctx context.Context, p prep, q string, args ...any) (rows, error) {
	return c.query(ctx, nil, p, q, args)
}

// readSet runs the query q, of one text column, on the pool and returns
// its values as a set.
func (c *Catalog) readSet(ctx context.Context, p prep, q string, args ...any) (map[string]bool, error) {
	rows, err := c.read(ctx, p, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	set := map[string]bool{}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		set[s] = true
	}
	return set, rows.Err()
}

// readRow runs the query q, which returns a row at most, on the pool.
func (c *Catalog) readRow(ctx context.Context, p prep, q string, args ...any) row {
	return c.queryRow(ctx, nil, p, q, args)
}

// read runs the query q in the transaction.
func (t *Tx) read(p prep, q string, args ...any) (rows, error) {
	return t.c.query(t.ctx, t, p, q, args)
}

// readRow runs the query q, which returns a row at most, in the
// transaction.
func (t *Tx) readRow(p prep, q string, args ...any) row {
	return t.c.queryRow(t.ctx, t, p, q, args)
}

// write runs the statement q, which changes rows, in the transaction.
func (t *Tx) write(p prep, q string, args ...any) (sql.Result, error) {
	t.wrote()
	st, err := t.c.prepare(t.ctx, t, p, q)
	var r sql.Result
	switch {
	case err != nil:
	case st != nil:
		r, err = st.ExecContext(t.ctx, args...)
	default:
		r, err = t.tx.ExecContext(t.ctx, q, args...)
	}
	if err != nil {
		return nil, t.c.dbError(err)
	}
	return r, nil
}

// writeRow runs the statement q, which changes rows and returns one at
// most (RETURNING), in the transaction.
func (t *Tx) writeRow(p prep, q string, args ...any) row {
	t.wrote()
	return t.c.queryRow(t.ctx, t, p, q, args)
}

// query runs the query q in the transaction t, or on the pool when t is
// nil.
func (c *Catalog) query(ctx context.Context, t *Tx, p prep, q string, args []any) (rows, error) {
	st, err := c.prepare(ctx, t, p, q)
	var r *sql.Rows
	switch {
	case err != nil:
	case st != nil:
		r, err = st.QueryContext(ctx, args...)
	case t != nil:
		r, err = t.tx.QueryContext(ctx, q, args...)
	default:
		r, err = c.db.QueryContext(ctx, q, args...)
	}
	if err != nil {
		return rows{}, c.dbError(err)
	}
	return rows{r, c}, nil
}

// queryRow is query of a statement that returns a row at most.
func (c *Catalog) queryRow(ctx context.Context, t *Tx, p prep, q string, args []any) row {
	st, err := c.prepare(ctx, t, p, q)
	switch {
	case err != nil:
		return row{err: c.dbError(err)}
	case st != nil:
		return row{r: st.QueryRowContext(ctx, args...), c: c}
	case t != nil:
		return row{r: t.tx.QueryRowContext(ctx, q, args...), c: c}
	}
	return row{r: c.db.QueryRowContext(ctx, q, args...), c: c}
}

// prepare returns q prepared and kept when p says so: in the transaction
// t, or on the pool when t is nil; nil for a statement run once.
func (c *Catalog) prepare(ctx context.Context, t *Tx, p prep, q string) (*sql.Stmt, error) {
	switch {
	case p == once:
		return nil, nil
	case t != nil:
		return t.stmt(q)
	}
	return c.stmts.get(ctx, c.db, q)
}

// stmtCache keeps the pool's prepared statements (kept).
type stmtCache struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

func (s *stmtCache) get(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.m[query]; ok {
		return st, nil
	}
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if s.m == nil {
		s.m = map[string]*sql.Stmt{}
	}
	s.m[query] = st
	return st, nil
}

func (s *stmtCache) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.m {
		st.Close()
	}
	s.m = nil
}

// Tx is one write transaction (Update).
type Tx struct {
	tx    *sql.Tx
	ctx   context.Context
	c     *Catalog
	keys  map[string]int64     // feed id -> key, looked up or made in this transaction
	stmts map[string]*sql.Stmt // prepared in this transaction, for the next row
	ids   map[int64]int64      // feed key -> the last entry id given in this transaction
	// searchKeys: first search key of a millisecond -> the last given in
	// this transaction (newSearchKey)
	searchKeys map[int64]int64
	fts        ftsBatch // the full-text index's changes, made at the end
	reach      reach    // what its writes changed (changes.go)
	keepsLinks *bool    // LinksKept, once read: no other writer can change it meanwhile
	unrecorded bool     // a migration to before the changes table
}

// stmt is query prepared in the transaction, once: a statement run for
// every row of a batch is compiled for the first only.
func (t *Tx) stmt(query string) (*sql.Stmt, error) {
	if st, ok := t.stmts[query]; ok {
		return st, nil
	}
	st, err := t.tx.PrepareContext(t.ctx, query)
	if err != nil {
		return nil, err
	}
	t.stmts[query] = st
	return st, nil
}

// Update runs fn in one write transaction, which commits when fn returns
// nil and rolls back otherwise. A writer waits for another's transaction
// (BusyTimeout).
func (c *Catalog) Update(ctx context.Context, fn func(*Tx) error) error {
	return c.update(ctx, nil, writerCacheKB, fn)
}

// update is Update on the connection conn (nil: one of the pool's), with
// a page cache of cacheKB.
func (c *Catalog) update(ctx context.Context, conn *sql.Conn, cacheKB int, fn func(*Tx) error) error {
	var tx *sql.Tx
	var err error
	if conn != nil {
		tx, err = conn.BeginTx(ctx, nil)
	} else {
		tx, err = c.db.BeginTx(ctx, nil)
	}
	if err != nil {
		return c.damaged(fmt.Errorf("catalog: begin: %w", err))
	}
	// The transaction ends if ctx does (database/sql rolls it back); its
	// statements, each short, are not watched one by one: the driver
	// starts a goroutine for every statement run with a context that can
	// end (a few per cent of feed-store's time storing new entries).
	t := &Tx{tx: tx, ctx: context.WithoutCancel(ctx), c: c, keys: map[string]int64{}, stmts: map[string]*sql.Stmt{}, ids: map[int64]int64{},
		searchKeys: map[int64]int64{}}
	// A setting of the connection, no write of the catalog's.
	if _, err := tx.ExecContext(t.ctx, fmt.Sprintf(`PRAGMA cache_size = -%d`, cacheKB)); err != nil {
		tx.Rollback()
		return c.dbError(err)
	}
	if err := fn(t); err != nil {
		tx.Rollback()
		return c.damaged(err)
	}
	// The search index's changes are those of entries whose feeds the
	// writes that made them named already.
	end := t.within()
	err = t.fts.flush(t)
	end()
	if err == nil {
		err = t.recordChange()
	}
	if err != nil {
		tx.Rollback()
		return c.damaged(err)
	}
	if err := tx.Commit(); err != nil {
		return c.damaged(fmt.Errorf("catalog: commit: %w", err))
	}
	return nil
}

// bulkUpdate is Update on a connection of its own, with a page cache of
// cacheKB for it alone (restored before it goes back to the pool), and
// the WAL truncated after the commit: for LoadEntries, whose index builds
// sort millions of rows, and whose transaction passes through the WAL.
// The connection's settings are no statements of the catalog's, and a
// pool's connection cannot be chosen: this is the one place a connection
// is held apart from the helpers above.
func (c *Catalog) bulkUpdate(ctx context.Context, cacheKB int, fn func(*Tx) error) error {
	conn, err := c.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	defer conn.Close()
	var cacheSize int64
	if err := conn.QueryRowContext(ctx, `PRAGMA cache_size`).Scan(&cacheSize); err != nil {
		return c.dbError(err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf(`PRAGMA cache_size = %d`, cacheSize))
	if err := c.update(ctx, conn, cacheKB, fn); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return c.damaged(fmt.Errorf("catalog: checkpoint: %w", err))
	}
	return nil
}
