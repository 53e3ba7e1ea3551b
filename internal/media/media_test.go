package media

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/dedup"
	"github.com/feedpipe/feedpipe/internal/due"
	"github.com/feedpipe/feedpipe/internal/fetch"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/ids"
	"github.com/feedpipe/feedpipe/internal/parse"
	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/store"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/testenv"
	"github.com/feedpipe/feedpipe/internal/urlnorm"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

var t0 = time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)

// testClock is a clock set by the test that waits in real time.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

func (c *testClock) set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// mp3 is an MP3-sized body: an ID3 tag's first bytes, then n bytes of
// noise that seed makes.
func mp3(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, 7))
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for k := range 8 {
			b[i+k] = byte(v >> (8 * k))
		}
	}
	copy(b, "ID3\x04\x00\x00\x00\x00\x00\x00")
	return b
}

func sumOf(b []byte) string {
	d := sha256.Sum256(b)
	return hex.EncodeToString(d[:])
}

// publisher is a podcast's server: a feed, its files, and the ways files
// go wrong. It keeps the Range and If-Range of each request for a file.
type publisher struct {
	t        *testing.T
	srv      *httptest.Server
	private  *httptest.Server // a server the redirect points inside the network
	mu       sync.Mutex
	files    map[string]file
	cut      map[string]bool // the next answer of a path is cut mid-body
	asked    map[string][]string
	feed     string
	privates int
}

type file struct {
	body        []byte
	contentType string
	etag        string
	chunked     bool // sent without Content-Length
}

func newPublisher(t *testing.T) *publisher {
	p := &publisher{t: t, files: map[string]file{}, cut: map[string]bool{}, asked: map[string][]string{}}
	p.private = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.privates++
		p.mu.Unlock()
		w.Write([]byte("inside"))
	}))
	t.Cleanup(p.private.Close)
	p.srv = httptest.NewServer(p)
	t.Cleanup(p.srv.Close)
	return p
}

func (p *publisher) url(path string) string { return p.srv.URL + path }

func (p *publisher) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	f, ok := p.files[r.URL.Path]
	cut := p.cut[r.URL.Path]
	delete(p.cut, r.URL.Path)
	p.asked[r.URL.Path] = append(p.asked[r.URL.Path], r.Header.Get("Range")+"|"+r.Header.Get("If-Range"))
	feed := p.feed
	p.mu.Unlock()
	switch {
	case r.URL.Path == "/feed.xml":
		w.Header().Set("Content-Type", "application/rss+xml")
		w.Write([]byte(feed))
		return
	case r.URL.Path == "/robots.txt":
		w.Write([]byte("User-agent: *\nDisallow: /img/private/\n"))
		return
	case r.URL.Path == "/moved.mp3":
		http.Redirect(w, r, p.private.URL+"/secret.mp3", http.StatusFound)
		return
	case !ok:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", f.contentType)
	if f.etag != "" {
		w.Header().Set("ETag", f.etag)
	}
	switch {
	case cut:
		// Half the body, then the connection is dropped.
		w.Header().Set("Content-Length", strconv.Itoa(len(f.body)))
		w.Write(f.body[:len(f.body)/2])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	case f.chunked:
		for rest := f.body; len(rest) > 0; rest = rest[min(len(rest), 64<<10):] {
			w.Write(rest[:min(len(rest), 64<<10)])
			w.(http.Flusher).Flush()
		}
	default:
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.body))
	}
}

func (p *publisher) set(path string, f file) {
	p.mu.Lock()
	p.files[path] = f
	p.mu.Unlock()
}

func (p *publisher) requests(path string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.asked[path])
}

// world is a store with a podcast subscribed to, fed by the real stages.
type world struct {
	t     *testing.T
	st    *storedir.Store
	cat   *catalog.Catalog
	pub   *publisher
	clock *testClock
	feed  string // its feed id
}

func newWorld(t *testing.T) *world {
	t.Helper()
	st, cat := testenv.Store(t)
	w := &world{t: t, st: st, cat: cat, pub: newPublisher(t), clock: &testClock{now: t0}}
	u, err := urlnorm.Normalize(w.pub.url("/feed.xml"))
	if err != nil {
		t.Fatal(err)
	}
	w.feed = ids.FeedID(u)
	w.edit(func(s *ndjson.Subscription) {
		*s = ndjson.Subscription{FeedID: w.feed, URL: u, SourceType: ndjson.SourceAuto, CreatedAt: ndjson.At(t0)}
	})
	return w
}

// edit changes the podcast's subscription (adds it first), as feed-sub
// does (the package sub checks the settings: TestSet).
func (w *world) edit(change func(*ndjson.Subscription)) {
	w.t.Helper()
	err := w.cat.EditSubscriptions(context.Background(), func(subs []ndjson.Subscription) ([]ndjson.Subscription, error) {
		if len(subs) == 0 {
			subs = append(subs, ndjson.Subscription{})
		}
		change(&subs[0])
		return subs, nil
	})
	if err != nil {
		w.t.Fatal(err)
	}
}

// setMedia gives the podcast its media settings, as feed-sub set does.
func (w *world) setMedia(m ndjson.MediaSettings) {
	w.t.Helper()
	clean, err := Settings(&m)
	if err != nil {
		w.t.Fatal(err)
	}
	w.edit(func(s *ndjson.Subscription) { s.Media = clean })
}

// item is one item of the podcast's feed.
type item struct {
	guid    string
	encURL  string
	encType string
	content string
}

func (w *world) publish(items ...item) {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?><rss version="2.0"><channel><title>Podcast</title><link>` + w.pub.url("/") + `</link>`)
	for _, it := range items {
		fmt.Fprintf(&b, "<item><guid>%s</guid><title>Episode %s</title><link>%s</link>", it.guid, it.guid, w.pub.url("/"+it.guid))
		if it.encURL != "" {
			fmt.Fprintf(&b, `<enclosure url="%s" type="%s" length="3000000"/>`, it.encURL, it.encType)
		}
		if it.content != "" {
			fmt.Fprintf(&b, "<description><![CDATA[%s]]></description>", it.content)
		}
		b.WriteString("</item>")
	}
	b.WriteString("</channel></rss>")
	w.pub.mu.Lock()
	w.pub.feed = b.String()
	w.pub.mu.Unlock()
}

// cycle runs feed-due --all | feed-fetch | feed-parse | feed-dedup |
// feed-store | feed-media, and returns the stage's output and summary.
func (w *world) cycle() ([]byte, StageSummary) {
	w.t.Helper()
	ctx := context.Background()
	now := w.clock.Now()
	var dues, fetched, parsed, deduped, stored, out bytes.Buffer
	if err := due.Run(due.Config{Out: ndjson.NewWriter(&dues), Store: w.st, Catalog: w.cat, Now: now, All: true}); err != nil {
		w.t.Fatal(err)
	}
	err := fetch.Run(ctx, fetch.Config{In: &dues, Out: ndjson.NewWriter(&fetched), Store: w.st, Catalog: w.cat,
		Client: httpx.New(httpx.Options{AllowPrivate: true}), Limiter: httpx.NewLimiter(8, 0, nil), Clock: w.clock})
	if err != nil && !errors.Is(err, pipe.ErrFailed) {
		w.t.Fatal(err)
	}
	if err := parse.Run(ctx, parse.Config{In: &fetched, Out: ndjson.NewWriter(&parsed), Store: w.st, Workers: 1}); err != nil {
		w.t.Fatal(err)
	}
	if err := dedup.Run(ctx, dedup.Config{In: &parsed, Out: ndjson.NewWriter(&deduped), Store: w.st, Catalog: w.cat}); err != nil {
		w.t.Fatal(err)
	}
	if err := store.Run(ctx, store.Config{In: &deduped, Out: ndjson.NewWriter(&stored), Store: w.st, Catalog: w.cat, Now: w.clock.Now}); err != nil {
		w.t.Fatal(err)
	}
	events := stored.Bytes()
	sum, err := Run(ctx, Config{In: bytes.NewReader(events), Out: ndjson.NewWriter(&out), Store: w.st, Catalog: w.cat, Clock: w.clock})
	if err != nil {
		w.t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), events) {
		w.t.Fatalf("the stage changed its input:\n%s\nwant\n%s", out.Bytes(), events)
	}
	return events, sum
}

// client is feed-media's HTTP client: the publisher's port stands for a
// public address, any other loopback one is inside the network.
func (w *world) client() *httpx.Client {
	port := w.pub.srv.URL[strings.LastIndex(w.pub.srv.URL, ":")+1:]
	return httpx.New(httpx.Options{Public: func(a netip.AddrPort) bool { return strconv.Itoa(int(a.Port())) == port }})
}

// drain runs feed-media run and returns its records by URL.
func (w *world) drain(cfg Config) (map[string]ndjson.Media, DrainSummary) {
	w.t.Helper()
	var out bytes.Buffer
	cfg.Out, cfg.Store, cfg.Catalog, cfg.Clock = ndjson.NewWriter(&out), w.st, w.cat, w.clock
	if cfg.Client == nil {
		cfg.Client = w.client()
	}
	if cfg.Limiter == nil {
		cfg.Limiter = httpx.NewLimiter(4, 0, w.clock)
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency, cfg.HostConcurrency = 4, 4
	}
	sum, err := Drain(context.Background(), cfg)
	if err != nil {
		w.t.Fatal(err)
	}
	recs := map[string]ndjson.Media{}
	rd := ndjson.NewReader(&out)
	for {
		l, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		var m ndjson.Media
		if err != nil || l.Type != ndjson.TypeMedia || l.Decode(&m) != nil {
			w.t.Fatalf("a line of feed-media run: %s (%v)", l.Raw, err)
		}
		if _, twice := recs[m.URL]; twice {
			w.t.Fatalf("two records of %s in one run", m.URL)
		}
		recs[m.URL] = m
	}
	return recs, sum
}

// stored reads the stored file a record names.
func (w *world) stored(m ndjson.Media) []byte {
	w.t.Helper()
	f, err := w.st.OpenMedia(m.SHA256)
	if err != nil {
		w.t.Fatalf("%s: %v", m.URL, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		w.t.Fatal(err)
	}
	return b
}

// TestPodcast: a podcast on loopback whose files go every way a file can:
// stored (one served as application/octet-stream, known by its bytes),
// cut short and resumed with a Range request checked by If-Range, cut
// short and changed meanwhile (started again), missing, over the cap
// (said, and found while streaming), of the wrong type, redirected inside
// the network, an image robots.txt disallows; and a video the feed does
// not take, never queued.
func TestPodcast(t *testing.T) {
	w := newWorld(t)
	p := w.pub
	ep1, ep2, ep3, ep3b := mp3(3<<20, 1), mp3(3<<20, 2), mp3(3<<20+1234, 3), mp3(2<<20+77, 4)
	png := append([]byte("\x89PNG\r\n\x1a\n"), mp3(40<<10, 5)...)
	p.set("/ep1.mp3", file{body: ep1, contentType: "application/octet-stream", etag: `"ep1"`})
	p.set("/ep2.mp3", file{body: ep2, contentType: "audio/mpeg", etag: `"ep2-v1"`})
	p.set("/ep3.mp3", file{body: ep3, contentType: "audio/mpeg", etag: `"ep3-v1"`})
	p.set("/big.mp3", file{body: mp3(4<<20, 6), contentType: "audio/mpeg"})
	p.set("/big-stream.mp3", file{body: mp3(4<<20, 7), contentType: "audio/mpeg", chunked: true})
	p.set("/page.mp3", file{body: []byte("<html><body>Not an episode</body></html>"), contentType: "text/html"})
	p.set("/video.mp4", file{body: mp3(1<<20, 8), contentType: "video/mp4"})
	p.set("/img/a.png", file{body: png, contentType: "image/png"})
	p.set("/img/private/b.png", file{body: png, contentType: "image/png"})
	p.cut["/ep2.mp3"], p.cut["/ep3.mp3"] = true, true
	w.setMedia(ndjson.MediaSettings{Types: []string{"audio/*"}, MaxBytes: 3<<20 + 512<<10, Images: true})
	w.publish(
		item{guid: "ep1", encURL: p.url("/ep1.mp3"), encType: "audio/mpeg"},
		item{guid: "ep2", encURL: p.url("/ep2.mp3"), encType: "audio/mpeg"},
		item{guid: "ep3", encURL: p.url("/ep3.mp3"), encType: "audio/mpeg"},
		item{guid: "missing", encURL: p.url("/missing.mp3"), encType: "audio/mpeg"},
		item{guid: "big", encURL: p.url("/big.mp3"), encType: "audio/mpeg"},
		item{guid: "big-stream", encURL: p.url("/big-stream.mp3"), encType: ""},
		item{guid: "page", encURL: p.url("/page.mp3"), encType: "audio/mpeg"},
		item{guid: "moved", encURL: p.url("/moved.mp3"), encType: "audio/mpeg"},
		item{guid: "video", encURL: p.url("/video.mp4"), encType: "video/mp4"},
		item{guid: "pics", content: `<p>Show notes <img src="/img/a.png"> <img src="img/private/b.png"> <img src="data:image/png;base64,AA"></p>`},
	)
	_, sum := w.cycle()
	if sum.Events != 10 || sum.Entries != 10 || sum.Queued != 10 || sum.Skipped != 1 {
		t.Fatalf("the stage: %+v; want 10 events, 10 queued (8 enclosures, 2 images), the video skipped", sum)
	}

	recs, dsum := w.drain(Config{})
	want := map[string]struct{ status, reason string }{
		"/ep1.mp3":           {ndjson.MediaStored, ""},
		"/ep2.mp3":           {ndjson.MediaRetrying, "network"},
		"/ep3.mp3":           {ndjson.MediaRetrying, "network"},
		"/missing.mp3":       {ndjson.MediaFailed, "http_404"},
		"/big.mp3":           {ndjson.MediaRefused, reasonTooLarge},
		"/big-stream.mp3":    {ndjson.MediaRefused, reasonTooLarge},
		"/page.mp3":          {ndjson.MediaRefused, reasonWrongType},
		"/moved.mp3":         {ndjson.MediaRefused, httpx.CodeAddressRefused},
		"/img/a.png":         {ndjson.MediaStored, ""},
		"/img/private/b.png": {ndjson.MediaRefused, reasonRobots},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d: %v", len(recs), len(want), recs)
	}
	for path, wt := range want {
		m := recs[p.url(path)]
		if m.Status != wt.status || m.Reason != wt.reason && !(wt.reason == "network" && m.Reason != "") {
			t.Errorf("%s: %s %s (%s), want %s %s", path, m.Status, m.Reason, m.Message, wt.status, wt.reason)
		}
		if m.FeedID != w.feed || m.Attempt != 1 || m.Check() != nil || m.StoredIn != "media/2026-11-29.ndjson" {
			t.Errorf("%s: record %+v", path, m)
		}
	}
	if dsum.Stored != 2 || dsum.Retrying != 2 || dsum.Failed != 1 || dsum.Refused != 5 {
		t.Errorf("summary %+v", dsum)
	}
	if m := recs[p.url("/ep1.mp3")]; m.SHA256 != sumOf(ep1) || m.Bytes != int64(len(ep1)) || m.ContentType != "audio/mpeg" || m.Key != ndjson.MediaKey(m.SHA256) ||
		!bytes.Equal(w.stored(m), ep1) {
		t.Errorf("ep1: %+v", m)
	}
	if m := recs[p.url("/big.mp3")]; !strings.Contains(m.Message, "4 MiB, over the feed's cap of 3.5 MiB") || m.Bytes != 0 {
		t.Errorf("big: %+v", m)
	}
	if m := recs[p.url("/big-stream.mp3")]; !strings.Contains(m.Message, "cut there") || m.Bytes > 3<<20+512<<10 || m.Bytes < 3<<20 {
		t.Errorf("big, streamed: %+v", m)
	}
	if m := recs[p.url("/page.mp3")]; !strings.Contains(m.Message, "text/html is not one of the feed's types (audio/*)") {
		t.Errorf("page: %+v", m)
	}
	if p.privates != 0 {
		t.Errorf("the server inside the network got %d requests", p.privates)
	}
	held2, held3 := recs[p.url("/ep2.mp3")].Bytes, recs[p.url("/ep3.mp3")].Bytes
	if held2 <= 0 || held2 >= int64(len(ep2)) || held3 <= 0 {
		t.Fatalf("bytes held: ep2 %d, ep3 %d", held2, held3)
	}
	// Nothing half-written is visible: only the two files stored.
	if files, err := w.st.MediaFiles(); err != nil || len(files) != 2 {
		t.Fatalf("media files %+v, %v", files, err)
	}

	// Before their time, the retries wait.
	if recs, _ := w.drain(Config{}); len(recs) != 0 {
		t.Fatalf("retried at once: %v", recs)
	}
	// ep3 changes; a minute later both are tried again.
	p.set("/ep3.mp3", file{body: ep3b, contentType: "audio/mpeg", etag: `"ep3-v2"`})
	w.clock.set(t0.Add(2 * time.Minute))
	recs, _ = w.drain(Config{})
	m2, m3 := recs[p.url("/ep2.mp3")], recs[p.url("/ep3.mp3")]
	if len(recs) != 2 || m2.Status != ndjson.MediaStored || m2.ResumedFrom != held2 || m2.Restarted || m2.Attempt != 2 || m2.SHA256 != sumOf(ep2) || !bytes.Equal(w.stored(m2), ep2) {
		t.Fatalf("ep2 resumed: %+v", m2)
	}
	if m3.Status != ndjson.MediaStored || m3.ResumedFrom != 0 || !m3.Restarted || m3.SHA256 != sumOf(ep3b) || !bytes.Equal(w.stored(m3), ep3b) {
		t.Fatalf("ep3 changed: %+v", m3)
	}
	// The server saw the resumes ask for the rest of the file they held.
	if got := p.requests("/ep2.mp3"); len(got) != 2 || got[0] != "|" || got[1] != fmt.Sprintf(`bytes=%d-|"ep2-v1"`, held2) {
		t.Errorf("ep2's requests: %q", got)
	}
	if got := p.requests("/ep3.mp3"); len(got) != 2 || got[1] != fmt.Sprintf(`bytes=%d-|"ep3-v1"`, held3) {
		t.Errorf("ep3's requests: %q", got)
	}
	if ids, _ := w.st.Partials(); len(ids) != 0 {
		t.Errorf("partial files left: %v", ids)
	}
	// The records of media/ are those of stdout, and the rows follow them.
	var tap []ndjson.Media
	if _, _, err := w.st.ReadLog("media/2026-11-29.ndjson", 0, func(l ndjson.Line) error {
		var m ndjson.Media
		if err := l.Decode(&m); err != nil {
			return err
		}
		tap = append(tap, m)
		return nil
	}); err != nil || len(tap) != 12 {
		t.Fatalf("%d records in media/, %v", len(tap), err)
	}
	files, err := w.cat.EntryMedia(context.Background(), w.feed, m2.EntryUID)
	if err != nil || len(files) != 1 || files[0].State != catalog.MediaStored || files[0].SHA256 != sumOf(ep2) || files[0].Attempts != 2 {
		t.Fatalf("ep2's row: %+v, %v", files, err)
	}
	// Done: nothing is due, and the same events again queue nothing.
	w.clock.set(t0.Add(48 * time.Hour))
	if recs, _ := w.drain(Config{}); len(recs) != 0 {
		t.Fatalf("a third run: %v", recs)
	}
}

// TestLimits: the day's budget stops a download and the queue, which go
// on the next UTC day, resumed; below the disk floor nothing starts.
func TestLimits(t *testing.T) {
	w := newWorld(t)
	p := w.pub
	a, b := mp3(2<<20, 11), mp3(2<<20, 12)
	p.set("/a.mp3", file{body: a, contentType: "audio/mpeg", etag: `"a"`})
	p.set("/b.mp3", file{body: b, contentType: "audio/mpeg", etag: `"b"`})
	w.setMedia(ndjson.MediaSettings{Types: []string{"audio/mpeg"}})
	w.publish(item{guid: "a", encURL: p.url("/a.mp3"), encType: "audio/mpeg"}, item{guid: "b", encURL: p.url("/b.mp3"), encType: "audio/mpeg"})
	w.cycle()

	// Below the floor (a floor higher than any disk), nothing starts.
	recs, sum := w.drain(Config{DiskFloor: 1 << 62})
	if len(recs) != 0 || sum.Halted != reasonDisk {
		t.Fatalf("below the floor: %v, %+v", recs, sum)
	}
	// A budget of 3 MiB, one file at a time: a is stored, b cut at the
	// budget, kept.
	recs, sum = w.drain(Config{DailyBudget: 3 << 20, SyncEvery: 256 << 10, Concurrency: 1})
	ra, rb := recs[p.url("/a.mp3")], recs[p.url("/b.mp3")]
	if ra.Status != ndjson.MediaStored || rb.Status != ndjson.MediaRetrying || rb.Reason != reasonBudget || rb.Bytes <= 0 || sum.Halted != reasonBudget {
		t.Fatalf("budget: a %+v\nb %+v\n%+v", ra, rb, sum)
	}
	// Later the same day: still spent.
	w.clock.set(t0.Add(time.Hour))
	if recs, sum := w.drain(Config{DailyBudget: 3 << 20}); len(recs) != 0 || sum.Halted != reasonBudget {
		t.Fatalf("the same day: %v %+v", recs, sum)
	}
	// The next day b goes on from where it was cut.
	w.clock.set(t0.Add(24 * time.Hour))
	recs, _ = w.drain(Config{DailyBudget: 3 << 20})
	if m := recs[p.url("/b.mp3")]; m.Status != ndjson.MediaStored || m.ResumedFrom != rb.Bytes || !bytes.Equal(w.stored(m), b) {
		t.Fatalf("the next day: %+v", m)
	}
}

// TestDropsWhatTheFeedNoLongerAsks: files queued before the feed's media
// were turned off are dropped, not downloaded; one run at a time.
func TestDropsWhatTheFeedNoLongerAsks(t *testing.T) {
	w := newWorld(t)
	p := w.pub
	p.set("/a.mp3", file{body: mp3(1<<20, 21), contentType: "audio/mpeg"})
	w.setMedia(ndjson.MediaSettings{Types: []string{"audio/*"}})
	w.publish(item{guid: "a", encURL: p.url("/a.mp3"), encType: "audio/mpeg"})
	w.cycle()
	w.setMedia(ndjson.MediaSettings{Types: []string{}})
	recs, sum := w.drain(Config{})
	if len(recs) != 0 || sum.Dropped != 1 || len(p.requests("/a.mp3")) != 0 {
		t.Fatalf("dropped: %v %+v %v", recs, sum, p.requests("/a.mp3"))
	}
	unlock, err := w.st.Lock(storedir.MediaRunLock, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, err := Drain(context.Background(), Config{Store: w.st, Catalog: w.cat}); !errors.Is(err, ErrBusy) {
		t.Fatalf("a second run: %v", err)
	}
}

func TestImages(t *testing.T) {
	got := Images(`<p><img src="a.png"><IMG SRC='/b.jpg?x=1&amp;y=2'></p><img src="javascript:x"><img src="https://cdn.test/c.gif#f"><img src="a.png"><img alt="none">`,
		"https://site.test/post/1", 10)
	want := []string{"https://site.test/post/a.png", "https://site.test/b.jpg?x=1&y=2", "https://cdn.test/c.gif"}
	if !slices.Equal(got, want) {
		t.Errorf("%q, want %q", got, want)
	}
	if got := Images(strings.Repeat(`<img src="/x.png"><img src="/y.png">`, 3), "https://site.test/", 1); len(got) != 1 {
		t.Errorf("max: %q", got)
	}
}
