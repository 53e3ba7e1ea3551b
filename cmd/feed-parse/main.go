// Command feed-parse turns fetched payloads into normalized entries.
package main

import (
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/cmdkit"
	"github.com/feedpipe/feedpipe/internal/ids"
	"github.com/feedpipe/feedpipe/internal/parse"
	"github.com/feedpipe/feedpipe/internal/urlnorm"
)

func main() {
	cmdkit.Main(&cli.App{
		Name:  "feed-parse",
		Usage: "parse fetched RSS, Atom and JSON Feed payloads into entries",
		UsageText: `feed-due | feed-fetch | feed-parse | feed-dedup | feed-store
   cat STORE/fetches/2026-11-20.ndjson | feed-parse | feed-dedup | feed-store   (replay)
   feed-parse --base-url URL FILE...                                            (ad hoc)`,
		Description: `Reads "fetch" records, loads each payload from the raw store and writes the
feed's "entry" records followed by the fetch record, now with its "parse"
section. A first or stale fetch keeps only its item_limit most recent entries.
Fetches with nothing to parse (304, errors, websites) and records of other
types pass through unchanged. A payload that is not a feed gets a parse error
in its fetch record; the run goes on and exits 1.

With FILE arguments it parses those payload files instead (plain, or .zst as
the store keeps them) and writes only their entries; --base-url gives the
feed's URL, from which relative links resolve and the feed id derives.`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "base-url", Usage: "with FILE arguments: the feed's URL"},
			&cli.StringFlag{Name: "feed-id", Usage: "with FILE arguments: the feed id to give the entries (default: derived from --base-url)"},
		}, cmdkit.CommonFlags()...),
		Action: func(c *cli.Context) error {
			log, st, err := cmdkit.Setup(c, cmdkit.ReadOnly)
			if err != nil {
				return err
			}
			out := cmdkit.Output(c.App.Writer)
			if c.NArg() == 0 {
				if c.IsSet("base-url") || c.IsSet("feed-id") {
					return cmdkit.Usagef("--base-url and --feed-id go with FILE arguments")
				}
				return parse.Run(c.Context, parse.Config{In: c.App.Reader, Out: out, Log: log, Store: st})
			}
			base, feedID := c.String("base-url"), c.String("feed-id")
			if base != "" {
				norm, err := urlnorm.Normalize(base)
				if err != nil {
					return cmdkit.Usagef("--base-url: %s", strings.TrimPrefix(err.Error(), "urlnorm: "))
				}
				if feedID == "" {
					feedID = ids.FeedID(norm)
				}
			}
			if feedID == "" {
				return cmdkit.Usagef("FILE arguments need --base-url URL (the feed's URL) or --feed-id ID")
			}
			return parse.RunFiles(c.Context, parse.FileConfig{Out: out, Log: log, Store: st, FeedID: feedID, BaseURL: base, Files: c.Args().Slice()})
		},
	})
}
