package apps

import (
	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/cmdkit"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/sub"
)

// feed-sub's push and backfill: the settings, feed-sub push sync and
// feed-sub backfill (design.md in share/doc/feedpipe, "push", "backfill").

// pushSettingFlags are the push and backfill settings of add and set.
func pushSettingFlags(set bool) []cli.Flag {
	backfill := "walk the feed's archive (RFC 5005 prev-archive, or next pages) into the store, as history"
	if set {
		backfill += "; --backfill=false stops walking it"
	}
	return []cli.Flag{
		&cli.StringFlag{Name: "push", Usage: "`MODE` of WebSub push: preferred (subscribe when the feed names a hub; poll once a day meanwhile), only (no poll while the push lives), off", DefaultText: "preferred"},
		&cli.BoolFlag{Name: "backfill", Usage: backfill},
	}
}

// pushChanges reads pushSettingFlags (and set's --new-secret) into ch.
func pushChanges(c *cli.Context, ch *sub.Changes) {
	if c.IsSet("push") {
		v := c.String("push")
		ch.Push = &v
	}
	if c.IsSet("backfill") {
		v := c.Bool("backfill")
		ch.Backfill = &v
	}
	ch.NewSecret = c.Bool("new-secret")
}

// pushCommand is feed-sub push sync. (sync is an argument, not a
// subcommand: the configuration file reaches a binary's commands, and
// their flags, one level down.)
func pushCommand() *cli.Command {
	return &cli.Command{
		Name:      "push",
		Usage:     "push sync: subscribe, renew and end the WebSub subscriptions (feed-loop runs it after each cycle)",
		ArgsUsage: "sync",
		UsageText: "feed-sub push sync --public-url https://feeds.example.org",
		Description: `push sync brings the WebSub subscriptions in line with the feeds, once:
it subscribes each feed that names a WebSub hub (its last body's Link
header, else its document's hub link) and whose push is not off, at that
hub, with a callback of its own under --public-url (where feed-serve
answers) and a random secret; renews a subscription before its lease
lapses; unsubscribes a feed removed, disabled or set to push off;
subscribes anew when the hub, the topic or --public-url changed. Without
--public-url it subscribes nothing (and ends the subscriptions there are).
A hub on a private address is asked only for a feed allowed such
addresses, or when every feed may (--allow-private).`,
		Flags: []cli.Flag{
			cmdkit.PublicURLFlag(),
			&cli.DurationFlag{Name: "lease", Usage: "the lease asked of hubs (hub.lease_seconds)", Value: sub.DefaultLease},
			fetchFlags()[0], fetchFlags()[1], fetchFlags()[2],
		},
		Action: withConfig(cmdkit.Writes, func(c *cli.Context, cfg sub.Config) error {
			if c.NArg() != 1 || c.Args().First() != "sync" {
				return cmdkit.Usagef("push takes one argument, sync: feed-sub push sync")
			}
			public, err := cmdkit.PublicURL(c)
			if err != nil {
				return err
			}
			if c.Duration("lease") < 0 || c.Duration("timeout") <= 0 {
				return cmdkit.Usagef("--lease %s, --timeout %s: a lease of 0 or more, a timeout of more than 0", c.Duration("lease"), c.Duration("timeout"))
			}
			client := httpx.New(httpx.Options{UserAgent: c.String("user-agent"), Timeout: c.Duration("timeout"), AllowPrivate: c.Bool("allow-private")})
			_, err = sub.PushSync(c.Context, cfg, sub.PushOptions{PublicURL: public, Lease: c.Duration("lease"), Client: client})
			return cmdkit.UsageIf(err, sub.ErrInvalid)
		}),
	}
}

// backfillCommand is feed-sub backfill.
func backfillCommand() *cli.Command {
	return &cli.Command{
		Name:      "backfill",
		Usage:     "walk these feeds' archives now (RFC 5005): history stored as backfilled_entry",
		ArgsUsage: pickArgs,
		Description: `Starts a walk of each feed's archive by hand, whatever its backfill setting:
from the prev-archive (else next) link its last poll found, or from the
page a stopped walk stopped at. The pages come with the next runs of the
pipeline: one a run, 20 a day at most, none while the feed backs off or is
paused. feed-sub ls shows the walk (BACKFILL).`,
		Flags: pickFlags("label"),
		Action: withPicked("label", func(c *cli.Context, cfg sub.Config, refs []string) error {
			return sub.Backfill(cfg, refs)
		}),
	}
}
