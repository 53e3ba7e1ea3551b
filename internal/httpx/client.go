// Package httpx is feedpipe's HTTP client: conditional GET, content
// decoding under a size cap, SSRF-safe dialing, recorded redirects and a
// classification of every failure.
package httpx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/feedpipe/feedpipe/internal/urlnorm"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Version is feedpipe's version, as it appears in the User-Agent.
const Version = "0.1.0"

// DefaultUserAgent names feedpipe and where a publisher can learn about it.
const DefaultUserAgent = "feedpipe/" + Version + " (+https://github.com/feedpipe/feedpipe)"

// Defaults for Options (seed 001 §8.3, DESIGN.md §6).
const (
	DefaultTimeout      = 10 * time.Second
	DefaultMaxBodyBytes = 10 << 20
	DefaultMaxRedirects = 5
)

// Accept prefers feeds but takes anything: some servers answer 406 to a
// narrow Accept, and websites are fetched too.
const acceptHeader = "application/rss+xml, application/atom+xml, application/feed+json, application/xml;q=0.9, text/xml;q=0.9, application/json;q=0.8, text/html;q=0.7, */*;q=0.5"

// Options configure a Client. Zero fields take the defaults.
type Options struct {
	UserAgent    string
	AllowPrivate bool          // permit loopback, private and link-local addresses
	Timeout      time.Duration // per request, redirects and body included
	MaxBodyBytes int64         // cap on the decoded body
	MaxRedirects int
	Now          func() time.Time // for Retry-After dates; default time.Now
}

// Client fetches URLs. It is safe for concurrent use.
type Client struct {
	opts Options
	hc   *http.Client
}

// New returns a Client.
func New(opts Options) *Client {
	if opts.UserAgent == "" {
		opts.UserAgent = DefaultUserAgent
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.MaxRedirects <= 0 {
		opts.MaxRedirects = DefaultMaxRedirects
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	dialer := &net.Dialer{Timeout: opts.Timeout, KeepAlive: 30 * time.Second}
	if !opts.AllowPrivate {
		dialer.Control = dialControl
	}
	transport := &http.Transport{
		// No proxy: the address check must see the publisher's address.
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   opts.Timeout,
		ResponseHeaderTimeout: opts.Timeout,
		// Bodies are decoded here, under the size cap, not by the transport.
		DisableCompression: true,
	}
	c := &Client{opts: opts}
	c.hc = &http.Client{Transport: transport, CheckRedirect: c.checkRedirect}
	return c
}

// Request is one GET.
type Request struct {
	URL        string
	Validators ndjson.Validators // sent as If-None-Match / If-Modified-Since
	Header     http.Header       // extra headers
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

type redirectsKey struct{}

// Get fetches req.URL. It never returns a Go error: every failure is
// classified in Response.Err.
func (c *Client) Get(ctx context.Context, req Request) *Response {
	start := c.opts.Now()
	resp := &Response{RequestedURL: req.URL, URL: req.URL}
	defer func() { resp.Duration = c.opts.Now().Sub(start) }()

	u, err := urlnorm.Parse(req.URL)
	if err != nil {
		resp.Err = &ndjson.Error{Class: ndjson.ClassPermanent, Code: "invalid_url", Message: err.Error()}
		return resp
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	ctx = context.WithValue(ctx, redirectsKey{}, &resp.Redirects)
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		resp.Err = &ndjson.Error{Class: ndjson.ClassPermanent, Code: "invalid_url", Message: err.Error()}
		return resp
	}
	for k, vs := range req.Header {
		hr.Header[http.CanonicalHeaderKey(k)] = vs
	}
	hr.Header.Set("User-Agent", c.opts.UserAgent)
	if hr.Header.Get("Accept") == "" {
		hr.Header.Set("Accept", acceptHeader)
	}
	hr.Header.Set("Accept-Encoding", "gzip")
	if req.Validators.ETag != "" {
		hr.Header.Set("If-None-Match", req.Validators.ETag)
	}
	if req.Validators.LastModified != "" {
		hr.Header.Set("If-Modified-Since", req.Validators.LastModified)
	}
	resp.RequestHeader = sentHeaders(hr.Header)

	hresp, err := c.hc.Do(hr)
	if err != nil {
		resp.Err = c.classifyError(err)
		return resp
	}
	defer hresp.Body.Close()
	resp.URL = hresp.Request.URL.String()
	resp.Status = hresp.StatusCode
	resp.Header = hresp.Header
	resp.RetryAfter, resp.HasRetryAfter = parseRetryAfter(hresp.Header.Get("Retry-After"), c.opts.Now())

	if hresp.StatusCode == http.StatusNotModified {
		resp.NotModified = true
		return resp
	}
	body, truncated, err := c.readBody(hresp)
	resp.Body, resp.Truncated = body, truncated
	if e := classifyStatus(hresp, resp.HasRetryAfter); e != nil {
		resp.Err = e // keep the body: it is worth storing even when it is an error page
		return resp
	}
	if err != nil {
		resp.Err = c.classifyError(fmt.Errorf("read body: %w", err))
		return resp
	}
	if truncated {
		resp.Err = &ndjson.Error{Class: ndjson.ClassTransient, Code: "body_too_large",
			Message: fmt.Sprintf("body over %d bytes: cut at the limit (raise --max-body-bytes)", c.opts.MaxBodyBytes)}
	}
	return resp
}

// readBody reads and decodes the body, stopping at the cap. The cap applies
// to the decoded size, so a small gzip bomb cannot expand past it.
func (c *Client) readBody(hresp *http.Response) (body []byte, truncated bool, err error) {
	var r io.Reader = hresp.Body
	switch enc := strings.ToLower(strings.TrimSpace(hresp.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(hresp.Body)
		if err != nil {
			return nil, false, fmt.Errorf("gzip: %w", err)
		}
		defer zr.Close()
		r = zr
	default:
		return nil, false, fmt.Errorf("unsupported Content-Encoding %q", enc)
	}
	body, err = io.ReadAll(io.LimitReader(r, c.opts.MaxBodyBytes+1))
	if int64(len(body)) > c.opts.MaxBodyBytes {
		return body[:c.opts.MaxBodyBytes], true, nil
	}
	return body, false, err
}

func (c *Client) checkRedirect(req *http.Request, via []*http.Request) error {
	if hops, ok := req.Context().Value(redirectsKey{}).(*[]ndjson.Redirect); ok && req.Response != nil {
		*hops = append(*hops, ndjson.Redirect{URL: via[len(via)-1].URL.String(), Status: req.Response.StatusCode})
	}
	if len(via) > c.opts.MaxRedirects {
		return fmt.Errorf("%w: more than %d", errTooManyRedirects, c.opts.MaxRedirects)
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return fmt.Errorf("%w: redirect to %s", urlnorm.ErrScheme, req.URL)
	}
	return nil
}

var errTooManyRedirects = errors.New("too many redirects")

// sentHeaders copies the request headers for the record, without
// credentials.
func sentHeaders(h http.Header) http.Header {
	out := h.Clone()
	out.Del("Authorization")
	out.Del("Cookie")
	out.Del("Proxy-Authorization")
	return out
}

// Flatten turns headers into the record's one-value-per-name map, joining
// repeated values with ", ".
func Flatten(h http.Header) map[string]string {
	if h == nil {
		return map[string]string{}
	}
	out := make(map[string]string, len(h))
	for k, vs := range h {
		out[k] = strings.Join(vs, ", ")
	}
	return out
}

// parseRetryAfter reads a Retry-After value: delay seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	var secs int64
	if _, err := fmt.Sscanf(v, "%d", &secs); err == nil && fmt.Sprint(secs) == v {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d < 0 {
			d = 0
		}
		return d.Round(time.Second), true
	}
	return 0, false
}

// classifyStatus returns the error for a status that is not a success.
func classifyStatus(r *http.Response, hasRetryAfter bool) *ndjson.Error {
	s := r.StatusCode
	msg := fmt.Sprintf("HTTP %d %s", s, http.StatusText(s))
	code := fmt.Sprintf("http_%d", s)
	switch {
	case s >= 200 && s < 300:
		return nil
	case s == http.StatusTooManyRequests:
		return &ndjson.Error{Class: ndjson.ClassRateLimited, Code: code, Message: msg}
	case s == http.StatusServiceUnavailable && hasRetryAfter:
		return &ndjson.Error{Class: ndjson.ClassRateLimited, Code: code, Message: msg}
	case s == http.StatusForbidden:
		if r.Header.Get("Cf-Mitigated") == "challenge" {
			msg += " (Cloudflare challenge)"
		}
		return &ndjson.Error{Class: ndjson.ClassBlocked, Code: code, Message: msg}
	case s == http.StatusRequestTimeout || s >= 500:
		return &ndjson.Error{Class: ndjson.ClassTransient, Code: code, Message: msg}
	default: // other 4xx, and 1xx/3xx that were not followed
		return &ndjson.Error{Class: ndjson.ClassPermanent, Code: code, Message: msg}
	}
}

// classifyError turns a transport error into a fetch error.
func (c *Client) classifyError(err error) *ndjson.Error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	var dnsErr *net.DNSError
	var netErr net.Error
	switch {
	case errors.Is(err, ErrAddressRefused):
		return &ndjson.Error{Class: ndjson.ClassPermanent, Code: "address_refused", Message: msg}
	case errors.Is(err, errTooManyRedirects):
		return &ndjson.Error{Class: ndjson.ClassPermanent, Code: "too_many_redirects", Message: msg}
	case errors.Is(err, urlnorm.ErrScheme):
		return &ndjson.Error{Class: ndjson.ClassPermanent, Code: "invalid_url", Message: msg}
	case errors.As(err, &dnsErr):
		return &ndjson.Error{Class: ndjson.ClassTransient, Code: "dns", Message: msg}
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		msg = fmt.Sprintf("timed out after %s (--timeout)", c.opts.Timeout)
		return &ndjson.Error{Class: ndjson.ClassTransient, Code: "timeout", Message: msg}
	case isCertificateError(err):
		return &ndjson.Error{Class: ndjson.ClassPermanent, Code: "tls_certificate", Message: msg}
	case errors.Is(err, context.Canceled):
		return &ndjson.Error{Class: ndjson.ClassTransient, Code: "canceled", Message: msg}
	}
	return &ndjson.Error{Class: ndjson.ClassTransient, Code: "network", Message: msg}
}
