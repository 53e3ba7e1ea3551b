package httpx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// StreamRequest is a GET whose body the caller reads as it comes (Stream):
// a file too large to hold in memory, such as an enclosure.
type StreamRequest struct {
	// Request is the GET: its URL, headers, User-Agent, credentials and
	// per-host turn (Validators are not sent: a file is asked for whole,
	// or from From on).
	Request
	// From, when more than 0, asks for the bytes from From on (Range, RFC
	// 9110 §14.2), to resume a download cut short.
	From int64
	// IfRange is what the bytes held were served with: their strong ETag
	// or Last-Modified date. Sent as If-Range (RFC 9110 §13.1.5), it lets
	// the server send the rest (206) only if the file is unchanged, and
	// else the whole (200). A resume without it would splice two files.
	IfRange string
	// Timeout bounds the whole exchange, body included; 0: no bound but
	// the client's per-request Timeout, which cuts a stalled body.
	Timeout time.Duration
}

// Stream is a response whose body is read by the caller. Its Response
// says what came (Body is nil there); Err is set, and Body nil, when the
// exchange failed or its status is not a success (200 or 206).
type Stream struct {
	*Response
	// Body is the response's body, decoded, read as it comes; Close ends
	// the exchange and the per-host turn it holds. nil when Err is set.
	Body io.ReadCloser
	// Offset is where in the file the body starts: From, when the server
	// sent the rest (206); 0 when it sent the whole (200).
	Offset int64
	// Size is the file's whole size (Content-Range's complete length, or
	// Content-Length of a whole body), -1 when the server does not say.
	Size int64
	// Encoded says the body came content-encoded and is decoded here: its
	// bytes are not the served ones Range counts, so it cannot be resumed.
	Encoded bool
	// ETag is the response's strong ETag (a weak one cannot validate a
	// range, RFC 9110 §13.1.5), and LastModified its Last-Modified: the
	// validators a later resume sends as IfRange.
	ETag, LastModified string

	cancel  context.CancelFunc
	release func()
	ctx     context.Context
	c       *Client
}

// Stream sends a GET for req and returns the response once its headers
// have come, for the caller to read its body and Close it; the host's
// turn (req.Limiter) is held until then. It follows redirects under the
// rules of Get, with the same address checks. It never returns a Go
// error: a failure is classified in Err, as Get's are; ReadError
// classifies one met reading the body.
func (c *Client) Stream(ctx context.Context, req StreamRequest) *Stream {
	start := c.opts.Now()
	st := &getState{limiter: req.Limiter, release: req.Release}
	var cancel context.CancelFunc
	if req.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	s := &Stream{Size: -1, cancel: cancel, ctx: ctx, c: c}
	fail := func() *Stream {
		s.Response.Duration = c.opts.Now().Sub(start)
		cancel()
		if st.release != nil {
			st.release()
		}
		return s
	}
	// Bodies are asked for as they are stored: a range counts the bytes
	// of the representation served, which a coding would change.
	hr, resp := c.newRequest(ctx, req.Request, st, "*/*", "identity")
	s.Response = resp
	if hr == nil {
		return fail()
	}
	if req.From > 0 {
		hr.Header.Set("Range", "bytes="+strconv.FormatInt(req.From, 10)+"-")
		if req.IfRange != "" {
			hr.Header.Set("If-Range", req.IfRange)
		}
	}
	resp.RequestHeader = redactHeaders(hr.Header)
	st.setAuth(hr)
	hresp, err := c.hc.Do(hr)
	if err != nil {
		resp.Err = s.classify(err)
		return fail()
	}
	resp.URL = withoutUserinfo(hresp.Request.URL)
	resp.Status = hresp.StatusCode
	resp.Header = hresp.Header
	resp.RetryAfter, resp.HasRetryAfter = parseRetryAfter(hresp.Header.Get("Retry-After"), c.opts.Now())
	if st.stopped {
		hresp.Body.Close()
		resp.Err = &ndjson.Error{Class: ndjson.ClassPermanent, Code: "too_many_redirects",
			Message: fmt.Sprintf("HTTP %d not followed: --max-redirects is %d", hresp.StatusCode, *c.opts.MaxRedirects)}
		return fail()
	}
	if e := classifyStatus(hresp, resp.HasRetryAfter); e != nil {
		hresp.Body.Close()
		resp.Err = e
		return fail()
	}
	if etag := hresp.Header.Get("ETag"); etag != "" && !strings.HasPrefix(etag, "W/") {
		s.ETag = etag
	}
	s.LastModified = hresp.Header.Get("Last-Modified")
	switch hresp.StatusCode {
	case http.StatusPartialContent:
		first, size, ok := contentRange(hresp.Header.Get("Content-Range"))
		if !ok || req.From <= 0 || first != req.From {
			// Not the rest asked for: a range is trusted only when it
			// starts where the bytes held end.
			hresp.Body.Close()
			resp.Err = &ndjson.Error{Class: ndjson.ClassTransient, Code: "bad_range",
				Message: fmt.Sprintf("HTTP 206 with Content-Range %q, for the bytes from %d on", hresp.Header.Get("Content-Range"), req.From)}
			return fail()
		}
		s.Offset, s.Size = first, size
	case http.StatusOK:
		s.Size = hresp.ContentLength
	default: // another 2xx: no body of a file
		hresp.Body.Close()
		resp.Err = &ndjson.Error{Class: ndjson.ClassPermanent, Code: "http_" + strconv.Itoa(hresp.StatusCode),
			Message: fmt.Sprintf("HTTP %d %s: not a file", hresp.StatusCode, http.StatusText(hresp.StatusCode))}
		return fail()
	}
	var body io.Reader = hresp.Body
	var closers []io.Closer
	if ce := strings.TrimSpace(hresp.Header.Get("Content-Encoding")); ce != "" && !strings.EqualFold(ce, "identity") {
		if hresp.StatusCode == http.StatusPartialContent {
			hresp.Body.Close()
			resp.Err = &ndjson.Error{Class: ndjson.ClassTransient, Code: "bad_range", Message: "HTTP 206 of an encoded body (Content-Encoding " + ce + "), not asked for"}
			return fail()
		}
		codings := strings.Split(ce, ",")
		for i := len(codings) - 1; i >= 0; i-- {
			dec, err := decoder(strings.ToLower(strings.TrimSpace(codings[i])), body)
			if err != nil {
				hresp.Body.Close()
				resp.Err = &ndjson.Error{Class: ndjson.ClassPermanent, Code: "bad_encoding", Message: err.Error()}
				return fail()
			}
			if c, ok := dec.(io.Closer); ok {
				closers = append(closers, c)
			}
			body = dec
		}
		s.Encoded, s.Size = true, -1
	}
	s.release, st.release = st.release, nil
	s.Body = &streamBody{Reader: body, raw: hresp.Body, closers: closers, s: s}
	resp.Duration = c.opts.Now().Sub(start)
	return s
}

// streamBody is a Stream's Body: closing it ends the exchange.
type streamBody struct {
	io.Reader
	raw     io.Closer
	closers []io.Closer
	s       *Stream
	closed  bool
}

func (b *streamBody) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	for _, c := range b.closers {
		c.Close()
	}
	err := b.raw.Close()
	b.s.cancel()
	if b.s.release != nil {
		b.s.release()
	}
	return err
}

// ReadError classifies an error met reading the Body, as Get classifies
// its own: a timeout, a reset, the caller's context ended.
func (s *Stream) ReadError(err error) *ndjson.Error {
	return s.classify(fmt.Errorf("read body: %w", err))
}

// classify is classifyError for the stream, whose bound is its request's
// Timeout, not the client's TotalTimeout.
func (s *Stream) classify(err error) *ndjson.Error {
	if errors.Is(s.ctx.Err(), context.DeadlineExceeded) {
		return &ndjson.Error{Class: ndjson.ClassTransient, Code: "timeout", Message: "took longer than its time limit in all: " + err.Error()}
	}
	return s.c.classifyError(err, context.Background())
}

// contentRange reads a Content-Range of bytes (RFC 9110 §14.4): the first
// byte's position and the complete length (-1 for "*").
func contentRange(v string) (first, size int64, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSpace(v), "bytes ")
	if !found {
		return 0, 0, false
	}
	span, total, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, false
	}
	a, b, found := strings.Cut(span, "-")
	if !found {
		return 0, 0, false
	}
	first, err1 := strconv.ParseInt(strings.TrimSpace(a), 10, 64)
	last, err2 := strconv.ParseInt(strings.TrimSpace(b), 10, 64)
	if err1 != nil || err2 != nil || first < 0 || last < first {
		return 0, 0, false
	}
	size = -1
	if t := strings.TrimSpace(total); t != "*" {
		n, err := strconv.ParseInt(t, 10, 64)
		if err != nil || n <= last {
			return 0, 0, false
		}
		size = n
	}
	return first, size, true
}
