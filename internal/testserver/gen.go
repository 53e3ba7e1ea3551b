package testserver

import (
	"bytes"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// genItems is the number of items in a generated feed.
const genItems = 10

// genEpoch is the time of the oldest item at revision 0; it lies in the past
// so that no reader takes the items for future-dated ones.
var genEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// words fill the titles and descriptions of generated items.
var words = strings.Fields(`alpha bravo charlie delta echo foxtrot golf hotel india juliet
	kilo lima mike november oscar papa quebec romeo sierra tango uniform victor
	whiskey xray yankee zulu river stone cloud garden window market letter
	harbour engine signal forest paper lantern copper meadow summit orbit`)

func (h *Handler) serveGen(w http.ResponseWriter, r *http.Request, name string) {
	n, err := strconv.Atoi(strings.TrimSuffix(name, ".xml"))
	if err != nil || n < 0 || !strings.HasSuffix(name, ".xml") {
		http.NotFound(w, r)
		return
	}
	serveResource(w, r, h.gen.get(n, h.Revision()))
}

// genCache keeps each generated feed as a publisher keeps a static file:
// made once per revision, with its validators, and gzipped once. Feeds
// are made on the first request for them, or ahead of any (Prepare), and
// made again at once when the revision changes (SetRevision), as a
// publisher rewrites its files when it posts. A benchmark client is then
// measured against a server that costs what a real one does, answering
// rather than writing and compressing a feed on every request: in
// bench-fetch the test server shares the machine with the pipeline.
type genCache struct {
	mu      sync.Mutex
	entries map[int]*resource
}

// genCacheMax bounds the feeds cached; past it, feeds are made per request.
const genCacheMax = 1 << 20

// get returns /gen/N.xml at revision rev.
func (c *genCache) get(n, rev int) *resource {
	c.mu.Lock()
	defer c.mu.Unlock()
	if res := c.entries[n]; res != nil && res.rev == rev {
		return res
	}
	res := genResource(n, rev)
	c.keep(n, res)
	return res
}

// keep caches res as /gen/N.xml, unless the cache is full. The caller
// holds c.mu.
func (c *genCache) keep(n int, res *resource) {
	if c.entries == nil {
		c.entries = map[int]*resource{}
	}
	if _, ok := c.entries[n]; ok || len(c.entries) < genCacheMax {
		c.entries[n] = res
	}
}

func genResource(n, rev int) *resource {
	res := &resource{
		rev:   rev,
		ctype: "application/rss+xml; charset=utf-8",
		etag:  `"gen-` + strconv.Itoa(n) + "-" + strconv.Itoa(rev) + `"`,
		body:  func() []byte { body, _ := GenFeed(n, rev); return body },
	}
	res.setModified(genModified(n, rev))
	return res
}

// make makes feeds ns at revision rev, gzipped, on every CPU, and caches
// them.
func (c *genCache) make(ns []int, rev int) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for n := range next {
				res := genResource(n, rev)
				res.content(true)
				c.mu.Lock()
				c.keep(n, res)
				c.mu.Unlock()
			}
		})
	}
	for _, n := range ns {
		next <- n
	}
	close(next)
	wg.Wait()
}

// remake makes every cached feed again at revision rev.
func (c *genCache) remake(rev int) {
	c.mu.Lock()
	ns := make([]int, 0, len(c.entries))
	for n := range c.entries {
		ns = append(ns, n)
	}
	c.mu.Unlock()
	c.make(ns, rev)
}

// Prepare makes /gen/0.xml to /gen/(count-1).xml at the current revision,
// gzipped, before anyone asks for them, as a publisher's files are there
// before the first reader comes; SetRevision then makes them again.
func (h *Handler) Prepare(count int) {
	ns := make([]int, min(count, genCacheMax))
	for i := range ns {
		ns[i] = i
	}
	h.gen.make(ns, h.Revision())
}

// genModified is the last-modified time of /gen/N.xml at revision rev:
// the time of its newest item.
func genModified(n, rev int) time.Time {
	return genBase(n).Add(time.Duration(rev+genItems-1) * time.Hour)
}

// genBase is the time of item 0 of /gen/N.xml.
func genBase(n int) time.Time { return genEpoch.Add(time.Duration(n%86400) * time.Second) }

// GenFeed returns the body and the last-modified time of /gen/N.xml at
// revision rev. Its items are numbered rev to rev+9, newest first; item k
// has the guid "gen-N-k" and is published k hours (plus N seconds) after
// 2026-01-01, so bumping rev by one adds exactly one new item.
func GenFeed(n, rev int) ([]byte, time.Time) {
	base := genBase(n)
	newest := rev + genItems - 1
	modified := genModified(n, rev)
	var b bytes.Buffer
	b.Grow(6 << 10)
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0">
<channel>
<title>Generated feed %d</title>
<link>https://gen%d.example.com/</link>
<description>Feed %d of the feedpipe test server, for tests and benchmarks.</description>
<language>en</language>
<lastBuildDate>%s</lastBuildDate>
`, n, n, n, modified.Format(time.RFC1123Z))
	for k := newest; k >= rev; k-- {
		seed := uint64(n)*1_000_003 + uint64(k)
		fmt.Fprintf(&b, `<item>
<title>Feed %d, post %d: %s</title>
<link>https://gen%d.example.com/posts/%d.html</link>
<guid isPermaLink="false">gen-%d-%d</guid>
<pubDate>%s</pubDate>
<description>%s</description>
</item>
`, n, k, wordsFrom(seed, 5), n, k, n, k,
			base.Add(time.Duration(k)*time.Hour).Format(time.RFC1123Z), wordsFrom(seed^0x9e3779b97f4a7c15, 40))
	}
	b.WriteString("</channel>\n</rss>\n")
	return b.Bytes(), modified
}

// wordsFrom returns count words chosen by a small generator seeded with
// seed: the same text for the same seed, different text for different ones.
func wordsFrom(seed uint64, count int) string {
	var b strings.Builder
	x := seed | 1
	for i := range count {
		// xorshift64: good enough to vary text, and stable across Go versions.
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[x%uint64(len(words))])
	}
	return b.String()
}
