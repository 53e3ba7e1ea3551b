package serve

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"image"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/media"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/sub"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// podcast subscribes the world to a podcast of two items, with its media
// on (every type), runs a cycle, the feed-media stage over its events and
// feed-media run, and returns the episode's bytes, the stored files'
// SHA-256 (episode, notes) and the episode's entry.
func (w *world) podcast(t *testing.T) (ep []byte, epSum, notesSum string, e ndjson.Entry) {
	t.Helper()
	ep = bytes.Repeat([]byte("ID3 an episode of a podcast, "), 4000)
	notes := []byte("<html><script>alert(1)</script>notes</html>")
	os.WriteFile(filepath.Join(w.www, "ep.mp3"), ep, 0o644)
	os.WriteFile(filepath.Join(w.www, "notes.html"), notes, 0o644)
	os.WriteFile(filepath.Join(w.www, "podcast.xml"), []byte(`<?xml version="1.0"?><rss version="2.0"><channel><title>Pod</title><link>`+w.feeds.URL+`/</link>
<item><guid>ep1</guid><title>Episode 1</title><link>`+w.feeds.URL+`/ep1</link><enclosure url="`+w.feeds.URL+`/ep.mp3" type="audio/mpeg" length="1"/></item>
<item><guid>n1</guid><title>Notes</title><link>`+w.feeds.URL+`/n1</link><enclosure url="`+w.feeds.URL+`/notes.html" type="text/html" length="1"/></item>
</channel></rss>`), 0o644)
	s, _, err := sub.Add(sub.Config{Store: w.st, Catalog: w.cat, Out: io.Discard, Now: func() time.Time { return t0 }},
		sub.Spec{URL: w.feeds.URL + "/podcast.xml", Labels: []string{"pods"}, Media: &ndjson.MediaSettings{Types: []string{"*/*"}}})
	if err != nil {
		t.Fatal(err)
	}
	w.ids["podcast.xml"] = s.FeedID
	w.cycle(t0.Add(time.Hour))
	if queued, sum := w.media(t); queued.Queued != 2 || sum.Stored != 2 {
		t.Fatalf("the stage: %+v; feed-media run: %+v", queued, sum)
	}
	for _, x := range w.storedEntries() {
		if x.FeedID == s.FeedID && x.Title == "Episode 1" {
			e = x
		}
	}
	d, n := sha256.Sum256(ep), sha256.Sum256(notes)
	return ep, hex.EncodeToString(d[:]), hex.EncodeToString(n[:]), e
}

// media runs the feed-media stage over the store's events and feed-media
// run, as feed-loop does after a cycle, and returns their summaries.
func (w *world) media(t *testing.T) (media.StageSummary, media.DrainSummary) {
	t.Helper()
	ctx := context.Background()
	var events bytes.Buffer
	if _, _, err := w.st.ReadLogsSince(storedir.DirEvents, "", 0, func(_ string, l ndjson.Line) error {
		events.Write(append(l.Raw, '\n'))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	queued, err := media.Run(ctx, media.Config{In: &events, Store: w.st, Catalog: w.cat})
	if err != nil {
		t.Fatalf("the stage: %v", err)
	}
	sum, err := media.Drain(ctx, media.Config{Store: w.st, Catalog: w.cat, Client: httpx.New(httpx.Options{AllowPrivate: true}),
		Limiter: httpx.NewLimiter(2, 0, nil), HostConcurrency: 2})
	if err != nil {
		t.Fatalf("feed-media run: %v", err)
	}
	return queued, sum
}

// mixedMedia subscribes the world, after podcast, to a feed whose media
// end every way: an image of its content stored, the podcast's episode
// stored again (one copy for both), an enclosure of a type the feed does
// not take and one over its cap refused, one that is not there failed.
// It runs a cycle and feed-media, and returns the image's bytes.
func (w *world) mixedMedia(t *testing.T) (pic []byte) {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 3, 2))); err != nil {
		t.Fatal(err)
	}
	pic = b.Bytes()
	os.WriteFile(filepath.Join(w.www, "pic.png"), pic, 0o644)
	os.WriteFile(filepath.Join(w.www, "wrong.png"), pic, 0o644)
	os.WriteFile(filepath.Join(w.www, "big.mp3"), bytes.Repeat([]byte("ID3 too long "), 20000), 0o644)
	u := w.feeds.URL
	os.WriteFile(filepath.Join(w.www, "mixed.xml"), []byte(`<?xml version="1.0"?><rss version="2.0"><channel><title>Mixed</title><link>`+u+`/</link>
<item><guid>m1</guid><title>A picture</title><link>`+u+`/m1</link><description>&lt;p&gt;See &lt;img src="`+u+`/pic.png" alt="a picture"&gt;&lt;/p&gt;</description>
<enclosure url="`+u+`/wrong.png" type="audio/mpeg" length="1"/></item>
<item><guid>m2</guid><title>Gone</title><link>`+u+`/m2</link><enclosure url="`+u+`/missing.mp3" type="audio/mpeg" length="1"/></item>
<item><guid>m3</guid><title>Too long</title><link>`+u+`/m3</link><enclosure url="`+u+`/big.mp3" type="audio/mpeg" length="1"/></item>
<item><guid>m4</guid><title>Episode 1 again</title><link>`+u+`/m4</link><enclosure url="`+u+`/ep.mp3" type="audio/mpeg" length="1"/></item>
</channel></rss>`), 0o644)
	s, _, err := sub.Add(sub.Config{Store: w.st, Catalog: w.cat, Out: io.Discard, Now: func() time.Time { return t0 }},
		sub.Spec{URL: u + "/mixed.xml", Media: &ndjson.MediaSettings{Types: []string{"audio/*"}, MaxBytes: 200000, Images: true}})
	if err != nil {
		t.Fatal(err)
	}
	w.ids["mixed.xml"] = s.FeedID
	w.cycle(t0.Add(2 * time.Hour))
	if queued, sum := w.media(t); queued.Queued != 5 || sum.Stored != 2 || sum.Refused != 2 || sum.Failed != 1 {
		t.Fatalf("the stage: %+v; feed-media run: %+v", queued, sum)
	}
	return pic
}

// TestMedia: GET /media/{sha256} serves a stored file with its type,
// ranges and validators, never as a page; an entry's record lists its
// media; meta-feeds point enclosures at the stored copies with
// --media-url.
func TestMedia(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.MediaURL = "https://media.example/m/" })
	ep, sum, notes, e := w.podcast(t)

	r := w.get("/media/" + sum)
	h := r.header
	if r.status != 200 || !bytes.Equal(r.body, ep) || h.Get("Content-Type") != "audio/mpeg" || h.Get("ETag") != `"`+sum+`"` ||
		h.Get("X-Content-Type-Options") != "nosniff" || !strings.HasPrefix(h.Get("Content-Security-Policy"), "sandbox") ||
		h.Get("Accept-Ranges") != "bytes" || h.Get("Content-Encoding") != "" || !strings.Contains(h.Get("Cache-Control"), "immutable") {
		t.Fatalf("GET: %d, %d bytes, %v", r.status, len(r.body), h)
	}
	// Ranges, and validators.
	r = w.get("/media/"+sum, "Range", "bytes=100-199", "Accept-Encoding", "gzip")
	if r.status != 206 || !bytes.Equal(r.body, ep[100:200]) || r.header.Get("Content-Range") != "bytes 100-199/"+strconv.Itoa(len(ep)) || r.header.Get("Content-Encoding") != "" {
		t.Fatalf("Range: %d %q %v", r.status, r.body, r.header)
	}
	if r := w.get("/media/"+sum, "If-None-Match", `"`+sum+`"`); r.status != 304 || len(r.body) != 0 {
		t.Fatalf("If-None-Match: %d", r.status)
	}
	if r := w.get("/media/"+sum, "If-None-Match", `"other"`); r.status != 200 {
		t.Fatalf("If-None-Match of another: %d", r.status)
	}
	if r := w.get("/media/"+sum, "Range", "bytes=10-", "If-Range", `"`+sum+`"`); r.status != 206 || !bytes.Equal(r.body, ep[10:]) {
		t.Fatalf("If-Range that matches: %d", r.status)
	}
	if r := w.get("/media/"+sum, "Range", "bytes=10-", "If-Range", `"old"`); r.status != 200 || !bytes.Equal(r.body, ep) {
		t.Fatalf("If-Range that does not: %d", r.status)
	}
	if r := w.get("/media/"+sum, "Range", "bytes=99999999-"); r.status != 416 {
		t.Fatalf("a range past the end: %d", r.status)
	}
	// A page or script is a file to save, not to open here.
	r = w.get("/media/" + notes)
	if r.status != 200 || r.header.Get("Content-Type") != "application/octet-stream" || r.header.Get("Content-Disposition") != "attachment" {
		t.Fatalf("HTML: %d %v", r.status, r.header)
	}
	// Only stored files: no name, a file no row names, nothing else.
	r = w.get("/media/" + strings.Repeat("0", 64))
	r.problem(t, 404)
	for _, bad := range []string{"abc", strings.ToUpper(sum), "..%2Fcatalog.db", sum[:63] + "g"} {
		if r := w.get("/media/" + bad); r.status != 400 && r.status != 404 {
			t.Errorf("/media/%s: %d", bad, r.status)
		}
	}
	orphan := bytes.Repeat([]byte("x"), 10)
	d := sha256.Sum256(orphan)
	osum := hex.EncodeToString(d[:])
	os.MkdirAll(filepath.Join(w.st.Root, "media", osum[:2]), 0o755)
	os.WriteFile(filepath.Join(w.st.Root, "media", osum[:2], osum), orphan, 0o644)
	w.get("/media/"+osum).problem(t, 404)

	// The entry's record lists its media.
	var got struct {
		Media []MediaOut `json:"media"`
	}
	w.get("/entries/"+e.EntryUID+"?feed_id="+e.FeedID).json(t, &got)
	if len(got.Media) != 1 || got.Media[0].State != "stored" || got.Media[0].SHA256 != sum || !strings.HasSuffix(got.Media[0].Href, "/media/"+sum) ||
		got.Media[0].Bytes != int64(len(ep)) || got.Media[0].ContentType != "audio/mpeg" || got.Media[0].Kind != "enclosure" {
		t.Fatalf("the entry's media: %+v", got.Media)
	}

	// The meta-feeds point the enclosure at the stored copy.
	for _, path := range []string{"/feeds/" + w.ids["podcast.xml"] + "/feed.atom", "/labels/pods.rss", "/all.json"} {
		r := w.get(path)
		if r.status != 200 || !strings.Contains(string(r.body), "https://media.example/m/"+sum) || strings.Contains(string(r.body), w.feeds.URL+"/ep.mp3") {
			t.Errorf("%s: %d\n%s", path, r.status, r.body)
		}
	}
}

// TestMediaSettingsThroughTheAPI: PATCH /feeds/{id} sets a feed's media
// settings as feed-sub set does, checked alike; null turns them off.
func TestMediaSettingsThroughTheAPI(t *testing.T) {
	w := newWorld(t)
	id := w.ids["TechCrunch.xml"]
	var f struct {
		Media *ndjson.MediaSettings `json:"media"`
	}
	r := w.write("PATCH", "/feeds/"+id, `{"media": {"types": ["Video/*"], "max_bytes": 1048576}}`)
	r.json(t, &f)
	if r.status != 200 || f.Media == nil || f.Media.Types[0] != "video/*" || f.Media.MaxBytes != 1<<20 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	w.write("PATCH", "/feeds/"+id, `{"media": {"types": ["video"]}}`).problem(t, 422)
	w.write("PATCH", "/feeds/"+id, `{"media": {"kinds": []}}`).problem(t, 400)
	r = w.write("PATCH", "/feeds/"+id, `{"media": null}`)
	f.Media = nil
	r.json(t, &f)
	if r.status != 200 || f.Media != nil {
		t.Fatalf("off: %d %s", r.status, r.body)
	}
}

// TestMediaWithoutURL: without --media-url the meta-feeds keep the
// publisher's enclosures.
func TestMediaWithoutURL(t *testing.T) {
	w := newWorld(t)
	_, sum, _, _ := w.podcast(t)
	r := w.get("/feeds/" + w.ids["podcast.xml"] + "/feed.rss")
	if r.status != 200 || strings.Contains(string(r.body), sum) || !strings.Contains(string(r.body), w.feeds.URL+"/ep.mp3") {
		t.Fatalf("%d\n%s", r.status, r.body)
	}
}
