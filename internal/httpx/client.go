// Package httpx is feedpipe's HTTP client: conditional GET, content
// decoding under a size cap, SSRF-safe dialing, timeouts per request and per
// source, recorded redirects, per-host politeness, robots.txt, and a
// classification of every failure. feed-fetch and the scraper share it.
package httpx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/feedpipe/feedpipe/internal/urlnorm"
	"github.com/feedpipe/feedpipe/internal/version"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// DefaultUserAgent names feedpipe, its version (the number --version
// prints) and where a publisher can learn about it.
var DefaultUserAgent = "feedpipe/" + version.Short() + " (+https://github.com/feedpipe/feedpipe)"

// Defaults for Options (docs/design.md#fetching and #security).
const (
	DefaultTimeout      = 10 * time.Second
	DefaultTotalTimeout = 60 * time.Second
	DefaultMaxBodyBytes = 10 << 20
	DefaultMaxRedirects = 5
)

// Accept prefers feeds but takes anything: some servers answer 406 to a
// narrow Accept, and websites are fetched too.
const acceptHeader = "application/rss+xml, application/atom+xml, application/feed+json, application/xml;q=0.9, text/xml;q=0.9, application/json;q=0.8, text/html;q=0.7, */*;q=0.5"

// Options configure a Client. Zero fields take the defaults.
type Options struct {
	UserAgent    string
	AllowPrivate bool // permit loopback, private and link-local addresses
	// Timeout bounds each request of a redirect chain: connecting, the TLS
	// handshake and the headers, and then any stall of its body.
	Timeout time.Duration
	// TotalTimeout bounds a whole Get, redirects and bodies included, so
	// that a server trickling bytes is cut off.
	TotalTimeout time.Duration
	MaxBodyBytes int64 // cap on the decoded body
	// MaxRedirects is how many redirects a Get follows: nil means
	// DefaultMaxRedirects, 0 none. The redirect over it is the response,
	// with the error too_many_redirects.
	MaxRedirects *int
	Now          func() time.Time // for Retry-After dates; default time.Now
	// Resolver looks up host names for the dialer, which checks each
	// address it then connects to; nil is net.DefaultResolver. (Tests
	// make any name resolve to loopback with it.)
	Resolver *net.Resolver
	// Public says which addresses may be connected to without
	// AllowPrivate; nil: those on the public Internet. (Tests of other
	// packages let a loopback server stand for a publisher with it.)
	Public func(netip.AddrPort) bool
}

// Client fetches URLs. It is safe for concurrent use.
type Client struct {
	opts   Options
	hc     *http.Client
	robots *robotsCache
	// public says which addresses may be connected to without
	// AllowPrivate: those publicAddr accepts, but in tests.
	public func(netip.AddrPort) bool

	privateOnce sync.Once
	private     *Client // Private's
}

// Private returns a Client like c that may connect to loopback, private
// and link-local addresses too: for the feeds allowed them one by one
// (ndjson.Access.AllowPrivate). It has its own connections, so that none
// made for such a feed is ever reused for another; robots.txt is shared.
func (c *Client) Private() *Client {
	if c.opts.AllowPrivate {
		return c
	}
	c.privateOnce.Do(func() {
		opts := c.opts
		opts.AllowPrivate = true
		c.private = New(opts)
		c.private.robots = c.robots
	})
	return c.private
}

// New returns a Client.
func New(opts Options) *Client {
	if opts.UserAgent == "" {
		opts.UserAgent = DefaultUserAgent
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.TotalTimeout <= 0 {
		opts.TotalTimeout = DefaultTotalTimeout
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.MaxRedirects == nil {
		opts.MaxRedirects = new(DefaultMaxRedirects)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Client{opts: opts, robots: newRobotsCache(), public: func(a netip.AddrPort) bool { return publicAddr(a.Addr()) }}
	if opts.Public != nil {
		c.public = opts.Public
	}
	dialer := &net.Dialer{Timeout: opts.Timeout, KeepAlive: 30 * time.Second, Resolver: opts.Resolver}
	if !opts.AllowPrivate {
		dialer.Control = func(_, address string, _ syscall.RawConn) error { return checkAddress(address, c.public) }
	}
	transport := &http.Transport{
		// No proxy: the address check must see the publisher's address.
		Proxy:             nil,
		DialContext:       dialer.DialContext,
		ForceAttemptHTTP2: true,
		// One idle connection per host is kept for its next feed, a
		// second or more later (per-host rate), across thousands of hosts.
		MaxIdleConns:          8192,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   opts.Timeout,
		ResponseHeaderTimeout: opts.Timeout,
		// Bodies are decoded here, under the size cap, not by the transport.
		DisableCompression: true,
	}
	c.hc = &http.Client{Transport: hopTimeout{transport, opts.Timeout}, CheckRedirect: c.checkRedirect}
	return c
}

// BasicAuth holds credentials for one feed.
type BasicAuth struct{ Username, Password string }

// Request is one GET.
type Request struct {
	URL        string
	Validators ndjson.Validators // sent as If-None-Match / If-Modified-Since
	Header     http.Header       // extra headers
	UserAgent  string            // overrides Options.UserAgent
	Auth       *BasicAuth
	// LastToHost says no other request to this host is waiting: the
	// connection is closed after the response instead of kept idle for
	// one that will not come (at 10,000 hosts, idle connections held
	// 150 MB of buffers and goroutine stacks).
	LastToHost bool
	// Limiter, if set, makes a redirect to another host (HostKey) wait
	// for a turn at that host, so that many feeds redirected to one host
	// (a feed proxy) reach it no faster than its limits allow. Release
	// ends the caller's turn at the request's host, taken from Limiter;
	// Get calls it when it leaves the host, or else when it returns, so a
	// Get holds one turn at a time: two fetches redirected to each other's
	// host never wait for each other. (A Limiter's release may be called
	// again.)
	Limiter *Limiter
	Release func()
	// Unsent, if set, is the Slot.Unsent of the turn Release ends: Get
	// calls it when the request never left this machine (its host's
	// address refused), so that the host's rate does not count it.
	Unsent func()
}

// Response is the outcome of a GET. Err is nil on success (2xx or 304).
type Response struct {
	RequestedURL  string
	URL           string // after redirects
	Redirects     []ndjson.Redirect
	Status        int
	NotModified   bool
	RequestHeader http.Header // as sent, credentials removed
	Header        http.Header
	Body          []byte // decoded
	Truncated     bool   // Body was cut at the size cap
	RetryAfter    time.Duration
	HasRetryAfter bool
	Duration      time.Duration
	Err           *ndjson.Error
}

// PermanentRedirect returns where the response was permanently moved: the
// final URL when every hop of the chain was a 301 or 308, else "".
// Temporary redirects (302, 303, 307) never move a feed.
func (r *Response) PermanentRedirect() string {
	if len(r.Redirects) == 0 || r.Err != nil {
		return ""
	}
	for _, h := range r.Redirects {
		if h.Status != http.StatusMovedPermanently && h.Status != http.StatusPermanentRedirect {
			return ""
		}
	}
	return r.URL
}

// getState is what checkRedirect keeps and needs of one Get.
type getState struct {
	resp    *Response
	extra   []string   // the names of the request's own headers (Request.Header)
	stopped bool       // a redirect over MaxRedirects was not followed
	limiter *Limiter   // Request.Limiter
	host    string     // the host (HostKey) of the turn held
	release func()     // ends that turn; nil if none is held
	unsent  func()     // gives back the turn's start (Slot.Unsent); nil if none
	auth    *BasicAuth // the request's credentials, from Request.Auth or its URL
	// connected is set once the turn has had a connection (GotConn): a
	// request may have left on it, so its start is never given back.
	connected atomic.Bool
}

// turnAt ends the Get's turn at its host and waits for one at host. Only
// one is held at a time, so waiting never holds up another fetch's turn.
func (st *getState) turnAt(ctx context.Context, host string) error {
	if st.release != nil {
		st.release()
		st.release, st.unsent = nil, nil
	}
	slot, err := st.limiter.Take(ctx, host)
	if err != nil {
		return fmt.Errorf("httpx: waiting for a turn at %s: %w", host, err)
	}
	st.host, st.release, st.unsent = host, slot.Release, slot.Unsent
	st.connected.Store(false)
	return nil
}

// endTurn ends the turn held, if any: one whose address was refused
// before it had any connection gives back its start too (not one whose
// first request left, then was redirected on the same host, or retried,
// to a refused address).
func (st *getState) endTurn() {
	if st.release == nil {
		return
	}
	if r := st.resp; r != nil && r.Err != nil && r.Err.Code == CodeAddressRefused && st.unsent != nil && !st.connected.Load() {
		st.unsent()
	}
	st.release()
	st.release, st.unsent = nil, nil
}

type getStateKey struct{}

// clientHeaders are the request headers the client sets itself: standard,
// never secret. Every other header comes from the caller's Request.Header.
var clientHeaders = map[string]bool{
	"User-Agent": true, "Accept": true, "Accept-Encoding": true, "If-None-Match": true, "If-Modified-Since": true,
	"Range": true, "If-Range": true,
}

// Get fetches req.URL. It never returns a Go error: every failure is
// classified in Response.Err.
func (c *Client) Get(ctx context.Context, req Request) *Response {
	start := c.opts.Now()
	st := &getState{limiter: req.Limiter, release: req.Release, unsent: req.Unsent}
	defer st.endTurn()
	total, cancel := context.WithTimeout(ctx, c.opts.TotalTimeout)
	defer cancel()
	hr, resp := c.newRequest(total, req, st, acceptHeader, acceptEncoding)
	defer func() { resp.Duration = c.opts.Now().Sub(start) }()
	if hr == nil {
		return resp
	}
	if req.Validators.ETag != "" {
		hr.Header.Set("If-None-Match", req.Validators.ETag)
	}
	if req.Validators.LastModified != "" {
		hr.Header.Set("If-Modified-Since", req.Validators.LastModified)
	}
	resp.RequestHeader = redactHeaders(hr.Header)
	st.setAuth(hr)

	hresp, err := c.hc.Do(hr)
	if err != nil {
		resp.Err = c.classifyError(err, total)
		return resp
	}
	defer hresp.Body.Close()
	resp.URL = withoutUserinfo(hresp.Request.URL)
	resp.Status = hresp.StatusCode
	resp.Header = hresp.Header
	resp.RetryAfter, resp.HasRetryAfter = parseRetryAfter(hresp.Header.Get("Retry-After"), c.opts.Now())

	if hresp.StatusCode == http.StatusNotModified {
		resp.NotModified = true
		return resp
	}
	body, truncated, err := decodeBody(hresp, c.opts.MaxBodyBytes)
	resp.Body, resp.Truncated = body, truncated
	if st.stopped {
		to := hresp.Header.Get("Location")
		if loc, err := hresp.Location(); err == nil {
			to = withoutUserinfo(loc)
		}
		resp.Err = &ndjson.Error{Class: ndjson.ClassPermanent, Code: "too_many_redirects",
			Message: fmt.Sprintf("HTTP %d to %s not followed: --max-redirects is %d", hresp.StatusCode, to, *c.opts.MaxRedirects)}
		return resp
	}
	if e := classifyStatus(hresp, resp.HasRetryAfter); e != nil {
		resp.Err = e // keep the body: it is worth storing even when it is an error page
		return resp
	}
	if err != nil {
		resp.Err = c.classifyError(fmt.Errorf("read body: %w", err), total)
		return resp
	}
	if truncated {
		resp.Err = &ndjson.Error{Class: ndjson.ClassTransient, Code: "body_too_large",
			Message: fmt.Sprintf("body over %d bytes: cut at the limit (raise --max-body-bytes)", c.opts.MaxBodyBytes)}
	}
	return resp
}

// newRequest makes the GET of req (Get's, Stream's) in ctx, which carries
// st for checkRedirect: its URL without credentials (they go as basic
// auth, set by the caller once the headers are recorded), the caller's
// headers, and the client's: User-Agent, Accept (accept, unless the
// caller's headers have one) and Accept-Encoding (encodings). The
// Response holds the URL asked for; when the URL is not one, its Err says
// why and the request is nil.
func (c *Client) newRequest(ctx context.Context, req Request, st *getState, accept, encodings string) (*http.Request, *Response) {
	// Credentials in the URL are sent as basic auth, and never recorded
	// with the URL.
	rawURL, user := urlnorm.SplitUserinfo(req.URL)
	if user != nil && req.Auth == nil {
		pass, _ := user.Password()
		req.Auth = &BasicAuth{Username: user.Username(), Password: pass}
	}
	resp := &Response{RequestedURL: rawURL, URL: rawURL}
	u, err := urlnorm.Parse(rawURL)
	if err != nil {
		resp.Err = &ndjson.Error{Class: ndjson.ClassPermanent, Code: "invalid_url", Message: err.Error()}
		return nil, resp
	}
	st.resp, st.host = resp, HostKey(u.String())
	ctx = httptrace.WithClientTrace(context.WithValue(ctx, getStateKey{}, st), &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { st.connected.Store(true) },
	})
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		resp.Err = &ndjson.Error{Class: ndjson.ClassPermanent, Code: "invalid_url", Message: err.Error()}
		return nil, resp
	}
	for k, vs := range req.Header {
		k = http.CanonicalHeaderKey(k)
		hr.Header[k] = vs
		if !clientHeaders[k] {
			st.extra = append(st.extra, k)
		}
	}
	hr.Header.Set("User-Agent", c.opts.UserAgent)
	if req.UserAgent != "" {
		hr.Header.Set("User-Agent", req.UserAgent)
	}
	if hr.Header.Get("Accept") == "" {
		hr.Header.Set("Accept", accept)
	}
	hr.Header.Set("Accept-Encoding", encodings)
	hr.Close = req.LastToHost
	st.auth = req.Auth // set by the caller once the headers are recorded
	return hr, resp
}

// setAuth gives the request its credentials, if it has any.
func (st *getState) setAuth(hr *http.Request) {
	if st.auth != nil {
		hr.SetBasicAuth(st.auth.Username, st.auth.Password)
	}
}

func (c *Client) checkRedirect(req *http.Request, via []*http.Request) error {
	st, _ := req.Context().Value(getStateKey{}).(*getState)
	if st == nil {
		return errors.New("httpx: a redirect outside Get") // cannot happen: only Get sends
	}
	if len(via) > *c.opts.MaxRedirects {
		// The redirect is the response: its status and Location are
		// recorded, and Get gives the error.
		st.stopped = true
		return http.ErrUseLastResponse
	}
	if req.Response != nil {
		st.resp.Redirects = append(st.resp.Redirects, ndjson.Redirect{URL: withoutUserinfo(via[len(via)-1].URL), Status: req.Response.StatusCode})
	}
	// The request's own headers and credentials are for its host only;
	// Go drops Authorization only across domains, not ports or schemes,
	// and keeps other headers everywhere.
	if leavesHost(via[0].URL, req.URL) {
		for _, name := range st.extra {
			req.Header.Del(name)
		}
		req.Header.Del("Authorization")
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return fmt.Errorf("%w: redirect to %s", urlnorm.ErrScheme, withoutUserinfo(req.URL))
	}
	// Within one host the turn goes on, as one request: a new one would
	// wait out the host's rate after itself.
	if host := HostKey(req.URL.String()); st.limiter != nil && host != st.host {
		return st.turnAt(req.Context(), host)
	}
	return nil
}

// leavesHost reports whether a redirect from one URL to another goes to
// another host (HostKey), except for an upgrade from http to https of the
// same name on the default ports: publishers move feeds so all the time,
// and the credentials go over the safer channel.
func leavesHost(from, to *url.URL) bool {
	if HostKey(from.String()) == HostKey(to.String()) {
		return false
	}
	upgrade := from.Scheme == "http" && to.Scheme == "https" && strings.EqualFold(from.Hostname(), to.Hostname()) &&
		(from.Port() == "" || from.Port() == "80") && (to.Port() == "" || to.Port() == "443")
	return !upgrade
}

// withoutUserinfo is u as recorded: a redirect may name credentials in its
// Location, which must not be written down.
func withoutUserinfo(u *url.URL) string {
	if u.User == nil {
		return u.String()
	}
	c := *u
	c.User = nil
	return c.String()
}

// hopTimeout bounds each request of a redirect chain: its connection, TLS
// handshake and headers must come within timeout, and then its body may
// not stall for that long. A body that keeps coming, however slowly, is
// left to the total timeout: a large feed on a slow link arrives, and a
// server trickling bytes is still cut off.
type hopTimeout struct {
	base    http.RoundTripper
	timeout time.Duration
}

func (h hopTimeout) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	timer := time.AfterFunc(h.timeout, func() { cancel(errHopTimeout) })
	resp, err := h.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		timer.Stop()
		cancel(nil)
		return nil, err
	}
	timer.Reset(h.timeout) // the body's first bytes get a whole timeout too
	resp.Body = &idleBody{ReadCloser: resp.Body, timer: timer, timeout: h.timeout, cancel: cancel}
	return resp, nil
}

var errHopTimeout = errors.New("request timed out")

// idleBody restarts its request's timeout whenever bytes arrive.
type idleBody struct {
	io.ReadCloser
	timer   *time.Timer
	timeout time.Duration
	cancel  context.CancelCauseFunc
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.timer.Reset(b.timeout)
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.timer.Stop()
	err := b.ReadCloser.Close()
	b.cancel(nil)
	return err
}
