package read

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/table"
	"github.com/feedpipe/feedpipe/internal/testids"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

var (
	ctx = context.Background()
	t0  = time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
)

// testStore is a store of three feeds and their entries, made through
// the catalog as feed-store makes it.
func testStore(t *testing.T) *catalog.Catalog {
	t.Helper()
	st, err := storedir.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Open(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	sub := func(name, display string, labels ...string) ndjson.Subscription {
		return ndjson.Subscription{Header: ndjson.Head(ndjson.TypeSubscription), FeedID: testids.Feed(name), URL: "https://" + name + ".example/feed",
			Name: display, Labels: labels, SourceType: ndjson.SourceAuto, CreatedAt: ndjson.At(t0)}
	}
	err = cat.EditSubscriptions(ctx, func(list []ndjson.Subscription) ([]ndjson.Subscription, error) {
		return append(list, sub("tech", "Tech News", "news"), sub("jp", "日本語のブログ", "news", "jp"), sub("plain", "")), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	entries := []*ndjson.Entry{
		entry("tech", "t1", t0, "Go 1.26 is released", "https://tech.example/go-1-26",
			`<p>The Go team is happy to announce <a href="/dl">Go 1.26</a>.</p><ul><li>faster builds</li><li>new <code>iter</code> helpers</li></ul><script>track()</script>`),
		entry("tech", "t2", t0.Add(time.Hour), "A title\twith a tab and a\nnewline and a \x1b[31mcolour", "https://tech.example/odd", "plain text summary"),
		entry("jp", "j1", t0.Add(2*time.Hour), "東京で新しいカフェが開店しました、とても長いタイトルがここに続きます、さらに続きます", "https://jp.example/cafe", "<p>カフェ</p>"),
		entry("plain", "p1", t0.Add(3*time.Hour), "", "https://plain.example/untitled", ""),
		entry("plain", "p2", t0.Add(4*time.Hour), "Searchable words: aardvark zebra", "https://plain.example/animals",
			`<h2>Animals</h2><p>An aardvark met a zebra.<br>The end.</p><blockquote>quoted</blockquote><p><img src="https://plain.example/a.png" alt="aardvark"></p>`),
	}
	storeEntries(t, cat, entries...)
	return cat
}

// storeEntries stores entries as feed-store does.
func storeEntries(t *testing.T, cat *catalog.Catalog, entries ...*ndjson.Entry) {
	t.Helper()
	st := cat.Store()
	for _, e := range entries {
		b, err := ndjson.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		day := e.FirstSeen.Time.Format(time.DateOnly)
		off, err := st.AppendLines("entries/"+day+".ndjson", b, storedir.Durable)
		if err != nil {
			t.Fatal(err)
		}
		if err := cat.Update(ctx, func(tx *catalog.Tx) error {
			return tx.StoreVersion(e, catalog.Location{Day: day, Offset: off, Length: int64(len(b))})
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestUntitled: an entry without a title (a JSON Feed item needs none)
// is shown by the start of its text, on a terminal and by show, as
// feed-serve's page shows it (entrytext.Title); it was "(no title)".
func TestUntitled(t *testing.T) {
	cat := testStore(t)
	storeEntries(t, cat, entry("plain", "p3", t0.Add(5*time.Hour), "", "https://plain.example/note", "<p>Just a <b>note</b>, posted without a title.</p>"))
	out, _, err := run(t, cat, Config{Format: Terminal, Width: 120, Limit: 1}, list)
	if err != nil || !strings.HasSuffix(out, "  Just a note, posted without a title.\n") {
		t.Errorf("terminal: %v\n%s", err, out)
	}
	out, _, err = run(t, cat, Config{}, func(cfg Config) error { return Show(ctx, cfg, []string{testids.UID("p3"), testids.UID("p1")}, true) })
	if err != nil || !strings.HasPrefix(out, "Just a note, posted without a title.\n") || !strings.Contains(out, "\n(untitled)\n") {
		t.Errorf("show: %v\n%s", err, out)
	}
}

func entry(feed, uid string, seen time.Time, title, link, content string) *ndjson.Entry {
	return &ndjson.Entry{Header: ndjson.Head(ndjson.TypeEntry), FeedID: testids.Feed(feed), EntryUID: testids.UID(uid), Title: title, CanonicalLink: link,
		Content: content, ContentHash: "h" + uid, FirstSeen: ndjson.At(seen), LastSeen: ndjson.At(seen), SeenCount: 1,
		Published: ndjson.At(seen.Add(-30 * time.Minute)), Authors: []ndjson.Author{{Name: "A. Writer"}}, Status: ndjson.StatusNew}
}

// run runs fn with a Config on the test store, returning its stdout and
// stderr.
func run(t *testing.T, cat *catalog.Catalog, cfg Config, fn func(Config) error) (string, string, error) {
	t.Helper()
	var out, msg bytes.Buffer
	cfg.Out, cfg.Err, cfg.Catalog, cfg.Store, cfg.Location = &out, &msg, cat, cat.Store(), time.UTC
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return t0.Add(5 * time.Hour) }
	}
	err := fn(cfg)
	return out.String(), msg.String(), err
}

func list(cfg Config) error { return Run(ctx, cfg) }

// TestListGolden: the terminal, TSV and JSON listings of the test store,
// each in testdata/golden (go test -update rewrites them).
func TestListGolden(t *testing.T) {
	cat := testStore(t)
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"terminal-120", Config{Format: Terminal, Width: 120}},
		{"terminal-80", Config{Format: Terminal, Width: 80}},
		{"terminal-60", Config{Format: Terminal, Width: 60}},
		{"terminal-first-seen", Config{Format: Terminal, Width: 100, Order: catalog.OrderFirstSeen}},
		{"tsv", Config{Format: TSV}},
		{"json", Config{Format: JSON, Limit: 2}},
		{"tsv-label", Config{Format: TSV, Label: "jp"}},
		{"tsv-feed-by-name", Config{Format: TSV, Feed: "tech news"}},
		{"tsv-grep", Config{Format: TSV, Grep: "zebra"}},
		{"tsv-since-until", Config{Format: TSV, Since: t0.Add(time.Hour), Until: t0.Add(3 * time.Hour)}},
		{"tsv-limit", Config{Format: TSV, Limit: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, msg, err := run(t, cat, tc.cfg, list)
			if err != nil || msg != "" {
				t.Fatalf("%v %s", err, msg)
			}
			golden(t, filepath.Join("testdata", "golden", tc.name+".txt"), out)
			if tc.cfg.Format == TSV {
				for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
					if n := strings.Count(l, "\t"); l != "" && n != len(TSVColumns)-1 {
						t.Errorf("%d tabs in %q", n, l)
					}
				}
			}
			if tc.cfg.Format == Terminal {
				for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
					if w := table.Width(l); w > tc.cfg.Width && tc.cfg.Width >= 80 {
						t.Errorf("%d columns: %q", w, l)
					}
				}
			}
		})
	}
}

// TestJSON: each line is an Item whose entry is the stored record.
func TestJSON(t *testing.T) {
	cat := testStore(t)
	cat.Mark(ctx, "default", catalog.MarkStar, []catalog.EntryKey{{FeedID: testids.Feed("plain"), UID: testids.UID("p2")}}, t0)
	out, _, err := run(t, cat, Config{Format: JSON}, list)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines:\n%s", len(lines), out)
	}
	var it struct {
		Entry    ndjson.Entry `json:"entry"`
		FeedName string       `json:"feed_name"`
		Reader   string       `json:"reader"`
		Read     bool         `json:"read"`
		Starred  bool         `json:"starred"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &it); err != nil {
		t.Fatal(err)
	}
	if it.Entry.EntryUID != testids.UID("p2") || it.Entry.Type != ndjson.TypeEntry || it.FeedName != "https://plain.example/feed" || it.Reader != "default" || it.Read || !it.Starred {
		t.Errorf("first item %+v", it)
	}
}

// TestMarkAndFilters: marks by uid, per reader; unknown uids reported and
// the others marked; --unread and --starred; mark read by feed, label and
// time.
func TestMarkAndFilters(t *testing.T) {
	cat := testStore(t)
	uids := func(cfg Config) string {
		t.Helper()
		cfg.Format = TSV
		out, _, err := run(t, cat, cfg, list)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Split(l, "\t"); len(f) > 4 {
				names = append(names, testids.Name(f[4]))
			}
		}
		return strings.Join(names, ",")
	}
	mark := func(reader string, spec MarkSpec) (string, error) {
		t.Helper()
		_, msg, err := run(t, cat, Config{Reader: reader}, func(cfg Config) error { return Mark(ctx, cfg, spec) })
		return msg, err
	}
	msg, err := mark("", MarkSpec{Action: catalog.MarkRead, UIDs: []string{testids.UID("t1"), "0000000000000000", "nope", testids.UID("j1")}})
	if !errors.Is(err, pipe.ErrFailed) || !strings.Contains(msg, "no entry 0000000000000000") || !strings.Contains(msg, `"nope" is not an entry uid`) ||
		!strings.Contains(msg, "marked 2 entries read") {
		t.Errorf("mark with unknown uids: %v\n%s", err, msg)
	}
	if _, err := mark("alice", MarkSpec{Action: catalog.MarkStar, UIDs: []string{testids.UID("p1")}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Unread: true}, "p2,p1,t2"},
		{Config{Unread: true, Reader: "alice"}, "p2,p1,j1,t2,t1"},
		{Config{Starred: true, Reader: "alice"}, "p1"},
		{Config{Starred: true}, ""},
		{Config{Unread: true, Label: "news"}, "t2"},
	} {
		if got := uids(tc.cfg); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.cfg, got, tc.want)
		}
	}
	if msg, err := mark("", MarkSpec{Action: catalog.MarkRead, Feed: "plain.example", Until: t0.Add(4 * time.Hour)}); err == nil {
		t.Errorf("a feed by a part of its URL: %s", msg)
	}
	if msg, err := mark("", MarkSpec{Action: catalog.MarkRead, Feed: "https://plain.example/feed", Until: t0.Add(4 * time.Hour)}); err != nil || !strings.Contains(msg, "marked 1 entry read") {
		t.Errorf("mark read --feed --until: %v %s", err, msg)
	}
	if got := uids(Config{Unread: true}); got != "p2,t2" {
		t.Errorf("after --feed --until: unread %s", got)
	}
	if msg, err := mark("", MarkSpec{Action: catalog.MarkRead, Label: "news"}); err != nil || !strings.Contains(msg, "marked 1 entry read") {
		t.Errorf("mark read --label: %v %s", err, msg)
	}
	if _, err := mark("", MarkSpec{Action: catalog.MarkUnread, UIDs: []string{testids.UID("t1")}}); err != nil {
		t.Fatal(err)
	}
	if got := uids(Config{Unread: true}); got != "p2,t1" {
		t.Errorf("after --label and unread: unread %s", got)
	}
	for _, spec := range []MarkSpec{
		{Action: "frob", UIDs: []string{testids.UID("t1")}},
		{Action: catalog.MarkStar, Feed: "tech news"},
		{Action: catalog.MarkRead},
		{Action: catalog.MarkRead, Feed: "tech news", Label: "news"},
		{Action: catalog.MarkRead, UIDs: []string{testids.UID("t1")}, All: true},
		{Action: catalog.MarkRead, UIDs: []string{testids.UID("t1")}, Until: t0},
		{Action: catalog.MarkRead, Label: "nolabel"},
		{Action: catalog.MarkRead, Feed: "nofeed"},
	} {
		if _, err := mark("", spec); !errors.Is(err, ErrUsage) {
			t.Errorf("%+v: %v, want a usage error", spec, err)
		}
	}
	if _, err := mark("Bad Name", MarkSpec{Action: catalog.MarkRead, All: true}); !errors.Is(err, ErrUsage) {
		t.Errorf("a bad reader: %v", err)
	}
	if msg, err := mark("", MarkSpec{Action: catalog.MarkRead, All: true}); err != nil || !strings.Contains(msg, "marked 2 entries read of every feed") {
		t.Errorf("mark read --all: %v %s", err, msg)
	}
}

// TestNew: the first --new lists the last day and starts the cursor; the
// next lists only what arrived since; each reader has its own.
func TestNew(t *testing.T) {
	cat := testStore(t)
	now := t0.Add(5 * time.Hour)
	names := func(reader string, at time.Time) string {
		t.Helper()
		out, _, err := run(t, cat, Config{Format: TSV, New: true, Reader: reader, Now: func() time.Time { return at }}, list)
		if err != nil {
			t.Fatal(err)
		}
		var n []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Split(l, "\t"); len(f) > 4 {
				n = append(n, testids.Name(f[4]))
			}
		}
		return strings.Join(n, ",")
	}
	if got := names("default", now.Add(21*time.Hour)); got != "p2,p1,j1" {
		t.Errorf("first --new, a day back: %s", got)
	}
	if got := names("default", now.Add(21*time.Hour)); got != "" {
		t.Errorf("second --new: %s", got)
	}
	// A new entry arrives.
	e := entry("tech", "t3", now.Add(23*time.Hour), "Later", "https://tech.example/later", "")
	b, _ := ndjson.Marshal(e)
	day := e.FirstSeen.Time.Format(time.DateOnly)
	off, _ := cat.Store().AppendLines("entries/"+day+".ndjson", b, storedir.Durable)
	cat.Update(ctx, func(tx *catalog.Tx) error {
		return tx.StoreVersion(e, catalog.Location{Day: day, Offset: off, Length: int64(len(b))})
	})
	if got := names("default", now.Add(24*time.Hour)); got != "t3" {
		t.Errorf("third --new: %s", got)
	}
	if got := names("bob", now); got != "t3,p2,p1,j1,t2,t1" {
		t.Errorf("another reader's first --new: %s", got)
	}
	// A first --new with nothing in its day starts the cursor there.
	if got := names("carol", now.Add(72*time.Hour)); got != "" {
		t.Errorf("carol's first --new: %s", got)
	}
	if at, ok, _ := cat.NewSince(ctx, "carol"); !ok || !at.Equal(now.Add(48*time.Hour).Add(-time.Millisecond)) {
		t.Errorf("carol's cursor %v %v", at, ok)
	}
	for _, cfg := range []Config{
		{New: true, Since: t0},
		{New: true, Order: catalog.OrderPublished},
		{Feed: "x", Label: "y"},
		{Limit: -1},
		{Reader: "UPPER"},
		{Feed: "nothing"},
		{Label: "nolabel"},
		{Grep: "!!!"},
	} {
		if _, _, err := run(t, cat, cfg, list); !errors.Is(err, ErrUsage) {
			t.Errorf("%+v: %v, want a usage error", cfg, err)
		}
	}
}

// TestShowGolden: show's text of two entries (testdata/golden/show-*.txt);
// show marks read, unless asked not to; unknown uids are errors.
func TestShowGolden(t *testing.T) {
	cat := testStore(t)
	show := func(keep bool, uids ...string) func(Config) error {
		return func(cfg Config) error { return Show(ctx, cfg, uids, keep) }
	}
	out, _, err := run(t, cat, Config{Width: 60}, show(true, testids.UID("t1")))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, filepath.Join("testdata", "golden", "show-t1.txt"), out)
	out, _, err = run(t, cat, Config{}, show(false, testids.UID("p2"), testids.UID("t2")))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, filepath.Join("testdata", "golden", "show-p2-t2.txt"), out)
	unread, _, _ := run(t, cat, Config{Format: TSV, Unread: true}, list)
	if strings.Contains(unread, testids.UID("p2")) || !strings.Contains(unread, testids.UID("t1")) {
		t.Errorf("show marks read unless keepUnread:\n%s", unread)
	}
	out, _, err = run(t, cat, Config{}, show(false, testids.UID("p1"), "0000000000000000"))
	if !errors.Is(err, ErrNoEntry) || !strings.Contains(err.Error(), "no entry 0000000000000000 in the store") || !strings.Contains(out, "(untitled)") {
		t.Errorf("an unknown uid: %v\n%s", err, out)
	}
	for _, uids := range [][]string{nil, {"xyz"}, {strings.ToUpper(testids.UID("t1"))}} {
		if _, _, err := run(t, cat, Config{}, show(false, uids...)); !errors.Is(err, ErrUsage) {
			t.Errorf("show %q: %v, want a usage error", uids, err)
		}
	}
}

func TestParseWhen(t *testing.T) {
	now := t0
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"2026-11-19T10:00:00Z", time.Date(2026, 11, 19, 10, 0, 0, 0, time.UTC)},
		{"2026-11-19T10:00:00+01:00", time.Date(2026, 11, 19, 9, 0, 0, 0, time.UTC)},
		{"2026-11-19", time.Date(2026, 11, 19, 0, 0, 0, 0, time.UTC)},
		{"24h", now.Add(-24 * time.Hour)},
		{"90m", now.Add(-90 * time.Minute)},
		{"7d", now.AddDate(0, 0, -7)},
	} {
		got, err := ParseWhen(tc.in, now)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("%q: %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"yesterday", "-5h", "7 d", "2026-13-01", "d"} {
		if _, err := ParseWhen(bad, now); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestWidth(t *testing.T) {
	for _, tc := range []struct {
		in   string
		w    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello world", 8, "hello w…"},
		{"日本語テキスト", 7, "日本語…"},
		{"日本語テキスト", 6, "日本…"},
		{"e\u0301te\u0301", 3, "e\u0301te\u0301"},
		{"abc", 0, ""},
	} {
		if got := table.Cut(tc.in, tc.w, false); got != tc.want || table.Width(got) > max(tc.w, 0) {
			t.Errorf("table.Cut(%q, %d) = %q, want %q", tc.in, tc.w, got, tc.want)
		}
	}
	if got := pad("日本", 6); got != "日本  " {
		t.Errorf("pad: %q", got)
	}
	if got := clean("a\tb\n\x1b[0m c"); got != "a b [0m c" {
		t.Errorf("clean: %q", got)
	}
	if got := tsvField("a\tb\\c\nd\re\x01"); got != `a\tb\\c\nd\re` {
		t.Errorf("tsvField: %q", got)
	}
}

// TestSoleUserReads: with no reader named, feed-read reads as the one
// user of the Google Reader API when there is exactly one (what they read
// in an app is read here), and as the default reader otherwise.
func TestSoleUserReads(t *testing.T) {
	defer catalog.SetTestIterations(1000)()
	cat := testStore(t)
	readerOf := func() string {
		t.Helper()
		out, _, err := run(t, cat, Config{Format: JSON, Limit: 1}, list)
		if err != nil {
			t.Fatal(err)
		}
		var it struct {
			Reader string `json:"reader"`
		}
		json.Unmarshal([]byte(out), &it)
		return it.Reader
	}
	if r := readerOf(); r != catalog.DefaultReader {
		t.Errorf("no user: reads as %q", r)
	}
	if err := cat.AddUser(ctx, "alice", "alice's password", catalog.RoleReader, t0); err != nil {
		t.Fatal(err)
	}
	if r := readerOf(); r != "alice" {
		t.Errorf("one user: reads as %q", r)
	}
	if out, _, _ := run(t, cat, Config{Format: JSON, Limit: 1, Reader: "default"}, list); !strings.Contains(out, `"reader":"default"`) {
		t.Errorf("a reader named: %s", out)
	}
	if err := cat.AddUser(ctx, "bob", "bob's password!", catalog.RoleReader, t0); err != nil {
		t.Fatal(err)
	}
	if r := readerOf(); r != catalog.DefaultReader {
		t.Errorf("two users: reads as %q", r)
	}
}
