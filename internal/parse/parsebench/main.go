// Command parsebench is scripts/bench-parse's helper: it generates the
// benchmark's corpus of feeds, and times bare gofeed over the same files
// in one process, for comparison with feed-parse.
//
//	parsebench gen [-n FEEDS] [-seed N] [-mb MB] DIR
//	parsebench gofeed FILE...      (or -list FILE: one file name per line)
//	parsebench spin [-mb MB]
//
// gen writes DIR/feed-NNNN.xml: RSS 2.0 and Atom 1.0 feeds of 20 to 1,700
// items (most have a few dozen, a few have many, as on the web), with the
// elements and extensions real feeds use. gofeed prints one JSON line:
// {"files", "bytes", "items", "seconds"}. spin hashes MB megabytes
// (default 400) in as many goroutines as GOMAXPROCS, each its share: work
// that needs nothing from the others, to show what a second core gives on
// this machine at this moment (a virtual machine's cores may share one
// physical core, or others' processes may take one).
package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/mmcdole/gofeed"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "gen":
		err = gen(os.Args[2:])
	case "gofeed":
		err = bareGofeed(os.Args[2:])
	case "spin":
		err = spin(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "parsebench:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: parsebench gen [-n FEEDS] [-seed N] [-mb MB] DIR | parsebench gofeed [-list FILE] FILE... | parsebench spin [-mb MB]")
	os.Exit(2)
}

// spin hashes mb megabytes, split between GOMAXPROCS goroutines.
func spin(args []string) error {
	fs := flag.NewFlagSet("spin", flag.ExitOnError)
	mb := fs.Int("mb", 400, "megabytes to hash in all")
	fs.Parse(args)
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			block := make([]byte, 1<<20)
			for i := w; i < *mb; i += workers {
				sha256.Sum256(block)
			}
		}()
	}
	wg.Wait()
	return nil
}

// bareGofeed parses each file with gofeed, as a program using gofeed
// alone would: read the file, parse it, count its items.
func bareGofeed(args []string) error {
	fs := flag.NewFlagSet("gofeed", flag.ExitOnError)
	list := fs.String("list", "", "read the file names from this file")
	fs.Parse(args)
	files := fs.Args()
	if *list != "" {
		b, err := os.ReadFile(*list)
		if err != nil {
			return err
		}
		files = append(files, strings.Fields(string(b))...)
	}
	p := gofeed.NewParser()
	var bytesRead, items int64
	start := time.Now()
	for _, name := range files {
		body, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		f, err := p.Parse(bytes.NewReader(body))
		if err != nil {
			fmt.Fprintf(os.Stderr, "parsebench: gofeed: %s: %v\n", name, err)
			continue
		}
		bytesRead += int64(len(body))
		items += int64(len(f.Items))
	}
	secs := time.Since(start).Seconds()
	return json.NewEncoder(os.Stdout).Encode(map[string]any{"files": len(files), "bytes": bytesRead, "items": items, "seconds": secs})
}

func gen(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ExitOnError)
	n := fs.Int("n", 1000, "feeds")
	seed := fs.Uint64("seed", 1, "random seed: the same seed, the same corpus")
	mb := fs.Float64("mb", 75, "approximate size of the corpus in MB")
	fs.Parse(args)
	if fs.NArg() != 1 {
		usage()
	}
	dir := fs.Arg(0)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// The corpus is made four times with the same seed: three times to
	// learn how its size follows the length of the items' text, once at
	// the length that gives about mb MB.
	size := func(itemBytes float64) int {
		total := 0
		for _, f := range corpus(*n, *seed, itemBytes) {
			total += len(f)
		}
		return total
	}
	// The size is nearly linear in the text's length: two secant steps
	// come within a percent.
	target := *mb * 1e6
	x1, x2 := 100.0, 1000.0
	y1, y2 := float64(size(x1)), float64(size(x2))
	itemBytes := max(50, x1+(target-y1)*(x2-x1)/(y2-y1))
	if y3 := float64(size(itemBytes)); y3 != y2 {
		itemBytes = max(50, itemBytes+(target-y3)*(itemBytes-x2)/(y3-y2))
	}
	var bytesOut, items int
	for i, f := range corpus(*n, *seed, itemBytes) {
		name := filepath.Join(dir, fmt.Sprintf("feed-%04d.xml", i))
		if err := os.WriteFile(name, f, 0o644); err != nil {
			return err
		}
		bytesOut += len(f)
		items += bytes.Count(f, []byte("</item>")) + bytes.Count(f, []byte("</entry>"))
	}
	w := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(w, `{"feeds":%d,"bytes":%d,"items":%d}`+"\n", *n, bytesOut, items)
	return w.Flush()
}

// corpus makes the feeds: three in five RSS 2.0, the others Atom 1.0.
func corpus(n int, seed uint64, itemBytes float64) [][]byte {
	r := rand.New(rand.NewPCG(seed, 2026))
	// Item counts: most feeds carry a few dozen items, some hundreds, a
	// few an archive of more than a thousand (log-uniform over the tail).
	counts := make([]int, n)
	for i := range counts {
		c := 20 + r.IntN(41)
		if r.Float64() < 0.06 {
			c = int(math.Round(60 * math.Pow(1700.0/60, r.Float64())))
		}
		switch i {
		case 0:
			c = 1700 // the largest, always there
		case 1:
			c = 20
		}
		counts[i] = c
	}
	out := make([][]byte, n)
	for i, c := range counts {
		var buf bytes.Buffer
		g := &feedGen{r: r, b: &buf, i: i, items: c, itemBytes: itemBytes}
		if i%5 < 3 {
			g.rss()
		} else {
			g.atom()
		}
		out[i] = buf.Bytes()
	}
	return out
}

type feedGen struct {
	r         *rand.Rand
	b         *bytes.Buffer
	i         int
	items     int
	itemBytes float64
}

var words = strings.Fields(`the of and to in is for that on with as it by this from at are be was an or
have not new more will can about their has one all which its out after over also we you they people
data cloud open source release update security performance network server team year first week report
says government market city school study research music film game season players climate energy water
développement économie sécurité Straße Müller naïve café résumé año niño ğüş Ελλάδα данные 数据 ニュース`)

func (g *feedGen) words(n int) string {
	var s strings.Builder
	for k := range n {
		if k > 0 {
			s.WriteByte(' ')
		}
		s.WriteString(words[g.r.IntN(len(words))])
	}
	return s.String()
}

// html is a few paragraphs of HTML of about n bytes.
func (g *feedGen) html(n int) string {
	var s strings.Builder
	for s.Len() < n {
		s.WriteString("<p>")
		s.WriteString(g.words(8 + g.r.IntN(30)))
		if g.r.IntN(3) == 0 {
			fmt.Fprintf(&s, ` <a href="https://example.com/%s">%s</a>`, g.words(1), g.words(2))
		}
		if g.r.IntN(6) == 0 {
			fmt.Fprintf(&s, ` <img src="/img/%d.jpg" alt="%s"/>`, g.r.IntN(1000), g.words(2))
		}
		s.WriteString(" &amp; ")
		s.WriteString(g.words(4 + g.r.IntN(12)))
		s.WriteString(".</p>\n")
	}
	return s.String()
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

func (g *feedGen) date(i int) time.Time {
	return time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC).Add(-time.Duration(i)*7*time.Hour - time.Duration(g.r.IntN(3600))*time.Second)
}

func (g *feedGen) rss() {
	b, r := g.b, g.r
	host := fmt.Sprintf("site%d.example", g.i)
	full := r.IntN(5) < 2     // content:encoded with the full text
	podcast := r.IntN(7) == 0 // enclosures
	thumbs := r.IntN(5) == 0  // media:thumbnail
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	b.WriteString(`<rss version="2.0" xmlns:content="http://purl.org/rss/1.0/modules/content/" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:atom="http://www.w3.org/2005/Atom" xmlns:media="http://search.yahoo.com/mrss/" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd">` + "\n<channel>\n")
	fmt.Fprintf(b, "<title>%s</title>\n<link>https://%s/</link>\n<description>%s</description>\n<language>en-us</language>\n", esc(g.words(3)), host, esc(g.words(10)))
	fmt.Fprintf(b, "<atom:link href=\"https://%s/feed/\" rel=\"self\" type=\"application/rss+xml\"/>\n<lastBuildDate>%s</lastBuildDate>\n", host, g.date(0).Format(time.RFC1123Z))
	if r.IntN(3) == 0 {
		fmt.Fprintf(b, "<ttl>%d</ttl>\n", 15*(1+r.IntN(8)))
	}
	fmt.Fprintf(b, "<image><url>https://%s/logo.png</url><title>%s</title><link>https://%s/</link></image>\n", host, esc(g.words(3)), host)
	for i := range g.items {
		b.WriteString("<item>\n")
		fmt.Fprintf(b, "<title>%s</title>\n", esc(g.words(4+r.IntN(8))))
		slug := fmt.Sprintf("%d/%s", 100000+i, strings.ReplaceAll(g.words(3), " ", "-"))
		link := fmt.Sprintf("https://%s/%s/", host, esc(slug))
		if r.IntN(4) == 0 {
			link += "?utm_source=rss&amp;utm_medium=rss&amp;utm_campaign=feed"
		}
		fmt.Fprintf(b, "<link>%s</link>\n", link)
		if r.IntN(2) == 0 {
			fmt.Fprintf(b, "<guid isPermaLink=\"false\">https://%s/?p=%d</guid>\n", host, 100000+i)
		} else {
			fmt.Fprintf(b, "<guid>%s</guid>\n", link)
		}
		d := g.date(i)
		switch r.IntN(3) {
		case 0:
			fmt.Fprintf(b, "<pubDate>%s</pubDate>\n", d.Format(time.RFC1123Z))
		case 1:
			fmt.Fprintf(b, "<pubDate>%s</pubDate>\n", d.Format(time.RFC1123))
		default:
			fmt.Fprintf(b, "<pubDate>%s</pubDate>\n", d.In(time.FixedZone("", -5*3600)).Format("Mon, 2 Jan 2006 15:04:05 -0700"))
		}
		fmt.Fprintf(b, "<dc:creator><![CDATA[%s]]></dc:creator>\n", g.words(2))
		for range r.IntN(4) {
			fmt.Fprintf(b, "<category><![CDATA[%s]]></category>\n", g.words(1))
		}
		size := int(g.itemBytes * (0.4 + r.Float64()*0.8))
		if full {
			fmt.Fprintf(b, "<description>%s</description>\n", esc(g.html(size/5)))
			fmt.Fprintf(b, "<content:encoded><![CDATA[%s]]></content:encoded>\n", g.html(size*3/5))
		} else {
			fmt.Fprintf(b, "<description>%s</description>\n", esc(g.html(size*3/4)))
		}
		if podcast {
			fmt.Fprintf(b, "<enclosure url=\"https://media.%s/ep%d.mp3\" length=\"%d\" type=\"audio/mpeg\"/>\n<itunes:duration>%d:%02d</itunes:duration>\n", host, i, 1_000_000+r.IntN(90_000_000), r.IntN(90), r.IntN(60))
		}
		if thumbs {
			fmt.Fprintf(b, "<media:thumbnail url=\"https://%s/thumbs/%d.jpg\" width=\"150\" height=\"150\"/>\n", host, i)
		}
		b.WriteString("</item>\n")
	}
	b.WriteString("</channel>\n</rss>\n")
}

func (g *feedGen) atom() {
	b, r := g.b, g.r
	host := fmt.Sprintf("blog%d.example", g.i)
	xhtml := r.IntN(6) == 0
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?>` + "\n")
	b.WriteString(`<feed xmlns="http://www.w3.org/2005/Atom" xml:lang="en">` + "\n")
	fmt.Fprintf(b, "<title>%s</title>\n<subtitle>%s</subtitle>\n<id>tag:%s,2026:feed</id>\n", esc(g.words(3)), esc(g.words(8)), host)
	fmt.Fprintf(b, "<link rel=\"alternate\" type=\"text/html\" href=\"https://%s/\"/>\n<link rel=\"self\" type=\"application/atom+xml\" href=\"https://%s/atom.xml\"/>\n", host, host)
	fmt.Fprintf(b, "<updated>%s</updated>\n<author><name>%s</name><uri>https://%s/about</uri></author>\n<generator>bench</generator>\n", g.date(0).Format(time.RFC3339), esc(g.words(2)), host)
	for i := range g.items {
		b.WriteString("<entry>\n")
		fmt.Fprintf(b, "<title type=\"html\">%s</title>\n", esc(g.words(4+r.IntN(8))))
		slug := strings.ReplaceAll(g.words(3), " ", "-")
		fmt.Fprintf(b, "<link rel=\"alternate\" type=\"text/html\" href=\"https://%s/%d/%s.html\"/>\n", host, 2026, esc(slug))
		fmt.Fprintf(b, "<id>tag:%s,2026:post-%d</id>\n", host, i)
		d := g.date(i)
		fmt.Fprintf(b, "<published>%s</published>\n<updated>%s</updated>\n", d.Format(time.RFC3339), d.Add(time.Hour).Format("2006-01-02T15:04:05.000-07:00"))
		fmt.Fprintf(b, "<author><name>%s</name></author>\n", esc(g.words(2)))
		for range r.IntN(4) {
			fmt.Fprintf(b, "<category term=\"%s\"/>\n", esc(g.words(1)))
		}
		size := int(g.itemBytes * (0.4 + r.Float64()*0.8))
		fmt.Fprintf(b, "<summary type=\"html\">%s</summary>\n", esc(g.html(size/5)))
		if xhtml {
			fmt.Fprintf(b, "<content type=\"xhtml\"><div xmlns=\"http://www.w3.org/1999/xhtml\">%s</div></content>\n", g.html(size*3/5))
		} else {
			fmt.Fprintf(b, "<content type=\"html\">%s</content>\n", esc(g.html(size*3/5)))
		}
		b.WriteString("</entry>\n")
	}
	b.WriteString("</feed>\n")
}
