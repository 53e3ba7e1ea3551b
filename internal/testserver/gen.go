package testserver

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"
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
	rev := h.Revision()
	body, modified := GenFeed(n, rev)
	etag := fmt.Sprintf(`"gen-%d-%d"`, n, rev)
	serveBody(w, r, body, "application/rss+xml; charset=utf-8", etag, modified)
}

// GenFeed returns the body and the last-modified time of /gen/N.xml at
// revision rev. Its items are numbered rev to rev+9, newest first; item k
// has the guid "gen-N-k" and is published k hours (plus N seconds) after
// 2026-01-01, so bumping rev by one adds exactly one new item.
func GenFeed(n, rev int) ([]byte, time.Time) {
	base := genEpoch.Add(time.Duration(n%86400) * time.Second)
	newest := rev + genItems - 1
	modified := base.Add(time.Duration(newest) * time.Hour)
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
