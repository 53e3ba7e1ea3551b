-- What a feed's last body read said beyond its format: the site it links
-- to (a reader app's htmlUrl) and the warnings of its parse (a feed cut
-- short, a bare '&'), shown with its state; and each fetch's parse, which
-- fetches/ (written before the parse) does not hold.

ALTER TABLE feed_state ADD COLUMN link TEXT NOT NULL DEFAULT '';
ALTER TABLE feed_state ADD COLUMN warnings TEXT NOT NULL DEFAULT '';
ALTER TABLE fetches ADD COLUMN parse TEXT;
