// Package discover finds the feeds a website offers (docs/design.md#discovery): those
// its page announces with <link rel="alternate">, else those at the paths
// where feeds are commonly found; each one is fetched and parsed before it
// is offered.
package discover

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/feedpipe/feedpipe/internal/extract"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/parse"
	"github.com/feedpipe/feedpipe/internal/urlnorm"
)

// CommonPaths are where sites without announcements tend to keep their
// feeds (WordPress, Hugo, Jekyll, Ghost, static generators), tried in this
// order.
var CommonPaths = []string{"/feed", "/feed/", "/rss", "/rss.xml", "/atom.xml", "/feed.xml", "/index.xml", "/feed.json", "/index.rss"}

// Config is what discovery needs. Nil fields take the documented defaults.
type Config struct {
	Client *httpx.Client // default httpx.New(httpx.Options{})
	// Limiter spaces the requests to the site; default one at a time,
	// without a pause: a person is waiting.
	Limiter *httpx.Limiter
	Log     *slog.Logger
}

// Feed is a feed found, fetched and parsed.
type Feed struct {
	URL     string // what to subscribe to: normalized, after permanent redirects
	Title   string
	Format  string // rss, atom or json
	Version string
	Items   int
	// Found says how: "url" (the URL given is a feed), "link" (the page
	// announces it) or "path" (a common path).
	Found string
}

// How a feed was found (Feed.Found).
const (
	FoundURL  = "url"
	FoundLink = "link"
	FoundPath = "path"
)

// ErrNone is returned when a site offers no feed that parses.
var ErrNone = errors.New("no feed found")

// Discover returns the feeds the page at rawURL offers, best first: the
// page itself when it is a feed; else the feeds it announces, in its
// order (publishers list their main feed first); else, when none of those
// parses, the common paths of its site. The page is read only if
// robots.txt allows it; feeds are meant to be fetched and are not checked.
func Discover(ctx context.Context, cfg Config, rawURL string) ([]Feed, error) {
	if cfg.Client == nil {
		cfg.Client = httpx.New(httpx.Options{})
	}
	if cfg.Limiter == nil {
		cfg.Limiter = httpx.NewLimiter(1, 0, nil)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	pageURL, err := urlnorm.Normalize(rawURL)
	if err != nil {
		return nil, fmt.Errorf("discover: %s", strings.TrimPrefix(err.Error(), "urlnorm: "))
	}
	// An address the client refuses is said to be, of the URL given: its
	// robots.txt and the common paths would all be refused too.
	if err := cfg.Client.Refused(ctx, pageURL); err != nil {
		return nil, fmt.Errorf("discover: %s: %w", pageURL, err)
	}
	d := &discoverer{cfg: cfg, ctx: ctx, seen: map[string]bool{}}

	allowed, err := cfg.Client.RobotsAllowed(ctx, pageURL, cfg.Limiter)
	if err != nil || !allowed {
		cfg.Log.Warn("robots.txt disallows reading the page: trying the common feed paths only", "url", pageURL)
	} else {
		r, err := d.get(pageURL)
		if err != nil {
			return nil, err
		}
		if r.Err == nil {
			if f, ok := d.asFeed(pageURL, r, FoundURL); ok {
				return []Feed{f}, nil
			}
			ctype := r.Header.Get("Content-Type")
			if !extract.IsHTML(ctype, r.Body) {
				ctype = "text/html" // whatever it says, it is not a feed: look for links in it
			}
			if page, err := extract.NewPage(r.Body, ctype, r.URL); err == nil {
				for _, l := range page.FeedLinks() {
					d.try(l.URL, FoundLink)
				}
			}
		} else {
			cfg.Log.Info("cannot read the page: trying the common feed paths", "url", pageURL, "error", r.Err.Message)
		}
	}
	if len(d.found) == 0 {
		u, _ := url.Parse(pageURL)
		for _, p := range CommonPaths {
			d.try(u.Scheme+"://"+u.Host+p, FoundPath)
		}
	}
	if len(d.found) == 0 && d.reached == 0 && d.netErr != nil {
		return nil, d.netErr // the site did not answer at all
	}
	if len(d.found) == 0 {
		return nil, fmt.Errorf("discover: %w at %s (no feed announced, none at %s)", ErrNone, pageURL, strings.Join(CommonPaths, ", "))
	}
	return d.found, nil
}

type discoverer struct {
	cfg   Config
	ctx   context.Context
	seen  map[string]bool // URLs fetched, and feeds found by their final URL
	found []Feed
	// reached counts the requests answered; netErr is the first that was
	// not.
	reached int
	netErr  error
}

// get fetches a URL politely. Only a network failure (no answer at all) is
// an error; an HTTP error is in the response.
func (d *discoverer) get(u string) (*httpx.Response, error) {
	release, err := d.cfg.Limiter.Acquire(d.ctx, httpx.HostKey(u))
	if err != nil {
		return nil, err
	}
	defer release()
	r := d.cfg.Client.Get(d.ctx, httpx.Request{URL: u})
	if r.Status == 0 && r.Err != nil {
		err := fmt.Errorf("discover: %s: %s", u, r.Err.Message)
		if d.netErr == nil {
			d.netErr = err
		}
		return nil, err
	}
	d.reached++
	return r, nil
}

// try fetches a candidate and keeps it if it is a feed.
func (d *discoverer) try(u, how string) {
	n, err := urlnorm.Normalize(u)
	if err != nil || d.seen[n] || d.ctx.Err() != nil {
		return
	}
	d.seen[n] = true
	r, err := d.get(n)
	if err != nil || r.Err != nil {
		d.cfg.Log.Debug("not a feed", "url", n, "error", errorOf(err, r))
		return
	}
	if f, ok := d.asFeed(n, r, how); ok {
		d.found = append(d.found, f)
	}
}

// asFeed parses a response as a feed.
func (d *discoverer) asFeed(requested string, r *httpx.Response, how string) (Feed, bool) {
	feed, err := parse.ParseFeed(r.Body, parse.Source{BaseURL: r.URL})
	if err != nil {
		d.cfg.Log.Debug("not a feed", "url", requested, "error", err)
		return Feed{}, false
	}
	u := requested
	if moved := r.PermanentRedirect(); moved != "" {
		if n, err := urlnorm.Normalize(moved); err == nil {
			u = n
		}
	}
	final, _ := urlnorm.Normalize(r.URL)
	sum := sha256.Sum256(r.Body)
	body := "body " + hex.EncodeToString(sum[:])
	if how != FoundURL && (d.seen["feed "+final] || d.seen["feed "+u] || d.seen[body]) {
		return Feed{}, false // a second path to a feed found already
	}
	d.seen["feed "+final], d.seen["feed "+u], d.seen[body] = true, true, true
	return Feed{URL: u, Title: feed.Info.Title, Format: feed.Info.Format, Version: feed.Info.Version, Items: feed.Info.Items, Found: how}, true
}

func errorOf(err error, r *httpx.Response) string {
	if err != nil {
		return err.Error()
	}
	if r != nil && r.Err != nil {
		return r.Err.Message
	}
	return ""
}

// Print writes feeds as a table for people.
func Print(w io.Writer, feeds []Feed) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "URL\tFORMAT\tITEMS\tFOUND\tTITLE")
	for _, f := range feeds {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", f.URL, f.Format, f.Items, f.Found, strings.Join(strings.Fields(f.Title), " "))
	}
	return tw.Flush()
}
