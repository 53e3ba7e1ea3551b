package apps

import (
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/cmdkit"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/media"
	"github.com/feedpipe/feedpipe/internal/pipe"
)

// FeedMedia is feed-media, which queues the enclosures and images of new
// entries (the stage) and downloads them into the store (run).
func FeedMedia() *cli.App {
	return &cli.App{
		Name:  "feed-media",
		Usage: "queue the enclosures and images of new entries (in the pipeline); download them into the store (run)",
		UsageText: `feed-due | feed-fetch | feed-parse | feed-scrape | feed-dedup | feed-store | feed-media
   feed-media run [--concurrency 2] [--daily-budget 20GB] [--disk-floor 5GB] [--follow]
   cat STORE/events/2026-11-29.ndjson | feed-media >/dev/null    (queue again what a day announced)`,
		Description: `A feed's media are off until feed-sub set FEED --media TYPES (such as
"audio/*,video/mp4") turns them on, with --media-max SIZE a file and
--media-images for the images its entries' content links to.

Without a command, feed-media is a stage after feed-store: it reads the
events, passes every record on unchanged, and for each "new_entry" or
"updated_entry" of a feed with media settings queues, in the store's
catalog, the entry's enclosures whose declared type the feed takes (or that
declare none), and the images of its content when asked. It downloads
nothing, so that a long download never holds up the cycle; a file queued,
stored or refused for an entry already is not queued again.

feed-media run downloads what is queued (feed-loop starts it in the
background after each cycle; --follow keeps it running, for a service of its
own), --concurrency files at once, each host under the limits feed-fetch
keeps (--host-concurrency, --host-rps), the same address rules
(--allow-private; a feed subscribed with it may reach private addresses)
and redirects; images obey robots.txt. Each file is written to a partial
file, synced as it goes, and becomes the store's media/ab/<sha256> only
whole and checked: nothing half-written is ever visible. A download cut
short (a network error, a signal, a kill) is resumed by the next try with
a Range request checked by If-Range against the ETag or Last-Modified of
the bytes held; a file that changed meanwhile starts again from zero. Its
Content-Type (or, for application/octet-stream, its first bytes) and its
size are checked against the feed's settings as they come: a file that
breaks them is cut and refused. Nothing starts while the day's
--daily-budget is spent or the disk has less than --disk-floor free; a
download under way stops there, kept, and goes on later. A file that fails
for now is tried again later (after 1 minute, then 4 times longer each time,
12 hours at most), and given up after --max-attempts tries.

Each try writes a "media" record (feedpipe-ndjson(5)) to stdout and to the
store's media/YYYY-MM-DD.ndjson. One run per store: another exits at once,
saying so. Exit status 1 when some files failed (a 404, given up), each
reported; refused files are the feed's rules at work, not failures.`,
		Flags:    cmdkit.CommonFlags(),
		Commands: []*cli.Command{mediaRunCommand()},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return cmdkit.Usagef("unknown command %q (feed-media run downloads; feed-media alone reads events on stdin)", c.Args().First())
			}
			log, st, err := cmdkit.Setup(c, cmdkit.Writes)
			if err != nil {
				return err
			}
			_, err = media.Run(c.Context, media.Config{In: c.App.Reader, Out: cmdkit.Output(c.App.Writer), Log: log, Store: st})
			return err
		},
	}
}

// mediaSizes are the size flags of feed-media run, with their defaults.
var mediaSizes = []struct{ name, usage, value, env string }{
	{"max-file-size", "the most bytes of one file of a feed whose settings set none (feed-sub set --media-max)", "2GiB", "FEEDPIPE_MEDIA_MAX_FILE_SIZE"},
	{"daily-budget", "the most bytes downloaded in a UTC day, every try counted; 0 for no budget", "0", "FEEDPIPE_MEDIA_DAILY_BUDGET"},
	{"disk-floor", "the free space of the store's disk under which nothing is downloaded; 0 for none", "1GiB", "FEEDPIPE_MEDIA_DISK_FLOOR"},
}

func mediaRunCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.IntFlag{Name: "concurrency", Usage: "files downloaded at once", Value: media.DefaultConcurrency, EnvVars: []string{"FEEDPIPE_MEDIA_CONCURRENCY"}},
	}
	for _, s := range mediaSizes {
		flags = append(flags, &cli.StringFlag{Name: s.name, Usage: s.usage + " (such as 500M, 20GB)", Value: s.value, EnvVars: []string{s.env}})
	}
	flags = append(flags,
		cmdkit.Duration(&cli.DurationFlag{Name: "file-timeout", Usage: "the longest one try at a file may take, body included (0: no limit)", Value: media.DefaultFileTimeout, EnvVars: []string{"FEEDPIPE_MEDIA_FILE_TIMEOUT"}}),
		&cli.IntFlag{Name: "max-attempts", Usage: "tries at a file that keeps failing for now before it is given up", Value: media.DefaultMaxAttempts, EnvVars: []string{"FEEDPIPE_MEDIA_MAX_ATTEMPTS"}},
		&cli.BoolFlag{Name: "follow", Usage: "keep running, looking for queued files every --poll, until stopped", EnvVars: []string{"FEEDPIPE_MEDIA_FOLLOW"}},
		cmdkit.Duration(&cli.DurationFlag{Name: "poll", Usage: "with --follow, how often the queue is looked at", Value: media.DefaultPoll, EnvVars: []string{"FEEDPIPE_MEDIA_POLL"}}),
	)
	// feed-fetch's HTTP settings, but its cap on a body: a file's cap is
	// the feed's (--media-max) or --max-file-size; and but the Redis of
	// the per-host limits: feed-media run's are its own, on the
	// coordinator of a bus as on one machine, so that a long download
	// never holds a host's slot the workers' fetches need.
	for _, f := range cmdkit.HTTPFlags("", "User-Agent header, unless the feed has its own (robots.txt is read for its first word)") {
		if n := f.Names()[0]; n != "max-body-bytes" && n != "redis" && n != "bus-prefix" {
			flags = append(flags, f)
		}
	}
	return &cli.Command{
		Name:  "run",
		Usage: "download the queued files into the store",
		UsageText: `feed-media run
   feed-media run --daily-budget 20GB --disk-floor 5GB --concurrency 4
   feed-media run --follow      (a service of its own)`,
		Flags: flags,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return cmdkit.Usagef("run takes no arguments")
			}
			sizes := map[string]int64{}
			for _, s := range mediaSizes {
				n, err := media.ParseSize(c.String(s.name))
				if err != nil {
					return cmdkit.Usagef("--%s: %s", s.name, strings.TrimPrefix(err.Error(), media.ErrSetting.Error()+": "))
				}
				sizes[s.name] = n
			}
			switch {
			case c.Int("concurrency") < 1:
				return cmdkit.Usagef("--concurrency %d: at least 1 file must be downloaded at a time", c.Int("concurrency"))
			case c.Int("max-attempts") < 1:
				return cmdkit.Usagef("--max-attempts %d: a file has 1 try at least", c.Int("max-attempts"))
			case sizes["max-file-size"] < 1:
				return cmdkit.Usagef("--max-file-size %s: it must be more than 0", c.String("max-file-size"))
			case c.Duration("file-timeout") < 0:
				return cmdkit.Usagef("--file-timeout %s: it cannot be negative (0 means no limit)", c.Duration("file-timeout"))
			case c.Duration("poll") <= 0:
				return cmdkit.Usagef("--poll %s: it must be more than 0", c.Duration("poll"))
			}
			opts, limiter, err := httpSettings(c)
			if err != nil {
				return err
			}
			log, st, err := cmdkit.Setup(c, cmdkit.Writes)
			if err != nil {
				return err
			}
			sum, err := media.Drain(c.Context, media.Config{
				Out: cmdkit.Output(c.App.Writer), Log: log, Store: st,
				Client: httpx.New(opts), Limiter: limiter, HostConcurrency: c.Int("host-concurrency"), Concurrency: c.Int("concurrency"),
				MaxFileBytes: sizes["max-file-size"], DailyBudget: sizes["daily-budget"], DiskFloor: sizes["disk-floor"],
				FileTimeout: c.Duration("file-timeout"), MaxAttempts: c.Int("max-attempts"), Follow: c.Bool("follow"), Poll: c.Duration("poll"),
			})
			if errors.Is(err, media.ErrBusy) {
				fmt.Fprintf(c.App.ErrWriter, "feed-media: note: another feed-media run is at work on %s: it downloads the queue\n", st.Root)
				return nil
			}
			if err == nil && sum.Failed > 0 {
				err = pipe.Failures{Records: sum.Failed}.Err("file", "files")
			}
			return err
		},
	}
}

// httpSettings reads the HTTP flags of feed-media run: those of
// cmdkit.HTTPSettings but the body cap, which it has not.
func httpSettings(c *cli.Context) (httpx.Options, *httpx.Limiter, error) {
	switch {
	case c.Duration("timeout") <= 0:
		return httpx.Options{}, nil, cmdkit.Usagef("--timeout %s: it must be more than 0", c.Duration("timeout"))
	case c.Int("host-concurrency") < 1:
		return httpx.Options{}, nil, cmdkit.Usagef("--host-concurrency %d: at least 1 request to a host must be allowed", c.Int("host-concurrency"))
	case c.Float64("host-rps") < 0:
		return httpx.Options{}, nil, cmdkit.Usagef("--host-rps %g: it cannot be negative (0 means no limit)", c.Float64("host-rps"))
	}
	opts := httpx.Options{UserAgent: c.String("user-agent"), AllowPrivate: c.Bool("allow-private"), Timeout: c.Duration("timeout")}
	return opts, httpx.NewLimiter(c.Int("host-concurrency"), c.Float64("host-rps"), nil), nil
}
