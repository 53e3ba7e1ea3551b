package hostile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/clock"
	"github.com/feedpipe/feedpipe/internal/dedup"
	"github.com/feedpipe/feedpipe/internal/fetch"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/parse"
	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/scrape"
	"github.com/feedpipe/feedpipe/internal/store"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/testserver"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

var now = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

const (
	goodFeed  = "6ba7b811-9dad-51d1-80b4-00c04fd430c8"
	goodFetch = "019a8c7e-1b2c-7d3e-8f40-123456789abc"
	goodUID   = "0123456789abcdef"
)

// world is a store at base/a/b/store beside files it must never touch:
// base/outside/ and base/a/secret, plus a feed server on loopback.
type world struct {
	base    string
	st      *storedir.Store
	server  string // the feed server's URL
	client  *httpx.Client
	goodKey string // the key of a payload in the store
	// cat, when set, is the store's catalog the stages share; nil, each
	// run opens its own, as a stage's process does.
	cat *catalog.Catalog
}

func newWorld(t testing.TB) *world {
	t.Helper()
	base := t.TempDir()
	for name, content := range map[string]string{
		"outside/secret.zst": "not for the store",
		"outside/x.ndjson":   "{}\n",
		"a/secret":           "not for the store",
	} {
		p := filepath.Join(base, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st, err := storedir.Open(filepath.Join(base, "a", "b", "store"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	key, _, err := st.PutRaw(now, []byte(`<rss version="2.0"><channel><title>T</title><item><guid>g1</guid><title>One</title></item></channel></rss>`))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Sync(); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(testserver.New(t.TempDir(), nil))
	t.Cleanup(srv.Close)
	// Every name but a loopback address fails at once: no record reaches
	// the network.
	client := httpx.New(httpx.Options{AllowPrivate: true, Resolver: testserver.DNS(t, nil), Timeout: 5 * time.Second})
	return &world{base: base, st: st, server: srv.URL, client: client, goodKey: key}
}

// outside describes every file under base but the store: path, size,
// mode and modification time.
func (w *world) outside(t testing.TB) string {
	t.Helper()
	var b strings.Builder
	storeDir := filepath.Join(w.base, "a", "b", "store")
	err := filepath.WalkDir(w.base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == storeDir {
			return filepath.SkipDir
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d %v %d\n", p, info.Size(), info.Mode(), info.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A stage runs over in and writes to out, against the world's store.
type stage struct {
	name string
	run  func(ctx context.Context, w *world, in io.Reader, out *ndjson.Writer, log *slog.Logger) error
}

var stages = []stage{
	{"feed-fetch", func(ctx context.Context, w *world, in io.Reader, out *ndjson.Writer, log *slog.Logger) error {
		return fetch.Run(ctx, fetch.Config{In: in, Out: out, Log: log, Store: w.st, Catalog: w.cat, Client: w.client,
			Limiter: httpx.NewLimiter(4, 0, nil), Clock: clock.NewFake(now)})
	}},
	{"feed-parse", func(ctx context.Context, w *world, in io.Reader, out *ndjson.Writer, log *slog.Logger) error {
		return parse.Run(ctx, parse.Config{In: in, Out: out, Log: log, Store: w.st, Workers: 1})
	}},
	{"feed-scrape", func(ctx context.Context, w *world, in io.Reader, out *ndjson.Writer, log *slog.Logger) error {
		return scrape.Run(ctx, scrape.Config{In: in, Out: out, Log: log, Store: w.st, Catalog: w.cat, Client: w.client,
			Limiter: httpx.NewLimiter(4, 0, nil), Clock: clock.NewFake(now)})
	}},
	{"feed-dedup", func(ctx context.Context, w *world, in io.Reader, out *ndjson.Writer, log *slog.Logger) error {
		return dedup.Run(ctx, dedup.Config{In: in, Out: out, Log: log, Store: w.st, Catalog: w.cat})
	}},
	{"feed-store", func(ctx context.Context, w *world, in io.Reader, out *ndjson.Writer, log *slog.Logger) error {
		return store.Run(ctx, store.Config{In: in, Out: out, Log: log, Store: w.st, Catalog: w.cat, Now: func() time.Time { return now }})
	}},
}

// hostileValues are what an attacker puts in a field that becomes a path
// or a key.
func hostileValues(w *world) []string {
	return []string{
		"..", "../../x", "../../../outside/x", "/etc/passwd", filepath.Join(w.base, "outside", "x"),
		"a\x00b", goodFeed + "\x00", "..%2F..%2Fx", "%2e%2e%2fx", "..\\..\\x", strings.Repeat("a", 5000),
		strings.ToUpper(goodFeed), " " + goodUID, "raw/../../outside.zst", "raw/../../../outside/secret.zst",
		"raw/2026-11-21/../../../../outside/secret.zst", "raw/2026-11-21/%2e%2e%2f.zst",
	}
}

// A field is one field of one record type, and the stages that read it.
type field struct {
	name   string
	stages []string
	line   func(w *world, v string) string // the record with the field set to v
}

func line(v any) string {
	b, err := ndjson.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func (w *world) due(feedID string) ndjson.Due {
	return ndjson.Due{Header: ndjson.Head(ndjson.TypeDue), FeedID: feedID, URL: w.server + "/gen/1.xml", SourceType: ndjson.SourceAuto}
}

func (w *world) fetch(fetchID, feedID, key string) ndjson.Fetch {
	return ndjson.Fetch{Header: ndjson.Head(ndjson.TypeFetch), FetchID: fetchID, Due: w.due(feedID), URL: w.server + "/gen/1.xml",
		FetchedAt: ndjson.At(now), HTTPStatus: 200, BodyRef: &ndjson.BlobRef{Storage: storedir.RawStorage, Key: key}}
}

func entry(feedID, uid, fetchID string) ndjson.Entry {
	return ndjson.Entry{Header: ndjson.Head(ndjson.TypeEntry), FeedID: feedID, EntryUID: uid, ContentHash: "h", Title: "t",
		RawRef: ndjson.RawRef{FetchID: fetchID}}
}

var consumersOfFetch = []string{"feed-parse", "feed-scrape", "feed-dedup", "feed-store"}
var consumersOfEntry = []string{"feed-scrape", "feed-dedup", "feed-store"}

var fields = []field{
	{"feed_id", []string{"feed-fetch"}, func(w *world, v string) string { return line(w.due(v)) }},
	{"fetch_id", consumersOfFetch, func(w *world, v string) string { return line(w.fetch(v, goodFeed, w.goodKey)) }},
	{"due.feed_id", consumersOfFetch, func(w *world, v string) string { return line(w.fetch(goodFetch, v, w.goodKey)) }},
	{"body_ref.key", consumersOfFetch, func(w *world, v string) string { return line(w.fetch(goodFetch, goodFeed, v)) }},
	{"page.source_fetch_id", consumersOfFetch, func(w *world, v string) string {
		f := w.fetch(goodFetch, goodFeed, w.goodKey)
		f.Page = &ndjson.Page{Role: ndjson.PageArticle, SourceFetchID: v}
		return line(f)
	}},
	{"feed_id", consumersOfEntry, func(w *world, v string) string { return line(entry(v, goodUID, goodFetch)) }},
	{"entry_uid", consumersOfEntry, func(w *world, v string) string { return line(entry(goodFeed, v, goodFetch)) }},
	{"raw_ref.fetch_id", consumersOfEntry, func(w *world, v string) string { return line(entry(goodFeed, goodUID, v)) }},
}

// TestHostileFields gives each stage, for each field it reads that becomes
// a path or a key, a record with a hostile value followed by a good one:
// the bad one is reported on one line naming the field and the line
// number, the good one goes on, the stage exits 1, and nothing outside the
// store changes.
func TestHostileFields(t *testing.T) {
	w := newWorld(t)
	before := w.outside(t)
	n := 0
	for _, s := range stages {
		for _, f := range fields {
			if !contains(f.stages, s.name) {
				continue
			}
			for _, v := range hostileValues(w) {
				var logs, out bytes.Buffer
				n++
				in := f.line(w, v) + w.goodFor(s.name, n)
				err := s.run(context.Background(), w, strings.NewReader(in), ndjson.NewWriter(&out), slog.New(slog.NewTextHandler(&logs, nil)))
				if !errors.Is(err, pipe.ErrFailed) {
					t.Errorf("%s, %s %.40q: err %v, want the run to fail", s.name, f.name, v, err)
				}
				if want := "line=1 error=\""; !strings.Contains(logs.String(), want) || !strings.Contains(logs.String(), "field "+f.name+" ") {
					t.Errorf("%s, %s %.40q: the log does not name the line and the field:\n%s", s.name, f.name, v, logs.String())
				}
				if bytes.Count(logs.Bytes(), []byte("level=ERROR")) != 1 {
					t.Errorf("%s, %s %.40q: want one error line:\n%s", s.name, f.name, v, logs.String())
				}
				if out.Len() == 0 {
					t.Errorf("%s, %s %.40q: the good record after it did not go on:\n%s", s.name, f.name, v, logs.String())
				}
				if after := w.outside(t); after != before {
					t.Fatalf("%s, %s %.40q: files outside the store changed:\n%s\nwas\n%s", s.name, f.name, v, after, before)
				}
			}
		}
	}
}

// goodFor is a good record for a stage to go on with after a bad one: a
// due record for feed-fetch, a fetch record for feed-parse, the n-th new
// entry for the others.
func (w *world) goodFor(stage string, n int) string {
	switch stage {
	case "feed-fetch":
		return line(w.due(goodFeed))
	case "feed-parse":
		return line(w.fetch(goodFetch, goodFeed, w.goodKey))
	}
	return line(entry(goodFeed, fmt.Sprintf("%016x", n), goodFetch))
}

func goodValue(field string) string {
	switch field {
	case "entry_uid":
		return goodUID
	case "fetch_id", "raw_ref.fetch_id", "page.source_fetch_id":
		return goodFetch
	case "body_ref.key":
		return "raw/2026-11-21/" + strings.Repeat("ab", 32) + ".zst"
	}
	return goodFeed
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestPlantedLinks plants symbolic links in the store, to directories and
// files outside it, where the stages read and write, and runs every stage
// over good records: whatever each does, it reads and writes nothing
// outside the store; a payload linked to a secret outside is not read.
func TestPlantedLinks(t *testing.T) {
	w := newWorld(t)
	root := filepath.Join(w.base, "a", "b", "store")
	outside := filepath.Join(w.base, "outside")
	day := storedir.Day(now)
	secretKey := "raw/" + day + "/" + strings.Repeat("5e", 32) + ".zst"
	for link, target := range map[string]string{
		"raw/2026-11-22":                 outside,                              // a day directory a fetch writes to
		"entries/" + day + ".ndjson":     filepath.Join(outside, "x.ndjson"),   // a tap feed-store appends to
		"events/" + day + ".ndjson":      "../../../outside/x.ndjson",          // the same, relative
		"fetches/" + day + ".ndjson":     filepath.Join(outside, "x.ndjson"),   // the tap feed-fetch appends to
		secretKey:                        filepath.Join(outside, "secret.zst"), // a payload feed-parse would read
		"index/" + goodFeed[:2]:          outside,                              // the entry index's shard
		"state/sched-budget.json":        filepath.Join(w.base, "a", "secret"), // a file feed-store rewrites
		"urls/" + strings.Repeat("0", 2): outside,                              // the URL index's shard
		"aliases":                        outside,                              // a whole tap
		"raw/2026-11-23":                 "/etc",                               // absolute
	} {
		p := filepath.Join(root, filepath.FromSlash(link))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	before := w.outside(t)
	etc, _ := os.Stat("/etc/passwd")
	secret := w.fetch(goodFetch, goodFeed, secretKey)
	inputs := map[string]string{
		"feed-fetch":  line(w.due(goodFeed)),
		"feed-parse":  line(secret) + line(w.fetch(goodFetch, goodFeed, w.goodKey)),
		"feed-scrape": line(entry(goodFeed, goodUID, goodFetch)) + line(w.fetch(goodFetch, goodFeed, w.goodKey)),
		"feed-dedup":  line(entry(goodFeed, goodUID, goodFetch)) + line(w.fetch(goodFetch, goodFeed, w.goodKey)),
		"feed-store":  line(entry(goodFeed, goodUID, goodFetch)) + line(w.fetch(goodFetch, goodFeed, w.goodKey)),
	}
	for _, s := range stages {
		var logs, out bytes.Buffer
		err := s.run(context.Background(), w, strings.NewReader(inputs[s.name]), ndjson.NewWriter(&out), slog.New(slog.NewTextHandler(&logs, nil)))
		t.Logf("%s: %v", s.name, err)
		if after := w.outside(t); after != before {
			t.Fatalf("%s wrote outside the store:\n%s\nwas\n%s\nlog:\n%s", s.name, after, before, logs.String())
		}
		if strings.Contains(out.String(), "not for the store") {
			t.Fatalf("%s read a file outside the store", s.name)
		}
		if s.name == "feed-parse" && !strings.Contains(out.String(), `"code":"payload_unreadable"`) {
			t.Errorf("feed-parse: the payload linked outside was not refused:\n%s", out.String())
		}
	}
	if now, _ := os.Stat("/etc/passwd"); !now.ModTime().Equal(etc.ModTime()) {
		t.Fatal("/etc/passwd changed")
	}
}

// FuzzStages feeds random records to every stage against a store in a
// temporary directory and checks that nothing outside it changed. The
// seeds are each field's record with each hostile value.
func FuzzStages(f *testing.F) {
	w := newWorld(f)
	// One catalog for every run: opening it (reading its schema) was two
	// thirds of a run's time, and no record reaches the opening.
	cat, err := catalog.Open(context.Background(), w.st, slog.New(slog.DiscardHandler))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { cat.Close() })
	w.cat = cat
	for _, fl := range fields {
		for _, v := range hostileValues(w) {
			f.Add([]byte(fl.line(w, v)))
		}
		f.Add([]byte(fl.line(w, goodValue(fl.name))))
	}
	before := w.outside(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, s := range stages {
			// A failure is fine; a panic, or a file touched outside, is not.
			s.run(context.Background(), w, bytes.NewReader(in), ndjson.NewWriter(io.Discard), slog.New(slog.DiscardHandler))
			if after := w.outside(t); after != before {
				t.Fatalf("%s changed files outside the store:\n%s\nwas\n%s", s.name, after, before)
			}
		}
	})
}
