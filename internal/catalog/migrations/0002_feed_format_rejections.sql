-- What a feed is (its detected format, content type and publisher), and the
-- articles of websites feed-scrape rejected, so that it does not fetch them
-- every cycle.

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
