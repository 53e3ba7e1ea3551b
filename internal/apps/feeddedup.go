package apps

import (
	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/cmdkit"
	"github.com/feedpipe/feedpipe/internal/dedup"
)

// FeedDedup is feed-dedup, which drops entries the store already holds and
// marks changed ones as updates.
func FeedDedup() *cli.App {
	return &cli.App{
		Name:      "feed-dedup",
		Usage:     "drop entries already stored, mark changed ones as updates",
		UsageText: "feed-due | feed-fetch | feed-parse | feed-scrape | feed-dedup | feed-store",
		Description: `Reads "entry" records and looks each up in the store's index by entry_uid:
an unknown entry goes on with status "new", a known one with a content_hash
never stored before goes on with status "updated", and a version already
stored, or seen earlier in this run, is dropped. Each "fetch" record gets a "dedup" section
counting its entries. feed-dedup never writes the index: an entry is seen
only once feed-store has stored it. Records of other types pass through.

With --cross-feed, a new entry whose canonical link (compared without its
scheme, normalized) was stored first from another feed goes on with status
"alias" and "alias_of" {feed_id, entry_uid} naming that entry; feed-store
then records an "alias" record instead of storing it again: the same URL
from two sources is added once. An alias recorded already is
dropped as unchanged. The "dedup" section counts aliases too. The first
--cross-feed run on a store builds the catalog's index of the stored
entries' links from entries/, once (the one write feed-dedup makes);
feed-store keeps it from then on.`,
		Flags: append(cmdkit.CommonFlags(),
			&cli.BoolFlag{Name: "cross-feed", Usage: "mark a new entry whose canonical link was stored from another feed as an alias of that entry", EnvVars: []string{"FEEDPIPE_CROSS_FEED"}},
		),
		Action: func(c *cli.Context) error {
			log, st, err := cmdkit.Setup(c, cmdkit.ReadsInPipeline)
			if err != nil {
				return err
			}
			return dedup.Run(c.Context, dedup.Config{In: c.App.Reader, Out: cmdkit.Output(c.App.Writer), Log: log, Store: st,
				CrossFeed: c.Bool("cross-feed")})
		},
	}
}
