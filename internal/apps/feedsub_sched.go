package apps

import (
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/cmdkit"
	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/internal/sub"
)

// schedCommands are the commands that talk to the scheduler: refetch,
// set, pause and resume.
func schedCommands() []*cli.Command {
	return []*cli.Command{
		{
			Name:      "refetch",
			Usage:     "make feeds due now (a manual nudge; a running Retry-After still holds)",
			ArgsUsage: pickArgs,
			UsageText: `feed-sub refetch https://example.org/feed.xml
   feed-sub refetch 1b4e28ba 9f0c && feed-loop --once
   feed-sub refetch --label news --state failing`,
			Description: `Asks the scheduler for a fetch now (reason manual): the next feed-due lists
the feed, also one the scheduler disabled for errors. Only a Retry-After
the server sent holds it back. Waits while feed-store holds the store lock,
and says "due now" once the change is saved. It takes feed-store's
scheduler flags too (see feed-store --help), so that its decision is
made with the same parameters.`,
			Flags: append(pickFlags("label"), cmdkit.HiddenSchedFlags()...),
			Action: withPicked("label", func(c *cli.Context, cfg sub.Config, refs []string) error {
				p, err := cmdkit.SchedParams(c)
				if err != nil {
					return err
				}
				return sub.Refetch(cfg, refs, p)
			}),
		},
		{
			Name:      "set",
			Usage:     "change feeds' settings: those add takes, and the schedule's clamps",
			ArgsUsage: "FEED... | --all | --with-label L | --state S",
			Description: `Changes only the settings given, checked as add checks them, and prints
what changed, one line per feed (credentials redacted). "" clears a
setting (--name "", --basic-auth "", --header "", --scrape-config ""), 0 an
interval; --fulltext=false turns full text off. --label replaces the labels,
--add-label and --rm-label edit them. The selector flags change members of
the feed's scraper configuration; --scrape-config FILE replaces it.

The schedule overrides the scheduler's policy from the feed's next decision
(feed-sub refetch applies it at once). A cron expression wins over an
interval; a pause (feed-sub pause) wins over both. Publisher hints (ttl,
max-age, Retry-After, skipHours/skipDays) are kept whatever is set.`,
			Flags: append(append(append(settingFlags(true), pickFlags("with-label")...),
				&cli.StringSliceFlag{Name: "add-label", Usage: "add a label (repeatable)"},
				&cli.StringSliceFlag{Name: "rm-label", Usage: "remove a label (repeatable)"},
				&cli.DurationFlag{Name: "interval", Usage: "poll at this fixed interval, 5m to 24h (0: the policy's)"},
				&cli.DurationFlag{Name: "min-interval", Usage: "never poll more often than this (0: the global min)"},
				&cli.DurationFlag{Name: "max-interval", Usage: "never poll less often than this (0: the global max)"},
				&cli.StringFlag{Name: "cron", Usage: `poll at the times of this cron expression, in UTC: five fields ("*/20 * * * *") or @hourly, @daily, @every 2h; firing at most every 5m ("" clears)`},
				&cli.BoolFlag{Name: "new-secret", Usage: "a webhook source: make it a new secret, shown once (the old one stops working)"},
			), pushSettingFlags(true)...),
			Action: withPicked("with-label", func(c *cli.Context, cfg sub.Config, refs []string) error {
				ch, err := changes(c)
				if err != nil {
					return err
				}
				// A feed refused for its private address, allowed it now,
				// is made due as refetch would, with the scheduler's
				// parameters from the environment (set's own --interval,
				// --min-interval and --max-interval are the feed's).
				if ch.Sched, err = sched.ParamsFromEnv(os.LookupEnv); err != nil {
					return cmdkit.Usage(err)
				}
				return sub.Set(cfg, refs, ch)
			}),
		},
		{
			Name:      "pause",
			Usage:     "pause feeds until a time (--until 2026-12-01T00:00:00Z, or --for 72h)",
			ArgsUsage: pickArgs,
			Flags: append([]cli.Flag{
				&cli.StringFlag{Name: "until", Usage: "an RFC 3339 time"},
				&cli.DurationFlag{Name: "for", Usage: "a duration from now"},
			}, pickFlags("label")...),
			Action: withPicked("label", func(c *cli.Context, cfg sub.Config, refs []string) error {
				var until time.Time
				switch {
				case c.IsSet("until") == c.IsSet("for"):
					return cmdkit.Usagef("pause takes one of --until TIME and --for DURATION")
				case c.IsSet("for"):
					until = time.Now().Add(c.Duration("for"))
				default:
					t, err := time.Parse(time.RFC3339, c.String("until"))
					if err != nil {
						return cmdkit.Usagef("--until %q is not an RFC 3339 time such as 2026-12-01T08:00:00Z", c.String("until"))
					}
					until = t
				}
				return sub.Pause(cfg, refs, until)
			}),
		},
		{
			Name:      "resume",
			Usage:     "lift a pause",
			ArgsUsage: pickArgs,
			Flags:     pickFlags("label"),
			Action: withPicked("label", func(c *cli.Context, cfg sub.Config, refs []string) error {
				return sub.Pause(cfg, refs, time.Time{})
			}),
		},
	}
}

// changes are the settings the flags of set change: only those given.
func changes(c *cli.Context) (sub.Changes, error) {
	var ch sub.Changes
	str := func(name string) *string {
		if !c.IsSet(name) {
			return nil
		}
		v := c.String(name)
		return &v
	}
	dur := func(name string) *time.Duration {
		if !c.IsSet(name) {
			return nil
		}
		d := c.Duration(name)
		return &d
	}
	slice := func(name string) *[]string {
		if !c.IsSet(name) {
			return nil
		}
		v := c.StringSlice(name)
		return &v
	}
	ch.Interval, ch.Min, ch.Max, ch.Cron = dur("interval"), dur("min-interval"), dur("max-interval"), str("cron")
	ch.Name, ch.Type, ch.UserAgent, ch.BasicAuth = str("name"), str("type"), str("user-agent"), str("basic-auth")
	ch.Labels, ch.Headers = slice("label"), slice("header")
	if ch.Labels != nil {
		labels := labelsOf(c, "label")
		ch.Labels = &labels
	}
	ch.AddLabels, ch.RmLabels = labelsOf(c, "add-label"), labelsOf(c, "rm-label")
	for name, to := range map[string]**bool{"fulltext": &ch.Fulltext, "allow-private": &ch.AllowPrivate} {
		if c.IsSet(name) {
			v := c.Bool(name)
			*to = &v
		}
	}
	pushChanges(c, &ch)
	scrape, err := scrapeEdit(c)
	ch.Scrape = scrape
	if err != nil {
		return ch, err
	}
	ch.Media, err = mediaEdit(c)
	return ch, err
}
