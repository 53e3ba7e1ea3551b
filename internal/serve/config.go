package serve

import (
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/bus/redisconn"
	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/discover"
	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/internal/storedir"
)

// DefaultListen is where feed-serve listens unless told: loopback only.
const DefaultListen = "127.0.0.1:8080"

// MaxBodyBytes caps a request body: a subscription is a few hundred bytes.
const MaxBodyBytes = 64 << 10

// MaxRawBytes caps a payload /raw serves: feed-fetch's largest body.
const MaxRawBytes = 64 << 20

// Config is everything feed-serve touches. A nil or zero field means the
// default its comment names.
type Config struct {
	Store   *storedir.Store
	Catalog *catalog.Catalog // the store's catalog; nil: Run opens it
	Listen  string           // host:port; DefaultListen
	// Token is the bearer token writes need (and reads, with AuthReads);
	// "" refuses every write.
	Token string
	// TokenFile is the file Token was read from: when it changes
	// (feed-serve token rotate), the server takes the new token. "": the
	// token never changes.
	TokenFile string
	AuthReads bool
	// CORS is the one origin allowed to call the API from a browser
	// (Access-Control-Allow-Origin); "" allows none.
	CORS string
	// BaseURL is the absolute URL the server is reached at, for the links
	// in feeds and headers ("https://feeds.example/api"); "" takes
	// http://HOST of each request.
	BaseURL string
	// PublicURL is the URL the world reaches the server at, which the
	// WebSub callbacks and webhook endpoints are under (feed-sub push
	// sync makes them); its host is one requests may name, as
	// BaseURL's. "": BaseURL's.
	PublicURL string
	// AllowedHosts are the names, besides loopback's, IP addresses and
	// BaseURL's host, that requests may call the server by (hosts.go);
	// any other Host gets 421.
	AllowedHosts []string
	// TrustedProxies are the addresses of the proxies whose
	// X-Forwarded-For and X-Forwarded-Proto are believed; none by default.
	TrustedProxies []netip.Prefix
	// Hub is the WebSub hub the meta-feeds name (rel=hub); "" names none.
	Hub string
	// MediaURL is where the stored media are served, such as
	// https://feeds.example/media (this server's GET /media/{sha256}): the
	// meta-feeds point the enclosures whose files are stored there (MEDIA_URL/SHA256);
	// "": at the publisher's.
	MediaURL string
	// Sched are the scheduler's parameters of refetch and enable, as
	// feed-store's.
	Sched sched.Params
	// AllowPrivate lets POST and PATCH /feeds (the token's holder) make
	// subscriptions that may reach private addresses (allow_private).
	AllowPrivate bool
	// Discover fetches the pages POST /feeds {"discover": true} looks
	// into, as feed-sub add --discover does.
	Discover discover.Config
	Log      *slog.Logger
	Msg      io.Writer // lines for the person who started it: where it listens, a new token
	Now      func() time.Time
	// Poll is how often /events/stream looks for new events (1s), and
	// Heartbeat how often it sends a comment to keep the connection (15s).
	Poll, Heartbeat time.Duration
	// MetricsEvery is how often the metrics' figures are computed again
	// at most (15s, Prometheus's usual scrape interval): a scrape between
	// reuses them.
	MetricsEvery time.Duration
	// PerFeedMetrics adds series per feed to /metrics (interval, EWMA, new
	// entries, errors by code): the dashboard's per-feed panels. A series
	// each, so for up to some thousands of feeds.
	PerFeedMetrics bool
	// UnreadWindow is how far back the Google Reader API and the unread
	// counts of GET /feeds?reader= look for unread entries; older ones
	// count as read (DefaultUnreadWindow; negative: the whole store).
	UnreadWindow time.Duration
	// NoCache makes every answer anew (cache.go keeps those of the
	// catalog's routes while it is unchanged).
	NoCache bool
	// MaxReads is how many requests read the catalog at once; the others
	// wait in line, in the order they came (gate.go). DefaultMaxReads().
	MaxReads int
	// Bus is the Redis bus (bus.md) whose status /metrics, GET /bus, the
	// dashboard and /web/bus show: its nodes, its streams' length and its
	// consumer groups' pending records and lag. nil: none, and no such
	// route (feed-serve without --redis).
	Bus *redisconn.Conn
	// Ready is called with the address once the server listens.
	Ready func(addr string)
}

func (cfg *Config) defaults() {
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Msg == nil {
		cfg.Msg = io.Discard
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 15 * time.Second
	}
	if cfg.UnreadWindow == 0 {
		cfg.UnreadWindow = DefaultUnreadWindow
	}
	if cfg.MaxReads <= 0 {
		cfg.MaxReads = DefaultMaxReads()
	}
	if cfg.MetricsEvery <= 0 {
		cfg.MetricsEvery = 15 * time.Second
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
}
