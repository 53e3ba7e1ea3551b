package apps

import (
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/cmdkit"
	"github.com/feedpipe/feedpipe/internal/store"
	"github.com/feedpipe/feedpipe/internal/storedir"
)

// maintenance are feed-store's subcommands: work on the store itself, run
// by hand or from cron, not in the pipeline.
func maintenance() []*cli.Command {
	return []*cli.Command{pruneCommand(), reparseCommand(), reindexCommand(), checkCommand(), heartbeatCommand()}
}

func pruneCommand() *cli.Command {
	return &cli.Command{
		Name:  "prune",
		Usage: "delete old raw payloads, and, when asked, old metadata and entries",
		UsageText: `feed-store prune --raw-keep 30d --raw-keep-per-feed 5
   feed-store prune --raw-keep 30d --articles-keep 365d --metadata-keep 90d --dry-run
   feed-store prune --seen-keep 180d`,
		Description: `Deletes what the flags allow and nothing else; with no flag, nothing goes.
Ages are Go durations (36h) or days and weeks (30d, 2w). Each setting
has a FEEDPIPE_PRUNE_* variable and a key in the [feed-store.prune]
table of the configuration file; feed-loop --prune runs it once a day.

A raw payload goes when it was last fetched more than --raw-keep ago and is
not among the --raw-keep-per-feed newest payloads of a feed that fetched
it, and no stored entry comes from it (its raw_ref), unless
--even-referenced. --articles-keep deletes the day files of entries/
(and with them their versions; a link of the URL index whose entry is
gone is dropped, so the next entry with it is stored, not made an alias
of nothing), --metadata-keep those of events/, aliases/ and decisions/, the fetch
records of fetches/ no stored entry points at, the media records of files
not stored, and the run ledger lines
of the fetch records it deleted: the metadata's TTL. The media of the
entries --articles-keep or --seen-keep take go with them (feed-media: a
file that entries of several feeds share goes when none is left), with
the partial files of downloads no entry asks for. --seen-keep is its
seen-ids TTL: an entry whose latest version was last seen longer ago
leaves its feed's index (and would be stored as new if it came back),
unless the feed's latest payload, parsed again, still holds it; a feed
whose latest payload cannot be read keeps all. Nothing of the current
UTC day goes, nor anything a crash recovery would still read. The key of each file deleted (--dry-run: to delete) goes to
stdout; a summary line to stderr. It takes the store's lock, as feed-store
does.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "raw-keep", Usage: "keep raw payloads fetched within this age (e.g. 30d)", EnvVars: []string{"FEEDPIPE_PRUNE_RAW_KEEP"}},
			&cli.IntFlag{Name: "raw-keep-per-feed", Usage: "keep the newest N raw payloads of each feed, whatever their age", EnvVars: []string{"FEEDPIPE_PRUNE_RAW_KEEP_PER_FEED"}},
			&cli.BoolFlag{Name: "even-referenced", Usage: "delete raw payloads that stored entries come from too", EnvVars: []string{"FEEDPIPE_PRUNE_EVEN_REFERENCED"}},
			&cli.StringFlag{Name: "articles-keep", Usage: "keep entries/ day files within this age (default: forever)", EnvVars: []string{"FEEDPIPE_PRUNE_ARTICLES_KEEP"}},
			&cli.StringFlag{Name: "metadata-keep", Usage: "keep events/, aliases/, decisions/ and fetches/ day files within this age (default: forever)", EnvVars: []string{"FEEDPIPE_PRUNE_METADATA_KEEP"}},
			&cli.StringFlag{Name: "seen-keep", Usage: "forget, in the entry index, entries not seen within this age and no longer served (default: never)", EnvVars: []string{"FEEDPIPE_PRUNE_SEEN_KEEP"}},
			&cli.BoolFlag{Name: "dry-run", Usage: "list what would go, delete nothing"},
			&cli.BoolFlag{Name: "no-wait", Usage: "exit at once, instead of waiting, when a feed-store holds the store's lock"},
		},
		Action: func(c *cli.Context) error {
			cfg := store.PruneConfig{RawKeepPerFeed: c.Int("raw-keep-per-feed"), EvenReferenced: c.Bool("even-referenced"),
				DryRun: c.Bool("dry-run"), NoWait: c.Bool("no-wait"), Out: c.App.Writer}
			for name, dst := range map[string]*time.Duration{"raw-keep": &cfg.RawKeep, "articles-keep": &cfg.ArticlesKeep, "metadata-keep": &cfg.MetadataKeep, "seen-keep": &cfg.SeenKeep} {
				if !c.IsSet(name) {
					continue
				}
				d, err := store.ParseAge(c.String(name))
				if err != nil {
					return cmdkit.Usagef("--%s: %s", name, strings.TrimPrefix(err.Error(), "store: "))
				}
				*dst = d
			}
			if cfg.RawKeepPerFeed < 0 {
				return cmdkit.Usagef("--raw-keep-per-feed must not be negative")
			}
			if cfg.EvenReferenced && cfg.RawKeep == 0 && cfg.RawKeepPerFeed == 0 {
				return cmdkit.Usagef("--even-referenced goes with --raw-keep or --raw-keep-per-feed")
			}
			log, st, err := cmdkit.Setup(c, cmdkit.Writes)
			if err != nil {
				return err
			}
			cfg.Store, cfg.Log = st, log
			sum, err := store.Prune(c.Context, cfg)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.App.ErrWriter, "feed-store prune: %s\n", sum)
			return nil
		},
	}
}

func reparseCommand() *cli.Command {
	return &cli.Command{
		Name:  "reparse",
		Usage: "parse stored payloads again after a parser change, or to store what a run lost; store what changed",
		UsageText: `feed-store reparse --since 2026-11-01 > updates.ndjson
   feed-store reparse --since 2026-11-01 --max-items 50000   (payloads that had too many items)`,
		Description: `Reads the fetch records of fetches/ from the day --since on, parses their
payloads again with feed-parse's code (and its tracking parameter flags),
and passes the entries through feed-dedup's and feed-store's code. Of each
entry the newest parse counts: one that parses as it is stored is left
alone; one that parses differently is stored as a new version, in place of
the old one, and announced on stdout as "updated_entry". An entry the
parser now gives another id (one without an id of its own whose link
changed) is not stored twice. Payloads pruned away are reported and
skipped.

It also mends a store that lost entries: a run without feed-parse (or
feed-scrape) in its pipeline, or a payload that failed to parse (not a
feed, too many items) whose validators were kept, so that the server's 304
skipped it since. Entries of such payloads never stored are stored now, as
"new_entry"; a source whose last body is still not read (a website, whose
pages only feed-scrape reads, or a payload that fails again) loses its
validators, so that its next fetch brings the body whole.`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "since", Usage: "first day to re-parse, YYYY-MM-DD (UTC)", Required: true},
			&cli.BoolFlag{Name: "no-wait", Usage: "exit at once, instead of waiting, when a feed-store holds the store's lock"},
		}, cmdkit.ParserFlags()...),
		Action: func(c *cli.Context) error {
			since, err := time.Parse(time.DateOnly, c.String("since"))
			if err != nil {
				return cmdkit.Usagef("--since: %q is not a day such as 2026-11-01", c.String("since"))
			}
			p, err := cmdkit.Parser(c)
			if err != nil {
				return err
			}

			log, st, err := cmdkit.Setup(c, cmdkit.Writes)
			if err != nil {
				return err
			}
			var sum store.ReparseSummary
			err = store.Reparse(c.Context, store.ReparseConfig{Store: st, Out: cmdkit.Output(c.App.Writer), Log: log,
				Since: since, Parser: p, NoWait: c.Bool("no-wait"), Summary: &sum})
			fmt.Fprintf(c.App.ErrWriter, "feed-store reparse: %d fetches, %d entries: %d unchanged, %d updated, %d new, %d with a new id not stored again; %d sources to fetch whole\n",
				sum.Fetches, sum.Entries, sum.Unchanged, sum.Updated, sum.New, sum.Renamed, sum.Refetch)
			return err
		},
	}
}

func reindexCommand() *cli.Command {
	return &cli.Command{
		Name:      "reindex",
		Usage:     "rebuild the catalog (catalog.db) from the store's files",
		UsageText: `feed-store reindex`,
		Description: `Rebuilds the store's catalog from its files alone: the subscriptions from
subscriptions.ndjson, the entry index, links and aliases from entries/ and
aliases/, the fetch index from fetches/. The feed states, which the files
do not hold whole, are kept when the catalog can be read; when it is gone
or damaged (it is then moved aside, as catalog.db.damaged-TIME), they are
rebuilt from the fetch records: counts, the last fetch and error. Then
each feed's next fetch is whole, not conditional, and the scheduler learns
its pace again. It reads every stored entry once. It takes the store's
lock and the fetch lock: stop feed-loop first.`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "no-wait", Usage: "exit at once, instead of waiting, when a feed-store holds the store's lock"},
		},
		Action: func(c *cli.Context) error {
			log, st, err := cmdkit.Setup(c, cmdkit.Writes)
			if err != nil {
				return err
			}
			for _, lock := range []string{storedir.StoreLock, storedir.FetchLock} {
				unlock, err := st.Lock(lock, !c.Bool("no-wait"), func() {
					log.Info("waiting for the store's lock: a stage is writing", "lock", st.Path(lock))
				})
				if err != nil {
					return err
				}
				defer unlock()
			}
			sum, err := catalog.Reindex(c.Context, st, log)
			if err != nil {
				return err
			}
			states := "kept"
			if sum.StatesRebuilt {
				states = "rebuilt from the fetch records"
			}
			fmt.Fprintf(c.App.ErrWriter, "feed-store reindex: %d subscriptions, %d entries (%d versions), %d aliases, %d fetches; %d feed states %s\n",
				sum.Subscriptions, sum.Entries, sum.Versions, sum.Aliases, sum.Fetches, sum.States, states)
			return nil
		},
	}
}

func checkCommand() *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "check the catalog (catalog.db) with SQLite's quick_check",
		UsageText: `feed-store check`,
		Description: `Reads the whole catalog and checks its structure (PRAGMA quick_check): a
few seconds for millions of entries. Exits 0 when it is sound; otherwise
says what is wrong and exits 1: feed-store reindex then rebuilds it from
the store's files. The stages check what they read as they go and stop
with the same advice; this checks all of it at once, for a cron job or
after a crash of the machine.`,
		Action: func(c *cli.Context) error {
			_, cat, err := cmdkit.SetupCatalog(c, cmdkit.ReadOnly)
			if err != nil {
				return err
			}
			defer cat.Close()
			if err := cat.Check(c.Context); err != nil {
				return err
			}
			fmt.Fprintf(c.App.ErrWriter, "feed-store check: %s is sound\n", cat.Path())
			return nil
		},
	}
}
