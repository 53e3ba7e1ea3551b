package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/media"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/sub"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// podcastFeed is a feed of one item whose enclosures are the paths given.
func podcastFeed(guid string, files ...string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?><rss version="2.0"><channel><title>P</title><item><guid>` + guid + `</guid><title>` + guid + `</title><link>https://p.example/` + guid + `</link>`)
	for _, f := range files {
		b.WriteString(`<enclosure url="` + f + `" type="audio/mpeg" length="1"/>`)
	}
	b.WriteString("</item></channel></rss>")
	return b.String()
}

// mediaCycle runs a cycle at now, the feed-media stage over its events,
// then feed-media run.
func (w *world) mediaCycle(now time.Time) media.DrainSummary {
	w.t.Helper()
	events := w.cycle(now)
	ctx := context.Background()
	clock := atClock{now}
	if _, err := media.Run(ctx, media.Config{In: strings.NewReader(events), Store: w.st, Clock: clock}); err != nil {
		w.t.Fatal(err)
	}
	sum, err := media.Drain(ctx, media.Config{Store: w.st, Clock: clock, Client: httpx.New(httpx.Options{AllowPrivate: true}),
		Limiter: httpx.NewLimiter(4, 0, nil), HostConcurrency: 4})
	if err != nil {
		w.t.Fatal(err)
	}
	return sum
}

func shaHex(b []byte) string {
	d := sha256.Sum256(b)
	return hex.EncodeToString(d[:])
}

func mediaKeys(t *testing.T, st *storedir.Store) []string {
	t.Helper()
	files, err := st.MediaFiles()
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, f := range files {
		keys = append(keys, f.SHA256[:8])
	}
	return keys
}

// TestPruneMedia: the media of entries go with them; a file the entries
// of two feeds share stays while one is left; partial files of downloads
// no entry asks for go; the records of files not stored are metadata.
func TestPruneMedia(t *testing.T) {
	w := newWorld(t)
	shared, onlyA := bytes.Repeat([]byte("ID3 shared "), 5000), bytes.Repeat([]byte("ID3 only a "), 4000)
	w.serve("shared.mp3", string(shared))
	w.serve("only-a.mp3", string(onlyA))
	w.serve("a.xml", podcastFeed("a1", w.srv.URL+"/shared.mp3", w.srv.URL+"/only-a.mp3", w.srv.URL+"/gone.mp3"))
	w.serve("b.xml", podcastFeed("b1", w.srv.URL+"/shared.mp3"))
	on := func(feed string) {
		err := sub.Set(sub.Config{Store: w.st, Out: io.Discard, Msg: io.Discard}, []string{feed},
			sub.Changes{Media: func(*ndjson.MediaSettings) *ndjson.MediaSettings {
				return &ndjson.MediaSettings{Types: []string{"audio/*"}}
			}})
		if err != nil {
			t.Fatal(err)
		}
	}
	on(w.subscribe("/a.xml"))
	if sum := w.mediaCycle(t0); sum.Stored != 2 || sum.Failed != 1 {
		t.Fatalf("day 0: %+v", sum)
	}
	// Day 5: feed B, whose one file is stored already.
	on(w.subscribe("/b.xml"))
	if sum := w.mediaCycle(t0.Add(5 * 24 * time.Hour)); sum.Stored != 1 {
		t.Fatalf("day 5: %+v", sum)
	}
	before := mediaKeys(t, w.st)
	if len(before) != 2 {
		t.Fatalf("stored %v", before)
	}
	sumA := shaHex(onlyA)
	// A stray partial file, as a download of a row since gone leaves.
	if f, err := w.st.OpenPartial(999); err == nil {
		f.Write([]byte("half"))
		f.Close()
	}

	// Day 7, keep 3 days of entries: A's entry goes, and with it only-a
	// and the stray partial; shared stays for B. A dry run says so first.
	now := t0.Add(7*24*time.Hour + time.Hour)
	var out bytes.Buffer
	sum, err := Prune(context.Background(), PruneConfig{Store: w.st, ArticlesKeep: 3 * 24 * time.Hour, DryRun: true, Now: func() time.Time { return now }, Out: &out})
	if err != nil || sum.MediaForgotten != 3 || sum.MediaFiles != 2 || !strings.Contains(out.String(), "media/"+sumA[:2]+"/"+sumA) {
		t.Fatalf("dry run: %+v, %v\n%s", sum, err, out.String())
	}
	if keys := mediaKeys(t, w.st); !slices.Equal(keys, before) {
		t.Fatalf("the dry run deleted media: %v", keys)
	}
	out.Reset()
	sum, err = Prune(context.Background(), PruneConfig{Store: w.st, ArticlesKeep: 3 * 24 * time.Hour, Now: func() time.Time { return now }, Out: &out})
	if err != nil || sum.MediaForgotten != 3 || sum.MediaFiles != 2 || !strings.Contains(sum.String(), "2 media files (3 of entries gone)") {
		t.Fatalf("prune: %+v, %v", sum, err)
	}
	if keys := mediaKeys(t, w.st); len(keys) != 1 || keys[0] != shaHex(shared)[:8] {
		t.Fatalf("left %v", keys)
	}
	if ids, _ := w.st.Partials(); len(ids) != 0 {
		t.Fatalf("partials left %v", ids)
	}
	// Metadata: the record of the file that failed goes; those of stored
	// files stay while their rows do.
	out.Reset()
	sum, err = Prune(context.Background(), PruneConfig{Store: w.st, MetadataKeep: 24 * time.Hour, Now: func() time.Time { return now }, Out: &out})
	if err != nil || sum.MediaRecords != 3 {
		t.Fatalf("metadata: %+v, %v", sum, err)
	}
	// Day 10 (after a new entry of A on day 9, so that the file of day 5
	// is no longer the one a recovery reads): B's entry goes too, and
	// the shared file with it.
	w.serve("a.xml", podcastFeed("a2"))
	w.mediaCycle(t0.Add(9 * 24 * time.Hour))
	now = t0.Add(10*24*time.Hour + time.Hour)
	sum, err = Prune(context.Background(), PruneConfig{Store: w.st, ArticlesKeep: 3 * 24 * time.Hour, Now: func() time.Time { return now }, Out: io.Discard})
	if err != nil || sum.MediaFiles != 1 || len(mediaKeys(t, w.st)) != 0 {
		t.Fatalf("day 10: %+v, %v, %v", sum, err, mediaKeys(t, w.st))
	}
	cat, err := catalog.Open(context.Background(), w.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	if n, _ := cat.MediaCounts(context.Background()); len(n) != 0 {
		t.Fatalf("rows left %v", n)
	}
}
