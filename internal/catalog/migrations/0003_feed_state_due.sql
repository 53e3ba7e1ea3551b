-- feed-due's index. It decides from every subscription's next fetch time
-- and reads the states of the feeds that may be due only: by the feed's key
-- (a fetch updates its entry in place, a page for several fetched feeds), not
-- by the time (each fetch moved its key: a page per feed and run, as many as
-- the state's row).

DROP INDEX feed_state_next;
CREATE INDEX feed_state_due ON feed_state(feed_key, next_fetch_at, last_fetch_at);
