-- Each reader's "read up to" mark per feed (marks.go): the entries of the
-- feed first seen before until are read, but for those a row of marks says
-- otherwise. Mark-all-read sets it, a row per feed, in place of a row per
-- entry. marks_unread finds the rows that say unread (below the mark, the only
-- unread entries there).

CREATE TABLE read_until (
	reader   TEXT NOT NULL,
	feed_key INTEGER NOT NULL,
	until    INTEGER NOT NULL,
	PRIMARY KEY (reader, feed_key)
) WITHOUT ROWID;
CREATE INDEX marks_unread ON marks(reader, feed_key) WHERE NOT read;
