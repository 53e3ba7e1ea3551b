package serve

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/feedwrite"
	"github.com/feedpipe/feedpipe/internal/parse"
	"github.com/feedpipe/feedpipe/internal/sub"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

var linkRe = regexp.MustCompile(`<([^>]+)>; rel="(\w+)"`)

// links reads a Link header into a map by rel.
func links(h string) map[string]string {
	out := map[string]string{}
	for _, m := range linkRe.FindAllStringSubmatch(h, -1) {
		out[m[2]] = m[1]
	}
	return out
}

// TestMetaFeeds: each collection in each format, page by page through
// rel=next (RFC 5005), is parsed by feed-parse to exactly the entries the
// API lists for it, newest first, with self, next and hub links in the
// header and in the document.
func TestMetaFeeds(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.Hub = "https://hub.example/" })
	id := w.ids["TechCrunch.xml"]
	stored := w.storedEntries()
	for _, tc := range []struct{ feed, entries string }{
		{"/all", "/entries"},
		{"/labels/news", "/entries?label=news"},
		{"/feeds/" + id + "/feed", "/feeds/" + id + "/entries"},
	} {
		var want []string
		var p entriesPage
		w.get(tc.entries+sep(tc.entries)+"limit=1000").json(t, &p)
		for _, e := range p.Entries {
			want = append(want, e.FeedID+":"+e.EntryUID)
		}
		for _, format := range feedwrite.Formats {
			ext := map[string]string{feedwrite.Atom: ".atom", feedwrite.RSS: ".rss", feedwrite.JSON: ".json"}[format]
			var got []string
			next := w.api.URL + tc.feed + ext + "?limit=9"
			pages := 0
			for next != "" {
				path := strings.TrimPrefix(next, w.api.URL)
				r := w.get(path)
				if r.status != 200 || r.header.Get("Content-Type") != feedwrite.ContentType(format) {
					t.Fatalf("%s: %d %s %s", path, r.status, r.header.Get("Content-Type"), r.body)
				}
				l := links(r.header.Get("Link"))
				if l["self"] != next || l["hub"] != "https://hub.example/" {
					t.Errorf("%s: Link %q", path, r.header.Get("Link"))
				}
				f, err := parse.ParseFeed(r.body, parse.Source{FeedID: "00000000-0000-5000-8000-0000000000ff", BaseURL: next})
				if err != nil {
					t.Fatalf("%s: feed-parse: %v\n%s", path, err, r.body)
				}
				if f.Info.Self != next || !slices.Contains(f.Info.Hubs, "https://hub.example/") {
					t.Errorf("%s: the document's self %q, hubs %v", path, f.Info.Self, f.Info.Hubs)
				}
				for _, e := range f.Entries {
					// The id names the entry it was written from: its
					// feed and uid.
					ref := strings.TrimPrefix(e.NativeID, "urn:feedpipe:")
					got = append(got, ref)
					k := strings.SplitN(ref, ":", 2)
					s, ok := stored[[2]string{k[0], k[1]}]
					if !ok {
						t.Fatalf("%s: an entry that is not stored: %s", path, e.NativeID)
					}
					if e.Title != strings.TrimSpace(s.Title) && format == feedwrite.JSON || e.CanonicalLink != s.CanonicalLink {
						t.Errorf("%s: entry %s: %q %q, stored %q %q", path, ref, e.Title, e.CanonicalLink, s.Title, s.CanonicalLink)
					}
				}
				next = l["next"]
				pages++
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s%s: %d entries in %d pages, the API lists %d:\n%v\n%v", tc.feed, ext, len(got), pages, len(want), got, want)
			}
		}
	}
}

func sep(path string) string {
	if strings.Contains(path, "?") {
		return "&"
	}
	return "?"
}

// TestPublish: one file per label and format, and all, written
// atomically, rewritten only when the content changed; labels without
// entries and labels that cannot be file names get none.
func TestPublish(t *testing.T) {
	w := newWorld(t)
	// A label without entries, and labels that cannot be file names.
	for _, l := range []string{"empty", "a/b", "..", ".hidden", "all"} {
		if _, _, err := sub.Add(sub.Config{Store: w.st, Catalog: w.cat, Out: io.Discard}, sub.Spec{URL: "https://x.example/" + strings.ReplaceAll(l, "/", "_") + ".xml", Labels: []string{l}}); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(t.TempDir(), "pub")
	cfg := PublishConfig{Catalog: w.cat, Dir: dir, BaseURL: "https://example.org/feeds/", Limit: 10}
	sum, err := Publish(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{"all.atom", "all.json", "all.xml", "cloud.atom", "cloud.json", "cloud.xml", "news.atom", "news.json", "news.xml", "video.atom", "video.json", "video.xml"}
	if !slices.Equal(names, want) || sum.Written != len(want) || sum.Empty != 1 || len(sum.Skipped) != 4 {
		t.Fatalf("files %v, summary %+v", names, sum)
	}
	for _, name := range want {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		f, err := parse.ParseFeed(b, parse.Source{FeedID: "00000000-0000-5000-8000-0000000000ff"})
		if err != nil || len(f.Entries) == 0 || len(f.Entries) > 10 || f.Info.Self != "https://example.org/feeds/"+name {
			t.Errorf("%s: %v, self %q", name, err, f.Info.Self)
		}
		if fi, _ := os.Stat(filepath.Join(dir, name)); fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v", name, fi.Mode())
		}
	}
	// Again: nothing changed, nothing written (the files keep their
	// times).
	old, _ := os.Stat(filepath.Join(dir, "news.atom"))
	time.Sleep(10 * time.Millisecond)
	if sum, err = Publish(context.Background(), cfg); err != nil || sum.Written != 0 || sum.Unchanged != len(want) {
		t.Fatalf("again: %+v %v", sum, err)
	}
	if now, _ := os.Stat(filepath.Join(dir, "news.atom")); !now.ModTime().Equal(old.ModTime()) {
		t.Errorf("an unchanged file was written again")
	}
	// A new entry for news: its files and all's change, video's do not.
	os.WriteFile(filepath.Join(w.www, "TechCrunch.xml"), []byte(strings.Replace(string(mustRead(t, "TechCrunch.xml")), "<item>",
		"<item><title>Brand new</title><link>https://techcrunch.com/brand-new</link><guid>brand-new</guid><pubDate>Sat, 21 Nov 2026 09:00:00 GMT</pubDate></item><item>", 1)), 0o644)
	w.cycle(t0.Add(2 * time.Hour))
	if sum, err = Publish(context.Background(), cfg); err != nil || sum.Written != 6 {
		t.Fatalf("after a new entry: %+v %v", sum, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "news.xml")); !strings.Contains(string(b), "Brand new") {
		t.Errorf("news.xml lacks the new entry")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	_ = catalog.DefaultLimit
	_ = ndjson.TypeEntry
}

// TestPublishSelfEncoded: a label's file keeps its name, and its self
// link has it percent-encoded.
func TestPublishSelfEncoded(t *testing.T) {
	w := newWorld(t)
	label := "two words#x?"
	if err := sub.Set(sub.Config{Store: w.st, Catalog: w.cat, Out: io.Discard, Msg: io.Discard}, []string{w.ids["youtube_atom.xml"]}, sub.Changes{AddLabels: []string{label}}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := Publish(context.Background(), PublishConfig{Catalog: w.cat, Dir: dir, BaseURL: "https://example.org/feeds", Limit: 5}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, label+".atom"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := parse.ParseFeed(b, parse.Source{FeedID: "00000000-0000-5000-8000-0000000000ff"})
	if err != nil || f.Info.Self != "https://example.org/feeds/two%20words%23x%3F.atom" {
		t.Errorf("self %q %v", f.Info.Self, err)
	}
}
