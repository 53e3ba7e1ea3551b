package testserver

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
)

const rssType = "application/rss+xml; charset=utf-8"

func (h *Handler) serveFault(w *statusRecorder, r *http.Request, name string) {
	q := r.URL.Query()
	var err error
	switch {
	case name == "trickle":
		err = trickle(w, r, q)
	case name == "hang":
		<-r.Context().Done()
	case name == "reset":
		err = reset(w)
	case name == "redirect-loop":
		var status int64
		if status, err = intParam(q, "status", http.StatusFound); err == nil && (status < 300 || status > 399) {
			err = fmt.Errorf("status %d is not a redirect", status)
		}
		if err == nil {
			w.Header().Set("Location", r.URL.RequestURI())
			w.WriteHeader(int(status))
		}
	case name == "gzip-bomb":
		err = h.gzipBomb(w, q)
	case name == "cloudflare":
		cloudflare(w)
	case name == "huge":
		var size int64
		if size, err = intParam(q, "size", 64<<20); err == nil {
			w.Header().Set("Content-Type", rssType)
			setValidators(w, "huge", size)
			w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
			io.CopyBuffer(w, newFeedReader(size), make([]byte, 32<<10))
		}
	case name == "wrong-length":
		var claim int64
		if claim, err = intParam(q, "claim", 4096); err == nil {
			// net/http closes the connection after a body shorter than
			// its Content-Length, so the client reads an unexpected EOF.
			w.Header().Set("Content-Type", rssType)
			setValidators(w, "wrong-length", claim)
			w.Header().Set("Content-Length", strconv.FormatInt(claim, 10))
			io.Copy(w, newFeedReader(claim/2))
		}
	case strings.HasPrefix(name, "encoding/"):
		err = encoded(w, strings.TrimPrefix(name, "encoding/"), h.Revision())
	case name == "retry-after":
		status := int64(http.StatusTooManyRequests)
		if status, err = intParam(q, "status", status); err == nil {
			after := q.Get("after")
			if after == "" {
				after = "120"
			}
			w.Header().Set("Retry-After", after)
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(int(status))
			fmt.Fprintf(w, "%d %s: retry after %s\n", status, http.StatusText(int(status)), after)
		}
	default:
		http.NotFound(w, r)
	}
	if err != nil && !w.started {
		http.Error(w, err.Error(), http.StatusBadRequest)
	}
}

// intParam reads a non-negative integer query parameter.
func intParam(q url.Values, name string, def int64) (int64, error) {
	s := q.Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q is not a non-negative integer", name, s)
	}
	return n, nil
}

func trickle(w *statusRecorder, r *http.Request, q url.Values) error {
	size, err := intParam(q, "bytes", 1024)
	if err != nil {
		return err
	}
	chunk, err := intParam(q, "chunk", 4)
	if err != nil || chunk == 0 {
		return fmt.Errorf("chunk must be a positive integer")
	}
	every := time.Second
	if s := q.Get("every"); s != "" {
		if every, err = time.ParseDuration(s); err != nil || every <= 0 {
			return fmt.Errorf("every=%q is not a positive duration", s)
		}
	}
	w.Header().Set("Content-Type", rssType)
	w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	body := newFeedReader(size)
	buf := make([]byte, chunk)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		n, _ := io.ReadFull(body, buf)
		if n == 0 {
			return nil
		}
		if _, err := w.Write(buf[:n]); err != nil {
			return nil
		}
		if rc.Flush() != nil {
			return nil
		}
		if body.remain == 0 {
			return nil
		}
		select {
		case <-tick.C:
		case <-r.Context().Done():
			return nil
		}
	}
}

// setValidators gives a fault's body an ETag and a Last-Modified, as a
// static file has, so that tests can tell whether a client keeps them.
func setValidators(w http.ResponseWriter, fault string, size int64) {
	w.Header().Set("ETag", `"`+fault+"-"+strconv.FormatInt(size, 10)+`"`)
	w.Header().Set("Last-Modified", genEpoch.Format(http.TimeFormat))
}

// reset takes the connection over and closes it with SO_LINGER 0, which
// makes the kernel send RST instead of FIN.
func reset(w *statusRecorder) error {
	w.logOnly(0)
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return err
	}
	c := conn
	for {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0)
			break
		}
		u, ok := c.(interface{ NetConn() net.Conn }) // *tls.Conn
		if !ok {
			break
		}
		c = u.NetConn()
	}
	return conn.Close()
}

func cloudflare(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Server", "cloudflare")
	h.Set("Cf-Mitigated", "challenge")
	h.Set("Cf-Ray", "8f1e2d3c4b5a6978-AMS")
	h.Set("Cache-Control", "private, max-age=0, no-store, no-cache, must-revalidate")
	h.Set("Content-Type", "text/html; charset=UTF-8")
	w.WriteHeader(http.StatusForbidden)
	io.WriteString(w, `<!DOCTYPE html>
<html lang="en-US">
<head>
<title>Just a moment...</title>
<meta http-equiv="Content-Type" content="text/html; charset=UTF-8">
<meta name="robots" content="noindex,nofollow">
</head>
<body>
<div class="main-wrapper" role="main">
<h1>Verifying you are human. This may take a few seconds.</h1>
<p>The site needs to review the security of your connection before proceeding.</p>
<noscript>Enable JavaScript and cookies to continue</noscript>
<script src="/cdn-cgi/challenge-platform/h/b/orchestrate/chl_page/v1"></script>
</div>
</body>
</html>
`)
}

func encoded(w http.ResponseWriter, enc string, rev int) error {
	body, modified := GenFeed(0, rev)
	var buf bytes.Buffer
	switch enc {
	case "gzip":
		buf.Write(gzipBytes(body))
	case "deflate": // zlib-wrapped, as RFC 9110 §8.4.1.2 defines it
		zw := zlib.NewWriter(&buf)
		zw.Write(body)
		zw.Close()
	case "zstd":
		buf.Write(zstdEncoder().EncodeAll(body, nil))
	case "br":
		bw := brotli.NewWriter(&buf)
		bw.Write(body)
		bw.Close()
	default:
		return fmt.Errorf("unknown encoding %q: gzip, deflate, zstd or br", enc)
	}
	w.Header().Set("Content-Type", rssType)
	w.Header().Set("Content-Encoding", enc)
	w.Header().Set("Vary", "Accept-Encoding")
	w.Header().Set("Last-Modified", modified.Format(http.TimeFormat))
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.Write(buf.Bytes())
	return nil
}

// zstdEncoder is shared: EncodeAll is safe for concurrent use.
var zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
	e, err := zstd.NewWriter(nil)
	if err != nil {
		panic(err) // only for invalid options
	}
	return e
})

// A gzip bomb is built from one deflate segment that decodes to bombChunk
// spaces, repeated: segments that end on a byte boundary (a sync flush)
// and refer only to their own output can be concatenated, so a bomb of any
// size costs the memory of one segment and the time of one CRC pass.
const (
	bombChunk   = 1 << 20
	maxBombSize = 16 << 30
)

type bomb struct {
	header, segment, rest []byte // rest: the last partial chunk, the final block and the gzip trailer
	segments              int64
	length                int64 // compressed size
}

type bombCache struct {
	mu    sync.Mutex
	bombs map[int64]*bomb
}

func (c *bombCache) get(size int64) *bomb {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b := c.bombs[size]; b != nil {
		return b
	}
	if c.bombs == nil {
		c.bombs = map[int64]*bomb{}
	}
	b := newBomb(size)
	c.bombs[size] = b
	return b
}

func newBomb(size int64) *bomb {
	spaces := bytes.Repeat([]byte{' '}, bombChunk)
	b := &bomb{
		header:   []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 3}, // gzip, deflate, no mtime, best compression, Unix
		segment:  deflateSegment(spaces),
		segments: size / bombChunk,
	}
	crc := uint32(0)
	for range b.segments {
		crc = crc32.Update(crc, crc32.IEEETable, spaces)
	}
	tail := spaces[:size%bombChunk]
	crc = crc32.Update(crc, crc32.IEEETable, tail)
	if len(tail) > 0 {
		b.rest = deflateSegment(tail)
	}
	b.rest = append(b.rest, 0x03, 0x00) // an empty final block with fixed codes
	b.rest = binary.LittleEndian.AppendUint32(b.rest, crc)
	b.rest = binary.LittleEndian.AppendUint32(b.rest, uint32(size))
	b.length = int64(len(b.header)) + b.segments*int64(len(b.segment)) + int64(len(b.rest))
	return b
}

// deflateSegment compresses p into non-final deflate blocks ending on a
// byte boundary.
func deflateSegment(p []byte) []byte {
	var buf bytes.Buffer
	fw, _ := flate.NewWriter(&buf, flate.BestCompression)
	fw.Write(p)
	fw.Flush()
	return buf.Bytes()
}

func (h *Handler) gzipBomb(w http.ResponseWriter, q url.Values) error {
	size, err := intParam(q, "size", 1<<30)
	if err != nil {
		return err
	}
	if size > maxBombSize {
		return fmt.Errorf("size %d is over the limit of %d", size, int64(maxBombSize))
	}
	b := h.bombs.get(size)
	w.Header().Set("Content-Type", rssType)
	w.Header().Set("Content-Encoding", "gzip")
	w.Header().Set("Content-Length", strconv.FormatInt(b.length, 10))
	if _, err := w.Write(b.header); err != nil {
		return nil
	}
	for range b.segments {
		if _, err := w.Write(b.segment); err != nil {
			return nil // the client stopped reading
		}
	}
	w.Write(b.rest)
	return nil
}

// feedReader produces exactly size bytes of RSS: a channel header, items,
// spaces and the closing tags, so that a body of any length above a few
// hundred bytes is a well-formed feed, generated as it is read.
type feedReader struct {
	remain  int64
	buf     []byte
	item    int
	started bool
}

const (
	feedHead = `<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0">
<channel>
<title>A very long feed</title>
<link>https://huge.example.com/</link>
<description>Items without end, from the feedpipe test server.</description>
`
	feedFoot = "</channel>\n</rss>\n"
)

func newFeedReader(size int64) *feedReader { return &feedReader{remain: size} }

func (f *feedReader) Read(p []byte) (int, error) {
	if f.remain == 0 {
		return 0, io.EOF
	}
	if len(f.buf) == 0 {
		f.fill()
	}
	n := copy(p, f.buf)
	f.buf = f.buf[n:]
	f.remain -= int64(n)
	return n, nil
}

func (f *feedReader) fill() {
	foot := int64(len(feedFoot))
	f.buf = f.buf[:0]
	switch {
	case !f.started:
		f.started = true
		f.buf = append(f.buf, feedHead...)
	case f.remain > foot:
		f.item++
		f.buf = fmt.Appendf(f.buf, `<item><title>Item %d</title><link>https://huge.example.com/%d</link><guid isPermaLink="false">huge-%d</guid><description>%s</description></item>
`, f.item, f.item, f.item, wordsFrom(uint64(f.item), 40))
		if int64(len(f.buf)) > f.remain-foot {
			// No room for another item: pad up to the closing tags.
			f.buf = append(f.buf[:0], bytes.Repeat([]byte{' '}, int(min(f.remain-foot, 4096)))...)
		}
	default:
		f.buf = append(f.buf, feedFoot[foot-f.remain:]...)
	}
	if int64(len(f.buf)) > f.remain {
		f.buf = f.buf[:f.remain]
	}
}
