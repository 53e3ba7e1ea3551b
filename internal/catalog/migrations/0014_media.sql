-- The media of entries (media.go; feed-media, docs/store.md): each file an
-- entry of a feed with media settings asks for, queued until it is
-- downloaded, refused or given up, with what a resume needs; and each
-- subscription's media settings.

ALTER TABLE subscriptions ADD COLUMN media TEXT;
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
