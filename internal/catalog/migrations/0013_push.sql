-- Push and history (push.go, backfill.go; docs/design.md#push, #backfill):
-- the subscriptions' push mode, backfill switch and webhook secret; the
-- WebSub subscriptions asked of hubs, one row per callback; the hub each
-- feed names and what was pushed to it; and the archive walks (RFC 5005) with the pages
-- they read.

ALTER TABLE subscriptions ADD COLUMN push TEXT NOT NULL DEFAULT '';
ALTER TABLE subscriptions ADD COLUMN backfill INTEGER NOT NULL DEFAULT 0;
ALTER TABLE subscriptions ADD COLUMN webhook_secret TEXT;
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
CREATE TABLE pushes (
	feed_key     INTEGER PRIMARY KEY,
	hub          TEXT NOT NULL DEFAULT '',
	topic        TEXT NOT NULL DEFAULT '',
	last_push_at INTEGER,
	pushes       INTEGER NOT NULL DEFAULT 0,
	missed_at    INTEGER
);
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
CREATE TABLE archive_pages (
	feed_key   INTEGER NOT NULL,
	url        TEXT NOT NULL,
	walk       INTEGER,
	claimed_at INTEGER NOT NULL,
	fetch_id   TEXT,
	stored     INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (feed_key, url)
) WITHOUT ROWID;
