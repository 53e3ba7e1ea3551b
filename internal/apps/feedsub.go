package apps

import (
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/cmdkit"
	"github.com/feedpipe/feedpipe/internal/media"
	"github.com/feedpipe/feedpipe/internal/sub"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// FeedSub is feed-sub, which manages the subscriptions of a store.
func FeedSub() *cli.App {
	sc := schedCommands()
	return &cli.App{
		// A header value may hold commas ("Accept: a, b"): flags are split
		// on commas by labelsOf, for labels only.
		DisableSliceFlagSeparator: true,
		Name:                      "feed-sub",
		Usage:                     "add, remove, list, import and export subscriptions",
		UsageText: `feed-sub add https://example.org/feed.xml --label news
   feed-sub import my-subscriptions.opml
   feed-sub ls
   feed-sub refetch 1b4e28ba
   feed-sub set 1b4e28ba --interval 30m
   feed-sub set 1b4e28ba --fulltext --name Example --label news,tech
   feed-sub export > backup.opml`,
		Description: `Subscriptions live in the store's subscriptions.ndjson, one "subscription"
record per feed (feedpipe-ndjson(5)); the feed id is derived from the feed's
URL.
A subscription is named on the command line by its feed id, a unique prefix
of it (as ls shows), or its URL. rm, enable, disable, refetch, set, pause and
resume also pick feeds by --all, --label L (set: --with-label L) and --state
S (enabled, failing, refused, paused or disabled, as ls's STATUS begins), which
narrow each other, and say how many feeds they changed.`,
		Flags: cmdkit.CommonFlags(),
		Commands: []*cli.Command{
			{
				Name:      "add",
				Usage:     "subscribe to a feed or a website; prints its feed id",
				ArgsUsage: "URL",
				Description: `URL is a feed; with --check, it is fetched first and subscribed to only
if it is one (a web page's feeds are listed instead); with --discover, a
page whose feed is found as feed-sub discover finds it; with --type website, a page to scrape (feed-scrape): in
direct mode (the default) the page is the article, in list mode it links to
the articles. The scraper configuration comes from --scrape-config FILE
(JSON: feedpipe-ndjson(5), "scrape configuration"), the selector
flags, or both.`,
				Flags: append(append(append(settingFlags(false), pushSettingFlags(false)...),
					&cli.DurationFlag{Name: "interval", Usage: "a fixed time between fetches, 5m to 24h", DefaultText: "the scheduler's policy"},
					&cli.StringFlag{Name: "cron", Usage: `fetch at the times of this cron expression (UTC), such as "*/20 * * * *" or @hourly`},
					&cli.BoolFlag{Name: "discover", Usage: "URL is a page: subscribe to the first feed feed-sub discover finds for it"},
					&cli.BoolFlag{Name: "check", Usage: "fetch URL first: subscribe only if it is a feed; for a web page, list the feeds it links to"},
				), fetchFlags()[1:2]...), // --timeout: --allow-private is a setting here
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return cmdkit.Usagef("add takes one URL, got %d arguments", c.NArg())
					}
					scrape, err := scrapeConfig(c)
					if err != nil {
						return err
					}
					edit, err := mediaEdit(c)
					if err != nil {
						return err
					}
					spec := sub.Spec{
						URL: c.Args().First(), Name: c.String("name"), Labels: labelsOf(c, "label"),
						Type: c.String("type"), Interval: c.Duration("interval"), Cron: c.String("cron"),
						UserAgent: c.String("user-agent"), Headers: c.StringSlice("header"), BasicAuth: c.String("basic-auth"),
						Scrape: scrape, Fulltext: c.Bool("fulltext"), AllowPrivate: c.Bool("allow-private"),
						Push: c.String("push"), Backfill: c.Bool("backfill"),
					}
					if edit != nil {
						spec.Media = edit(nil)
					}
					// Everything is checked before the store is opened: a
					// command that fails makes none.
					switch {
					case c.Bool("check") && c.Bool("discover"):
						return cmdkit.Usagef("--check and --discover: choose one (--discover fetches the page anyway)")
					case c.Bool("check") && strings.EqualFold(c.String("type"), "website"):
						return cmdkit.Usagef("--check checks a feed: a website is a page, read as it is")
					}
					if err := sub.Check(spec); err != nil {
						return cmdkit.UsageIf(err, sub.ErrInvalid)
					}
					switch {
					case c.Bool("check"):
						if spec.URL, err = checked(c, spec.URL); err != nil {
							return err
						}
					case c.Bool("discover"):
						if spec.URL, err = discovered(c, spec.URL); err != nil {
							return err
						}
					}
					return withConfig(cmdkit.Writes, func(c *cli.Context, cfg sub.Config) error {
						_, _, err := sub.Add(cfg, spec)
						return cmdkit.UsageIf(err, sub.ErrInvalid)
					})(c)
				},
			},
			discoverCommand(),
			pushCommand(), backfillCommand(),
			{
				Name:      "rm",
				Aliases:   []string{"remove"},
				Usage:     "remove subscriptions (their stored entries stay)",
				ArgsUsage: pickArgs,
				Flags:     pickFlags("label"),
				Action: withPicked("label", func(c *cli.Context, cfg sub.Config, refs []string) error {
					return sub.Remove(cfg, refs)
				}),
			},
			{
				Name:  "ls",
				Usage: "list subscriptions with their state",
				Description: `A table, fitted to a terminal's width (names, labels, statuses and URLs
cut to fit, a URL in its middle); piped, its lines are whole. --json writes
the records instead.`,
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "json", Usage: "write subscription records (NDJSON), with the state the table shows, instead of a table"},
					&cli.StringFlag{Name: "label", Usage: "only subscriptions with this label"},
					&cli.StringFlag{Name: "state", Usage: "only subscriptions in this `STATE`, as STATUS begins: enabled, failing, refused, paused or disabled"},
				},
				Action: withConfig(cmdkit.ReadOnly, func(c *cli.Context, cfg sub.Config) error {
					if c.NArg() > 0 {
						return cmdkit.Usagef("ls takes no arguments (to pick feeds: --label, --state)")
					}
					err := sub.List(cfg, sub.ListOptions{JSON: c.Bool("json"), Label: c.String("label"), State: c.String("state"), Width: cmdkit.TerminalWidth(c.App.Writer)})
					return cmdkit.UsageIf(err, sub.ErrInvalid)
				}),
			},
			{
				Name:      "enable",
				Usage:     "fetch these subscriptions again (also a feed the scheduler disabled for errors: due now); one enabled and healthy is left as it is",
				ArgsUsage: pickArgs,
				UsageText: "feed-sub enable https://example.org/feed.xml\n   feed-sub enable --state disabled",
				Description: `It takes feed-store's scheduler flags too (see feed-store --help), so that
its decision is made with the same parameters.`,
				Flags: append(pickFlags("label"), cmdkit.HiddenSchedFlags()...),
				Action: withPicked("label", func(c *cli.Context, cfg sub.Config, refs []string) error {
					p, err := cmdkit.SchedParams(c)
					if err != nil {
						return err
					}
					return sub.Enable(cfg, refs, p)
				}),
			},
			{
				Name:      "disable",
				Usage:     "stop fetching these subscriptions",
				ArgsUsage: pickArgs,
				Flags:     pickFlags("label"),
				Action: withPicked("label", func(c *cli.Context, cfg sub.Config, refs []string) error {
					return sub.SetDisabled(cfg, refs, true)
				}),
			},
			sc[0], sc[1], sc[2], sc[3], // refetch, set, pause, resume
			{
				Name:  "import",
				Usage: "subscribe to every feed of an OPML file, a JSON feed list or a list of URLs",
				Description: `Reads OPML 1.0-2.0 (nested folders and category attributes become labels;
feedpipe's own attributes, which feed-sub export writes, give the source
type, full text and scraper configuration; files that are not well-formed
XML are read as far as possible), subscription records (feed-sub export
--format ndjson, feed-sub ls --json, a store's subscriptions.ndjson: every
setting is restored, but a secret a listing redacted), a JSON array such
as [{"url": "...", "label": "...", "cron": "..."}], or one URL per line
('#' comments; words after a URL are labels). FILE - reads stdin. Feeds
already subscribed, or repeated in the file, are skipped and counted.`,
				ArgsUsage: "FILE",
				Flags: []cli.Flag{
					&cli.StringSliceFlag{Name: "label", Usage: "add this label to every imported feed (repeatable)"},
				},
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return cmdkit.Usagef("import takes one FILE (or - for stdin), got %d arguments", c.NArg())
					}
					name := c.Args().First()
					var r io.Reader = c.App.Reader
					if name != "-" {
						if st, err := os.Stat(name); err == nil && st.IsDir() {
							return cmdkit.Usagef("%s is a directory: name an OPML, JSON or text file", name)
						}
						f, err := os.Open(name)
						if err != nil {
							return cmdkit.Usage(err)
						}
						defer f.Close()
						r = f
					}
					// The file is read and recognised before the store is
					// opened: one that is not a list of feeds makes none.
					src, err := sub.ReadImport(r, name)
					if err != nil {
						return err
					}
					return withConfig(cmdkit.Writes, func(c *cli.Context, cfg sub.Config) error {
						_, err := sub.ImportFrom(cfg, src, labelsOf(c, "label"))
						return err
					})(c)
				},
			},
			{
				Name:  "export",
				Usage: "write all subscriptions as OPML 2.0, or with every setting as NDJSON (a backup)",
				UsageText: `feed-sub export > subscriptions.opml
   feed-sub export --format ndjson --with-secrets > backup.ndjson && feed-sub import backup.ndjson`,
				Description: `OPML holds each feed's URL, name and labels (folders and categories), and,
in attributes of feedpipe's namespace that other readers ignore, its source
type, full text flag and scraper configuration. --format ndjson writes a
subscription record per feed with every setting (schedule, pause, disabled,
User-Agent, ...): feed-sub import restores it whole. Headers and basic auth
go only with --with-secrets: the file then holds passwords.`,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "format", Usage: "opml, or ndjson: every setting", Value: "opml"},
					&cli.BoolFlag{Name: "with-secrets", Usage: "ndjson: include each feed's extra headers and basic auth"},
				},
				Action: withConfig(cmdkit.ReadOnly, func(c *cli.Context, cfg sub.Config) error {
					if c.NArg() > 0 {
						return cmdkit.Usagef("export takes no arguments: it writes to stdout")
					}
					switch c.String("format") {
					case "opml":
						if c.Bool("with-secrets") {
							return cmdkit.Usagef("--with-secrets goes with --format ndjson: OPML has no place for secrets")
						}
						return sub.Export(cfg)
					case "ndjson":
						return sub.ExportNDJSON(cfg, c.Bool("with-secrets"))
					}
					return cmdkit.Usagef("--format %q: want opml or ndjson", c.String("format"))
				}),
			},
		},
	}
}

// settingFlags are the settings of a subscription that add takes and set
// changes (set: "" clears a setting).
func settingFlags(set bool) []cli.Flag {
	typ := &cli.StringFlag{Name: "type", Usage: "rss, atom, json, website, webhook (a source POSTed to feed-serve: add --type webhook NAME), or auto (detect from the content)", Value: "auto"}
	label := "a label (repeatable, or comma-separated)"
	if set {
		typ.Value = ""
		label = `the labels, replacing the feed's (repeatable, or comma-separated; "" for none)`
	}
	return append([]cli.Flag{
		&cli.StringFlag{Name: "name", Usage: "a name to show instead of the feed's title"},
		&cli.StringSliceFlag{Name: "label", Usage: label},
		typ,
		&cli.StringFlag{Name: "user-agent", Usage: "a User-Agent for this feed only", DefaultText: "feed-fetch's"},
		&cli.StringSliceFlag{Name: "header", Usage: `an extra request header, "Name: value" (repeatable; set replaces them all, "" for none)`},
		&cli.StringFlag{Name: "basic-auth", Usage: "user:password for HTTP basic authentication (kept in subscriptions.ndjson, which only its owner can read; never in fetch records or logs)"},
		// Not FEEDPIPE_ALLOW_PRIVATE: that lets every feed through while it
		// is set, and is kept by none.
		&cli.BoolFlag{Name: "allow-private", Usage: "this feed may be on a loopback, private or link-local address (an intranet, a server of your own), kept with it" + map[bool]string{true: "; --allow-private=false takes it back"}[set]},
		&cli.StringFlag{Name: "media", Usage: `download the enclosures of its new entries of these media types into the store (feed-media): type/subtype or type/*, comma-separated, such as "audio/*,video/mp4"` + map[bool]string{true: `; "" takes none`}[set]},
		&cli.StringFlag{Name: "media-max", Usage: "with --media or --media-images: the most bytes of one file, such as 500M or 2GB", DefaultText: "feed-media's --max-file-size"},
		&cli.BoolFlag{Name: "media-images", Usage: "download the images its new entries' content links to as well" + map[bool]string{true: "; --media-images=false stops it"}[set]},
	}, scrapeFlags()...)
}

// mediaEdit is the change the media flags make to a feed's media
// settings; nil when none is given.
func mediaEdit(c *cli.Context) (func(*ndjson.MediaSettings) *ndjson.MediaSettings, error) {
	if !c.IsSet("media") && !c.IsSet("media-max") && !c.IsSet("media-images") {
		return nil, nil
	}
	var types []string
	if c.IsSet("media") {
		var err error
		if types, err = media.ParseTypes(c.String("media")); err != nil {
			return nil, cmdkit.Usagef("--media: %s", strings.TrimPrefix(err.Error(), media.ErrSetting.Error()+": "))
		}
	}
	var limit int64
	if c.IsSet("media-max") {
		var err error
		if limit, err = media.ParseSize(c.String("media-max")); err != nil {
			return nil, cmdkit.Usagef("--media-max: %s", strings.TrimPrefix(err.Error(), media.ErrSetting.Error()+": "))
		}
	}
	return func(cur *ndjson.MediaSettings) *ndjson.MediaSettings {
		m := ndjson.MediaSettings{Types: []string{}}
		if cur != nil {
			m = *cur
		}
		if c.IsSet("media") {
			m.Types = types
		}
		if c.IsSet("media-max") {
			m.MaxBytes = limit
		}
		if c.IsSet("media-images") {
			m.Images = c.Bool("media-images")
		}
		return &m
	}, nil
}

// pickArgs is the arguments of the commands that work on feeds.
const pickArgs = "FEED... | --all | --label L | --state S"

// pickFlags pick feeds by label and state instead of naming them; label is
// the label flag's name (set's --label is a setting: there it is
// --with-label).
func pickFlags(label string) []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "all", Usage: "every subscription (--" + label + " and --state narrow it)"},
		&cli.StringFlag{Name: label, Usage: "the subscriptions with this `LABEL`"},
		&cli.StringFlag{Name: "state", Usage: "the subscriptions in this `STATE`, as ls's STATUS begins: enabled, failing, refused, paused or disabled"},
	}
}

// withPicked runs action, in a store that exists, opened to write, on the
// references
// of the feeds the command names or picks (pickFlags, by the label flag
// label); a reference or a pick that finds no feed is a usage error.
func withPicked(label string, action func(c *cli.Context, cfg sub.Config, refs []string) error) cli.ActionFunc {
	return withConfig(cmdkit.Changes, func(c *cli.Context, cfg sub.Config) error {
		sel := sub.Selection{Refs: c.Args().Slice(), All: c.Bool("all"), Label: c.String(label), State: c.String("state")}
		cfg.Bulk = sel.Selects()
		refs, err := sub.Resolve(cfg, sel)
		if err == nil {
			err = action(c, cfg, refs)
		}
		return cmdkit.UsageIf(err, catalog.ErrNoSuchSubscription, sub.ErrInvalid)
	})
}

// withConfig opens the store and builds the feed-sub Config for a command.
func withConfig(access cmdkit.Access, action func(*cli.Context, sub.Config) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		log, st, err := cmdkit.Setup(c, access)
		if err != nil {
			return err
		}
		return action(c, sub.Config{Store: st, Out: c.App.Writer, Msg: c.App.ErrWriter, Log: log})
	}
}

// labelsOf is the labels a repeatable label flag gives, each value split on
// commas: --label a,b --label c is a, b and c.
func labelsOf(c *cli.Context, name string) []string {
	var labels []string
	for _, v := range c.StringSlice(name) {
		for _, l := range strings.Split(v, ",") {
			if l = strings.TrimSpace(l); l != "" {
				labels = append(labels, l)
			}
		}
	}
	return labels
}
