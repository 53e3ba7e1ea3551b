package apps

import (
	"time"

	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/cmdkit"
	"github.com/feedpipe/feedpipe/internal/stats"
)

// FeedStats is feed-stats, which prints per-feed and total figures from the
// store, never touching the network.
func FeedStats() *cli.App {
	return &cli.App{
		Name:      "feed-stats",
		Usage:     "per-feed and total figures from the store",
		UsageText: "feed-stats [--json | --csv | --prometheus] [--days N]",
		Description: `Reads the store only (subscriptions, feed state, the last --days of
entries) and prints, per feed and in total: fetches; the share that
succeeded, answered 304 and failed; bytes received and bytes conditional GET
saved; new entries in all and per day; the median article size; the current
interval and status, with the code of the last error. A table, fitted to a
terminal's width (piped, its lines are whole); with --json,
"feed_stats" records (NDJSON, the total last, feed_id "total"); with --csv, a
header line and a row per feed. --prometheus prints the metrics feed-store
writes with --metrics-file.`,
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "NDJSON feed_stats records"},
			&cli.BoolFlag{Name: "csv", Usage: "CSV, with a header line"},
			&cli.BoolFlag{Name: "prometheus", Usage: "the Prometheus text format"},
			&cli.IntFlag{Name: "days", Usage: "the window of new/day and the median article size", Value: 7},
		}, cmdkit.CommonFlags()...),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return cmdkit.Usagef("feed-stats takes no arguments")
			}
			_, st, err := cmdkit.Setup(c, cmdkit.ReadOnly)
			if err != nil {
				return err
			}
			if c.Bool("prometheus") {
				cat, err := catalog.Open(c.Context, st, nil)
				if err != nil {
					return err
				}
				defer cat.Close()
				t, err := stats.Compute(c.Context, cat, time.Now())
				if err != nil {
					return err
				}
				return stats.WriteMetrics(c.App.Writer, t, stats.LoadHistogram(c.Context, cat))
			}
			format := stats.Table
			switch {
			case c.Bool("json") && c.Bool("csv"):
				return cmdkit.Usagef("--json and --csv: choose one")
			case c.Bool("json"):
				format = stats.NDJSON
			case c.Bool("csv"):
				format = stats.CSV
			}
			if c.Int("days") < 1 {
				return cmdkit.Usagef("--days %d: it must be at least 1", c.Int("days"))
			}
			return stats.Run(stats.Config{Out: c.App.Writer, Store: st, Now: time.Now(), Days: c.Int("days"), Format: format, Width: cmdkit.TerminalWidth(c.App.Writer)})
		},
	}
}
