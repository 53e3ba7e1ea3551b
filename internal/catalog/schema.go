package catalog

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
)

// migrations make the schema, in order: migrations[i] takes a catalog from
// version i to i+1 (PRAGMA user_version), in one transaction. A catalog
// newer than this binary knows is refused. docs/store.md documents the
// tables; keep it in step.
var migrations = []string{
	// 1: the catalog.
	`
CREATE TABLE feeds (
	key     INTEGER PRIMARY KEY,
	feed_id TEXT NOT NULL UNIQUE
);

CREATE TABLE subscriptions (
	feed_key         INTEGER PRIMARY KEY,
	position         INTEGER NOT NULL,
	url              TEXT NOT NULL,
	name             TEXT NOT NULL DEFAULT '',
	labels           TEXT NOT NULL DEFAULT '[]',
	source_type      TEXT NOT NULL DEFAULT 'auto',
	interval_sec     INTEGER NOT NULL DEFAULT 0,
	cron             TEXT NOT NULL DEFAULT '',
	disabled         INTEGER NOT NULL DEFAULT 0,
	created_at       INTEGER,
	fulltext         INTEGER NOT NULL DEFAULT 0,
	scrape           TEXT,
	user_agent       TEXT NOT NULL DEFAULT '',
	headers          TEXT,
	auth             TEXT,
	min_interval_sec INTEGER NOT NULL DEFAULT 0,
	max_interval_sec INTEGER NOT NULL DEFAULT 0,
	paused_until     INTEGER
);
CREATE INDEX subscriptions_position ON subscriptions(position);
CREATE INDEX subscriptions_url ON subscriptions(url);

CREATE TABLE feed_state (
	feed_key               INTEGER PRIMARY KEY,
	title                  TEXT NOT NULL DEFAULT '',
	etag                   TEXT NOT NULL DEFAULT '',
	last_modified          TEXT NOT NULL DEFAULT '',
	last_fetch_at          INTEGER,
	last_success_at        INTEGER,
	last_run_at            INTEGER,
	last_status            INTEGER NOT NULL DEFAULT 0,
	last_error             TEXT,
	consecutive_failures   INTEGER NOT NULL DEFAULT 0,
	interval_sec           INTEGER NOT NULL DEFAULT 0,
	next_fetch_at          INTEGER,
	lifecycle              TEXT NOT NULL DEFAULT '',
	retry_until            INTEGER,
	last_body_sha256       TEXT NOT NULL DEFAULT '',
	last_content_length    INTEGER NOT NULL DEFAULT 0,
	new_entries_last_fetch INTEGER NOT NULL DEFAULT 0,
	moved_to               TEXT NOT NULL DEFAULT '',
	moved_count            INTEGER NOT NULL DEFAULT 0,
	counts                 TEXT NOT NULL DEFAULT '{}',
	sched                  TEXT,
	decision               TEXT,
	demand                 BLOB
);
CREATE INDEX feed_state_next ON feed_state(next_fetch_at);

CREATE TABLE entries (
	id           INTEGER PRIMARY KEY,
	feed_key     INTEGER NOT NULL,
	entry_uid    TEXT NOT NULL,
	content_hash TEXT NOT NULL,
	versions     INTEGER NOT NULL,
	first_seen   INTEGER NOT NULL,
	last_seen    INTEGER NOT NULL,
	seen_count   INTEGER NOT NULL,
	published    INTEGER NOT NULL,
	day          TEXT NOT NULL,
	offset       INTEGER NOT NULL,
	length       INTEGER NOT NULL
);
CREATE UNIQUE INDEX entries_feed_uid ON entries(feed_key, entry_uid);
CREATE INDEX entries_uid ON entries(entry_uid);
CREATE INDEX entries_feed_published ON entries(feed_key, published);
CREATE INDEX entries_feed_first_seen ON entries(feed_key, first_seen);
CREATE INDEX entries_published ON entries(published);
CREATE INDEX entries_first_seen ON entries(first_seen);

CREATE TABLE entry_versions (
	entry_id     INTEGER NOT NULL,
	version      INTEGER NOT NULL,
	content_hash TEXT NOT NULL,
	stored_at    INTEGER NOT NULL,
	day          TEXT NOT NULL,
	offset       INTEGER NOT NULL,
	length       INTEGER NOT NULL,
	PRIMARY KEY (entry_id, version)
) WITHOUT ROWID;

CREATE TABLE links (
	link_hash TEXT PRIMARY KEY,
	feed_key  INTEGER NOT NULL,
	entry_uid TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE aliases (
	feed_key          INTEGER NOT NULL,
	entry_uid         TEXT NOT NULL,
	link_hash         TEXT NOT NULL,
	alias_of_feed_key INTEGER NOT NULL,
	alias_of_uid      TEXT NOT NULL,
	recorded_at       INTEGER NOT NULL,
	day               TEXT NOT NULL,
	PRIMARY KEY (feed_key, entry_uid)
) WITHOUT ROWID;
CREATE INDEX aliases_link ON aliases(link_hash);

CREATE TABLE fetches (
	fetch_id    TEXT PRIMARY KEY,
	feed_key    INTEGER NOT NULL,
	fetched_at  INTEGER NOT NULL,
	http_status INTEGER NOT NULL,
	body_key    TEXT,
	day         TEXT NOT NULL,
	offset      INTEGER NOT NULL,
	length      INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX fetches_feed ON fetches(feed_key, fetched_at);

CREATE TABLE runs (
	feed_key     INTEGER NOT NULL,
	scheduled_at INTEGER NOT NULL,
	claimed_at   INTEGER NOT NULL,
	fetch_id     TEXT,
	PRIMARY KEY (feed_key, scheduled_at)
) WITHOUT ROWID;

CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
) WITHOUT ROWID;
`,
	// 2: what a feed is (its detected format, content type and
	// publisher), and the articles of websites feed-scrape rejected, so
	// that it does not fetch them every cycle.
	`
ALTER TABLE feed_state ADD COLUMN format TEXT NOT NULL DEFAULT '';
ALTER TABLE feed_state ADD COLUMN format_version TEXT NOT NULL DEFAULT '';
ALTER TABLE feed_state ADD COLUMN content_type TEXT NOT NULL DEFAULT '';
ALTER TABLE feed_state ADD COLUMN publisher TEXT NOT NULL DEFAULT '';

CREATE TABLE rejections (
	feed_key    INTEGER NOT NULL,
	entry_uid   TEXT NOT NULL,
	reason      TEXT NOT NULL,
	config_hash TEXT NOT NULL,
	rejected_at INTEGER NOT NULL,
	PRIMARY KEY (feed_key, entry_uid)
) WITHOUT ROWID;
`,
	// 3: feed-due's index. It decides from every subscription's next fetch
	// time and reads the states of the feeds that may be due only: by the
	// feed's key (a fetch updates its entry in place, a page for several
	// fetched feeds), not by the time (each fetch moved its key: a page
	// per feed and run, as many as the state's row).
	`DROP INDEX feed_state_next;
CREATE INDEX feed_state_due ON feed_state(feed_key, next_fetch_at, last_fetch_at);`,
	// 4: full-text search over the entries' latest versions (fts.go).
	ftsSchema,
	// 5: reading (marks.go): each reader's read and starred entries, by
	// the feed and the entry's uid, which reparse, replay and reindex
	// keep; the users of the Google Reader API and their sessions.
	`
CREATE TABLE marks (
	reader     TEXT NOT NULL,
	feed_key   INTEGER NOT NULL,
	entry_uid  TEXT NOT NULL,
	read       INTEGER NOT NULL DEFAULT 0,
	starred    INTEGER NOT NULL DEFAULT 0,
	changed_at INTEGER NOT NULL,
	PRIMARY KEY (reader, feed_key, entry_uid)
) WITHOUT ROWID;
CREATE INDEX marks_starred ON marks(reader, changed_at) WHERE starred;

CREATE TABLE users (
	name       TEXT PRIMARY KEY,
	password   TEXT NOT NULL,
	created_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE sessions (
	token_hash TEXT PRIMARY KEY,
	user       TEXT NOT NULL,
	kind       TEXT NOT NULL,
	created_at INTEGER NOT NULL
) WITHOUT ROWID;
`,
	// 6: feed_state's counts, sched and decision compressed (statepack.go),
	// the rows there are rewritten by packStates; an older feedpipe, which
	// reads them as JSON text, refuses the catalog.
	``,
	// 7: each reader's "read up to" mark per feed (marks.go): the entries
	// of the feed first seen before until are read, but for those a row
	// of marks says otherwise. Mark-all-read sets it, a row per feed, in
	// place of a row per entry. marks_unread finds the rows that say
	// unread (below the mark, the only unread entries there).
	`
CREATE TABLE read_until (
	reader   TEXT NOT NULL,
	feed_key INTEGER NOT NULL,
	until    INTEGER NOT NULL,
	PRIMARY KEY (reader, feed_key)
) WITHOUT ROWID;
CREATE INDEX marks_unread ON marks(reader, feed_key) WHERE NOT read;
`,
	// 8: the search index keyed by the time entries are listed by, so that
	// a search's newest matches come first (fts.go).
	searchKeySchema,
	// 9: each subscription's labels as rows, kept by triggers from the
	// labels column: a label's feeds are an index range, not a read of
	// every subscription's JSON (25 ms at 100,000 feeds, at each listing
	// of a label by feed-read, and at each change of the subscriptions
	// by feed-serve).
	`
CREATE TABLE subscription_labels (
	label    TEXT NOT NULL,
	feed_key INTEGER NOT NULL,
	PRIMARY KEY (label, feed_key)
) WITHOUT ROWID;
CREATE INDEX subscription_labels_feed ON subscription_labels(feed_key);
INSERT OR IGNORE INTO subscription_labels (label, feed_key) SELECT l.value, s.feed_key FROM subscriptions s, json_each(s.labels) l;
CREATE TRIGGER subscriptions_labels_insert AFTER INSERT ON subscriptions BEGIN
	DELETE FROM subscription_labels WHERE feed_key = new.feed_key;
	INSERT OR IGNORE INTO subscription_labels (label, feed_key) SELECT value, new.feed_key FROM json_each(new.labels);
END;
CREATE TRIGGER subscriptions_labels_update AFTER UPDATE OF labels ON subscriptions BEGIN
	DELETE FROM subscription_labels WHERE feed_key = old.feed_key;
	INSERT OR IGNORE INTO subscription_labels (label, feed_key) SELECT value, new.feed_key FROM json_each(new.labels);
END;
CREATE TRIGGER subscriptions_labels_delete AFTER DELETE ON subscriptions BEGIN
	DELETE FROM subscription_labels WHERE feed_key = old.feed_key;
END;
`,
	// 10: what each write transaction changed (changes.go), for readers
	// that keep answers.
	`
CREATE TABLE changes (
	seq   INTEGER PRIMARY KEY,
	feeds TEXT
);
`,
	// 11: who may do what (users.go, websessions.go): a user's role (the
	// users made before it read and mark, as every new one does unless
	// made an admin), the web page's sessions, one per browser, and the
	// subscriptions allowed to reach private addresses.
	`
ALTER TABLE users ADD COLUMN role TEXT NOT NULL DEFAULT 'reader';
ALTER TABLE subscriptions ADD COLUMN allow_private INTEGER NOT NULL DEFAULT 0;
CREATE TABLE web_sessions (
	token_hash TEXT PRIMARY KEY,
	user       TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL
) WITHOUT ROWID;
`,
}

// migrationSteps are the steps of a migration that are Go, not SQL: run
// after its SQL, in its transaction.
var migrationSteps = map[int]func(*Tx) error{
	6: packStates,
}

// migrate brings the schema up to the newest version.
func (c *Catalog) migrate(ctx context.Context) error {
	var version int
	if err := c.db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version); err != nil {
		return fmt.Errorf("catalog: open %s: %w", c.path, err)
	}
	if version > len(migrations) {
		return fmt.Errorf("catalog: %s has schema version %d, newer than this feedpipe knows (%d): use a newer feedpipe", c.path, version, len(migrations))
	}
	for v := version; v < len(migrations); v++ {
		err := c.Update(ctx, func(t *Tx) error {
			// A second process may have migrated it meanwhile: look again
			// inside the write transaction.
			var now int
			if err := t.tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&now); err != nil {
				return err
			}
			if now > v {
				return nil
			}
			t.unrecorded = v+1 < changesSchema
			if migrations[v] != "" {
				if _, err := t.exec(migrations[v]); err != nil {
					return err
				}
			}
			if step := migrationSteps[v+1]; step != nil {
				if err := step(t); err != nil {
					return err
				}
			}
			_, err := t.exec(fmt.Sprintf(`PRAGMA user_version = %d`, v+1))
			return err
		})
		if err != nil {
			return fmt.Errorf("catalog: migrate %s to schema version %d: %w", c.path, v+1, err)
		}
	}
	// Entries stored before the search index existed (migration 4) or
	// was keyed by time (migration 8).
	return c.backfillFTS(ctx)
}

// stmtCache keeps the prepared statements of the queries run most often.
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
		return nil, fmt.Errorf("catalog: %w", err)
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

// query runs a cached statement: for the queries of fixed text a server
// runs for most of its requests, which preparing each time cost as much
// as running some of them.
func (c *Catalog) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := c.stmts.get(ctx, c.db, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// queryRow runs a cached statement that returns one row.
func (c *Catalog) queryRow(ctx context.Context, query string, args ...any) (*sql.Row, error) {
	st, err := c.stmts.get(ctx, c.db, query)
	if err != nil {
		return nil, err
	}
	return st.QueryRowContext(ctx, args...), nil
}
