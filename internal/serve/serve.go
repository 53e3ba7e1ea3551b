// Package serve is feed-serve: the store over HTTP. A JSON API of the
// subscriptions, entries, fetches, payloads and events (errors as RFC 9457
// problem details); meta-feeds of any feed, label or the whole store in
// Atom, RSS and JSON Feed, served and published as files; Prometheus
// metrics. It reads the catalog and the taps, and changes subscriptions
// only through the functions feed-sub uses (internal/sub).
package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/discover"
	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/internal/storage"
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
	Store   *storage.Store
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
	// AllowedHosts are the names, besides loopback's, IP addresses and
	// BaseURL's host, that requests may call the server by (hosts.go);
	// any other Host gets 421.
	AllowedHosts []string
	// TrustedProxies are the addresses of the proxies whose
	// X-Forwarded-For and X-Forwarded-Proto are believed; none by default.
	TrustedProxies []netip.Prefix
	// Hub is the WebSub hub the meta-feeds name (rel=hub); "" names none.
	Hub string
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

// Run serves until ctx is done, then shuts down, giving requests in
// flight a few seconds to finish.
func Run(ctx context.Context, cfg Config) error {
	cfg.defaults()
	cat, done, err := catalog.Use(ctx, cfg.Catalog, cfg.Store, cfg.Log)
	if err != nil {
		return err
	}
	defer done()
	cfg.Catalog = cat
	s, err := New(cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	srv := s.HTTPServer()
	addr := ln.Addr().String()
	fmt.Fprintf(cfg.Msg, "feed-serve: listening on http://%s\n", addr)
	cfg.Log.Info("listening", "addr", addr)
	if cfg.Ready != nil {
		cfg.Ready(addr)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	s.Close() // ends the event streams, which Shutdown does not wait for
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil {
		srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// HTTPServer is an http.Server of the handler with the timeouts a server
// open to slow or hostile clients needs. The event stream lifts the write
// timeout for itself.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.cfg.Log.Handler(), slog.LevelWarn),
	}
}
