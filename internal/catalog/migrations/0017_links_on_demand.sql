-- The link index (links) is kept only for a store that compares entries
-- across feeds (feed-dedup --cross-feed): the meta row links:kept says
-- so, and the first such run builds the index from the stored entries'
-- lines (Catalog.KeepLinks). A store that recorded an alias has compared
-- them: its index stays (the migration's Go step, keepLinksOfAliases).
-- Any other's goes, until a --cross-feed run builds it anew: kept for
-- every new entry, its lookup and insert were a tenth of feed-store's
-- work storing one, for what only a --cross-feed run needs.

DELETE FROM links WHERE NOT EXISTS (SELECT 1 FROM aliases);
