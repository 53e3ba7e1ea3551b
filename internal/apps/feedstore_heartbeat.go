package apps

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/cmdkit"
	"github.com/feedpipe/feedpipe/internal/stats"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// heartbeatCommand is `feed-store heartbeat`: feed-loop records each
// cycle's summary in the store with it.
func heartbeatCommand() *cli.Command {
	return &cli.Command{
		Name:  "heartbeat",
		Usage: "record a cycle of the pipeline in the store (feed-loop runs it after each cycle)",
		UsageText: `feed-store heartbeat --start 2026-11-21T10:00:00Z --end 2026-11-21T10:00:03Z --status 0 --summary-file loop.summary
   feed-store heartbeat --start 1795255200.25 --end 1795255203.5 --status 1`,
		Description: `Keeps, in the store's catalog, the summary of one cycle: when it started
and ended, its exit status, and feed-store's counts of it (the line
feed-store --summary-file wrote). feed-stats shows the last cycle, and
the metrics (feed-store --metrics-file, FEEDPIPE_METRICS_FILE, which this
rewrites at once) have feedpipe_last_cycle_* and
feedpipe_last_completed_cycle_end_timestamp_seconds, the end of the last
cycle that ran to its end (status 0 or 1): a monitor alerts when it is
old. Times are RFC 3339 or Unix seconds (a fraction allowed). It prints
the number of cycles recorded, this one included: feed-loop numbers its
cycles by it.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "start", Usage: "when the cycle started", Required: true},
			&cli.StringFlag{Name: "end", Usage: "when it ended", Required: true},
			&cli.IntFlag{Name: "status", Usage: "its exit status", Required: true},
			&cli.BoolFlag{Name: "stopped", Usage: "a signal stopped it early"},
			&cli.StringFlag{Name: "summary-file", Usage: "the counts: the key=value line of feed-store --summary-file (a missing or empty file: none)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return cmdkit.Usagef("heartbeat takes no arguments")
			}
			cycle := stats.Cycle{Status: c.Int("status"), Stopped: c.Bool("stopped"), Counts: map[string]int64{}}
			for name, dst := range map[string]*ndjson.Time{"start": &cycle.Start, "end": &cycle.End} {
				t, err := parseTime(c.String(name))
				if err != nil {
					return cmdkit.Usagef("--%s %q: %v", name, c.String(name), err)
				}
				*dst = ndjson.At(t)
			}
			if path := c.String("summary-file"); path != "" {
				b, err := os.ReadFile(path)
				if err != nil && !os.IsNotExist(err) {
					return cmdkit.Usage(err)
				}
				if cycle.Counts, err = stats.ParseCounts(string(b)); err != nil {
					return cmdkit.Usagef("%s: %v", path, strings.TrimPrefix(err.Error(), "stats: "))
				}
			}
			_, cat, err := cmdkit.SetupCatalog(c, cmdkit.Writes)
			if err != nil {
				return err
			}
			defer cat.Close()
			h, err := stats.RecordCycle(c.Context, cat, cycle)
			if err != nil {
				return err
			}
			// Its number, which feed-loop's line for the cycle says.
			if _, err := fmt.Fprintln(c.App.Writer, h.Cycles); err != nil {
				return err
			}
			// The metrics file feed-store wrote during the cycle has the
			// cycle before: it gets this one.
			if path := c.String("metrics-file"); path != "" {
				t, err := stats.Compute(c.Context, cat, time.Now())
				if err != nil {
					return err
				}
				return stats.WriteMetricsFile(path, t, stats.LoadHistogram(c.Context, cat))
			}
			return nil
		},
	}
}

// parseTime reads an RFC 3339 time or Unix seconds, such as
// 1795255200.25.
func parseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	secs, err := strconv.ParseFloat(s, 64)
	if err != nil || secs < 0 || math.IsInf(secs, 0) {
		return time.Time{}, fmt.Errorf("not an RFC 3339 time or Unix seconds")
	}
	whole, frac := math.Modf(secs)
	return time.Unix(int64(whole), int64(math.Round(frac*1e6))*1000).UTC(), nil
}
