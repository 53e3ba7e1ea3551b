-- Full-text search over the entries' latest versions (fts.go). A catalog
-- that had entries before it gets their words from entries/ once, after the
-- migration (backfillFTS): the migration marks where that starts.

CREATE VIRTUAL TABLE entries_fts USING fts5(title, summary, content,
	content='', contentless_delete=1, detail=none, tokenize='unicode61 remove_diacritics 2');
INSERT INTO meta (key, value) SELECT 'fts:backfill', '0' WHERE EXISTS (SELECT 1 FROM entries);
