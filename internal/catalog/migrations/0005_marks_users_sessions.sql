-- Reading (marks.go): each reader's read and starred entries, by the feed
-- and the entry's uid, which reparse, replay and reindex keep; the users of
-- the Google Reader API and their sessions.

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
