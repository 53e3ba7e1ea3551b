package apps

import (
	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/cmdkit"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/scrape"
)

// FeedScrape is feed-scrape, which turns websites without feeds into
// entries, and fills in the full text of new entries of feeds that ask for
// it.
func FeedScrape() *cli.App {
	return &cli.App{
		Name:  "feed-scrape",
		Usage: "scrape websites into entries; fetch the full text of new entries",
		UsageText: `feed-due | feed-fetch | feed-parse | feed-scrape [options] | feed-dedup | feed-store
   cat STORE/fetches/2026-11-20.ndjson | feed-parse | feed-scrape | feed-dedup | feed-store   (replay)
   feed-bus take events --group fulltext | feed-scrape --events | feed-bus put enriched   (a worker on the bus)`,
		Description: `Reads the records of feed-parse. A "fetch" record of a website
(source_type website, subscribed with feed-sub add --type website) is
scraped by its scraper configuration (feedpipe-ndjson(5), "scrape
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

With --events, it reads the coordinator's events instead (feed-bus take
events; bus.md, "The intel stream"): each "new_entry" (of a feed with
--label, if given) has its page fetched and read as above, and becomes an
"entry": the entry's next version, with the page's text and a content_hash
of its own, for the coordinator's feed-dedup and feed-store to store as an
update (feed-bus put enriched). Every other event, and a new_entry whose
page gives no text, is consumed: a "bus_ack" of its stream entry goes on
instead, so that feed-bus put acknowledges it.

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
			&cli.BoolFlag{Name: "events", Usage: "read the coordinator's events (feed-bus take events) and write each new_entry's next version with its page's text, for its store (feed-bus put enriched)", EnvVars: []string{"FEEDPIPE_SCRAPE_EVENTS"}},
			&cli.StringFlag{Name: "label", Usage: "with --events: only the entries of feeds with this label", EnvVars: []string{"FEEDPIPE_SCRAPE_LABEL"}},
		}, append(cmdkit.HTTPFlags("cap on a decoded page; longer ones are cut", "User-Agent header (robots.txt is read for its first word)"), cmdkit.CommonFlags()...)...),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return cmdkit.Usagef("feed-scrape takes no arguments: it reads records on stdin")
			}
			log, st, err := cmdkit.Setup(c, cmdkit.Writes)
			if err != nil {
				return err
			}
			opts, limiter, err := cmdkit.HTTPSettings(c)
			if err != nil {
				return err
			}
			if c.Int("concurrency") < 1 {
				return cmdkit.Usagef("--concurrency %d: at least 1 source must be scraped at a time", c.Int("concurrency"))
			}
			return scrape.Run(c.Context, scrape.Config{
				In: c.App.Reader, Out: cmdkit.Output(c.App.Writer), Log: log, Store: st,
				Concurrency: c.Int("concurrency"),
				Events:      c.Bool("events"),
				Label:       c.String("label"),
				Limiter:     limiter,
				Client:      httpx.New(opts),
				Progress:    cmdkit.Progress(c),
			})
		},
	}
}
