-- Who may do what (users.go, websessions.go): a user's role (the users made
-- before it read and mark, as every new one does unless made an admin), the
-- web page's sessions, one per browser, and the subscriptions allowed to
-- reach private addresses.

ALTER TABLE users ADD COLUMN role TEXT NOT NULL DEFAULT 'reader';
ALTER TABLE subscriptions ADD COLUMN allow_private INTEGER NOT NULL DEFAULT 0;
CREATE TABLE web_sessions (
	token_hash TEXT PRIMARY KEY,
	user       TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL
) WITHOUT ROWID;
