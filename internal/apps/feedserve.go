package apps

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/cmdkit"
	"github.com/feedpipe/feedpipe/internal/discover"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/serve"
)

// FeedServe is feed-serve, which serves the store over HTTP: the REST API,
// meta-feeds and metrics; feed-serve publish writes the meta-feeds to files.
func FeedServe() *cli.App {
	return &cli.App{
		Name:  "feed-serve",
		Usage: "serve the store over HTTP: the REST API, meta-feeds of any feed or label, metrics",
		UsageText: `feed-serve [--listen 127.0.0.1:8080] [--auth reads] [--cors ORIGIN]
   curl -s http://127.0.0.1:8080/feeds
   feed-serve publish /var/www/feeds --base-url https://example.org/feeds`,
		Description: `A JSON API of the store (serve.md in share/doc/feedpipe; GET
/openapi.json describes every route): the subscriptions and their state (GET, POST, PATCH, DELETE /feeds,
POST /feeds/ID/refetch: what feed-sub does, through the same functions),
entries by feed, label, time or full-text search (/entries?q=), an entry's
versions, fetch records and payloads as served (/fetches/ID, /raw/ID),
events (/events, and /events/stream as Server-Sent Events), /healthz,
/metrics (Prometheus) and meta-feeds: /feeds/ID/feed.atom, /labels/LABEL.rss,
/all.json... in Atom, RSS and JSON Feed, paged (RFC 5005). Errors are RFC
9457 problem details; every GET has an ETag and answers 304 when it can.

It listens on loopback unless --listen says otherwise, and answers only
requests that call it by an IP address, localhost, the --base-url's host or
an --allowed-host (421 for others: a web page cannot rebind its own name to
it). Reads are open; writes need the bearer token (Authorization: Bearer
TOKEN), which is in the file --token-file names: made in the store with
mode 0600 on first start and printed then, once; feed-serve token rotate
makes a new one. --auth reads makes reads need it too. On an address beyond
loopback it starts only with --auth reads, or --public to say that anyone
who reaches it may read the store. serve.md, "Security", says what it
promises.

Push (design.md in share/doc/feedpipe, "push"): /websub/ID is the WebSub
callback of each subscription feed-sub push sync asked for, /webhooks/FEED_ID
the endpoint of each webhook source; both are open (each checks its own
secret) and take bodies of 10 MiB at most, which go to the raw store and
the spool, for the next feed-fetch (feed-loop runs one at once). Hubs and
senders call it at --public-url, whose host it answers to.

A web page for people is at / (no JavaScript, no network): the feeds, a
feed's scheduler decisions and fetches, the river of entries by label with
search, dashboards, and marking entries read after signing in with the token.

With --redis, on the coordinator of several machines
sharing a Redis bus, it shows the bus as feed-bus status does: the nodes
whose heartbeat is alive, each stream's length, each consumer group's
pending records and lag, on /metrics (feedpipe_bus_*), at GET /bus (JSON),
on the dashboard and on /web/bus (bus.md in share/doc/feedpipe).`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "listen", Usage: "address to listen on, host:port", Value: serve.DefaultListen, EnvVars: []string{"FEEDPIPE_SERVE_LISTEN"}},
			&cli.StringFlag{Name: "addr-file", Usage: "once listening, write the address (host:port) to this `FILE`: with --listen 127.0.0.1:0 the system picks the port"},
			&cli.StringFlag{Name: "token-file", Usage: "the file of the API token (made, mode 0600, if missing)", DefaultText: "STORE/" + serve.TokenFile, EnvVars: []string{"FEEDPIPE_SERVE_TOKEN_FILE"}},
			&cli.StringFlag{Name: "auth", Usage: "what needs the token: writes, or reads (everything but /healthz)", Value: "writes", EnvVars: []string{"FEEDPIPE_SERVE_AUTH"}},
			&cli.StringFlag{Name: "cors", Usage: "the one `ORIGIN` (https://app.example) allowed to call the API from a browser", DefaultText: "none", EnvVars: []string{"FEEDPIPE_SERVE_CORS"}},
			&cli.StringFlag{Name: "base-url", Usage: "the URL the server is reached at, for links in feeds and headers; its host is one requests may name", DefaultText: "http://HOST of each request", EnvVars: []string{"FEEDPIPE_SERVE_BASE_URL"}},
			&cli.StringSliceFlag{Name: "allowed-host", Usage: "a host `NAME` requests may call the server by, besides IP addresses, localhost and --base-url's host (repeatable)", EnvVars: []string{"FEEDPIPE_SERVE_ALLOWED_HOSTS"}},
			&cli.StringSliceFlag{Name: "trusted-proxy", Usage: "the address or `CIDR` of a proxy in front of the server, whose X-Forwarded-For and X-Forwarded-Proto are believed (repeatable)", DefaultText: "none", EnvVars: []string{"FEEDPIPE_SERVE_TRUSTED_PROXIES"}},
			&cli.BoolFlag{Name: "public", Usage: "listening beyond loopback without --auth reads is meant: anyone who reaches the server may read the store", EnvVars: []string{"FEEDPIPE_SERVE_PUBLIC"}},
			&cli.StringFlag{Name: "websub-hub", Usage: "a WebSub hub's URL for the meta-feeds' rel=hub links", EnvVars: []string{"FEEDPIPE_WEBSUB_HUB"}},
			mediaURLFlag("the meta-feeds"),
			cmdkit.PublicURLFlag(),
			&cli.DurationFlag{Name: "unread-window", Usage: "how far back the Google Reader API and GET /feeds?reader= count unread entries; older ones count as read", Value: serve.DefaultUnreadWindow, EnvVars: []string{"FEEDPIPE_SERVE_UNREAD_WINDOW"}},
			&cli.IntFlag{Name: "cpus", Usage: "CPUs feed-serve runs on at once (GOMAXPROCS), leaving the others to the pipeline that writes the store on this machine", DefaultText: "all but one, at least one; GOMAXPROCS when set", EnvVars: []string{"FEEDPIPE_SERVE_CPUS"}},
			&cli.IntFlag{Name: "max-reads", Usage: "requests that read the catalog at once; the others wait in line, first come first served", DefaultText: "one a CPU it runs on (--cpus), 4 at most", EnvVars: []string{"FEEDPIPE_SERVE_MAX_READS"}},
			&cli.BoolFlag{Name: "per-feed-metrics", Usage: "add series per feed to /metrics (interval, EWMA, new entries, errors): for up to some thousands of feeds", EnvVars: []string{"FEEDPIPE_SERVE_PER_FEED_METRICS"}},
			&cli.BoolFlag{Name: "allow-private", Usage: "the token's holder may add feeds on loopback, private and link-local addresses (POST /feeds allow_private, and its discovery); the Google Reader API never may", EnvVars: []string{"FEEDPIPE_ALLOW_PRIVATE"}},
			&cli.DurationFlag{Name: "timeout", Usage: "per discovery request", Value: httpx.DefaultTimeout, EnvVars: []string{"FEEDPIPE_FETCH_TIMEOUT"}},
			&cli.StringFlag{Name: "user-agent", Usage: "User-Agent of discovery requests", Value: httpx.DefaultUserAgent, EnvVars: []string{"FEEDPIPE_USER_AGENT"}},
		}, append(append(cmdkit.RedisFlags("show the status of the Redis bus there (redis://HOST:PORT/DB): its nodes, streams and consumer groups on /metrics, GET /bus, the dashboard and /web/bus (bus.md in share/doc/feedpipe); default: no bus"),
			cmdkit.CommonFlags()...), cmdkit.HiddenSchedFlags()...)...),
		Commands: []*cli.Command{publishCommand(), userCommand(), tokenCommand()},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return cmdkit.Usagef("feed-serve takes no arguments (did you mean feed-serve publish %s?)", c.Args().First())
			}
			log, st, err := cmdkit.Setup(c, cmdkit.ReadOnly)
			if err != nil {
				return err
			}
			auth := c.String("auth")
			if auth != "writes" && auth != "reads" {
				return cmdkit.Usagef("--auth %q: it is writes or reads", auth)
			}
			if c.Duration("timeout") <= 0 {
				return cmdkit.Usagef("--timeout %s: it must be more than 0", c.Duration("timeout"))
			}
			cpus := c.Int("cpus")
			if cpus < 0 || c.Int("max-reads") < 0 {
				return cmdkit.Usagef("--cpus %d, --max-reads %d: each is 1 or more (0: the default)", cpus, c.Int("max-reads"))
			}
			if cpus == 0 {
				cpus = serve.DefaultCPUs()
			}
			runtime.GOMAXPROCS(cpus)
			host, _, err := net.SplitHostPort(c.String("listen"))
			if err != nil {
				return cmdkit.Usagef("--listen %q: %v (host:port, such as 127.0.0.1:8080)", c.String("listen"), err)
			}
			p, err := cmdkit.SchedParams(c)
			if err != nil {
				return err
			}
			if ip := net.ParseIP(host); (ip == nil || !ip.IsLoopback()) && host != "localhost" && auth != "reads" && !c.Bool("public") {
				return cmdkit.Usagef("--listen %s is beyond loopback, where anyone who reaches it could read the store: add --auth reads (the token for every read), or --public if that is meant", c.String("listen"))
			}
			proxies, err := prefixes(c.StringSlice("trusted-proxy"))
			if err != nil {
				return err
			}
			if o := c.String("cors"); o != "" && (strings.HasSuffix(o, "/") || !strings.Contains(o, "://")) {
				return cmdkit.Usagef("--cors %q: an origin is scheme://host[:port], without a path", o)
			}
			if b := c.String("base-url"); b != "" {
				if u, err := url.Parse(b); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return cmdkit.Usagef("--base-url %q: an absolute http or https URL, such as https://feeds.example.org", b)
				}
			}
			if err := checkMediaURL(c); err != nil {
				return err
			}
			public, err := cmdkit.PublicURL(c)
			if err != nil {
				return err
			}
			// The settings are checked before the token is made.
			tokenFile := c.String("token-file")
			if tokenFile == "" {
				tokenFile = filepath.Join(st.Root, serve.TokenFile)
			}
			token, created, err := serve.LoadToken(tokenFile)
			if err != nil {
				return cmdkit.Usage(err)
			}
			if created {
				fmt.Fprintf(c.App.ErrWriter, "feed-serve: made the API token, in %s (mode 0600); it is shown this once:\n%s\n", tokenFile, token)
			}
			busConn, err := cmdkit.RedisConnIfSet(c, log)
			if err != nil {
				return err
			}
			if busConn != nil {
				defer busConn.Close()
			}
			return serve.Run(c.Context, serve.Config{
				Store: st, Listen: c.String("listen"), Token: token, TokenFile: tokenFile, AuthReads: auth == "reads", CORS: c.String("cors"),
				BaseURL: c.String("base-url"), PublicURL: public, AllowedHosts: c.StringSlice("allowed-host"), TrustedProxies: proxies,
				Hub: c.String("websub-hub"), Sched: p, PerFeedMetrics: c.Bool("per-feed-metrics"), UnreadWindow: c.Duration("unread-window"),
				MaxReads: c.Int("max-reads"), AllowPrivate: c.Bool("allow-private"), MediaURL: c.String("media-url"), Bus: busConn,
				// Discovery reaches private addresses only for a request that
				// may (Client.Private), never by this switch alone.
				Discover: discover.Config{Client: httpx.New(httpx.Options{UserAgent: c.String("user-agent"), Timeout: c.Duration("timeout")}), Log: log},
				Log:      log, Msg: c.App.ErrWriter,
				Ready: func(addr string) {
					if f := c.String("addr-file"); f != "" {
						// Whole or not at all: a script waits for it.
						err := os.WriteFile(f+".tmp", []byte(addr+"\n"), 0o644)
						if err == nil {
							err = os.Rename(f+".tmp", f)
						}
						if err != nil {
							log.Error("cannot write --addr-file", "err", err)
						}
					}
				},
			})
		},
	}
}

// prefixes reads --trusted-proxy: addresses (a proxy each) and CIDRs.
func prefixes(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v := range list {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f == "" {
				continue
			}
			if a, err := netip.ParseAddr(f); err == nil {
				out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
				continue
			}
			p, err := netip.ParsePrefix(f)
			if err != nil {
				return nil, cmdkit.Usagef("--trusted-proxy %q: an address (127.0.0.1) or a CIDR (10.0.0.0/8)", f)
			}
			out = append(out, p.Masked())
		}
	}
	return out, nil
}

// tokenCommand is feed-serve token: the API token's file.
func tokenCommand() *cli.Command {
	return &cli.Command{
		Name:  "token",
		Usage: "the API token: rotate makes a new one",
		Subcommands: []*cli.Command{{
			Name:  "rotate",
			Usage: "make a new API token in the token file, printed once; the old one, and every web page session opened with it, stop working at once",
			Flags: []cli.Flag{&cli.StringFlag{Name: "token-file", Usage: "the file of the API token", DefaultText: "STORE/" + serve.TokenFile, EnvVars: []string{"FEEDPIPE_SERVE_TOKEN_FILE"}}},
			Action: func(c *cli.Context) error {
				if c.NArg() != 0 {
					return cmdkit.Usagef("token rotate takes no arguments")
				}
				cat, done, err := openCatalog(c)
				if err != nil {
					return err
				}
				defer done()
				file := c.String("token-file")
				if file == "" {
					file = filepath.Join(cat.Store().Root, serve.TokenFile)
				}
				token, err := serve.RotateToken(file)
				if err != nil {
					return cmdkit.Usage(err)
				}
				if err := cat.EndTokenSessions(c.Context); err != nil {
					return err
				}
				fmt.Fprintf(c.App.ErrWriter, "feed-serve: a new API token is in %s (a running feed-serve takes it within a second); it is shown this once:\n%s\n", file, token)
				return nil
			},
		}},
	}
}

func publishCommand() *cli.Command {
	return &cli.Command{
		Name:      "publish",
		Usage:     "write the meta-feeds of every label, and of all entries, to files in DIR",
		ArgsUsage: "DIR",
		UsageText: "feed-serve publish /var/www/feeds --base-url https://example.org/feeds",
		Description: `For each label of the subscriptions, DIR/LABEL.xml (RSS 2.0), DIR/LABEL.atom
and DIR/LABEL.json with its newest entries, and all.xml, all.atom and
all.json with every feed's: ready for a web server to serve. Each file is
written atomically (a temporary file, synced, renamed), and only when its
content changed; a label without entries gets no file; a label that cannot
be a file name (a slash, a leading dot) is skipped and named. scripts/feed-loop
--publish DIR runs it after each cycle.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "base-url", Usage: "the URL DIR is served at, for each feed's self link", EnvVars: []string{"FEEDPIPE_PUBLISH_BASE_URL"}},
			&cli.StringFlag{Name: "websub-hub", Usage: "a WebSub hub's URL for the feeds' rel=hub links", EnvVars: []string{"FEEDPIPE_WEBSUB_HUB"}},
			&cli.IntFlag{Name: "limit", Usage: "entries per feed", Value: serve.FeedLimit},
			mediaURLFlag("the feeds"),
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return cmdkit.Usagef("publish takes one DIR, got %d arguments", c.NArg())
			}
			if c.Int("limit") < 1 || c.Int("limit") > serve.MaxFeedLimit {
				return cmdkit.Usagef("--limit %d: it is 1 to %d", c.Int("limit"), serve.MaxFeedLimit)
			}
			if err := checkMediaURL(c); err != nil {
				return err
			}
			log, cat, err := cmdkit.SetupCatalog(c, cmdkit.ReadOnly)
			if err != nil {
				return err
			}
			defer cat.Close()
			sum, err := serve.Publish(c.Context, serve.PublishConfig{Catalog: cat, Dir: c.Args().First(), BaseURL: c.String("base-url"),
				Hub: c.String("websub-hub"), Limit: c.Int("limit"), Msg: c.App.ErrWriter, MediaURL: c.String("media-url")})
			if err != nil {
				return err
			}
			log.Info("published", "dir", c.Args().First(), "written", sum.Written, "unchanged", sum.Unchanged,
				"empty_labels", sum.Empty, "skipped_labels", len(sum.Skipped))
			return nil
		},
	}
}

// mediaURLFlag is --media-url: where the stored media are served, which
// the feeds of what point their enclosures at.
func mediaURLFlag(what string) cli.Flag {
	return &cli.StringFlag{Name: "media-url", Usage: "the URL the stored media (feed-media) are served at, such as https://feeds.example.org/media (feed-serve's GET /media/SHA256): " +
		what + " point the enclosures whose files are stored at URL/SHA256", DefaultText: "none: the publishers' URLs", EnvVars: []string{"FEEDPIPE_MEDIA_URL"}}
}

func checkMediaURL(c *cli.Context) error {
	if b := c.String("media-url"); b != "" {
		if u, err := url.Parse(b); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return cmdkit.Usagef("--media-url %q: an absolute http or https URL without a query, such as https://feeds.example.org/media", b)
		}
	}
	return nil
}
