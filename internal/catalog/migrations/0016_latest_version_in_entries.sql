-- An entry's row describes its latest version whole, with the time it was
-- stored (stored_at), and entry_versions keeps only the versions before
-- it: a new entry, most of what a cycle stores, writes one row and its
-- indexes instead of a second row repeating the first. An update moves
-- the row's version into entry_versions first (StoreVersion). Rows made
-- before keep their latest version in entry_versions as well, and no
-- stored_at (NULL) until their next version. stored_versions lists every
-- stored version either way.

ALTER TABLE entries ADD COLUMN stored_at INTEGER;
CREATE VIEW stored_versions (entry_id, version, content_hash, stored_at, day, offset, length) AS
	SELECT entry_id, version, content_hash, stored_at, day, offset, length FROM entry_versions
	UNION ALL
	SELECT id, versions, content_hash, stored_at, day, offset, length FROM entries WHERE stored_at IS NOT NULL;
