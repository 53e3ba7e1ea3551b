-- Each subscription's labels as rows, kept by triggers from the labels
-- column: a label's feeds are an index range, not a read of every
-- subscription's JSON (25 ms at 100,000 feeds, at each listing of a label by
-- feed-read, and at each change of the subscriptions by feed-serve).

CREATE TABLE subscription_labels (
	label    TEXT NOT NULL,
	feed_key INTEGER NOT NULL,
	PRIMARY KEY (label, feed_key)
) WITHOUT ROWID;
CREATE INDEX subscription_labels_feed ON subscription_labels(feed_key);
INSERT OR IGNORE INTO subscription_labels (label, feed_key) SELECT l.value, s.feed_key FROM subscriptions s, json_each(s.labels) l;
CREATE TRIGGER subscriptions_labels_insert AFTER INSERT ON subscriptions BEGIN
	DELETE FROM subscription_labels WHERE feed_key = new.feed_key;
	INSERT OR IGNORE INTO subscription_labels (label, feed_key) SELECT value, new.feed_key FROM json_each(new.labels);
END;
CREATE TRIGGER subscriptions_labels_update AFTER UPDATE OF labels ON subscriptions BEGIN
	DELETE FROM subscription_labels WHERE feed_key = old.feed_key;
	INSERT OR IGNORE INTO subscription_labels (label, feed_key) SELECT value, new.feed_key FROM json_each(new.labels);
END;
CREATE TRIGGER subscriptions_labels_delete AFTER DELETE ON subscriptions BEGIN
	DELETE FROM subscription_labels WHERE feed_key = old.feed_key;
END;
