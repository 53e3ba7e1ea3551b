package httpx

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/feedpipe/feedpipe/internal/urlnorm"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// parseRetryAfter reads a Retry-After value: delay seconds or an HTTP date,
// as the time from now to it, rounded up to a second: a pause that ends
// before the date is no pause as asked.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := max(t.Sub(now), 0)
		if r := d % time.Second; r != 0 {
			d += time.Second - r
		}
		return d, true
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
			return &ndjson.Error{Class: ndjson.ClassBlocked, Code: "bot_challenge", Message: msg + ": a Cloudflare bot challenge"}
		}
		return &ndjson.Error{Class: ndjson.ClassBlocked, Code: code, Message: msg}
	case s == http.StatusRequestTimeout || s >= 500:
		return &ndjson.Error{Class: ndjson.ClassTransient, Code: code, Message: msg}
	default: // other 4xx, and 1xx/3xx that were not followed
		return &ndjson.Error{Class: ndjson.ClassPermanent, Code: code, Message: msg}
	}
}

// CodeAddressRefused is the error code of a fetch refused because its
// address is private, loopback or the like (ErrAddressRefused). Its class
// is blocked: this machine's rule blocked it, not the publisher, so it is
// no failure of the feed (the scheduler counts none, sched.Outcome), and
// --allow-private lifts it.
const CodeAddressRefused = "address_refused"

// classifyError turns a transport error into a fetch error. total is the
// context of the whole Get, to tell its timeout from a single request's.

func (c *Client) classifyError(err error, total context.Context) *ndjson.Error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	var dnsErr *net.DNSError
	var netErr net.Error
	switch {
	case errors.Is(err, ErrAddressRefused):
		return &ndjson.Error{Class: ndjson.ClassBlocked, Code: CodeAddressRefused, Message: msg}
	case errors.Is(err, urlnorm.ErrScheme):
		return &ndjson.Error{Class: ndjson.ClassPermanent, Code: "invalid_url", Message: msg}
	case errors.As(err, &dnsErr):
		return &ndjson.Error{Class: ndjson.ClassTransient, Code: "dns", Message: msg}
	case errors.Is(total.Err(), context.DeadlineExceeded):
		return &ndjson.Error{Class: ndjson.ClassTransient, Code: "timeout",
			Message: fmt.Sprintf("took longer than %s in all (--total-timeout)", c.opts.TotalTimeout)}
	case errors.Is(err, errHopTimeout), errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return &ndjson.Error{Class: ndjson.ClassTransient, Code: "timeout",
			Message: fmt.Sprintf("nothing for %s (--timeout)", c.opts.Timeout)}
	case isCertificateError(err):
		return &ndjson.Error{Class: ndjson.ClassPermanent, Code: "tls_certificate", Message: msg}
	case errors.Is(err, syscall.ECONNRESET):
		return &ndjson.Error{Class: ndjson.ClassTransient, Code: "connection_reset", Message: msg}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &ndjson.Error{Class: ndjson.ClassTransient, Code: "connection_refused", Message: msg}
	case errors.Is(err, context.Canceled):
		return &ndjson.Error{Class: ndjson.ClassTransient, Code: "canceled", Message: msg}
	}
	return &ndjson.Error{Class: ndjson.ClassTransient, Code: "network", Message: msg}
}
