-- The search index keyed by the time entries are listed by, so that a
-- search's newest matches come first (fts.go): its rowids become search keys.
-- The index, keyed by the entries' ids until then, is emptied and filled
-- again from entries/ once (backfillFTS), giving each entry its key.

ALTER TABLE entries ADD COLUMN search_key INTEGER;
CREATE INDEX entries_search ON entries(search_key);
INSERT INTO entries_fts (entries_fts) VALUES ('delete-all');
INSERT OR REPLACE INTO meta (key, value) SELECT 'fts:backfill', '0' WHERE EXISTS (SELECT 1 FROM entries);
