package apps

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/cmdkit"
	"github.com/feedpipe/feedpipe/internal/ids"
	"github.com/feedpipe/feedpipe/internal/parse"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/urlnorm"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// FeedParse is feed-parse, which turns fetched payloads into normalized
// entries.
func FeedParse() *cli.App {
	return &cli.App{
		Name:  "feed-parse",
		Usage: "parse fetched RSS, Atom and JSON Feed payloads into entries",
		UsageText: `feed-due | feed-fetch | feed-parse | feed-scrape | feed-dedup | feed-store
   cat STORE/fetches/2026-11-20.ndjson | feed-parse | feed-dedup | feed-store   (replay)
   feed-parse --base-url URL [--content-type TYPE] FILE...                      (ad hoc)`,
		Description: `Reads "fetch" records, loads each payload from the raw store and writes the
feed's "entry" records followed by the fetch record, now with its "parse"
section. A first or stale fetch keeps only its item_limit most recent entries.
Fetches with nothing to parse (304, errors, websites, the pages feed-scrape
fetched) and records of other types pass through unchanged. A payload that is not a feed gets a parse error
in its fetch record; the run goes on and exits 1. Payloads are parsed
--workers at a time; the output keeps the order of the input.

Reads RSS 0.90-0.94, 1.0 and 2.0, Atom 0.3 and 1.0 and JSON Feed 1.0 and 1.1
(and a body of NDJSON entry records, one a line, as a webhook source may
POST: each taken as an item of the feed, its ids made again),
told apart by their content, in any character set (byte order mark, then the
Content-Type's charset, then the XML declaration; a body that is valid UTF-8
is read as UTF-8). What it recovers from (illegal characters, HTML entities,
a bare &, junk before the XML declaration, a document cut short, dates it
cannot read or that lie in the future) is listed in parse.warnings. No DTD
or external entity is ever read.

Entry links lose their tracking parameters (` + strings.Join(urlnorm.DefaultTrackingParams, " ") + `;
a name ending in * is a prefix): --tracking-params adds names,
--keep-tracking-params keeps them all. Removing them changes the entry_uid
of entries without an id of their own, once.

With FILE arguments it parses those payload files instead (plain, or .zst as
the store keeps them): each file's entries, then a "fetch" record with its
"parse" section as for a fetched payload (the feed's title, link, ttl and
hints), whose due.reason is "file" (body_ref is null: the body is in no
store), fetched_at the file's modification time, http_status 200 and fetch_id
made of that time and a hash of the body, so that feed-dedup | feed-store
take a saved file as they take a fetch. --base-url gives the feed's URL, from which relative links
resolve and the feed id derives, and --content-type the Content-Type the
files were served with. A file that is not a feed gets a parse error in its
record; one that cannot be read is reported and skipped.`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "base-url", Usage: "with FILE arguments: the feed's URL"},
			&cli.StringFlag{Name: "feed-id", Usage: "with FILE arguments: the feed id to give the entries (default: derived from --base-url)"},
			&cli.StringFlag{Name: "content-type", Usage: "with FILE arguments: the Content-Type they were served with, for its charset (e.g. \"text/xml; charset=windows-1251\")"},
			&cli.IntFlag{Name: "workers", Usage: "payloads parsed at once (0: one per CPU)", EnvVars: []string{"FEEDPIPE_PARSE_WORKERS"}},
			&cli.StringFlag{Name: "cpuprofile", Usage: "write a CPU profile to this file (scripts/bench-parse)", Hidden: true},
		}, append(cmdkit.ParserFlags(), cmdkit.CommonFlags()...)...),
		Action: func(c *cli.Context) error {
			p, err := parser(c)
			if err != nil {
				return err
			}
			if c.NArg() == 0 {
				for _, name := range []string{"base-url", "feed-id", "content-type"} {
					if c.IsSet(name) {
						return cmdkit.Usagef("--%s goes with FILE arguments", name)
					}
				}
			}
			log, err := cmdkit.Logger(c)
			if err != nil {
				return err
			}
			// Payload files need no store, but for the .zst ones it keeps.
			var st *storedir.Store
			if c.NArg() == 0 || slices.ContainsFunc(c.Args().Slice(), func(f string) bool { return strings.HasSuffix(f, ".zst") }) {
				st, err = cmdkit.OpenStore(c, cmdkit.ReadsInPipeline)
			} else {
				st, err = cmdkit.OpenStoreIfExists(c)
			}
			if err != nil {
				return err
			}
			tuneGC(c.Int("workers"))
			if name := c.String("cpuprofile"); name != "" {
				stop, err := profile(name)
				if err != nil {
					return cmdkit.Usage(err)
				}
				defer stop()
			}
			out := cmdkit.Output(c.App.Writer)
			if c.NArg() == 0 {
				return parse.Run(c.Context, parse.Config{In: c.App.Reader, Out: out, Log: log, Store: st, Parser: p, Workers: c.Int("workers")})
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
			if !ndjson.IsFeedID(feedID) {
				return cmdkit.Usagef("--feed-id: %q is not a feed id (a UUID, as feed-sub ls --json shows)", feedID)
			}
			return parse.RunFiles(c.Context, parse.FileConfig{
				Out: out, Log: log, Store: st, Parser: p, Workers: c.Int("workers"),
				FeedID: feedID, BaseURL: base, ContentType: c.String("content-type"), Now: time.Now,
				Files: c.Args().Slice(),
			})
		},
	}
}

// profile starts a CPU profile into the named file; stop ends it.
func profile(name string) (stop func(), err error) {
	f, err := os.Create(name)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// tuneGC lets the heap grow to five times what is live (GOGC=400) before
// a collection, under a soft limit of 512 MiB and 256 MiB a worker, unless
// GOGC or GOMEMLIMIT say otherwise. Parsing allocates about three times
// the bytes it reads and keeps little, and on two cores each collection
// stops the world twice, which on a loaded machine waits for the other
// worker's thread to be given a CPU again: at 400 the collector runs 4 to
// 6 times over the bench corpus (docs/bench/2026-11-26-parse-round2.md).
// The limit keeps memory bounded where five times the live heap would
// be large: near it the collector runs as often as it must.
func tuneGC(workers int) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	debug.SetGCPercent(400)
	debug.SetMemoryLimit(512<<20 + int64(workers)*256<<20)
}

// parser is the Parser the flags ask for.
func parser(c *cli.Context) (*parse.Parser, error) {
	if c.Int("workers") < 0 {
		return nil, cmdkit.Usagef("--workers must be a positive number, or 0")
	}
	return cmdkit.Parser(c)
}
