package httpx

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
)

// acceptEncoding is every content coding decodeBody reads.
const acceptEncoding = "gzip, deflate, br, zstd"

// decodeBody reads the body, undoing its content codings, and stops at max
// decoded bytes: the cap applies after decoding, so that a small
// compressed bomb cannot expand past it.
func decodeBody(resp *http.Response, max int64) (body []byte, truncated bool, err error) {
	var r io.Reader = resp.Body
	// Codings are listed in the order they were applied; undo them in
	// reverse.
	codings := strings.Split(resp.Header.Get("Content-Encoding"), ",")
	for i := len(codings) - 1; i >= 0; i-- {
		dec, err := decoder(strings.ToLower(strings.TrimSpace(codings[i])), r)
		if err != nil {
			return nil, false, err
		}
		if c, ok := dec.(io.Closer); ok {
			defer c.Close()
		}
		r = dec
	}
	body, err = readCapped(r, max+1)
	if int64(len(body)) > max {
		return body[:max], true, nil
	}
	return body, false, err
}

// readCapped reads r to its end or to limit bytes, whichever comes first.
// It reads into a pooled buffer and returns a copy of exactly what it
// read: one allocation of the body's size, where io.ReadAll makes about
// ten as it grows from 512 bytes, twice the body in all.
func readCapped(r io.Reader, limit int64) ([]byte, error) {
	buf := bodyBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	_, err := buf.ReadFrom(io.LimitReader(r, limit))
	if buf.Cap() > maxPooledBody {
		return buf.Bytes(), err // too big to keep: the caller has it
	}
	body := append(make([]byte, 0, buf.Len()), buf.Bytes()...)
	bodyBuffers.Put(buf)
	return body, err
}

var bodyBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledBody = 1 << 20

// gzipReaders are reused: a new one allocates about 40 KB (its window and
// a read buffer), for a feed that is often 5 KB.
var gzipReaders sync.Pool

// pooledGzip is a gzip reader that goes back to gzipReaders on Close.
type pooledGzip struct{ *gzip.Reader }

func newGzipReader(r io.Reader) (io.Reader, error) {
	zr, _ := gzipReaders.Get().(*gzip.Reader)
	if zr == nil {
		zr = new(gzip.Reader)
	}
	if err := zr.Reset(r); err != nil {
		gzipReaders.Put(zr)
		return nil, err
	}
	return pooledGzip{zr}, nil
}

func (p pooledGzip) Close() error {
	err := p.Reader.Close()
	gzipReaders.Put(p.Reader)
	return err
}

func decoder(coding string, r io.Reader) (io.Reader, error) {
	switch coding {
	case "", "identity":
		return r, nil
	case "gzip", "x-gzip":
		zr, err := newGzipReader(r)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return zr, nil
	case "deflate":
		// RFC 9110 means zlib-wrapped deflate, but some servers send raw
		// deflate: tell them apart by the zlib header.
		br := bufio.NewReader(r)
		head, err := br.Peek(2)
		if err == nil && head[0]&0x0f == 8 && (uint16(head[0])<<8|uint16(head[1]))%31 == 0 {
			zr, err := zlib.NewReader(br)
			if err != nil {
				return nil, fmt.Errorf("deflate: %w", err)
			}
			return zr, nil
		}
		return flate.NewReader(br), nil
	case "br":
		return brotli.NewReader(r), nil
	case "zstd":
		// Bounded window: a frame asking for a huge one is refused, not
		// allocated.
		zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(64<<20), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		return zstdCloser{zr}, nil
	default:
		return nil, fmt.Errorf("unsupported Content-Encoding %q", coding)
	}
}

// zstdCloser lets a zstd.Decoder be closed through io.Closer.
type zstdCloser struct{ *zstd.Decoder }

func (z zstdCloser) Close() error { z.Decoder.Close(); return nil }

// redacted is what a header's value is recorded as when it may be a
// secret.
const redacted = "(redacted)"

// redactHeaders copies request headers for the record, with the value of
// every header but the standard ones the client sets itself replaced: the
// others come from the caller (a subscription's extra headers), and a
// name does not tell whether one is a secret (X-Auth, Api_Key, ...).
func redactHeaders(h http.Header) http.Header {
	out := h.Clone()
	for name := range out {
		if !clientHeaders[name] {
			out[name] = []string{redacted}
		}
	}
	return out
}

// RedactHeaderMap is redactHeaders for a subscription's extra headers,
// for records, listings and logs.
func RedactHeaderMap(h map[string]string) map[string]string {
	if h == nil {
		return nil
	}
	out := make(map[string]string, len(h))
	for k, v := range h {
		if !clientHeaders[http.CanonicalHeaderKey(k)] {
			v = redacted
		}
		out[k] = v
	}
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
