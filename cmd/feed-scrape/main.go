// Command feed-scrape turns websites without feeds into entries, and fills
// in the full text of new entries of feeds that ask for it.
package main

import (
	"os"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/cmdkit"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/progress"
	"github.com/feedpipe/feedpipe/internal/scrape"
)

func main() {
	cmdkit.Main(&cli.App{
		Name:  "feed-scrape",
		Usage: "scrape websites into entries; fetch the full text of new entries",
		UsageText: `feed-due | feed-fetch | feed-parse | feed-scrape [options] | feed-dedup | feed-store
   cat STORE/fetches/2026-11-20.ndjson | feed-parse | feed-scrape | feed-dedup | feed-store   (replay)`,
		Description: `Reads the records of feed-parse. A "fetch" record of a website
(source_type website, subscribed with feed-sub add --type website) is
scraped by its scraper configuration (see pkg/ndjson, "scrape
configuration"): in direct mode its page is the article; in list mode the
articles it links to are fetched, those not stored yet only, following
pagination up to max_pages, at most item_limit (20) articles on a first or
stale fetch. Each article becomes an "entry", written before the fetch
record, which gets a "scrape" section: pages fetched, articles found, known,
new, rejected and why. An article that is invalid (a bad URL, no title, a
date in the future, ...), disallowed by robots.txt or not fetchable is left
out and logged; it fails neither the source nor the run.

The "entry" records before the fetch record of a feed with fulltext (feed-sub
add --fulltext) that are new (not in the store's index) get the text of
their page, read by the subscription's content selector or by readability:
content (the feed's summary stays), authors, tags, canonical link and
images. Every entry feed-scrape writes or completes carries "derivations":
its keywords and the extractor that found them.

Pages are fetched politely: robots.txt first, then at most --host-concurrency
requests in flight and --host-rps a second per host. Each page is stored in
raw/YYYY-MM-DD/ with a fetch record (marked "page") in
fetches/YYYY-MM-DD.ndjson, synced, before its entry goes on; those records
never go to stdout. Records of other types, and fetch records with nothing
to scrape, pass through unchanged. A source that cannot be scraped at all (an
invalid configuration, a page that is not HTML) gets an error in its fetch
record; the run goes on and exits 1.`,
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "concurrency", Usage: "sources scraped at once", Value: scrape.DefaultConcurrency, EnvVars: []string{"FEEDPIPE_SCRAPE_CONCURRENCY"}},
			&cli.IntFlag{Name: "host-concurrency", Usage: "requests in flight to one host (scheme, host and port)", Value: httpx.DefaultHostConcurrency, EnvVars: []string{"FEEDPIPE_HOST_CONCURRENCY", "HOST_MAX_CONCURRENCY"}},
			&cli.Float64Flag{Name: "host-rps", Usage: "requests a second to one host; 0 for no limit", Value: httpx.DefaultHostRPS, EnvVars: []string{"FEEDPIPE_HOST_RPS", "HOST_RPS"}},
			&cli.DurationFlag{Name: "timeout", Usage: "per request: connect, TLS, headers and body of one hop (env FETCH_TIMEOUT_MS in milliseconds also works)", Value: httpx.DefaultTimeout, EnvVars: []string{"FEEDPIPE_FETCH_TIMEOUT"}},
			&cli.Int64Flag{Name: "max-body-bytes", Usage: "cap on a decoded page; longer ones are cut", Value: httpx.DefaultMaxBodyBytes, EnvVars: []string{"FEEDPIPE_MAX_BODY_BYTES", "MAX_BODY_BYTES"}},
			&cli.StringFlag{Name: "user-agent", Usage: "User-Agent header (robots.txt is read for its first word)", Value: httpx.DefaultUserAgent, EnvVars: []string{"FEEDPIPE_USER_AGENT"}},
			&cli.BoolFlag{Name: "allow-private", Usage: "allow loopback, private and link-local addresses (tests, intranets; FEEDPIPE_ALLOW_PRIVATE=1)", EnvVars: []string{"FEEDPIPE_ALLOW_PRIVATE"}},
		}, cmdkit.CommonFlags()...),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return cmdkit.Usagef("feed-scrape takes no arguments: it reads records on stdin")
			}
			log, st, err := cmdkit.Setup(c, cmdkit.Writes)
			if err != nil {
				return err
			}
			timeout := c.Duration("timeout")
			if ms := os.Getenv("FETCH_TIMEOUT_MS"); ms != "" && !c.IsSet("timeout") {
				n, err := strconv.Atoi(ms)
				if err != nil || n <= 0 {
					return cmdkit.Usagef("FETCH_TIMEOUT_MS=%q is not a positive number of milliseconds", ms)
				}
				timeout = time.Duration(n) * time.Millisecond
			}
			switch {
			case timeout <= 0:
				return cmdkit.Usagef("--timeout %s: it must be more than 0", timeout)
			case c.Int("concurrency") < 1:
				return cmdkit.Usagef("--concurrency %d: at least 1 source must be scraped at a time", c.Int("concurrency"))
			case c.Int("host-concurrency") < 1:
				return cmdkit.Usagef("--host-concurrency %d: at least 1 request to a host must be allowed", c.Int("host-concurrency"))
			case c.Float64("host-rps") < 0:
				return cmdkit.Usagef("--host-rps %g: it cannot be negative (0 means no limit)", c.Float64("host-rps"))
			case c.Int64("max-body-bytes") < 1:
				return cmdkit.Usagef("--max-body-bytes %d: it must be more than 0", c.Int64("max-body-bytes"))
			}
			var line *progress.Line
			if cmdkit.IsTerminal(c.App.ErrWriter) {
				line = progress.New(c.App.ErrWriter)
			}
			return scrape.Run(c.Context, scrape.Config{
				In: c.App.Reader, Out: cmdkit.Output(c.App.Writer), Log: log, Store: st,
				Concurrency: c.Int("concurrency"),
				Limiter:     httpx.NewLimiter(c.Int("host-concurrency"), c.Float64("host-rps"), nil),
				Client: httpx.New(httpx.Options{
					UserAgent:    c.String("user-agent"),
					AllowPrivate: c.Bool("allow-private"),
					Timeout:      timeout,
					MaxBodyBytes: c.Int64("max-body-bytes"),
				}),
				Progress: line,
			})
		},
	})
}
