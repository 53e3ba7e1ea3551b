-- The catalog: feeds, subscriptions, feed states, the entry index and its
-- versions, the URL index (links, aliases), the fetch index, the run ledger
-- and meta. docs/store.md describes every table.

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
