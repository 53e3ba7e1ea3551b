// Command feed-fetch fetches the feeds named by due records, stores each
// payload and writes a fetch record for it.
package main

import (
	"os"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/cmdkit"
	"github.com/feedpipe/feedpipe/internal/fetch"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/progress"
)

func main() {
	cmdkit.Main(&cli.App{
		Name:      "feed-fetch",
		Usage:     "fetch due feeds over HTTP into the raw store",
		UsageText: "feed-due | feed-fetch [options] | feed-parse | feed-dedup | feed-store",
		Description: `Reads "due" records and fetches each feed with a conditional GET (the
stored ETag and Last-Modified). The body, exactly as served (decoded), goes to
raw/YYYY-MM-DD/<sha256>.zst and the "fetch" record to fetches/YYYY-MM-DD.ndjson
before the record is written to stdout. Failures (timeouts, 404, 500, ...)
become an error inside the fetch record; the run goes on and exits 1.
Records of other types pass through.`,
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "concurrency", Usage: "feeds fetched at once", Value: fetch.DefaultConcurrency, EnvVars: []string{"FEEDPIPE_CONCURRENCY", "NEWSFED_CONCURRENCY"}},
			&cli.DurationFlag{Name: "timeout", Usage: "per request, redirects and body included (env FETCH_TIMEOUT_MS in milliseconds also works)", Value: httpx.DefaultTimeout, EnvVars: []string{"FEEDPIPE_FETCH_TIMEOUT"}},
			&cli.Int64Flag{Name: "max-body-bytes", Usage: "cap on a decoded body; longer ones are cut and flagged truncated", Value: httpx.DefaultMaxBodyBytes, EnvVars: []string{"FEEDPIPE_MAX_BODY_BYTES", "MAX_BODY_BYTES"}},
			&cli.IntFlag{Name: "max-redirects", Usage: "redirects followed per fetch", Value: httpx.DefaultMaxRedirects, EnvVars: []string{"FEEDPIPE_MAX_REDIRECTS"}},
			&cli.StringFlag{Name: "user-agent", Usage: "User-Agent header", Value: httpx.DefaultUserAgent, EnvVars: []string{"FEEDPIPE_USER_AGENT"}},
			&cli.BoolFlag{Name: "allow-private", Usage: "allow loopback, private and link-local addresses (tests, intranets; FEEDPIPE_ALLOW_PRIVATE=1)", EnvVars: []string{"FEEDPIPE_ALLOW_PRIVATE"}},
		}, cmdkit.CommonFlags()...),
		Action: func(c *cli.Context) error {
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
				return cmdkit.Usagef("--concurrency %d: at least 1 feed must be fetched at a time", c.Int("concurrency"))
			case c.Int64("max-body-bytes") < 1:
				return cmdkit.Usagef("--max-body-bytes %d: it must be more than 0", c.Int64("max-body-bytes"))
			case c.Int("max-redirects") < 0:
				return cmdkit.Usagef("--max-redirects %d: it cannot be negative", c.Int("max-redirects"))
			}
			var line *progress.Line
			if cmdkit.IsTerminal(c.App.ErrWriter) {
				line = progress.New(c.App.ErrWriter)
			}
			return fetch.Run(c.Context, fetch.Config{
				In: c.App.Reader, Out: cmdkit.Output(c.App.Writer), Log: log, Store: st,
				Concurrency: c.Int("concurrency"),
				Client: httpx.New(httpx.Options{
					UserAgent:    c.String("user-agent"),
					AllowPrivate: c.Bool("allow-private"),
					Timeout:      timeout,
					MaxBodyBytes: c.Int64("max-body-bytes"),
					MaxRedirects: c.Int("max-redirects"),
				}),
				Progress: line,
			})
		},
	})
}
