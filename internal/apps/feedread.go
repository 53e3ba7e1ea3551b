package apps

import (
	"errors"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/cmdkit"
	"github.com/feedpipe/feedpipe/internal/read"
)

// defaultLimit is how many entries a listing on a terminal shows: a
// screenful or two.
const defaultLimit = 50

// FeedRead is feed-read, which lists, shows and marks the stored entries
// from a terminal, with each reader's read and starred marks.
func FeedRead() *cli.App {
	return &cli.App{
		Name:  "feed-read",
		Usage: "list, show and mark the stored entries",
		UsageText: `feed-read [--feed F | --label L] [--since T] [--until T] [--grep WORDS] [--unread] [--starred] [--limit N]
   feed-read --new                      # what arrived since the last --new
   feed-read show UID
   feed-read mark read|unread|star|unstar UID...
   feed-read mark read --feed F [--until T]
   feed-read --unread --json | jq -r .entry.title`,
		Description: `Lists the stored entries, newest first (by published, or first_seen with
--order first_seen), from the catalog; never touches the network.

On a terminal, a line per entry, fitted to its width: the reader's marks
(N unread, * starred), the date (local time), the entry's uid, the feed's
name, the title and, when the width leaves room, the link; 50 entries
unless --limit says. Piped, a TSV line per entry (every entry unless
--limit says), with the columns
    date (RFC 3339, UTC), feed, title, link, entry_uid, feed_id, read, starred (0 or 1)
where a field's backslashes, tabs, newlines and carriage returns are
written \\, \t, \n and \r and other control characters are dropped. With
--json, a JSON object a line: {"entry": the entry's record as entries/
holds its latest version (feedpipe-ndjson(5), "entry"), "feed_name": ...,
"reader": ..., "read": true|false, "starred": true|false}; it is no
record of the pipeline's, its "entry" is.

--since and --until take an RFC 3339 time, a day (2026-11-20, UTC) or a
duration back from now (90m, 24h, 7d). --grep searches the words of the
titles, summaries and contents (every word must be there; word* a prefix),
as feed-serve's search does.

--new lists what arrived since this reader's last --new, by first_seen,
every entry unless --limit says, and remembers the newest listed (in the
catalog), so that feed-read --new in a cron job or a shell prompt lists
each entry once; the first --new of a reader lists the last 24 hours. With
--feed, --label, --grep, --unread or --limit, what they leave out is not
listed by the next --new either: give such a view a --reader of its own.

show UID prints an entry as text: title, feed, date, author, link, its
content (else its summary) with the HTML made readable, and its links as
[1] URL footnotes; it marks the entry read (--keep-unread: not). mark
sets the reader's marks: read, unread, star or unstar on entries named by
their uids (those not found are reported and the others marked: exit 1),
or read on every entry of --feed, --label or --all, first seen before
--until if given.

Marks are kept per reader (--reader, "default" unless given; a Google
Reader API user reads as their name).`,
		Flags: append(append(entryPickFlags(),
			&cli.StringFlag{Name: "since", Usage: "entries at or after `TIME` (RFC 3339, a day, or a duration back: 24h): published, or first seen with --order first_seen"},
			&cli.StringFlag{Name: "grep", Usage: "entries with every one of these `WORDS` in title, summary or content"},
			&cli.BoolFlag{Name: "unread", Usage: "only the entries the reader has not read"},
			&cli.BoolFlag{Name: "starred", Usage: "only the entries the reader starred"},
			&cli.IntFlag{Name: "limit", Usage: "at most `N` entries (0: all)", DefaultText: "50 on a terminal, else all"},
			&cli.StringFlag{Name: "order", Usage: "published, or first_seen: when the store first saw them", Value: catalog.OrderPublished},
			&cli.BoolFlag{Name: "new", Usage: "what arrived since this reader's last --new (the last 24h the first time)"},
			&cli.BoolFlag{Name: "json", Usage: "a JSON object per entry: its record, feed name and marks"},
			readerFlag(),
		), cmdkit.CommonFlags()...),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return cmdkit.Usagef("unknown command %q: feed-read lists entries; its commands are show and mark (see feed-read --help)", c.Args().First())
			}
			// --new keeps the reader's place: it writes the store.
			cfg, err := config(c, map[bool]cmdkit.Access{false: cmdkit.ReadOnly, true: cmdkit.Changes}[c.Bool("new")])
			if err != nil {
				return err
			}
			now := time.Now()
			if cfg.Since, err = when(c, "since", now); err != nil {
				return err
			}
			if cfg.Until, err = when(c, "until", now); err != nil {
				return err
			}
			cfg.Feed, cfg.Label, cfg.Grep = c.String("feed"), c.String("label"), c.String("grep")
			cfg.Unread, cfg.Starred, cfg.New = c.Bool("unread"), c.Bool("starred"), c.Bool("new")
			switch o := c.String("order"); o {
			case catalog.OrderPublished, catalog.OrderFirstSeen:
				if c.IsSet("order") {
					cfg.Order = o
				}
			default:
				return cmdkit.Usagef("--order %q: it is published or first_seen", o)
			}
			cfg.Limit = c.Int("limit")
			if !c.IsSet("limit") && cfg.Format == read.Terminal && !cfg.New {
				cfg.Limit = defaultLimit
			}
			return usage(read.Run(c.Context, cfg))
		},
		Commands: []*cli.Command{
			{
				Name:      "show",
				Usage:     "print entries as text, their links as footnotes, and mark them read",
				ArgsUsage: "UID...",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "keep-unread", Usage: "do not mark the entries read"},
				},
				Action: func(c *cli.Context) error {
					// It marks what it shows read, unless --keep-unread.
					cfg, err := config(c, map[bool]cmdkit.Access{false: cmdkit.Changes, true: cmdkit.ReadOnly}[c.Bool("keep-unread")])
					if err != nil {
						return err
					}
					return usage(read.Show(c.Context, cfg, c.Args().Slice(), c.Bool("keep-unread")))
				},
			},
			{
				Name:  "mark",
				Usage: "mark entries read, unread, starred or not",
				UsageText: `feed-read mark read|unread|star|unstar UID...
   feed-read mark read --feed F [--until T]
   feed-read mark read --label L [--until T]
   feed-read mark read --all --until 24h`,
				Description: `Sets the reader's marks on the entries of the uids (an entry not found is
reported and the others marked, exit 1), or marks read every entry of a
feed, of a label's feeds or of all (--all), first seen before --until when
it is given.`,
				ArgsUsage: "read|unread|star|unstar [UID...]",
				Flags: append(entryPickFlags(),
					&cli.BoolFlag{Name: "all", Usage: "mark read the entries of every feed"},
				),
				Action: func(c *cli.Context) error {
					cfg, err := config(c, cmdkit.Changes)
					if err != nil {
						return err
					}
					until, err := when(c, "until", time.Now())
					if err != nil {
						return err
					}
					args := c.Args().Slice()
					spec := read.MarkSpec{Feed: c.String("feed"), Label: c.String("label"), All: c.Bool("all"), Until: until}
					if len(args) > 0 {
						spec.Action, spec.UIDs = args[0], args[1:]
					}
					return usage(read.Mark(c.Context, cfg, spec))
				},
			},
		},
	}
}

// entryPickFlags pick the entries of a feed, a label and a time.
func entryPickFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "feed", Usage: "the entries of this `FEED`: its feed id (or a prefix), URL or name"},
		&cli.StringFlag{Name: "label", Usage: "the entries of the feeds with this `LABEL`"},
		&cli.StringFlag{Name: "until", Usage: "entries before `TIME` (RFC 3339, a day, or a duration back: 24h): published, or first seen with --order first_seen; mark read: first seen"},
	}
}

func readerFlag() cli.Flag {
	return &cli.StringFlag{Name: "reader", Usage: "whose marks: a `NAME` of a-z, 0-9, '.', '_', '-'", EnvVars: []string{"FEEDPIPE_READER"},
		DefaultText: "the one user of feed-serve's Google Reader API when there is exactly one, else " + catalog.DefaultReader}
}

// config is the Config of every command: the store, opened for access,
// the reader, the output and its width.
func config(c *cli.Context, access cmdkit.Access) (read.Config, error) {
	log, st, err := cmdkit.Setup(c, access)
	if err != nil {
		return read.Config{}, err
	}
	cfg := read.Config{Out: c.App.Writer, Err: c.App.ErrWriter, Store: st, Log: log, Reader: c.String("reader"), Format: read.TSV}
	if cfg.Reader != "" {
		if err := catalog.CheckReader(cfg.Reader); err != nil {
			return cfg, cmdkit.Usagef("--reader: %v", err)
		}
	}
	if cmdkit.IsTerminal(c.App.Writer) {
		cfg.Format = read.Terminal
		if w, _, err := term.GetSize(int(c.App.Writer.(*os.File).Fd())); err == nil && w > 0 {
			cfg.Width = w
		}
	}
	if c.Bool("json") {
		cfg.Format = read.JSON
	}
	return cfg, nil
}

// when reads a time flag: RFC 3339, a day (UTC), or a duration back from
// now (Go's, and Nd for N days).
func when(c *cli.Context, name string, now time.Time) (time.Time, error) {
	s := strings.TrimSpace(c.String(name))
	if s == "" {
		return time.Time{}, nil
	}
	t, err := read.ParseWhen(s, now)
	if err != nil {
		return time.Time{}, cmdkit.Usagef("--%s %q: %v", name, s, err)
	}
	return t, nil
}

// usage makes the errors of what was asked usage errors (exit 2).
func usage(err error) error {
	if errors.Is(err, read.ErrUsage) {
		return cmdkit.Usage(errors.New(strings.TrimPrefix(err.Error(), read.ErrUsage.Error()+": ")))
	}
	return err
}
