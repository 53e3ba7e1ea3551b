package apps

import (
	"time"

	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/cmdkit"
	"github.com/feedpipe/feedpipe/internal/due"
)

// FeedDue is feed-due, which writes a due record for every subscription that
// should be fetched now.
func FeedDue() *cli.App {
	return &cli.App{
		DisableSliceFlagSeparator: true, // --feed URL: a URL may hold commas
		Name:                      "feed-due",
		Usage:                     "list the subscriptions due for a fetch, as due records",
		UsageText:                 "feed-due [--all | --feed ID...] [--now TIME] | feed-fetch | feed-parse | feed-scrape | feed-dedup | feed-store\n   feed-due --explain ID",
		Description: `Reads the store's subscriptions and the feed state feed-store wrote, and
writes one "due" record (feedpipe-ndjson(5)) for each enabled subscription that
was never fetched or whose next fetch time has passed, most overdue first.
A first fetch, or one after more than 15 days, carries item_limit 20.
The next fetch time is the scheduler's (scheduler.md in share/doc/feedpipe): a feed the
scheduler disabled for errors is still due for its probes, a feed paused
with feed-sub pause is not, and feed-sub refetch makes one due now. A
feed whose private address was refused is due at once when allowed it:
by its subscription (feed-sub set --allow-private), or every feed by
FEEDPIPE_ALLOW_PRIVATE=1 in feed-due's environment.
While a feed's WebSub push lives, its scheduled fetches are held to one a
day (none with push only); a webhook source is never due. The next page of
each archive walk (RFC 5005) comes after the feeds, as a due record of
reason archive: one a run, 20 a day, none while the feed backs off or is
paused.
--explain ID prints, for people, a feed's scheduler state, the inputs of
its last decision and the decision in words, and its push and walk.
The scheduler's flags (below, each with its variables) are those of
scheduler.md §5.`,
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "all", Usage: "every subscription in service, due or not: enabled, failing or refused, as feed-sub ls says (not paused, not disabled; a Retry-After still holds)"},
			&cli.BoolFlag{Name: "include-paused", Usage: "with --all: the paused subscriptions too (by hand or by the scheduler)"},
			&cli.StringSliceFlag{Name: "feed", Usage: "only this subscription (feed id, id prefix or URL), due or not; repeatable"},
			&cli.StringFlag{Name: "now", Usage: "decide as if it were this RFC 3339 time (tests, replays)", EnvVars: []string{"FEEDPIPE_NOW"}},
			&cli.StringFlag{Name: "explain", Usage: "print the scheduler's state and decision for this subscription (feed id, id prefix or URL) in words, and nothing else"},
		}, append(cmdkit.CommonFlags(), cmdkit.SchedFlags()...)...),
		Action: func(c *cli.Context) error {
			log, st, err := cmdkit.Setup(c, cmdkit.ReadOnly)
			if err != nil {
				return err
			}
			if c.Bool("include-paused") && !c.Bool("all") {
				return cmdkit.Usagef("--include-paused goes with --all")
			}
			now := time.Now()
			if s := c.String("now"); s != "" {
				if now, err = time.Parse(time.RFC3339, s); err != nil {
					return cmdkit.Usagef("--now (or FEEDPIPE_NOW) %q is not an RFC 3339 time such as 2026-11-21T08:00:00Z", s)
				}
			}
			p, err := cmdkit.SchedParams(c)
			if err != nil {
				return err
			}
			cfg := due.Config{
				Out: cmdkit.Output(c.App.Writer), Log: log, Store: st,
				Now: now, All: c.Bool("all"), IncludePaused: c.Bool("include-paused"), Feeds: c.StringSlice("feed"), Sched: p,
				AllowPrivate: cmdkit.AllowPrivateEnv(),
			}
			if cmdkit.IsTerminal(c.App.ErrWriter) {
				cfg.Msg = c.App.ErrWriter // a person is watching: say when the next feed is due
			}
			if ref := c.String("explain"); ref != "" {
				return cmdkit.UsageIf(due.Explain(cfg, ref, c.App.Writer), catalog.ErrNoSuchSubscription)
			}
			err = due.Run(cfg)
			return cmdkit.UsageIf(err, catalog.ErrNoSuchSubscription)
		},
	}
}
