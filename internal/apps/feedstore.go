package apps

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/cmdkit"
	"github.com/feedpipe/feedpipe/internal/store"
)

// FeedStore is feed-store, which stores entries and feed state and announces
// what it stored.
func FeedStore() *cli.App {
	return &cli.App{
		Name:      "feed-store",
		Usage:     "store entries and feed state; write new_entry and updated_entry events",
		UsageText: "feed-due | feed-fetch | feed-parse | feed-scrape | feed-dedup | feed-store > new-entries.ndjson",
		Description: `Reads "entry" and "fetch" records. Each entry not already stored as it is
goes to entries/YYYY-MM-DD.ndjson (synced), then into the index, and a
"new_entry" or "updated_entry" event goes to events/YYYY-MM-DD.ndjson and to
stdout, with the feed's name and labels. Each fetch record updates its
feed's state: cache validators, last fetch and success, consecutive
failures, its format and publisher, and the scheduler's state and decision
(scheduler.md in share/doc/feedpipe): a "feed_disabled" or
"feed_reenabled" event follows
when a feed leaves or re-enters service, and a "decision" record goes to
decisions/YYYY-MM-DD.ndjson (and to stdout with --decisions). An alias
record (feed-dedup --cross-feed) goes to aliases/YYYY-MM-DD.ndjson.
A pushed body's fetch record (origin websub or webhook) moves nothing of
its feed's schedule; an archive page's entries are history: stored only
when new, as "backfilled_entry" events, never "new_entry". So
stdout carries events only.
Records of other types pass through. One feed-store writes to a store at a
time: a second one waits for the first (or, with --no-wait, exits).
The scheduler's flags (below, each with its variables) are those of
scheduler.md §5.`,
		Flags: append([]cli.Flag{
			// Not EnvVars: urfave/cli would read the variables as Go
			// durations, and the environment speaks whole seconds.
			&cli.DurationFlag{Name: "interval", Usage: "poll every feed without an interval of its own at this fixed interval, such as 1h (the policy fixed:1h); default: the scheduler's policy (env FEEDPIPE_INTERVAL or NEWSFED_POLL_INTERVAL, seconds)"},
			&cli.BoolFlag{Name: "decisions", Usage: `also write the scheduler's "decision" records to stdout (they always go to decisions/ in the store)`},
			&cli.BoolFlag{Name: "no-wait", Usage: "exit at once, instead of waiting, when another feed-store holds the store's lock"},
			&cli.StringFlag{Name: "summary-file", Usage: "write the run's counts here as one key=value line (for scripts/feed-loop)"},
			&cli.StringFlag{Name: "notify-file", Usage: "also append the run's feed_disabled and feed_reenabled events to this file (for feed-loop --on-event)"},
			&cli.StringFlag{Name: "metrics-file", Usage: "write the store's figures here in the Prometheus text format after each run (node_exporter's textfile collector)", EnvVars: []string{"FEEDPIPE_METRICS_FILE"}},
		}, append(cmdkit.CommonFlags(), cmdkit.SchedFlags()...)...),
		Commands: maintenance(),
		Action: func(c *cli.Context) error {
			log, st, err := cmdkit.Setup(c, cmdkit.Writes)
			if err != nil {
				return err
			}
			p, err := cmdkit.SchedParams(c)
			if err != nil {
				return err
			}
			interval, err := cmdkit.FixedInterval(c)
			if err != nil {
				return err
			}
			out := c.App.Writer
			if path := c.String("notify-file"); path != "" {
				f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
				if err != nil {
					return cmdkit.Usage(err)
				}
				defer f.Close()
				out = &eventTee{w: out, file: f}
			}
			var sum store.Summary
			err = store.Run(c.Context, store.Config{
				In: c.App.Reader, Out: cmdkit.Output(out), Log: log, Store: st,
				Sched: p, Interval: interval, NoWait: c.Bool("no-wait"), Summary: &sum, MetricsFile: c.String("metrics-file"),
				Decisions: c.Bool("decisions"),
			})
			if path := c.String("summary-file"); path != "" {
				line := fmt.Sprintf("feeds=%d not_modified=%d same_body=%d errors=%d new=%d updated=%d bytes_saved=%d\n",
					sum.Feeds, sum.NotModified, sum.SameBody, sum.Errors, sum.New, sum.Updated, sum.BytesSaved)
				if werr := os.WriteFile(path, []byte(line), 0o644); werr != nil && err == nil {
					err = werr
				}
			}
			return err
		},
	}
}

// eventTee passes what feed-store writes to stdout on, and copies its
// feed_disabled and feed_reenabled lines to file (--notify-file). Records
// are written strict, "type" first, so a line's first bytes tell.
type eventTee struct {
	w    io.Writer
	file io.Writer
	line []byte // the current line so far, while it may be an event to copy
	skip bool   // the current line is not one
}

var notified = [][]byte{[]byte(`{"type":"feed_disabled"`), []byte(`{"type":"feed_reenabled"`)}

func (t *eventTee) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	for rest := p[:n]; len(rest) > 0; {
		chunk, after, ended := bytes.Cut(rest, []byte("\n"))
		rest = after
		if !t.skip {
			t.line = append(t.line, chunk...)
			if ended {
				t.line = append(t.line, '\n')
			}
			t.skip = !slices.ContainsFunc(notified, func(prefix []byte) bool {
				k := min(len(prefix), len(t.line))
				return bytes.Equal(t.line[:k], prefix[:k])
			})
			if ended && !t.skip {
				t.file.Write(t.line) // only feed-loop's hooks miss a line that cannot be kept
			}
		}
		if ended {
			t.line, t.skip = t.line[:0], false
		}
	}
	return n, err
}
