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
stored ETag and Last-Modified; gzip, deflate, br and zstd), politely: at most
--host-concurrency requests in flight and --host-rps a second per host, hosts
taking turns, so that one slow host holds back only its own feeds. The body,
exactly as served (decoded), goes to raw/YYYY-MM-DD/<sha256>.zst and the
"fetch" record to fetches/YYYY-MM-DD.ndjson before the record is written to
stdout. Failures (timeouts, 404, 429, 500, ...) become a classified error
inside the fetch record; the run goes on and exits 1. A feed moved
permanently on --redirect-threshold fetches in a row gets its new URL
proposed in the record (new_url), which feed-store saves. Records of other
types pass through.`,
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "concurrency", Usage: "feeds fetched at once, in all", Value: fetch.DefaultConcurrency, EnvVars: []string{"FEEDPIPE_CONCURRENCY", "NEWSFED_CONCURRENCY"}},
			&cli.IntFlag{Name: "host-concurrency", Usage: "requests in flight to one host (scheme, host and port)", Value: httpx.DefaultHostConcurrency, EnvVars: []string{"FEEDPIPE_HOST_CONCURRENCY", "HOST_MAX_CONCURRENCY"}},
			&cli.Float64Flag{Name: "host-rps", Usage: "requests a second to one host; 0 for no limit", Value: httpx.DefaultHostRPS, EnvVars: []string{"FEEDPIPE_HOST_RPS", "HOST_RPS"}},
			&cli.DurationFlag{Name: "timeout", Usage: "per request: connect, TLS, headers and body of one hop (env FETCH_TIMEOUT_MS in milliseconds also works)", Value: httpx.DefaultTimeout, EnvVars: []string{"FEEDPIPE_FETCH_TIMEOUT"}},
			&cli.DurationFlag{Name: "total-timeout", Usage: "per feed, redirects included", Value: httpx.DefaultTotalTimeout, EnvVars: []string{"FEEDPIPE_TOTAL_TIMEOUT", "NEWSFED_FETCH_TIMEOUT"}},
			&cli.Int64Flag{Name: "max-body-bytes", Usage: "cap on a decoded body; longer ones are cut and flagged truncated", Value: httpx.DefaultMaxBodyBytes, EnvVars: []string{"FEEDPIPE_MAX_BODY_BYTES", "MAX_BODY_BYTES"}},
			&cli.IntFlag{Name: "max-redirects", Usage: "redirects followed per fetch", Value: httpx.DefaultMaxRedirects, EnvVars: []string{"FEEDPIPE_MAX_REDIRECTS"}},
			&cli.IntFlag{Name: "redirect-threshold", Usage: "fetches in a row moved permanently (301, 308) to one URL before it is proposed as the feed's new URL", Value: fetch.DefaultRedirectThreshold, EnvVars: []string{"FEEDPIPE_REDIRECT_THRESHOLD"}},
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
			case c.Duration("total-timeout") <= 0:
				return cmdkit.Usagef("--total-timeout %s: it must be more than 0", c.Duration("total-timeout"))
			case c.Int("host-concurrency") < 1:
				return cmdkit.Usagef("--host-concurrency %d: at least 1 request to a host must be allowed", c.Int("host-concurrency"))
			case c.Float64("host-rps") < 0:
				return cmdkit.Usagef("--host-rps %g: it cannot be negative (0 means no limit)", c.Float64("host-rps"))
			case c.Int("redirect-threshold") < 1:
				return cmdkit.Usagef("--redirect-threshold %d: it must be at least 1", c.Int("redirect-threshold"))
			}
			var line *progress.Line
			if cmdkit.IsTerminal(c.App.ErrWriter) {
				line = progress.New(c.App.ErrWriter)
			}
			return fetch.Run(c.Context, fetch.Config{
				In: c.App.Reader, Out: cmdkit.Output(c.App.Writer), Log: log, Store: st,
				Concurrency:       c.Int("concurrency"),
				Limiter:           httpx.NewLimiter(c.Int("host-concurrency"), c.Float64("host-rps"), nil),
				RedirectThreshold: c.Int("redirect-threshold"),
				Client: httpx.New(httpx.Options{
					UserAgent:    c.String("user-agent"),
					AllowPrivate: c.Bool("allow-private"),
					Timeout:      timeout,
					TotalTimeout: c.Duration("total-timeout"),
					MaxBodyBytes: c.Int64("max-body-bytes"),
					MaxRedirects: c.Int("max-redirects"),
				}),
				Progress: line,
			})
		},
	})
}
