package serve

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/gzip"
)

// The answers of the routes that read the catalog are kept, by request
// URI, while what they show is unchanged: an answer of one feed's content
// (its page of entries, an entry, a fetch record, its meta-feed) until a
// commit changes that feed, any other until a commit changes any feed or
// anything else (changes.go). An answer is also kept at most cacheMaxAge
// (one of a feed's content contentMaxAge), which bounds what depends on
// the time and what a write made outside feedpipe could leave stale. The
// ETag and 304 are worked out from the kept body for each request, as for
// a fresh one.

// Cache limits.
const (
	cacheMaxAge     = 10 * time.Second
	contentMaxAge   = time.Minute // an answer of feeds' content alone (dependsOn)
	cacheMaxEntries = 4096
	cacheMaxBody    = 1 << 20  // larger answers are not kept
	cacheMaxBytes   = 64 << 20 // all kept answers
)

type cached struct {
	seq      uint64 // of its make
	gen      uint64 // the catalog's changes seen before it was made (changeTracker)
	scoped   bool   // it shows feeds alone (dependsOn)
	feeds    []string
	timed    bool // kept for its linger alone, whatever the catalog's changes (/metrics)
	at       time.Time
	header   http.Header // Content-Type, Last-Modified, Link, Cache-Control
	body     []byte
	modified time.Time

	gzOnce sync.Once
	gz     []byte // body compressed, made the first time a client asks for it
	etag   string
}

// gzipped is the body compressed with gzip, made once.
func (e *cached) gzipped() []byte {
	e.gzOnce.Do(func() {
		var b bytes.Buffer
		zw := gzipWriters.Get().(*gzip.Writer)
		zw.Reset(&b)
		zw.Write(e.body)
		zw.Close()
		gzipWriters.Put(zw)
		e.gz = b.Bytes()
	})
	return e.gz
}

// gzipWriters are kept for reuse: a writer's buffers are large.
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
	return zw
}}

// acceptsGzip reports whether the request's Accept-Encoding takes gzip.
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(part, ";")
		if strings.TrimSpace(coding) == "gzip" {
			q := strings.ReplaceAll(params, " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}

type answerCache struct {
	mu    sync.Mutex
	m     map[string]*cached
	bytes int
	// making are the newest makes of the answers being made, and
	// inflight how many makes of each are under way (at most
	// makesPerAnswer): a request waits for a make whose answer is fresh
	// enough for it rather than make its own (200 clients asking for one
	// label's feed the moment the catalog changed make it once).
	making   map[string]*making
	inflight map[string]int
	// seq orders requests and makes: a make whose seq is above a
	// request's began reading the catalog after the request came, so its
	// answer is as fresh as one the request would make.
	seq atomic.Uint64
}

// makesPerAnswer is the most makes of one answer under way at once: one
// of a catalog some requests saw, and the next, for those that came
// after it changed.
const makesPerAnswer = 2

type making struct {
	seq  uint64 // taken before the maker looked at the catalog
	gen  uint64 // of the catalog, seen before the maker read it
	done chan struct{}
	e    *cached // nil when the answer was not one to keep
	// dropped: the maker's client went away before it made anything
	// (while it waited at the read gate); its waiters look again.
	dropped bool
}

// fresh reports whether m's answer is one for a request that saw the
// catalog's changes up to gen, then took seq: m began after the request
// came, or saw those changes.
func (m *making) fresh(gen, seq uint64) bool {
	return m.seq > seq || m.gen >= gen || m.e != nil && m.e.gen >= gen
}

// join returns a make of key to wait for and false: one fresh enough for
// a request that saw gen and took seq, or the newest when as many makes
// as may be are under way (to look again when it is done). Else it
// registers the caller as a maker and returns true (then it must call
// made).
func (c *answerCache) join(key string, gen, seq uint64) (*making, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	newest := c.making[key]
	// (newest.e is not read here: it is set once the make left making.)
	if newest != nil && (newest.seq > seq || newest.gen >= gen || c.inflight[key] >= makesPerAnswer) {
		return newest, false
	}
	if c.making == nil {
		c.making, c.inflight = map[string]*making{}, map[string]int{}
	}
	m := &making{seq: c.seq.Add(1), gen: gen, done: make(chan struct{})}
	c.making[key] = m
	c.inflight[key]++
	return m, true
}

// made ends the make m of key, with e (nil: not kept, or dropped).
func (c *answerCache) made(key string, m *making, e *cached, dropped bool) {
	c.mu.Lock()
	if c.making[key] == m {
		delete(c.making, key)
	}
	if c.inflight[key]--; c.inflight[key] <= 0 {
		delete(c.inflight, key)
	}
	c.mu.Unlock()
	m.e, m.dropped = e, dropped
	close(m.done)
}

// get returns the kept answer of key for a request that came after the
// tracker's last look: one still true (changeTracker.unchanged), or, when
// linger is above 0, made less than linger ago.
func (c *answerCache) get(key string, changes *changeTracker, now time.Time, linger time.Duration) *cached {
	c.mu.Lock()
	e := c.m[key]
	c.mu.Unlock()
	if e == nil || now.Sub(e.at) > cacheMaxAge && (!e.scoped || now.Sub(e.at) > contentMaxAge) {
		return nil
	}
	if now.Sub(e.at) < linger || !e.timed && changes.unchanged(e.gen, e.scoped, e.feeds) {
		return e
	}
	return nil
}

func (c *answerCache) put(key string, e *cached) {
	if len(e.body) > cacheMaxBody {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*cached{}
	}
	if old := c.m[key]; old != nil {
		if old.seq > e.seq {
			return // a later make's: a make of an older catalog ended last
		}
		c.bytes -= len(old.body)
	}
	if len(c.m) >= cacheMaxEntries || c.bytes+len(e.body) > cacheMaxBytes {
		// Full: start again (the answers are remade at the next request;
		// a store's hot set is a few pages and feeds).
		c.m, c.bytes = map[string]*cached{}, 0
	}
	c.m[key] = e
	c.bytes += len(e.body)
}

// metaFeedLinger is how long a meta-feed's answer serves whatever the
// catalog's commits since, and while it is made anew after that, the
// kept one serves the requests that come meanwhile (serveCached): readers
// poll a feed minutes apart and never write it, and while a pipeline
// commits (tens of times a second) a label's feed made anew at each
// commit was most of the server's CPU (16 ms each on the bench store of
// 10,000 feeds), taken from the pipeline and every other request. Other
// answers are never older than the catalog their request saw: an API
// client reads what it wrote.
const metaFeedLinger = time.Second

// serveCached answers a GET from the cache, or runs the handler and keeps
// its answer. While the catalog changes (a pipeline's commits, tens a
// second), each answer is made by one request at a time: a request that
// finds it being made waits for a make that saw the catalog it saw or
// began after it came (the one under way, or the next, begun at once
// while the one under way finishes), and takes its answer, which reflects the catalog as it was then or later, as one of
// its own would; it never takes an answer of a catalog older than the one
// it saw.
func (s *Server) serveCached(w http.ResponseWriter, r *http.Request, p policy, handle func(http.ResponseWriter, *http.Request)) {
	linger := p.linger
	key := s.cacheKey(r)
	gen := s.changes.look(r.Context())
	if e := s.cache.get(key, &s.changes, time.Now(), linger); e != nil {
		s.replay(w, r, e)
		return
	}
	seq := s.cache.seq.Add(1)
	for {
		m, maker := s.cache.join(key, gen, seq)
		if maker {
			s.make(w, r, key, p, m, handle)
			return
		}
		// A meta-feed being made anew: the kept one serves meanwhile
		// (up to cacheMaxAge old), rather than every reader of the feed
		// waiting for its make behind the others at the read gate.
		if linger > 0 {
			if e := s.cache.get(key, &s.changes, time.Now(), cacheMaxAge); e != nil {
				s.replay(w, r, e)
				return
			}
		}
		select {
		case <-m.done:
		case <-r.Context().Done():
			return
		}
		if m.dropped {
			continue
		}
		if m.e == nil {
			if !m.fresh(gen, seq) {
				continue // begun before this request came, on an older catalog: another
			}
			break // not an answer to keep: its own
		}
		if !m.fresh(gen, seq) && !s.changes.unchanged(m.e.gen, m.e.scoped, m.e.feeds) {
			continue
		}
		s.replay(w, r, m.e)
		return
	}
	s.gated(p.gate, handle)(w, r)
}

// cacheKey is what a kept answer is kept under: everything its body
// depends on. That is the request's URI; unless --base-url gives the
// links' origin, the origin the links are made of (hosts.go): a request
// with another Host must not leave its links in everyone's answer; and
// whether the caller holds the token, which shows the messages of errors
// (publicError).
func (s *Server) cacheKey(r *http.Request) string {
	key := r.URL.RequestURI()
	if s.cfg.BaseURL == "" {
		key = s.origin(r) + " " + key
	}
	if s.holdsToken(r) {
		key = "token " + key
	}
	return key
}

// make makes the answer of key as its maker m, keeps it and answers r.
func (s *Server) make(w http.ResponseWriter, r *http.Request, key string, p policy, m *making, handle func(http.ResponseWriter, *http.Request)) {
	linger := p.linger
	var e *cached
	dropped := true
	defer func() { s.cache.made(key, m, e, dropped) }()
	// In line at the read gate (gate.go) before the catalog's version is
	// read: a make that waited there long reads a newer catalog.
	leave, ok := s.enterReads(r, p.gate)
	if !ok {
		return // its client went away; a waiter makes it instead
	}
	dropped = false
	// The changes are looked at after m.seq was taken, before the
	// catalog is read: they are those every request that waits for this
	// make saw, or newer.
	gen := s.changes.look(r.Context())
	now := time.Now()
	if e = s.cache.get(key, &s.changes, now, linger); e != nil { // made by the make before
		leave()
		s.replay(w, r, e)
		return
	}
	// Made without the request's validators, so that the whole answer is
	// kept; the validators are checked against it below.
	fresh := r.Clone(r.Context())
	fresh.Header.Del("If-None-Match")
	fresh.Header.Del("If-Modified-Since")
	rec := &bufferedWriter{header: http.Header{}}
	func() {
		defer leave() // the answer is sent outside the gate
		handle(rec, fresh)
	}()
	if rec.status != http.StatusOK {
		rec.flushTo(w)
		return
	}
	e = &cached{seq: m.seq, gen: gen, scoped: rec.scoped, feeds: rec.feeds, at: now, header: http.Header{}, body: rec.body.Bytes()}
	e.etag = etagOf(e.body) // set before others share it
	for _, h := range []string{"Content-Type", "Last-Modified", "Link", "Cache-Control", "Content-Security-Policy", "X-Fetch-Url"} {
		if v := rec.header.Get(h); v != "" {
			e.header.Set(h, v)
		}
	}
	if lm := rec.header.Get("Last-Modified"); lm != "" {
		e.modified, _ = http.ParseTime(lm)
	}
	s.cache.put(key, e)
	s.replay(w, r, e)
}

// replay answers with a kept answer: compressed once for every client
// that asks for gzip (gzhttp passes an answer with a Content-Encoding on
// as it is).
func (s *Server) replay(w http.ResponseWriter, r *http.Request, e *cached) {
	h := w.Header()
	for k, v := range e.header {
		if k != "Content-Type" && k != "Last-Modified" {
			h[k] = v
		}
	}
	payload := e.body
	if len(e.body) >= gzipMinSize && acceptsGzip(r) {
		payload = e.gzipped()
		h.Set("Content-Encoding", "gzip")
		if !slices.Contains(h.Values("Vary"), "Accept-Encoding") { // gzhttp, in front, has said it
			h.Add("Vary", "Accept-Encoding")
		}
	}
	sendTagged(w, r, http.StatusOK, e.header.Get("Content-Type"), e.etag, payload, e.modified)
}

// gzipMinSize is the smallest answer worth compressing.
const gzipMinSize = 512

// bufferedWriter keeps an answer whole.
type bufferedWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
	// scoped: the answer shows the feeds feeds alone (dependsOn).
	scoped bool
	feeds  []string
}

func (b *bufferedWriter) Header() http.Header { return b.header }

func (b *bufferedWriter) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}

func (b *bufferedWriter) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}

// flushTo passes a kept answer on as it was.
func (b *bufferedWriter) flushTo(w http.ResponseWriter) {
	for k, v := range b.header {
		w.Header()[k] = v
	}
	w.WriteHeader(b.status)
	w.Write(b.body.Bytes())
}
