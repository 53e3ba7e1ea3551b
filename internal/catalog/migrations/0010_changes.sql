-- What each write transaction changed (changes.go), for readers that keep
-- answers.

CREATE TABLE changes (
	seq   INTEGER PRIMARY KEY,
	feeds TEXT
);
