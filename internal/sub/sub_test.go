package sub

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/ids"
	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

type env struct {
	cfg      Config
	out, msg *bytes.Buffer
}

func newEnv(t *testing.T) *env {
	t.Helper()
	st, err := storedir.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{out: &bytes.Buffer{}, msg: &bytes.Buffer{}}
	e.cfg = Config{Store: st, Out: e.out, Msg: e.msg, Now: func() time.Time { return now }}
	return e
}

func (e *env) subs(t *testing.T) []ndjson.Subscription {
	t.Helper()
	cat := e.catalog(t)
	defer cat.Close()
	subs, err := cat.Subscriptions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return subs
}

func (e *env) catalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	cat, err := catalog.Open(context.Background(), e.cfg.Store, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

// putStates writes feed states to the catalog.
func (e *env) putStates(t *testing.T, states ...catalog.FeedState) {
	t.Helper()
	cat := e.catalog(t)
	defer cat.Close()
	if err := cat.Update(context.Background(), func(tx *catalog.Tx) error { return tx.PutStates(states...) }); err != nil {
		t.Fatal(err)
	}
}

func TestAdd(t *testing.T) {
	e := newEnv(t)
	sub, added, err := Add(e.cfg, Spec{URL: " HTTPS://Example.org:443/feed.xml#top ", Name: "Ex", Labels: []string{" a ", "LEA, GOV", "a", ""}, Interval: 30 * time.Minute})
	if err != nil || !added {
		t.Fatal(err)
	}
	want := ndjson.Subscription{Header: ndjson.Head("subscription"), FeedID: ids.FeedID("https://example.org/feed.xml"), URL: "https://example.org/feed.xml",
		Name: "Ex", Labels: []string{"a", "LEA, GOV"}, SourceType: "auto", IntervalSec: 1800, CreatedAt: ndjson.At(now)}
	got, _ := ndjson.Marshal(sub)
	wantLine, _ := ndjson.Marshal(want)
	if !bytes.Equal(got, wantLine) {
		t.Fatalf("got  %s\nwant %s", got, wantLine)
	}
	if e.out.String() != want.FeedID+"\n" || !strings.Contains(e.msg.String(), "subscribed to https://example.org/feed.xml") {
		t.Errorf("stdout %q, messages %q", e.out, e.msg)
	}
	// The same feed spelled differently is not added twice, and that is fine.
	_, added, err = Add(e.cfg, Spec{URL: "https://EXAMPLE.org/feed.xml"})
	if err != nil || added || len(e.subs(t)) != 1 || !strings.Contains(e.msg.String(), "already subscribed") {
		t.Fatalf("second add: added %v, err %v, %d subs", added, err, len(e.subs(t)))
	}
}

func TestAddRefusesBadInput(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{URL: "ftp://example.org/feed"}, `"ftp://example.org/feed": only http and https URLs can be fetched`},
		{Spec{URL: "file:///etc/passwd"}, "only http and https"},
		{Spec{URL: "example.org/feed"}, "has no scheme"},
		{Spec{URL: "https://example.org/", Type: "gopher"}, `type "gopher" is not one of`},
		{Spec{URL: "https://example.org/", Interval: -time.Minute}, "negative"},
		{Spec{URL: "https://example.org/", Name: "a\r\nSet-Cookie: x"}, `name "a\r\nSet-Cookie: x": not a name: it has the control character U+000D`},
		{Spec{URL: "https://example.org/", Name: "<script>alert(1)</script>"}, "no markup"},
		{Spec{URL: "https://example.org/", Name: "news\u202egnp.exe"}, "bidi control U+202E"},
		{Spec{URL: "https://example.org/", Labels: []string{"ok", "bad\x1b[2J"}}, `label "bad\x1b[2J"`},
	} {
		_, _, err := Add(e.cfg, tc.spec)
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.spec, err, tc.want)
		}
	}
	if len(e.subs(t)) != 0 {
		t.Fatal("a refused subscription was stored")
	}
}

// TestImportDropsBadNames: a file's feed whose title or folder is no
// name is imported without it, and said so.
func TestImportDropsBadNames(t *testing.T) {
	e := newEnv(t)
	doc := `<opml version="2.0"><body><outline text="bad&#x202e;folder">
<outline type="rss" text="Evil&#x1b;[2J name" xmlUrl="https://example.org/a.xml"/>
<outline type="rss" text="Fine" xmlUrl="https://example.org/b.xml"/></outline></body></opml>`
	if _, err := Import(e.cfg, strings.NewReader(doc), "list.opml", nil); err != nil {
		t.Fatal(err)
	}
	subs := e.subs(t)
	if len(subs) != 2 || subs[0].Name != "" || subs[1].Name != "Fine" || len(subs[0].Labels)+len(subs[1].Labels) != 0 {
		t.Fatalf("imported %+v", subs)
	}
	if msg := e.msg.String(); !strings.Contains(msg, `its name "Evil\x1b[2J name" is left out`) || !strings.Contains(msg, "its label") {
		t.Errorf("messages: %s", msg)
	}
}

func TestAddAccess(t *testing.T) {
	e := newEnv(t)
	sub, _, err := Add(e.cfg, Spec{URL: "https://example.org/private", UserAgent: "mine/1", BasicAuth: "ann:pa:ss",
		Headers: []string{"x-api-key: k1", "Accept: application/rss+xml", "X-Auth: xa1", "X-Access-Key: xk1", "Api_Key: ak1"}})
	if err != nil {
		t.Fatal(err)
	}
	if sub.UserAgent != "mine/1" || sub.Headers["X-Api-Key"] != "k1" || sub.Headers["Accept"] != "application/rss+xml" || sub.Auth == nil || sub.Auth.Password != "pa:ss" {
		t.Fatalf("access %+v", sub.Access)
	}
	for _, spec := range []Spec{{URL: "https://example.org/a", Headers: []string{"no colon"}}, {URL: "https://example.org/b", Headers: []string{"Bad Name: v"}}, {URL: "https://example.org/c", BasicAuth: "nocolon"}} {
		if _, _, err := Add(e.cfg, spec); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v", spec, err)
		}
	}
	e.out.Reset()
	List(e.cfg, ListOptions{JSON: true})
	// A header's name does not tell whether its value is a secret: every
	// value is hidden, but those of standard headers.
	if strings.Contains(e.out.String(), "pa:ss") || strings.Contains(e.out.String(), "k1") || !strings.Contains(e.out.String(), `"username":"ann"`) ||
		!strings.Contains(e.out.String(), `"Accept":"application/rss+xml"`) {
		t.Errorf("ls --json shows secrets, or hides Accept: %s", e.out)
	}
	e.msg.Reset()
	if err := Set(e.cfg, []string{sub.FeedID}, Changes{Headers: ptr([]string{"X-Auth: xa2", "X-Access-Key: xk1"})}); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"k1", "xa1", "xa2", "xk1", "ak1"} {
		if strings.Contains(e.msg.String(), secret) || !strings.Contains(e.msg.String(), `"X-Auth: (redacted)"`) {
			t.Errorf("feed-sub set shows %q: %s", secret, e.msg)
		}
	}
	info, _ := os.Stat(e.cfg.Store.Path(catalog.SubscriptionsFile))
	if info.Mode().Perm()&0o077 != 0 {
		t.Errorf("subscriptions.ndjson, which holds passwords, has mode %v", info.Mode().Perm())
	}
}

// TestURLCredentialsBecomeBasicAuth: a password written into the URL
// would be recorded and logged with it, and make the feed id; it is kept
// as the basic auth instead, by add and import alike, unless --basic-auth
// says otherwise.
func TestURLCredentialsBecomeBasicAuth(t *testing.T) {
	e := newEnv(t)
	sub, _, err := Add(e.cfg, Spec{URL: "https://ann:s3cret@example.org/private"})
	if err != nil {
		t.Fatal(err)
	}
	if sub.URL != "https://example.org/private" || sub.FeedID != ids.FeedID("https://example.org/private") ||
		sub.Auth == nil || *sub.Auth != (ndjson.Auth{Username: "ann", Password: "s3cret"}) {
		t.Fatalf("url %q, id %q, auth %+v", sub.URL, sub.FeedID, sub.Auth)
	}
	sub, _, err = Add(e.cfg, Spec{URL: "https://old:pw@example.org/other", BasicAuth: "bob:n3w"})
	if err != nil || sub.URL != "https://example.org/other" || *sub.Auth != (ndjson.Auth{Username: "bob", Password: "n3w"}) {
		t.Fatalf("with --basic-auth: %v, url %q, auth %+v", err, sub.URL, sub.Auth)
	}
	if _, err := Import(e.cfg, strings.NewReader("https://cat:m30w@example.org/imported\n"), "in", nil); err != nil {
		t.Fatal(err)
	}
	subs := e.subs(t)
	if got := subs[len(subs)-1]; got.URL != "https://example.org/imported" || got.Auth == nil || got.Auth.Password != "m30w" {
		t.Fatalf("imported: url %q, auth %+v", got.URL, got.Auth)
	}
	for _, secret := range []string{"s3cret", "m30w", "pw@"} {
		if strings.Contains(e.out.String(), secret) || strings.Contains(e.msg.String(), secret) {
			t.Errorf("%q was shown:\n%s%s", secret, e.out, e.msg)
		}
	}
}

func TestIntervalClamped(t *testing.T) {
	e := newEnv(t)
	a, _, _ := Add(e.cfg, Spec{URL: "https://example.org/a", Interval: time.Minute})
	b, _, _ := Add(e.cfg, Spec{URL: "https://example.org/b", Interval: 72 * time.Hour})
	if a.IntervalSec != 300 || b.IntervalSec != 86400 || !strings.Contains(e.msg.String(), "raised to the minimum") || !strings.Contains(e.msg.String(), "lowered to the maximum") {
		t.Fatalf("intervals %d %d, messages %q", a.IntervalSec, b.IntervalSec, e.msg)
	}
}

func TestRemoveEnableDisable(t *testing.T) {
	e := newEnv(t)
	a, _, _ := Add(e.cfg, Spec{URL: "https://example.org/a"})
	b, _, _ := Add(e.cfg, Spec{URL: "https://example.org/b"})
	if err := SetDisabled(e.cfg, []string{a.FeedID[:8], "https://example.org/b"}, true); err != nil {
		t.Fatal(err)
	}
	subs := e.subs(t)
	if !subs[0].Disabled || !subs[1].Disabled {
		t.Fatalf("not disabled: %+v", subs)
	}
	if err := SetDisabled(e.cfg, []string{a.FeedID}, false); err != nil || e.subs(t)[0].Disabled {
		t.Fatalf("enable: %v", err)
	}
	// One unknown reference changes nothing at all, and says nothing else.
	e.msg.Reset()
	err := Remove(e.cfg, []string{b.FeedID, "zzzzzzzz"})
	if !errors.Is(err, catalog.ErrNoSuchSubscription) || len(e.subs(t)) != 2 || e.msg.Len() != 0 {
		t.Fatalf("err %v, %d subs, messages %q", err, len(e.subs(t)), e.msg)
	}
	if err := Remove(e.cfg, []string{b.FeedID}); err != nil || len(e.subs(t)) != 1 {
		t.Fatalf("remove: %v", err)
	}
	if err := Remove(e.cfg, nil); err == nil {
		t.Fatal("remove with no reference")
	}
}

func TestList(t *testing.T) {
	e := newEnv(t)
	a, _, _ := Add(e.cfg, Spec{URL: "https://example.org/a", Name: "Alpha", Labels: []string{"news"}})
	b, _, _ := Add(e.cfg, Spec{URL: "https://example.org/b"})
	SetDisabled(e.cfg, []string{"https://example.org/b"}, true)
	e.putStates(t,
		catalog.FeedState{FeedID: a.FeedID, LastFetchAt: ndjson.At(now.Add(-5 * time.Minute)), NextFetchAt: ndjson.At(now.Add(55 * time.Minute)), ConsecutiveFailures: 3,
			LastError: &ndjson.Error{Code: "http_500"}},
		catalog.FeedState{FeedID: b.FeedID, Title: "Bravo's own title"})
	e.out.Reset()
	if err := List(e.cfg, ListOptions{}); err != nil {
		t.Fatal(err)
	}
	table := e.out.String()
	for _, want := range []string{"FEED ID", a.FeedID[:8], "Alpha", "news", "failing (3): http_500", "5m ago", "in 55m", "disabled", "Bravo's own title", "https://example.org/b"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	e.out.Reset()
	if err := List(e.cfg, ListOptions{JSON: true, Label: "news"}); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(e.out.String()), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], `{"type":"subscription","v":1,"feed_id":"`+a.FeedID) {
		t.Fatalf("json: %q", e.out.String())
	}
}

// TestListFitsAndStates: ls --state lists the feeds of one state, as
// STATUS begins; on a terminal of 120 columns the table fits it, the URL
// cut in its middle first (it was 181 columns); piped, lines are whole.
func TestListFitsAndStates(t *testing.T) {
	e := newEnv(t)
	long := "https://feeds.example.org/some/very/long/path/to/a/feed/that/is/long/indeed.xml"
	a, _, _ := Add(e.cfg, Spec{URL: long, Name: "A feed with a rather long name indeed", Labels: []string{"news", "technology", "science"}})
	Add(e.cfg, Spec{URL: "https://example.org/b"})
	SetDisabled(e.cfg, []string{"https://example.org/b"}, true)
	e.putStates(t, catalog.FeedState{FeedID: a.FeedID, LastFetchAt: ndjson.At(now.Add(-5 * time.Minute)), NextFetchAt: ndjson.At(now.Add(55 * time.Minute)),
		ConsecutiveFailures: 3, LastError: &ndjson.Error{Code: "http_500"}})
	for _, width := range []int{120, 0} {
		e.out.Reset()
		if err := List(e.cfg, ListOptions{Width: width}); err != nil {
			t.Fatal(err)
		}
		widest := 0
		for _, l := range strings.Split(strings.TrimSpace(e.out.String()), "\n") {
			widest = max(widest, len([]rune(l)))
		}
		switch {
		case width > 0 && (widest > width || !strings.Contains(e.out.String(), "https://feeds.e") || !strings.Contains(e.out.String(), "indeed.xml")):
			t.Errorf("width %d: %d columns:\n%s", width, widest, e.out.String())
		case width == 0 && !strings.Contains(e.out.String(), long):
			t.Errorf("piped: the URL is cut:\n%s", e.out.String())
		}
	}
	for state, want := range map[string]string{"failing": "feeds.example.org", "disabled": "example.org/b"} {
		e.out.Reset()
		if err := List(e.cfg, ListOptions{State: state}); err != nil {
			t.Fatal(err)
		}
		if lines := strings.Split(strings.TrimSpace(e.out.String()), "\n"); len(lines) != 2 || !strings.Contains(lines[1], want) {
			t.Errorf("--state %s:\n%s", state, e.out.String())
		}
	}
	if err := List(e.cfg, ListOptions{State: "asleep"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("--state asleep: %v", err)
	}
}

const opmlDoc = `<?xml version="1.0"?>
<opml version="2.0"><head><title>mine</title></head><body>
<outline text="Tech">
  <outline text="Go">
    <outline text="Go blog" type="rss" xmlUrl="https://go.dev/blog/feed.atom"/>
  </outline>
  <outline text="LWN" type="rss" xmlUrl="https://lwn.net/headlines/rss" category="/Linux/News"/>
</outline>
<outline text="dup" type="rss" xmlUrl="https://LWN.net/headlines/rss"/>
<outline text="bad" type="rss" xmlUrl="javascript:alert(1)"/>
<outline text="top" type="rss" xmlUrl="http://example.org/feed?a=1&b=2"/>
</body></opml>`

func TestImportFormats(t *testing.T) {
	for _, tc := range []struct {
		name, data, format          string
		found, added, dups, invalid int
		check                       func(t *testing.T, subs []ndjson.Subscription)
	}{
		{name: "opml", data: opmlDoc, format: "opml", found: 4, added: 3, invalid: 1, check: func(t *testing.T, subs []ndjson.Subscription) {
			if subs[0].Name != "Go blog" || strings.Join(subs[0].Labels, ",") != "Tech,Go,imported" {
				t.Errorf("first: %+v", subs[0])
			}
			if strings.Join(subs[1].Labels, ",") != "Tech,Linux,News,imported" {
				t.Errorf("category labels: %v", subs[1].Labels)
			}
			if subs[2].URL != "http://example.org/feed?a=1&b=2" {
				t.Errorf("bare & in an attribute: %q", subs[2].URL)
			}
		}},
		{name: "feeds.json", data: `[
			{"url": "https://www.reuters.com/world/us/rss", "label": "reuters", "cron": "*/20 * * * *"},
			{"url": "https://www.nature.com/nature.rss",    "label": "nature",  "cron": "0 * * * *", "interval": "2h"},
			"https://example.org/plain",
			{"url": "https://example.org/bad-interval", "interval": "often"}
		]`, format: "json", found: 4, added: 3, invalid: 1, check: func(t *testing.T, subs []ndjson.Subscription) {
			if subs[0].Cron != "*/20 * * * *" || strings.Join(subs[0].Labels, ",") != "reuters,imported" || subs[1].IntervalSec != 7200 {
				t.Errorf("%+v", subs[:2])
			}
		}},
		{name: "json by category", data: `{"tech": ["https://a.example/feed"], "art": [{"url": "https://b.example/feed", "name": "B"}]}`, format: "json", found: 2, added: 2,
			check: func(t *testing.T, subs []ndjson.Subscription) {
				if subs[0].Labels[0] != "art" || subs[0].Name != "B" || subs[1].Labels[0] != "tech" {
					t.Errorf("%+v", subs)
				}
			}},
		{name: "list", data: "# my feeds\nhttps://a.example/feed news daily\n\n  https://b.example/rss # comment\nnot-a-url\nhttps://a.example/feed\n", format: "list", found: 3, added: 2, invalid: 1,
			check: func(t *testing.T, subs []ndjson.Subscription) {
				if strings.Join(subs[0].Labels, ",") != "news,daily,imported" {
					t.Errorf("labels %v", subs[0].Labels)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			res, err := Import(e.cfg, strings.NewReader(tc.data), "in", []string{"imported"})
			if tc.invalid > 0 {
				if !errors.Is(err, pipe.ErrFailed) {
					t.Errorf("err %v, want the invalid entries reported", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			want := ImportResult{Format: tc.format, Found: tc.found, Added: tc.added, Duplicates: tc.dups, Invalid: tc.invalid}
			if res != want {
				t.Fatalf("result %+v, want %+v\nmessages:\n%s", res, want, e.msg)
			}
			tc.check(t, e.subs(t))
		})
	}
}

func TestImportAgainAddsNothing(t *testing.T) {
	e := newEnv(t)
	Import(e.cfg, strings.NewReader(opmlDoc), "in", nil)
	res, _ := Import(e.cfg, strings.NewReader(opmlDoc), "in", nil)
	if res.Added != 0 || res.Duplicates != 3 || !strings.Contains(e.msg.String(), "0 added, 3 duplicates skipped, 1 invalid") {
		t.Fatalf("%+v\n%s", res, e.msg)
	}
}

func TestImportNothing(t *testing.T) {
	e := newEnv(t)
	for _, data := range []string{"", "# only a comment\n", "[]"} {
		if _, err := Import(e.cfg, strings.NewReader(data), "empty.txt", nil); err == nil || !strings.Contains(err.Error(), "no feed URLs found") {
			t.Errorf("%q: %v", data, err)
		}
	}
	if _, err := Import(e.cfg, strings.NewReader("<html><body>hi</body></html>"), "page.html", nil); err == nil {
		t.Error("an HTML page imported without error")
	}
}

func TestExportRoundTrip(t *testing.T) {
	e := newEnv(t)
	Import(e.cfg, strings.NewReader(opmlDoc), "in", nil)
	e.out.Reset()
	if err := Export(e.cfg); err != nil {
		t.Fatal(err)
	}
	exported := e.out.String()
	other := newEnv(t)
	res, err := Import(other.cfg, strings.NewReader(exported), "export.opml", nil)
	if err != nil || res.Added != 3 {
		t.Fatalf("%+v %v\n%s", res, err, exported)
	}
	a, b := e.subs(t), other.subs(t)
	for i := range a {
		if a[i].URL != b[i].URL || a[i].Name != b[i].Name || strings.Join(a[i].Labels, ",") != strings.Join(b[i].Labels, ",") {
			t.Errorf("round trip changed\n%+v\n%+v", a[i], b[i])
		}
	}
}

// FuzzCandidates feeds arbitrary files to the import format reader: it must
// never panic, and whatever it finds must be reported, not lost.
func FuzzCandidates(f *testing.F) {
	for _, seed := range []string{opmlDoc, "https://a.example/feed\n# c\n", `[{"url":"https://a","label":"x","interval":"2h"},"https://b"]`,
		`{"feeds":[{"xmlUrl":"https://c"}]}`, `{"cat":[{"url":5}]}`, "<opml><body><outline xmlUrl='x'>", "\xef\xbb\xbf[\"https://d\"]"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, cands, _, err := candidates(data)
		if err != nil {
			return
		}
		for _, c := range cands {
			if c.where == "" {
				t.Fatalf("candidate without a place for messages: %+v", c)
			}
		}
	})
}

// TestImportGarbage: a file that is no list of feeds (here 5,000 lines of
// junk, as a binary read as a list would be) is said to be one, once,
// and nothing is subscribed; a list with many bad lines among good ones
// reports the first 20 and counts the rest.
func TestImportGarbage(t *testing.T) {
	e := newEnv(t)
	junk := strings.Repeat("\x00\x17garbage line\n", 5000)
	_, err := Import(e.cfg, strings.NewReader(junk), "junk.bin", nil)
	if err == nil || !strings.Contains(err.Error(), "junk.bin: not a list of feeds: its first 100 entries (of 5000) are no feed URLs") {
		t.Errorf("err %v", err)
	}
	if n := strings.Count(e.msg.String(), "\n"); n > 0 {
		t.Errorf("%d lines of messages:\n%s", n, e.msg.String())
	}
	if subs := e.subs(t); len(subs) != 0 {
		t.Errorf("subscribed to %d feeds", len(subs))
	}

	mixed := "https://a.example/feed\n" + strings.Repeat("not-a-url\n", 300)
	res, err := Import(e.cfg, strings.NewReader(mixed), "mixed.txt", nil)
	if !errors.Is(err, pipe.ErrFailed) || res.Added != 1 || res.Invalid != 300 {
		t.Fatalf("%+v %v", res, err)
	}
	msg := e.msg.String()
	if n := strings.Count(msg, "feed-sub: skipped mixed.txt: line "); n != 20 || !strings.Contains(msg, "feed-sub: skipped 280 more entries of mixed.txt that cannot be used (--log-level debug lists them)\n") {
		t.Errorf("%d lines of skipped entries:\n%s", n, msg)
	}
}

// TestImportRepeatedFeed: a feed under several folders of an OPML file
// (as feed-sub export writes a feed with several labels) is one
// subscription with the label of each.
func TestImportRepeatedFeed(t *testing.T) {
	e := newEnv(t)
	doc := `<opml version="2.0"><body>
<outline text="news"><outline text="A" xmlUrl="https://a.example/feed"/></outline>
<outline text="tech"><outline text="A" xmlUrl="https://a.example/feed"/></outline>
</body></opml>`
	res, err := Import(e.cfg, strings.NewReader(doc), "two.opml", nil)
	if err != nil || res.Found != 1 || res.Added != 1 || res.Duplicates != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	if subs := e.subs(t); len(subs) != 1 || strings.Join(subs[0].Labels, ",") != "news,tech" {
		t.Errorf("%+v", subs)
	}
}
