package apps

import (
	"log/slog"

	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/cmdkit"
	"github.com/feedpipe/feedpipe/internal/due"
	"github.com/feedpipe/feedpipe/internal/fetch"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/storedir"
)

// FeedFetch is feed-fetch, which fetches the feeds named by due records,
// stores each payload and writes a fetch record for it.
func FeedFetch() *cli.App {
	return &cli.App{
		Name:      "feed-fetch",
		Usage:     "fetch due feeds over HTTP into the raw store",
		UsageText: "feed-due | feed-fetch [options] | feed-parse | feed-scrape | feed-dedup | feed-store",
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
types pass through.

First, every run hands on the fetch records feed-serve spooled for bodies
pushed to it (WebSub, webhooks: STORE/spool), as its own: appended to
fetches/, written out, then removed from the spool. A due record of reason
archive (a page of a feed's archive walk) is claimed by its URL first: a
page is fetched once, whoever asks (design.md in share/doc/feedpipe,
"push" and "backfill").`,
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "concurrency", Usage: "feeds fetched at once, in all", Value: fetch.DefaultConcurrency, EnvVars: []string{"FEEDPIPE_CONCURRENCY", "NEWSFED_CONCURRENCY"}},
			&cli.DurationFlag{Name: "total-timeout", Usage: "per feed, redirects included", Value: httpx.DefaultTotalTimeout, EnvVars: []string{"FEEDPIPE_TOTAL_TIMEOUT", "NEWSFED_FETCH_TIMEOUT"}},
			&cli.IntFlag{Name: "max-redirects", Usage: "redirects followed per fetch; 0 follows none (a redirect over it is the response, with the error too_many_redirects)", Value: httpx.DefaultMaxRedirects, EnvVars: []string{"FEEDPIPE_MAX_REDIRECTS"}},
			&cli.IntFlag{Name: "redirect-threshold", Usage: "fetches in a row moved permanently (301, 308) to one URL before it is proposed as the feed's new URL", Value: fetch.DefaultRedirectThreshold, EnvVars: []string{"FEEDPIPE_REDIRECT_THRESHOLD"}},
		}, append(cmdkit.HTTPFlags("cap on a decoded body; longer ones are cut and flagged truncated", "User-Agent header"), cmdkit.CommonFlags()...)...),
		Action: func(c *cli.Context) error {
			log, st, err := cmdkit.Setup(c, cmdkit.Writes)
			if err != nil {
				return err
			}
			opts, limiter, err := cmdkit.HTTPSettings(c)
			if err != nil {
				return err
			}
			switch {
			case c.Int("concurrency") < 1:
				return cmdkit.Usagef("--concurrency %d: at least 1 feed must be fetched at a time", c.Int("concurrency"))
			case c.Int("max-redirects") < 0:
				return cmdkit.Usagef("--max-redirects %d: it cannot be negative", c.Int("max-redirects"))
			case c.Duration("total-timeout") <= 0:
				return cmdkit.Usagef("--total-timeout %s: it must be more than 0", c.Duration("total-timeout"))
			case c.Int("redirect-threshold") < 1:
				return cmdkit.Usagef("--redirect-threshold %d: it must be at least 1", c.Int("redirect-threshold"))
			}
			opts.TotalTimeout, opts.MaxRedirects = c.Duration("total-timeout"), new(c.Int("max-redirects"))
			defer allowPrivateRecorded(c, st, log, opts.AllowPrivate)
			return fetch.Run(c.Context, fetch.Config{
				In: c.App.Reader, Out: cmdkit.Output(c.App.Writer), Log: log, Store: st,
				Concurrency:       c.Int("concurrency"),
				Limiter:           limiter,
				RedirectThreshold: c.Int("redirect-threshold"),
				Client:            httpx.New(opts),
				Progress:          cmdkit.Progress(c),
			})
		},
	}
}

// allowPrivateRecorded keeps in the catalog whether this run let every
// feed reach private addresses (due.RecordAllowPrivate): the next
// feed-due with FEEDPIPE_ALLOW_PRIVATE=1 lists the feeds refused before
// only until a feed-fetch with it has run.
func allowPrivateRecorded(c *cli.Context, st *storedir.Store, log *slog.Logger, allow bool) {
	if c.Context.Err() != nil {
		return // stopped: it may not have fetched what was due
	}
	cat, err := catalog.Open(c.Context, st, log)
	if err == nil {
		err = due.RecordAllowPrivate(c.Context, cat, allow)
		cat.Close()
	}
	if err != nil {
		log.Warn("cannot record FEEDPIPE_ALLOW_PRIVATE in the catalog", "error", err)
	}
}
