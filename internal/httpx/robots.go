package httpx

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/temoto/robotstxt"
)

// maxRobotsBytes is as much of a robots.txt as is read, the limit Google
// documents.
const maxRobotsBytes = 500 << 10

// robotsCache keeps each host's robots.txt for the life of a Client.
type robotsCache struct {
	mu    sync.Mutex
	hosts map[string]*robotsEntry
}

type robotsEntry struct {
	lock chan struct{}         // held while the host's robots.txt is fetched
	data *robotstxt.RobotsData // nil until fetched
}

func newRobotsCache() *robotsCache { return &robotsCache{hosts: map[string]*robotsEntry{}} }

// RobotsAllowed reports whether robots.txt lets feedpipe fetch rawURL. Each
// host's robots.txt is fetched once per Client (through limiter, if not
// nil, so that the fetch is polite too) and cached. Feeds are meant to be
// polled and are not checked; the scraper checks the HTML pages it
// fetches. A robots.txt that is missing (4xx) allows everything; one that
// cannot be fetched (5xx, network errors) disallows everything for now.
// When ctx ends first, the error says so and nothing is cached.
func (c *Client) RobotsAllowed(ctx context.Context, rawURL string, limiter *Limiter) (bool, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false, err
	}
	host := HostKey(rawURL)
	c.robots.mu.Lock()
	e := c.robots.hosts[host]
	if e == nil {
		e = &robotsEntry{lock: make(chan struct{}, 1)}
		c.robots.hosts[host] = e
	}
	c.robots.mu.Unlock()
	data, err := e.get(ctx, func() *robotstxt.RobotsData { return c.fetchRobots(ctx, u, limiter) })
	if err != nil {
		return false, fmt.Errorf("httpx: robots.txt of %s: %w", host, err)
	}
	path := u.EscapedPath()
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	return data.TestAgent(cmp.Or(path, "/"), robotsAgent(c.opts.UserAgent)), nil
}

// get returns the host's robots.txt, fetching it first if it has none. A
// fetch that ctx cut short is not kept: it says nothing about the host, and
// the next caller fetches again.
func (e *robotsEntry) get(ctx context.Context, fetch func() *robotstxt.RobotsData) (*robotstxt.RobotsData, error) {
	select {
	case e.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-e.lock }()
	if e.data == nil {
		data := fetch()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		e.data = data
	}
	return e.data, nil
}

func (c *Client) fetchRobots(ctx context.Context, u *url.URL, limiter *Limiter) *robotstxt.RobotsData {
	req := Request{URL: u.Scheme + "://" + u.Host + "/robots.txt"}
	if limiter != nil {
		release, err := limiter.Acquire(ctx, HostKey(u.String()))
		if err != nil {
			data, _ := robotstxt.FromStatusAndBytes(503, nil)
			return data
		}
		req.Limiter, req.Release = limiter, release
	}
	r := c.Get(ctx, req)
	status := r.Status
	if status == 0 { // no response at all: treat as a server error
		status = 503
	}
	body := r.Body
	if len(body) > maxRobotsBytes {
		body = body[:maxRobotsBytes]
	}
	data, err := robotstxt.FromStatusAndBytes(status, body)
	if err != nil { // unparseable: as if there were none
		data, _ = robotstxt.FromStatusAndBytes(404, nil)
	}
	return data
}

// robotsAgent is the product token robots.txt groups are matched against:
// "feedpipe" from "feedpipe/0.1.0 (+https://...)".
func robotsAgent(userAgent string) string {
	token, _, _ := strings.Cut(userAgent, "/")
	token, _, _ = strings.Cut(token, " ")
	return token
}
