package apps

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/cmdkit"
	"github.com/feedpipe/feedpipe/internal/discover"
	"github.com/feedpipe/feedpipe/internal/extract"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/sub"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// scrapeFlags set a subscription's scraper configuration (pkg/ndjson,
// "scrape configuration"), from a file and flag by flag, and full text.
func scrapeFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "fulltext", Usage: "feed-scrape fetches each new entry's page for its full text"},
		&cli.StringFlag{Name: "scrape-config", Usage: "the scraper configuration, a JSON `FILE` (- for stdin); the flags below override its members"},
		&cli.StringFlag{Name: "discovery-mode", Usage: "website: direct (the URL is the article) or list (it links to articles)"},
		&cli.StringFlag{Name: "article-selector", Usage: "list mode: CSS selector of the article links"},
		&cli.StringFlag{Name: "pagination-selector", Usage: "list mode: CSS selector of the next page's link"},
		&cli.IntFlag{Name: "max-pages", Usage: "list mode: list pages read per fetch", DefaultText: "1"},
		&cli.StringFlag{Name: "title-selector", Usage: "CSS selector of an article's title", DefaultText: "og:title, readability"},
		&cli.StringFlag{Name: "content-selector", Usage: "CSS selector of an article's content", DefaultText: "readability"},
		&cli.StringFlag{Name: "author-selector", Usage: "CSS selector of an article's authors", DefaultText: "meta author"},
		&cli.StringFlag{Name: "date-selector", Usage: "CSS selector of an article's publication date", DefaultText: "article:published_time"},
		&cli.StringFlag{Name: "date-format", Usage: "how the date is written: Go layout (2006-01-02) or strftime (%Y-%m-%d)", DefaultText: "any common form"},
		&cli.StringFlag{Name: "image-selector", Usage: "CSS selector of an article's lead image", DefaultText: "og:image"},
		&cli.StringFlag{Name: "canonical-selector", Usage: "CSS selector of an article's canonical link", DefaultText: "link rel=canonical"},
	}
}

// fetchFlags are the HTTP settings of the commands that read web pages.
func fetchFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "allow-private", Usage: "allow loopback, private and link-local addresses (tests, intranets; set the variable to 1)", EnvVars: []string{"FEEDPIPE_ALLOW_PRIVATE"}},
		&cli.DurationFlag{Name: "timeout", Usage: "per request", Value: httpx.DefaultTimeout, EnvVars: []string{"FEEDPIPE_FETCH_TIMEOUT"}},
		&cli.StringFlag{Name: "user-agent", Usage: "User-Agent header", Value: httpx.DefaultUserAgent, EnvVars: []string{"FEEDPIPE_USER_AGENT"}},
	}
}

// scrapeConfig builds the scraper configuration the flags give; nil if
// they give none.
func scrapeConfig(c *cli.Context) (*ndjson.ScrapeConfig, error) {
	edit, err := scrapeEdit(c)
	if edit == nil || err != nil {
		return nil, err
	}
	return edit(nil), nil
}

// scrapeEdit reads --scrape-config and returns how the flags change a
// scraper configuration (nil: none): --scrape-config FILE replaces it
// (--scrape-config "" removes it), and each selector flag then sets its
// member. scrapeEdit returns nil if no such flag is given.
func scrapeEdit(c *cli.Context) (func(cur *ndjson.ScrapeConfig) *ndjson.ScrapeConfig, error) {
	var file *ndjson.ScrapeConfig
	replace := c.IsSet("scrape-config")
	if name := c.String("scrape-config"); name != "" {
		var b []byte
		var err error
		if name == "-" {
			b, err = readAll(c)
		} else {
			b, err = os.ReadFile(name)
		}
		if err != nil {
			return nil, cmdkit.Usage(err)
		}
		if file, err = extract.ParseConfig(b, true); err != nil {
			return nil, cmdkit.Usagef("%s: %v", name, err)
		}
		if file == nil {
			file = &ndjson.ScrapeConfig{}
		}
		replace = true
	}
	fields := []struct {
		flag string
		dst  func(*ndjson.ScrapeConfig) *string
	}{
		{"discovery-mode", func(s *ndjson.ScrapeConfig) *string { return &s.DiscoveryMode }},
		{"article-selector", func(s *ndjson.ScrapeConfig) *string { return &s.ListConfig.ArticleSelector }},
		{"pagination-selector", func(s *ndjson.ScrapeConfig) *string { return &s.ListConfig.PaginationSelector }},
		{"title-selector", func(s *ndjson.ScrapeConfig) *string { return &s.ArticleConfig.TitleSelector }},
		{"content-selector", func(s *ndjson.ScrapeConfig) *string { return &s.ArticleConfig.ContentSelector }},
		{"author-selector", func(s *ndjson.ScrapeConfig) *string { return &s.ArticleConfig.AuthorSelector }},
		{"date-selector", func(s *ndjson.ScrapeConfig) *string { return &s.ArticleConfig.DateSelector }},
		{"date-format", func(s *ndjson.ScrapeConfig) *string { return &s.ArticleConfig.DateFormat }},
		{"image-selector", func(s *ndjson.ScrapeConfig) *string { return &s.ArticleConfig.ImageSelector }},
		{"canonical-selector", func(s *ndjson.ScrapeConfig) *string { return &s.ArticleConfig.CanonicalSelector }},
	}
	given := c.IsSet("max-pages")
	for _, f := range fields {
		given = given || c.IsSet(f.flag)
	}
	if !replace && !given {
		return nil, nil
	}
	return func(cur *ndjson.ScrapeConfig) *ndjson.ScrapeConfig {
		if replace {
			cur = file
		}
		var conf *ndjson.ScrapeConfig
		if cur != nil {
			cp := *cur
			conf = &cp
		}
		for _, f := range fields {
			if c.IsSet(f.flag) {
				if conf == nil {
					conf = &ndjson.ScrapeConfig{}
				}
				*f.dst(conf) = c.String(f.flag)
			}
		}
		if c.IsSet("max-pages") {
			if conf == nil {
				conf = &ndjson.ScrapeConfig{}
			}
			conf.ListConfig.MaxPages = c.Int("max-pages")
		}
		if conf != nil && conf.DiscoveryMode == "" && conf.ListConfig.ArticleSelector != "" {
			conf.DiscoveryMode = ndjson.ModeList // an article selector means a list
		}
		return conf
	}, nil
}

// readAll reads a scrape configuration from stdin.
func readAll(c *cli.Context) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(c.App.Reader, 1<<20+1))
	if err == nil && len(b) > 1<<20 {
		err = fmt.Errorf("the scrape configuration on stdin is over 1 MiB")
	}
	return b, err
}

// discoverConfig is the HTTP client discovery uses, as the flags say.
func discoverConfig(c *cli.Context) (discover.Config, error) {
	if c.Duration("timeout") <= 0 {
		return discover.Config{}, cmdkit.Usagef("--timeout %s: it must be more than 0", c.Duration("timeout"))
	}
	log, err := cmdkit.Logger(c)
	if err != nil {
		return discover.Config{}, err
	}
	return discover.Config{
		Client: httpx.New(httpx.Options{UserAgent: c.String("user-agent"), AllowPrivate: c.Bool("allow-private") || cmdkit.AllowPrivateEnv(),
			Timeout: c.Duration("timeout")}),
		Log: log,
	}, nil
}

// discoverCommand is `feed-sub discover URL`.
func discoverCommand() *cli.Command {
	return &cli.Command{
		Name:      "discover",
		Usage:     "list the feeds a website offers (feed-sub add --discover URL subscribes to the first)",
		ArgsUsage: "URL",
		Description: `Reads the page at URL (if robots.txt allows) and finds the feeds it
announces (<link rel="alternate"> with an RSS, Atom or JSON Feed type), or,
when it announces none that parses, those at common paths of its site
(/feed, /rss.xml, /atom.xml, /index.xml, /feed.json, ...). Each feed is
fetched and parsed before it is listed, best first, with its format, items
and title. A URL that is a feed itself is listed alone.`,
		Flags: fetchFlags(),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return cmdkit.Usagef("discover takes one URL, got %d arguments", c.NArg())
			}
			cfg, err := discoverConfig(c)
			if err != nil {
				return err
			}
			feeds, err := discover.Discover(c.Context, cfg, c.Args().First())
			if err != nil {
				return refusedHint(err, "feed-sub discover --allow-private "+c.Args().First()+" reads it (and feed-sub add --allow-private FEED subscribes to a feed there)")
			}
			return discover.Print(c.App.Writer, feeds)
		},
	}
}

// discovered returns the feed to subscribe to for `add --discover URL`.
func discovered(c *cli.Context, pageURL string) (string, error) {
	cfg, err := discoverConfig(c)
	if err != nil {
		return "", err
	}
	f, more, err := sub.Discovered(c.Context, cfg, pageURL)
	if err != nil {
		return "", refusedHint(err, "feed-sub add --discover --allow-private "+pageURL+" allows this feed (kept with it)")
	}
	fmt.Fprintf(c.App.ErrWriter, "feed-sub: found %s (%s, %q)", f.URL, f.Format, f.Title)
	if more > 0 {
		fmt.Fprintf(c.App.ErrWriter, "; %d more: feed-sub discover %s", more, pageURL)
	}
	fmt.Fprintln(c.App.ErrWriter)
	return f.URL, nil
}

// checked fetches pageURL once for `add --check` and returns the feed to
// subscribe to: pageURL itself (after permanent redirects) when it is a
// feed. A web page is not subscribed to: the feeds it links to are listed
// instead, and the error says so.
func checked(c *cli.Context, pageURL string) (string, error) {
	cfg, err := discoverConfig(c)
	if err != nil {
		return "", err
	}
	feeds, err := discover.Discover(c.Context, cfg, pageURL)
	if errors.Is(err, discover.ErrNone) {
		return "", fmt.Errorf("not subscribed: %s is not a feed, and links to none", pageURL)
	}
	if err != nil {
		return "", fmt.Errorf("not subscribed: %w", refusedHint(err, "feed-sub add --check --allow-private "+pageURL+" allows this feed (kept with it)"))
	}
	if f := feeds[0]; f.Found == discover.FoundURL {
		fmt.Fprintf(c.App.ErrWriter, "feed-sub: checked: %s is a feed (%s %s, %d items, %q)\n", pageURL, f.Format, f.Version, f.Items, f.Title)
		return f.URL, nil
	}
	w := c.App.ErrWriter
	fmt.Fprintf(w, "feed-sub: %s is a web page, not a feed; it offers these feeds:\n", pageURL)
	if err := discover.Print(w, feeds); err != nil {
		return "", err
	}
	fmt.Fprintf(w, "feed-sub: feed-sub add FEED subscribes to one of them (feed-sub add --discover %s to the first)\n", pageURL)
	return "", fmt.Errorf("not subscribed: %s is a web page, not a feed", pageURL)
}

// refusedHint adds to the error of an address the client refused what
// allows it: allow, for this URL, and FEEDPIPE_ALLOW_PRIVATE for every
// feed. Other errors are left as they are.
func refusedHint(err error, allow string) error {
	if !errors.Is(err, httpx.ErrAddressRefused) {
		return err
	}
	return fmt.Errorf("%w, a loopback, private or link-local one: %s; FEEDPIPE_ALLOW_PRIVATE=1 allows every feed", err, allow)
}
