package sub

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// backupFixture subscribes to a feed with every setting a subscription
// has, a website with a scraper configuration, and a plain feed.
func backupFixture(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	for _, s := range []Spec{
		{URL: "https://example.org/all", Name: "All", Labels: []string{"news", "LEA, GOV"}, Type: "rss", Interval: time.Hour, Cron: "@hourly",
			UserAgent: "my agent", Headers: []string{"X-Token: s3cret", "Accept: application/rss+xml"}, BasicAuth: "me:pw", Fulltext: true,
			Scrape: &ndjson.ScrapeConfig{ArticleConfig: ndjson.ArticleConfig{ContentSelector: "div.body"}},
			Media:  &ndjson.MediaSettings{Types: []string{"audio/*"}, MaxBytes: 100 << 20, Images: true}},
		{URL: "https://blog.example.org/", Type: "website", Labels: []string{"blogs"},
			Scrape: &ndjson.ScrapeConfig{DiscoveryMode: "list", ListConfig: ndjson.ListConfig{ArticleSelector: "ul.posts a", MaxPages: 3}}},
		{URL: "https://example.org/plain"},
	} {
		if _, _, err := Add(e.cfg, s); err != nil {
			t.Fatal(err)
		}
	}
	min, max := 10*time.Minute, 6*time.Hour
	if err := SetOverrides(e.cfg, []string{"https://example.org/all"}, Overrides{Min: &min, Max: &max}); err != nil {
		t.Fatal(err)
	}
	if err := Pause(e.cfg, []string{"https://example.org/all"}, now.Add(72*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := SetDisabled(e.cfg, []string{"https://example.org/plain"}, true); err != nil {
		t.Fatal(err)
	}
	return e
}

func records(t *testing.T, subs []ndjson.Subscription) string {
	t.Helper()
	var b bytes.Buffer
	w := ndjson.NewWriter(&b)
	for i := range subs {
		if err := w.Write(&subs[i]); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush()
	return b.String()
}

// restore imports data into a new store, a day later, and returns its
// subscriptions.
func restore(t *testing.T, data string) ([]ndjson.Subscription, string) {
	t.Helper()
	e := newEnv(t)
	e.cfg.Now = func() time.Time { return now.Add(24 * time.Hour) }
	res, err := Import(e.cfg, strings.NewReader(data), "backup", nil)
	if err != nil || res.Invalid > 0 {
		t.Fatalf("import: %+v, %v\n%s", res, err, e.msg)
	}
	return e.subs(t), e.msg.String()
}

// The NDJSON export is a backup: imported into a new store it gives every
// subscription back as it was, every setting, secrets with --with-secrets.
func TestExportNDJSONRoundTrip(t *testing.T) {
	e := backupFixture(t)
	want := records(t, e.subs(t))
	if !strings.Contains(want, `"media":{"types":["audio/*"],"max_bytes":104857600,"images":true}`) {
		t.Fatalf("the fixture lost its media settings:\n%s", want)
	}
	e.out.Reset()
	if err := ExportNDJSON(e.cfg, true); err != nil {
		t.Fatal(err)
	}
	if e.out.String() != want {
		t.Errorf("export:\n%s\nwant the records:\n%s", e.out, want)
	}
	got, _ := restore(t, e.out.String())
	if records(t, got) != want {
		t.Errorf("restored:\n%s\nwant:\n%s", records(t, got), want)
	}

	// Without --with-secrets: no headers, no credentials, and a note.
	e.out.Reset()
	e.msg.Reset()
	if err := ExportNDJSON(e.cfg, false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(e.out.String(), "s3cret") || strings.Contains(e.out.String(), `"password"`) || !strings.Contains(e.out.String(), `"user_agent":"my agent"`) {
		t.Errorf("export without secrets:\n%s", e.out)
	}
	if e.msg.String() != "feed-sub: note: the headers and credentials of 1 feed are left out (--with-secrets keeps them)\n" {
		t.Errorf("said %q", e.msg)
	}
	got, _ = restore(t, e.out.String())
	if got[0].Auth != nil || got[0].Headers != nil || got[0].MinIntervalSec != 600 || !got[2].Disabled {
		t.Errorf("restored without secrets: %+v", got)
	}
}

// ls --json imports too: every setting but the secrets it redacted, which
// are said to be left out.
func TestImportListing(t *testing.T) {
	e := backupFixture(t)
	subs := e.subs(t)
	e.out.Reset()
	if err := List(e.cfg, ListOptions{JSON: true}); err != nil {
		t.Fatal(err)
	}
	got, msg := restore(t, e.out.String())
	subs[0].Auth = nil
	subs[0].Headers = map[string]string{"Accept": "application/rss+xml"}
	if records(t, got) != records(t, subs) {
		t.Errorf("restored:\n%s\nwant:\n%s", records(t, got), records(t, subs))
	}
	if !strings.Contains(msg, "line 1: https://example.org/all: its secrets are redacted in the file and not imported") {
		t.Errorf("said %q", msg)
	}
}

// A store's subscription log imports as the list it records: the last
// line of a feed wins, and a removal removes.
func TestImportSubscriptionLog(t *testing.T) {
	e := backupFixture(t)
	if err := Remove(e.cfg, []string{"https://example.org/plain"}); err != nil {
		t.Fatal(err)
	}
	log, err := e.cfg.Store.ReadFile("subscriptions.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := restore(t, string(log))
	if records(t, got) != records(t, e.subs(t)) {
		t.Errorf("restored:\n%s\nwant:\n%s", records(t, got), records(t, e.subs(t)))
	}
}

// OPML keeps a website, its scraper configuration and full text in
// feedpipe's own attributes, which feedpipe's import reads back.
func TestExportOPMLKeepsFeedpipeSettings(t *testing.T) {
	e := backupFixture(t)
	e.out.Reset()
	if err := Export(e.cfg); err != nil {
		t.Fatal(err)
	}
	doc := e.out.String()
	for _, want := range []string{`<opml version="2.0" xmlns:feedpipe="https://github.com/feedpipe/feedpipe/opml">`,
		`feedpipe:sourceType="website"`, `feedpipe:fulltext="true"`, `feedpipe:scrape="{&#34;discovery_mode&#34;:&#34;list&#34;`} {
		if !strings.Contains(doc, want) {
			t.Errorf("OPML lacks %s:\n%s", want, doc)
		}
	}
	got, _ := restore(t, doc)
	want := e.subs(t)
	for i := range want {
		g, w := got[i], want[i]
		if g.URL != w.URL || g.SourceType != w.SourceType || g.Fulltext != w.Fulltext || string(g.Scrape) != string(w.Scrape) {
			t.Errorf("restored %s: type %q fulltext %v scrape %s; want %q %v %s", w.URL, g.SourceType, g.Fulltext, g.Scrape, w.SourceType, w.Fulltext, w.Scrape)
		}
	}
}

// TestOPMLSeveralLabels: the OPML export puts a feed with several labels
// in the folder of each (a label with a comma, which category cannot
// hold, too), and import gives it back as one subscription with them all.
func TestOPMLSeveralLabels(t *testing.T) {
	e := newEnv(t)
	Add(e.cfg, Spec{URL: "https://a.example/feed", Name: "A", Labels: []string{"news", "World, Politics", "tech"}})
	e.out.Reset()
	if err := Export(e.cfg); err != nil {
		t.Fatal(err)
	}
	doc := e.out.String()
	if n := strings.Count(doc, `xmlUrl="https://a.example/feed"`); n != 3 {
		t.Errorf("the feed is in %d folders, want 3:\n%s", n, doc)
	}
	back := newEnv(t)
	res, err := Import(back.cfg, strings.NewReader(doc), "export.opml", nil)
	if err != nil || res.Added != 1 || res.Duplicates != 0 {
		t.Fatalf("%+v %v\n%s", res, err, back.msg)
	}
	subs := back.subs(t)
	if len(subs) != 1 || strings.Join(subs[0].Labels, "|") != "news|tech|World, Politics" && strings.Join(subs[0].Labels, "|") != "news|World, Politics|tech" {
		t.Errorf("%+v", subs)
	}
}
