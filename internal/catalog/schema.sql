-- The catalog's schema at version 17 (PRAGMA user_version), as SQLite
-- keeps it: what the migrations make. Written by
-- go test ./internal/catalog -run TestSchema -update; do not edit.

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

CREATE TABLE archive_pages (
	feed_key   INTEGER NOT NULL,
	url        TEXT NOT NULL,
	walk       INTEGER,
	claimed_at INTEGER NOT NULL,
	fetch_id   TEXT,
	stored     INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (feed_key, url)
) WITHOUT ROWID;

CREATE TABLE backfill (
	feed_key   INTEGER PRIMARY KEY,
	head       TEXT NOT NULL DEFAULT '',
	head_kind  TEXT NOT NULL DEFAULT '',
	state      TEXT NOT NULL DEFAULT '',
	kind       TEXT NOT NULL DEFAULT '',
	next_url   TEXT NOT NULL DEFAULT '',
	walk       INTEGER,
	pages      INTEGER NOT NULL DEFAULT 0,
	entries    INTEGER NOT NULL DEFAULT 0,
	ended_at   INTEGER,
	reason     TEXT NOT NULL DEFAULT ''
);

CREATE TABLE changes (
	seq   INTEGER PRIMARY KEY,
	feeds TEXT
);

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
, search_key INTEGER, stored_at INTEGER);

CREATE INDEX entries_feed_first_seen ON entries(feed_key, first_seen);

CREATE INDEX entries_feed_published ON entries(feed_key, published);

CREATE UNIQUE INDEX entries_feed_uid ON entries(feed_key, entry_uid);

CREATE INDEX entries_first_seen ON entries(first_seen);

CREATE INDEX entries_published ON entries(published);

CREATE INDEX entries_search ON entries(search_key);

CREATE INDEX entries_uid ON entries(entry_uid);

CREATE VIRTUAL TABLE entries_fts USING fts5(title, summary, content,
	content='', contentless_delete=1, detail=none, tokenize='unicode61 remove_diacritics 2');

CREATE TABLE 'entries_fts_config'(k PRIMARY KEY, v) WITHOUT ROWID;

CREATE TABLE 'entries_fts_data'(id INTEGER PRIMARY KEY, block BLOB);

CREATE TABLE 'entries_fts_docsize'(id INTEGER PRIMARY KEY, sz BLOB, origin INTEGER);

CREATE TABLE 'entries_fts_idx'(segid, term, pgno, PRIMARY KEY(segid, term)) WITHOUT ROWID;

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
, format TEXT NOT NULL DEFAULT '', format_version TEXT NOT NULL DEFAULT '', content_type TEXT NOT NULL DEFAULT '', publisher TEXT NOT NULL DEFAULT '', link TEXT NOT NULL DEFAULT '', warnings TEXT NOT NULL DEFAULT '');

CREATE INDEX feed_state_due ON feed_state(feed_key, next_fetch_at, last_fetch_at);

CREATE TABLE feeds (
	key     INTEGER PRIMARY KEY,
	feed_id TEXT NOT NULL UNIQUE
);

CREATE TABLE fetches (
	fetch_id    TEXT PRIMARY KEY,
	feed_key    INTEGER NOT NULL,
	fetched_at  INTEGER NOT NULL,
	http_status INTEGER NOT NULL,
	body_key    TEXT,
	day         TEXT NOT NULL,
	offset      INTEGER NOT NULL,
	length      INTEGER NOT NULL
, parse TEXT) WITHOUT ROWID;

CREATE INDEX fetches_feed ON fetches(feed_key, fetched_at);

CREATE TABLE links (
	link_hash TEXT PRIMARY KEY,
	feed_key  INTEGER NOT NULL,
	entry_uid TEXT NOT NULL
) WITHOUT ROWID;

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

CREATE INDEX marks_unread ON marks(reader, feed_key) WHERE NOT read;

CREATE TABLE media (
	id                INTEGER PRIMARY KEY,
	feed_key          INTEGER NOT NULL,
	entry_uid         TEXT NOT NULL,
	url               TEXT NOT NULL,
	kind              TEXT NOT NULL,
	state             TEXT NOT NULL,
	queued_at         INTEGER NOT NULL,
	attempts          INTEGER NOT NULL DEFAULT 0,
	next_try_at       INTEGER,
	partial_bytes     INTEGER NOT NULL DEFAULT 0,
	partial_validator TEXT NOT NULL DEFAULT '',
	sha256            TEXT,
	bytes             INTEGER NOT NULL DEFAULT 0,
	content_type      TEXT NOT NULL DEFAULT '',
	reason            TEXT NOT NULL DEFAULT '',
	message           TEXT NOT NULL DEFAULT '',
	finished_at       INTEGER,
	UNIQUE (feed_key, entry_uid, url)
);

CREATE INDEX media_queue ON media (next_try_at, id) WHERE state = 'queued';

CREATE INDEX media_sha256 ON media (sha256) WHERE sha256 IS NOT NULL;

CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE pushes (
	feed_key     INTEGER PRIMARY KEY,
	hub          TEXT NOT NULL DEFAULT '',
	topic        TEXT NOT NULL DEFAULT '',
	last_push_at INTEGER,
	pushes       INTEGER NOT NULL DEFAULT 0,
	missed_at    INTEGER
);

CREATE TABLE read_until (
	reader   TEXT NOT NULL,
	feed_key INTEGER NOT NULL,
	until    INTEGER NOT NULL,
	PRIMARY KEY (reader, feed_key)
) WITHOUT ROWID;

CREATE TABLE rejections (
	feed_key    INTEGER NOT NULL,
	entry_uid   TEXT NOT NULL,
	reason      TEXT NOT NULL,
	config_hash TEXT NOT NULL,
	rejected_at INTEGER NOT NULL,
	PRIMARY KEY (feed_key, entry_uid)
) WITHOUT ROWID;

CREATE TABLE runs (
	feed_key     INTEGER NOT NULL,
	scheduled_at INTEGER NOT NULL,
	claimed_at   INTEGER NOT NULL,
	fetch_id     TEXT,
	PRIMARY KEY (feed_key, scheduled_at)
) WITHOUT ROWID;

CREATE TABLE sessions (
	token_hash TEXT PRIMARY KEY,
	user       TEXT NOT NULL,
	kind       TEXT NOT NULL,
	created_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE VIEW stored_versions (entry_id, version, content_hash, stored_at, day, offset, length) AS
	SELECT entry_id, version, content_hash, stored_at, day, offset, length FROM entry_versions
	UNION ALL
	SELECT id, versions, content_hash, stored_at, day, offset, length FROM entries WHERE stored_at IS NOT NULL;

CREATE TABLE subscription_labels (
	label    TEXT NOT NULL,
	feed_key INTEGER NOT NULL,
	PRIMARY KEY (label, feed_key)
) WITHOUT ROWID;

CREATE INDEX subscription_labels_feed ON subscription_labels(feed_key);

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
, allow_private INTEGER NOT NULL DEFAULT 0, push TEXT NOT NULL DEFAULT '', backfill INTEGER NOT NULL DEFAULT 0, webhook_secret TEXT, media TEXT);

CREATE INDEX subscriptions_position ON subscriptions(position);

CREATE INDEX subscriptions_url ON subscriptions(url);

CREATE TRIGGER subscriptions_labels_delete AFTER DELETE ON subscriptions BEGIN
	DELETE FROM subscription_labels WHERE feed_key = old.feed_key;
END;

CREATE TRIGGER subscriptions_labels_insert AFTER INSERT ON subscriptions BEGIN
	DELETE FROM subscription_labels WHERE feed_key = new.feed_key;
	INSERT OR IGNORE INTO subscription_labels (label, feed_key) SELECT value, new.feed_key FROM json_each(new.labels);
END;

CREATE TRIGGER subscriptions_labels_update AFTER UPDATE OF labels ON subscriptions BEGIN
	DELETE FROM subscription_labels WHERE feed_key = old.feed_key;
	INSERT OR IGNORE INTO subscription_labels (label, feed_key) SELECT value, new.feed_key FROM json_each(new.labels);
END;

CREATE TABLE users (
	name       TEXT PRIMARY KEY,
	password   TEXT NOT NULL,
	created_at INTEGER NOT NULL
, role TEXT NOT NULL DEFAULT 'reader') WITHOUT ROWID;

CREATE TABLE web_sessions (
	token_hash TEXT PRIMARY KEY,
	user       TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE websub (
	callback_id TEXT PRIMARY KEY,
	callback    TEXT NOT NULL,
	feed_key    INTEGER NOT NULL,
	hub         TEXT NOT NULL,
	topic       TEXT NOT NULL,
	secret      TEXT NOT NULL,
	mode        TEXT NOT NULL,
	state       TEXT NOT NULL,
	asked_at    INTEGER NOT NULL,
	tries       INTEGER NOT NULL DEFAULT 0,
	verified_at INTEGER,
	lease_sec   INTEGER NOT NULL DEFAULT 0,
	lease_end   INTEGER,
	reason      TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;

CREATE INDEX websub_feed ON websub (feed_key);
