package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/testids"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

var (
	ctx = context.Background()
	t0  = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
)

func openTemp(t testing.TB) *Catalog {
	t.Helper()
	st, err := storedir.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Open(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func sub(name string, labels ...string) ndjson.Subscription {
	return ndjson.Subscription{Header: ndjson.Head(ndjson.TypeSubscription), FeedID: testids.Feed(name), URL: "https://" + name + ".example/feed",
		Name: name, Labels: labels, SourceType: ndjson.SourceAuto, CreatedAt: ndjson.At(t0)}
}

func add(t *testing.T, c *Catalog, subs ...ndjson.Subscription) {
	t.Helper()
	err := c.EditSubscriptions(ctx, func(list []ndjson.Subscription) ([]ndjson.Subscription, error) {
		return append(list, subs...), nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func names(subs []ndjson.Subscription) string {
	var n []string
	for _, s := range subs {
		n = append(n, s.Name)
	}
	return strings.Join(n, ",")
}

func TestOpenMakesTheSchema(t *testing.T) {
	c := openTemp(t)
	var version int
	c.db.QueryRow(`PRAGMA user_version`).Scan(&version)
	var mode string
	c.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode)
	var size int
	c.db.QueryRow(`PRAGMA page_size`).Scan(&size)
	if version != len(migrations) || mode != "wal" || size != pageSize {
		t.Fatalf("version %d, journal mode %s, page size %d", version, mode, size)
	}
	// Opening again changes nothing.
	c2, err := Open(ctx, c.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	c2.Close()
	// A catalog newer than this binary is refused.
	c.db.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, len(migrations)+1))
	if _, err := Open(ctx, c.st, nil); err == nil || !strings.Contains(err.Error(), "newer than this feedpipe knows") {
		t.Fatalf("err %v", err)
	}
}

func TestDamagedCatalog(t *testing.T) {
	st, _ := storedir.Open(filepath.Join(t.TempDir(), "store"))
	if err := os.WriteFile(st.Path(File), []byte(strings.Repeat("not a database ", 500)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(ctx, st, nil)
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), st.Path(File)) || !strings.Contains(err.Error(), "feed-store reindex") {
		t.Fatalf("err %v", err)
	}
	// A link in place of the catalog is refused.
	os.Remove(st.Path(File))
	os.Symlink("/etc/passwd", st.Path(File))
	if _, err := Open(ctx, st, nil); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("err %v", err)
	}
}

// TestCheckFindsDamageInside: a catalog whose first pages are sound opens,
// and Check finds a page damaged deeper in it, with the same advice.
func TestCheckFindsDamageInside(t *testing.T) {
	c := openTemp(t)
	if err := c.Check(ctx); err != nil {
		t.Fatalf("a new catalog: %v", err)
	}
	err := c.Update(ctx, func(t *Tx) error {
		for i := range 3000 {
			if err := t.StoreVersion(entry("A", fmt.Sprintf("u%d", i), "h", t0), Location{Day: "2026-11-21", Length: 10}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	st := c.st
	c.Close() // the last connection checkpoints the WAL into the file
	f, err := os.OpenFile(st.Path(File), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	if fi.Size() < 40*4096 {
		t.Fatalf("the catalog is %d bytes: too small to damage inside", fi.Size())
	}
	// Garbage over the middle of the file, past the schema's pages.
	if _, err := f.WriteAt([]byte(strings.Repeat("\xff\x00garbage", 2048)), fi.Size()/2/4096*4096); err != nil {
		t.Fatal(err)
	}
	f.Close()
	c2, err := Open(ctx, st, nil)
	if err != nil {
		t.Fatalf("open: %v (the damage is past the pages opening reads)", err)
	}
	defer c2.Close()
	err = c2.Check(ctx)
	if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), st.Path(File)) || !strings.Contains(err.Error(), "feed-store reindex") {
		t.Fatalf("check: %v", err)
	}
}

func TestSubscriptions(t *testing.T) {
	c := openTemp(t)
	a, b, d := sub("a", "news"), sub("b"), sub("d", "news", "tech")
	b.Headers, b.Auth, b.Scrape = map[string]string{"X-A": "1"}, &ndjson.Auth{Username: "u", Password: "p"}, []byte(`{"discovery_mode":"list"}`)
	b.PausedUntil, b.IntervalSec, b.Cron, b.Disabled = ndjson.At(t0.Add(time.Hour)), 600, "@hourly", true
	add(t, c, a, b, d)
	got, err := c.Subscriptions(ctx)
	if err != nil || names(got) != "a,b,d" {
		t.Fatalf("%s %v", names(got), err)
	}
	if !reflect.DeepEqual(normalSub(got[1]), normalSub(b)) {
		t.Fatalf("round trip\n got %+v\nwant %+v", got[1], b)
	}
	// An edit: remove a, change d, add e. The order holds.
	err = c.EditSubscriptions(ctx, func(list []ndjson.Subscription) ([]ndjson.Subscription, error) {
		list[2].Name = "d2"
		return append(list[1:], sub("e")), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Subscriptions(ctx); names(got) != "b,d2,e" {
		t.Fatalf("after the edit: %s", names(got))
	}
	// A failed edit changes nothing; a feed listed twice is refused.
	if err := c.EditSubscriptions(ctx, func(list []ndjson.Subscription) ([]ndjson.Subscription, error) { return nil, errors.New("no") }); err == nil {
		t.Fatal("no error")
	}
	if err := c.EditSubscriptions(ctx, func(list []ndjson.Subscription) ([]ndjson.Subscription, error) { return append(list, list[0]), nil }); err == nil {
		t.Fatal("a feed listed twice")
	}
	if got, _ := c.Subscriptions(ctx); names(got) != "b,d2,e" {
		t.Fatalf("after failed edits: %s", names(got))
	}
	s, ok, err := c.Subscription(ctx, testids.Feed("e"))
	if !ok || err != nil || s.Name != "e" {
		t.Fatalf("%+v %v %v", s, ok, err)
	}
	if _, ok, _ := c.Subscription(ctx, testids.Feed("a")); ok {
		t.Fatal("a removed subscription found")
	}
	// The log holds every change; a catalog rebuilt from it has the same
	// list.
	log, _ := c.st.ReadFile(SubscriptionsFile)
	if n := strings.Count(string(log), `"type":"subscription_removed"`); n != 1 {
		t.Fatalf("%d removals in the log:\n%s", n, log)
	}
	if _, err := c.db.Exec(`DELETE FROM subscriptions; DELETE FROM meta`); err != nil {
		t.Fatal(err)
	}
	if err := c.catchUpSubscriptions(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Subscriptions(ctx); names(got) != "b,d2,e" {
		t.Fatalf("rebuilt from the log: %s", names(got))
	}
}

// TestSubscriptionLogCatchUp: lines appended to the log that a crash kept
// from the catalog are applied at the next open; a log replaced as a whole
// (a backup restored) is read again from its start.
func TestSubscriptionLogCatchUp(t *testing.T) {
	c := openTemp(t)
	add(t, c, sub("a"), sub("b"))
	line, _ := ndjson.Marshal(sub("c"))
	rm, _ := ndjson.Marshal(ndjson.SubscriptionRemoved{Header: ndjson.Head(ndjson.TypeSubscriptionRemoved), FeedID: testids.Feed("a")})
	if _, err := c.st.AppendLines(SubscriptionsFile, append(line, rm...), storedir.Durable); err != nil {
		t.Fatal(err)
	}
	c2, err := Open(ctx, c.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if got, _ := c2.Subscriptions(ctx); names(got) != "b,c" {
		t.Fatalf("after catching up: %s", names(got))
	}
	only, _ := ndjson.Marshal(sub("z"))
	if err := c.st.WriteFileAtomic(SubscriptionsFile, only); err != nil {
		t.Fatal(err)
	}
	c3, err := Open(ctx, c.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if got, _ := c3.Subscriptions(ctx); names(got) != "z" {
		t.Fatalf("after a restore: %s", names(got))
	}
}

// TestSubscriptionLogCompaction: the log, which every edit appends to, is
// rewritten as the list alone once it has grown to more than four times
// the list, in the list's order and owner-only; a crash between the
// rewrite and the checkpoint loses nothing.
func TestSubscriptionLogCompaction(t *testing.T) {
	c := openTemp(t)
	var subs []ndjson.Subscription
	for i := range 40 {
		subs = append(subs, sub(fmt.Sprintf("f%02d", i), "news"))
	}
	add(t, c, subs...)
	var sizes []int64
	for round := range 12 {
		err := c.EditSubscriptions(ctx, func(list []ndjson.Subscription) ([]ndjson.Subscription, error) {
			for i := range list {
				list[i].Labels = []string{fmt.Sprintf("round-%d", round)}
			}
			return list, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := c.st.Stat(SubscriptionsFile)
		sizes = append(sizes, fi.Size())
	}
	if !slices.ContainsFunc(sizes[1:], func(n int64) bool { return n < sizes[0] }) {
		t.Fatalf("the log only grew: %v", sizes)
	}
	log, _ := c.st.ReadFile(SubscriptionsFile)
	if n := strings.Count(string(log), "\n"); n > 4*40 {
		t.Fatalf("the log holds %d lines for a list of 40", n)
	}
	fi, _ := c.st.Stat(SubscriptionsFile)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("the compacted log has mode %v, want 0600", fi.Mode().Perm())
	}
	want, _ := c.Subscriptions(ctx)
	// A crash after the rewrite, before the checkpoint: the log is then
	// smaller than the checkpoint says, and read again as a whole.
	if err := c.SetMeta(ctx, TapSubscriptions, Checkpoint{File: SubscriptionsFile, Offset: fi.Size() * 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.db.Exec(`DELETE FROM subscriptions`); err != nil {
		t.Fatal(err)
	}
	if err := c.catchUpSubscriptions(ctx); err != nil {
		t.Fatal(err)
	}
	got, _ := c.Subscriptions(ctx)
	if names(got) != names(want) || !reflect.DeepEqual(got[39].Labels, []string{"round-11"}) {
		t.Fatalf("after the crash: %s %v", names(got), got[39].Labels)
	}
}

func TestFindSubscription(t *testing.T) {
	subs := []ndjson.Subscription{
		{FeedID: "abcd1111-0000", URL: "https://example.org/a"},
		{FeedID: "abcd2222-0000", URL: "https://example.org/b"},
		{FeedID: "ef001111-0000", URL: "https://example.org/c"},
	}
	for _, tc := range []struct {
		ref  string
		want int
		err  string
	}{
		{"abcd1111-0000", 0, ""}, {"abcd2", 1, ""}, {"https://example.org/c", 2, ""}, {"HTTPS://Example.org/c", 2, ""},
		{"abcd", -1, "ambiguous"}, {"ef0", -1, "too short"}, {"nope", -1, "nothing matches"},
	} {
		i, err := FindSubscription(subs, tc.ref)
		if i != tc.want || (tc.err == "") != (err == nil) || err != nil && (!strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrNoSuchSubscription)) {
			t.Errorf("%q: %d, %v", tc.ref, i, err)
		}
	}
}

func TestStates(t *testing.T) {
	c := openTemp(t)
	st := sched.State{Lifecycle: sched.StateBackoff, IntervalSec: 900, NextAt: ndjson.At(t0.Add(time.Hour)), RetryUntil: ndjson.At(t0.Add(time.Minute)),
		Pub: []int64{1, 2, 3}, RateN: 2.5, Window: 20, Hints: sched.Hints{TTLMinutes: 30}}
	fs := FeedState{FeedID: testids.Feed("a"), Title: "A", Validators: ndjson.Validators{ETag: `"e"`, LastModified: "lm"},
		LastFetchAt: ndjson.At(t0), LastSuccessAt: ndjson.At(t0), LastRunAt: ndjson.At(t0), LastStatus: 503,
		LastError: &ndjson.Error{Class: "transient", Code: "http_503", Message: "HTTP 503"}, ConsecutiveFailures: 2,
		LastBodySHA256: "abc", LastContentLength: 42, NewEntriesLastFetch: 3, MovedTo: "https://m/", MovedCount: 1,
		Counts: FeedCounts{Fetches: 4, OK: 2, Errors: 2, ErrorCodes: map[string]int{"http_503": 2}, BytesIn: 10},
		Format: "rss", FormatVersion: "2.0", ContentType: "application/rss+xml", Publisher: "P", Link: "https://a/", Warnings: []string{"w"}}
	fs.SetSched(st, sched.Decision{Kind: sched.Backoff, Reason: "http_error"})
	if err := c.Update(ctx, func(t *Tx) error { return t.PutStates(fs) }); err != nil {
		t.Fatal(err)
	}
	got, ok, err := c.State(ctx, fs.FeedID)
	fs.Header = ndjson.Head(TypeFeedState)
	if !ok || err != nil || !reflect.DeepEqual(got, fs) {
		t.Fatalf("%v %v\n got %+v\nwant %+v", ok, err, got, fs)
	}
	if _, ok, _ := c.State(ctx, testids.Feed("none")); ok {
		t.Fatal("a state for a feed never stored")
	}
	all, _ := c.States(ctx)
	if len(all) != 1 || !reflect.DeepEqual(all[fs.FeedID], fs) {
		t.Fatalf("states %+v", all)
	}
	// StatesOf reads the same, but for the decision, which it leaves as
	// the column has it (written back so, it is the same decision), and
	// with the feed's key, which writing it back uses.
	of, err := c.StatesOf(ctx, []string{fs.FeedID, testids.Feed("none")})
	if err != nil || len(of) != 1 || of[fs.FeedID].Decision != nil {
		t.Fatalf("StatesOf: %v %+v", err, of)
	}
	lazy := of[fs.FeedID]
	var key int64
	if err := c.readRow(ctx, once, `SELECT key FROM feeds WHERE feed_id = ?`, fs.FeedID).Scan(&key); err != nil || lazy.key != key || key == 0 {
		t.Fatalf("StatesOf's key %d, the catalog's %d (%v)", lazy.key, key, err)
	}
	lazy.Decision, lazy.decision, lazy.key = fs.Decision, nil, 0
	if !reflect.DeepEqual(lazy, fs) {
		t.Fatalf("StatesOf\n got %+v\nwant %+v", lazy, fs)
	}
	again := of[fs.FeedID]
	again.Title = "A2"
	if err := c.Update(ctx, func(t *Tx) error { return t.PutStates(again) }); err != nil {
		t.Fatal(err)
	}
	got, _, _ = c.State(ctx, fs.FeedID)
	if got.Title != "A2" || !reflect.DeepEqual(got.Decision, fs.Decision) {
		t.Fatalf("written back: %+v", got)
	}
	// The next decision replaces the one read.
	again.SetSched(st, sched.Decision{Kind: sched.Defer, Reason: "posting_rate"})
	if err := c.Update(ctx, func(t *Tx) error { return t.PutStates(again) }); err != nil {
		t.Fatal(err)
	}
	if got, _, _ = c.State(ctx, fs.FeedID); got.Decision == nil || got.Decision.Reason != "posting_rate" {
		t.Fatalf("a new decision: %+v", got.Decision)
	}
	// A state written over another replaces every column, to empty ones.
	blank := FeedState{Header: ndjson.Head(TypeFeedState), FeedID: fs.FeedID}
	if err := c.Update(ctx, func(t *Tx) error { return t.PutStates(blank) }); err != nil {
		t.Fatal(err)
	}
	if got, _, _ = c.State(ctx, fs.FeedID); !reflect.DeepEqual(got, blank) {
		t.Fatalf("written over\n got %+v\nwant %+v", got, blank)
	}
}

// TestStatesOfRowsApart: StatesOf reads each row whole, nothing of one
// row left in the next (it reads them all into the same targets).
func TestStatesOfRowsApart(t *testing.T) {
	c := openTemp(t)
	full := FeedState{FeedID: testids.Feed("a"), Title: "A", LastFetchAt: ndjson.At(t0), NextFetchAt: ndjson.At(t0),
		LastError: &ndjson.Error{Class: "transient", Code: "http_503"}, Warnings: []string{"w"}, MovedTo: "https://m/",
		Counts: FeedCounts{Fetches: 2, ErrorCodes: map[string]int{"http_503": 1}}}
	full.SetSched(sched.State{Lifecycle: sched.StateBackoff, Pub: []int64{1}}, sched.Decision{Kind: sched.Backoff})
	bare := FeedState{FeedID: testids.Feed("b")}
	if err := c.Update(ctx, func(t *Tx) error { return t.PutStates(full, bare) }); err != nil {
		t.Fatal(err)
	}
	for _, order := range [][]string{{full.FeedID, bare.FeedID}, {bare.FeedID, full.FeedID}} {
		of, err := c.StatesOf(ctx, order)
		if err != nil || len(of) != 2 {
			t.Fatalf("%v %v", of, err)
		}
		for _, want := range []FeedState{full, bare} {
			got, _, err := c.State(ctx, want.FeedID)
			if err != nil {
				t.Fatal(err)
			}
			read := of[want.FeedID]
			read.Decision, read.decision, read.key = got.Decision, nil, 0
			if !reflect.DeepEqual(read, got) {
				t.Errorf("%s after %v:\n got %+v\nwant %+v", want.FeedID, order, read, got)
			}
		}
	}
}

// TestOverridesOf: the scheduling settings of the feeds asked for that
// have a subscription, as Subscription reads each.
func TestOverridesOf(t *testing.T) {
	c := openTemp(t)
	a := sub("A", "news")
	a.IntervalSec, a.MinIntervalSec, a.MaxIntervalSec, a.Cron = 1800, 600, 7200, "@every 2h"
	a.PausedUntil = ndjson.At(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	add(t, c, a, sub("B"))
	got, err := c.OverridesOf(ctx, []string{testids.Feed("A"), testids.Feed("B"), testids.Feed("none")})
	if err != nil || len(got) != 2 {
		t.Fatalf("%v %+v", err, got)
	}
	for _, name := range []string{"A", "B"} {
		one, _, _ := c.Subscription(ctx, testids.Feed(name))
		if want := sched.OverridesOf(one); !reflect.DeepEqual(got[testids.Feed(name)], want) {
			t.Errorf("%s: %+v, want %+v", name, got[testids.Feed(name)], want)
		}
	}
	if o := got[testids.Feed("A")]; o.Interval != 30*time.Minute || o.Cron != "@every 2h" || o.PausedUntil.IsZero() {
		t.Errorf("A's settings not read: %+v", o)
	}
}

// TestDemandRoundTrip fills every field of the demand inputs and reads
// them back: a field added to sched.DemandInputs and not to appendDemand
// fails it.
func TestDemandRoundTrip(t *testing.T) {
	var in sched.DemandInputs
	v := reflect.ValueOf(&in).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(i + 7))
		case reflect.Float64:
			f.SetFloat(float64(i) + 0.5)
		default:
			t.Fatalf("field %s of a kind the projection cannot hold", v.Type().Field(i).Name)
		}
	}
	b := appendDemand(nil, in)
	got, ok := readDemand(b)
	if !ok || got != in || len(b) != demandSize {
		t.Fatalf("%+v\n%+v", got, in)
	}
}

func TestFeedsAndDue(t *testing.T) {
	c := openTemp(t)
	paused := sub("paused")
	paused.PausedUntil = ndjson.At(t0.Add(time.Hour))
	off := sub("off")
	off.Disabled = true
	add(t, c, sub("new", "x"), sub("due", "x"), sub("later"), paused, off, sub("probe"))
	state := func(name string, next time.Time) FeedState {
		return FeedState{FeedID: testids.Feed(name), LastFetchAt: ndjson.At(t0.Add(-time.Hour)), NextFetchAt: ndjson.At(next)}
	}
	err := c.Update(ctx, func(t *Tx) error {
		return t.PutStates(state("due", t0.Add(-time.Minute)), state("later", t0.Add(time.Hour)), state("paused", t0.Add(-time.Minute)),
			state("probe", t0))
	})
	if err != nil {
		t.Fatal(err)
	}
	list := func(f FeedFilter) string {
		var got []string
		err := c.Feeds(ctx, f, func(feed *Feed) error {
			got = append(got, fmt.Sprintf("%s:%v", feed.Sub.Name, feed.Stored))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(got, " ")
	}
	if got := list(FeedFilter{}); got != "new:false due:true later:true paused:true off:false probe:true" {
		t.Errorf("all: %s", got)
	}
	if got := list(FeedFilter{DueBy: t0}); got != "new:false due:true probe:true" {
		t.Errorf("due: %s", got)
	}
	if got := list(FeedFilter{Label: "x"}); got != "new:false due:true" {
		t.Errorf("label: %s", got)
	}
}

func entry(feed, uid, hash string, seen time.Time) *ndjson.Entry {
	return &ndjson.Entry{Header: ndjson.Head(ndjson.TypeEntry), FeedID: testids.Feed(feed), EntryUID: testids.UID(uid), ContentHash: hash,
		FirstSeen: ndjson.At(seen), LastSeen: ndjson.At(seen), SeenCount: 1, Published: ndjson.At(seen.Add(-time.Hour))}
}

func TestIndex(t *testing.T) {
	c := openTemp(t)
	a, b := testids.Feed("A"), testids.Feed("B")
	loc := Location{Day: "2026-11-21", Offset: 0, Length: 10}
	err := c.Update(ctx, func(t *Tx) error {
		if err := t.StoreVersion(entry("A", "a1", "h1", t0), loc); err != nil {
			return err
		}
		v2 := entry("A", "a1", "h2", t0.Add(time.Hour))
		v2.FirstSeen, v2.SeenCount = ndjson.At(t0), 2
		return t.StoreVersion(v2, loc)
	})
	if err != nil {
		t.Fatal(err)
	}
	x := c.Index()
	for _, tc := range []struct {
		feed, uid, hash, want string
	}{
		{a, "a1", "h2", ""}, {a, "a1", "h1", ""}, {a, "a1", "h3", "updated"}, {a, "a9", "h1", "new"}, {b, "a1", "h1", "new"},
	} {
		if got, err := x.Judge(ctx, tc.feed, testids.UID(tc.uid), tc.hash); got != tc.want || err != nil {
			t.Errorf("%s %s %s: %q %v, want %q", testids.Name(tc.feed), tc.uid, tc.hash, got, err, tc.want)
		}
	}
	s, ok, _ := x.Latest(ctx, a, testids.UID("a1"))
	if !ok || s.Hash != "h2" || s.Versions != 2 || s.SeenCount != 2 || !s.FirstSeen.Equal(t0) {
		t.Fatalf("latest %+v", s)
	}
	// What the index added in memory counts, the catalog's too.
	x.Add(a, Seen{UID: testids.UID("a1"), Hash: "h3"})
	x.Add(b, Seen{UID: testids.UID("b1"), Hash: "g1"})
	for _, tc := range []struct {
		feed, uid, hash, want string
	}{
		{a, "a1", "h3", ""}, {a, "a1", "h1", ""}, {a, "a1", "h4", "updated"}, {b, "b1", "g1", ""}, {b, "b1", "g2", "updated"},
	} {
		if got, _ := x.Judge(ctx, tc.feed, testids.UID(tc.uid), tc.hash); got != tc.want {
			t.Errorf("after Add: %s %s %s: %q, want %q", testids.Name(tc.feed), tc.uid, tc.hash, got, tc.want)
		}
	}
	// A sighting moves last_seen and counts; a replayed one does not.
	for range 2 {
		if err := c.Update(ctx, func(t *Tx) error { return t.Sighted(a, []string{testids.UID("a1")}, t0.Add(2*time.Hour)) }); err != nil {
			t.Fatal(err)
		}
	}
	s, _, _ = c.Index().Latest(ctx, a, testids.UID("a1"))
	if s.SeenCount != 3 || !s.LastSeen.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("after a sighting: %+v", s)
	}
}

// TestIndexAddToPreloaded: an entry found among its feed's preloaded
// entries is not kept in memory (Index.lookup); what is added to it later
// still counts with its stored versions.
func TestIndexAddToPreloaded(t *testing.T) {
	c := openTemp(t)
	a, b := testids.Feed("A"), testids.Feed("B")
	loc := Location{Day: "2026-11-21", Offset: 0, Length: 10}
	err := c.Update(ctx, func(t *Tx) error {
		for _, e := range []*ndjson.Entry{entry("A", "a1", "h1", t0), entry("A", "a1", "h2", t0.Add(time.Hour)), entry("B", "b1", "g1", t0)} {
			if err := t.StoreVersion(e, loc); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	x := c.Index()
	for i, tc := range []struct {
		feed, uid, hash, want string
		add                   bool // Add the version after judging it
	}{
		{a, "a1", "h2", "", false},
		{b, "b1", "g1", "", false}, // B's entries preloaded instead of A's
		{a, "a1", "h3", "updated", true},
		{b, "b1", "g1", "", false},
		{a, "a1", "h1", "", false},
		{a, "a1", "h2", "", false},
		{a, "a1", "h3", "", false},
		{a, "a1", "h4", "updated", false},
	} {
		got, err := x.Judge(ctx, tc.feed, testids.UID(tc.uid), tc.hash)
		if got != tc.want || err != nil {
			t.Errorf("%d: %s %s %s: %q %v, want %q", i, testids.Name(tc.feed), tc.uid, tc.hash, got, err, tc.want)
		}
		if tc.add {
			x.Add(tc.feed, Seen{UID: testids.UID(tc.uid), Hash: tc.hash})
		}
	}
	if s, ok, _ := x.Latest(ctx, a, testids.UID("a1")); !ok || s.Hash != "h3" {
		t.Fatalf("latest %+v", s)
	}
}

func TestLinksAndAliases(t *testing.T) {
	c := openTemp(t)
	h, ok := LinkHash("https://news.example/1")
	if h2, _ := LinkHash("http://NEWS.example/1"); !ok || h2 != h {
		t.Fatal("http and https differ")
	}
	if _, ok := LinkHash("not a link"); ok {
		t.Fatal("a hash of no link")
	}
	a1 := ndjson.EntryRef{FeedID: testids.Feed("A"), EntryUID: testids.UID("a1")}
	b1 := ndjson.EntryRef{FeedID: testids.Feed("B"), EntryUID: testids.UID("b1")}
	if _, err := c.KeepLinks(ctx); err != nil {
		t.Fatal(err)
	}
	err := c.Update(ctx, func(t *Tx) error {
		if err := t.AddLink(h, a1); err != nil {
			return err
		}
		if err := t.AddLink(h, b1); err != nil { // the first stays
			return err
		}
		return t.AddAlias(&ndjson.Alias{FeedID: b1.FeedID, EntryUID: b1.EntryUID, CanonicalLink: "https://news.example/1", AliasOf: a1,
			RecordedAt: ndjson.At(t0)}, "2026-11-21")
	})
	if err != nil {
		t.Fatal(err)
	}
	o, err := c.LinkOwners(ctx, h)
	if err != nil || o.First != a1 || !o.Has(b1) || len(o.Aliases) != 1 {
		t.Fatalf("%+v %v", o, err)
	}
	x := c.Index()
	h3, _ := LinkHash("https://news.example/3")
	o3, _ := x.Link(ctx, h3)
	x.AddLink(h3, o3, b1, false)
	if o, _ := x.Link(ctx, h3); o.First != b1 {
		t.Fatalf("in memory: %+v", o)
	}
	if o, _ := c.LinkOwners(ctx, h3); o.Known() {
		t.Fatal("the index wrote the catalog")
	}
	// LoadLinks reads several at once, as LinkOwners would each, and
	// leaves what the index added in memory as it is.
	h4, _ := LinkHash("https://news.example/4")
	y := c.Index()
	y.AddLink(h3, LinkOwners{}, b1, false)
	if err := y.LoadLinks(ctx, []string{h, h3, h4, h}); err != nil {
		t.Fatal(err)
	}
	c.db.Close() // every answer from memory now
	for _, tc := range []struct {
		hash    string
		first   ndjson.EntryRef
		aliases int
	}{{h, a1, 1}, {h3, b1, 0}, {h4, ndjson.EntryRef{}, 0}} {
		o, err := y.Link(ctx, tc.hash)
		if err != nil || o.First != tc.first || len(o.Aliases) != tc.aliases {
			t.Errorf("loaded %s: %+v %v, want first %v and %d aliases", tc.hash, o, err, tc.first, tc.aliases)
		}
	}
}

func TestFetchesAndRuns(t *testing.T) {
	c := openTemp(t)
	feed := testids.Feed("A")
	run := Run{FeedID: feed, ScheduledAt: t0}
	claims, err := c.ClaimRuns(ctx, []Run{run, {FeedID: testids.Feed("B"), ScheduledAt: t0}}, t0)
	if err != nil || claims[0].Claim != ClaimFetch || claims[1].Claim != ClaimFetch {
		t.Fatalf("%+v %v", claims, err)
	}
	// Claimed a moment ago: another pipeline is at it.
	if claims, _ := c.ClaimRuns(ctx, []Run{run}, t0.Add(time.Minute)); claims[0].Claim != ClaimBusy {
		t.Fatalf("%+v", claims)
	}
	// Long ago, with nothing fetched: it died; the run is claimed again.
	if claims, _ := c.ClaimRuns(ctx, []Run{{FeedID: testids.Feed("B"), ScheduledAt: t0}}, t0.Add(ClaimStale+time.Minute)); claims[0].Claim != ClaimFetch {
		t.Fatalf("stale: %+v", claims)
	}
	f := ndjson.Fetch{FetchID: testids.Fetch("F1"), Due: ndjson.Due{FeedID: feed, ScheduledAt: ndjson.At(t0)}, FetchedAt: ndjson.At(t0.Add(time.Second)),
		HTTPStatus: 200, BodyRef: &ndjson.BlobRef{Key: "raw/2026-11-21/" + strings.Repeat("ab", 32) + ".zst"}}
	loc := Location{Day: "2026-11-21", Offset: 100, Length: 50}
	if err := c.Update(ctx, func(t *Tx) error { return t.IndexFetch(&f, loc) }); err != nil {
		t.Fatal(err)
	}
	// Fetched, not stored: its record is passed on again.
	claims, _ = c.ClaimRuns(ctx, []Run{run}, t0.Add(time.Hour))
	if claims[0].Claim != ClaimFetched || claims[0].Fetch.FetchID != f.FetchID || claims[0].Fetch.Location != loc || claims[0].Fetch.BodyKey != f.BodyRef.Key {
		t.Fatalf("%+v", claims)
	}
	// Stored: nothing to do, for this run or an earlier one.
	err = c.Update(ctx, func(t *Tx) error {
		if err := t.PutStates(FeedState{FeedID: feed, LastRunAt: ndjson.At(t0)}); err != nil {
			return err
		}
		return t.ReleaseRuns(feed, t0)
	})
	if err != nil {
		t.Fatal(err)
	}
	claims, _ = c.ClaimRuns(ctx, []Run{run, {FeedID: feed, ScheduledAt: t0.Add(-time.Hour)}, {FeedID: feed, ScheduledAt: t0.Add(time.Hour)}}, t0.Add(time.Hour))
	if claims[0].Claim != ClaimStored || claims[1].Claim != ClaimStored || claims[2].Claim != ClaimFetch {
		t.Fatalf("%+v", claims)
	}
	ref, ok, err := c.Fetch(ctx, f.FetchID)
	if !ok || err != nil || ref.FeedID != feed || !ref.FetchedAt.Equal(f.FetchedAt.Time) || ref.HTTPStatus != 200 {
		t.Fatalf("%+v %v %v", ref, ok, err)
	}
	list, err := c.Fetches(ctx, feed, t0, 0)
	if err != nil || len(list) != 1 || list[0].FetchID != f.FetchID {
		t.Fatalf("%+v %v", list, err)
	}
	if list, _ := c.Fetches(ctx, feed, t0.Add(time.Hour), 0); len(list) != 0 {
		t.Fatalf("since later: %+v", list)
	}
	known, err := c.KnownFetches(ctx, []string{testids.Fetch("F2"), f.FetchID, f.FetchID})
	if err != nil || len(known) != 1 || !known[f.FetchID] {
		t.Fatalf("known fetches: %v %v", known, err)
	}
	if known, err := c.KnownFetches(ctx, nil); err != nil || len(known) != 0 {
		t.Fatalf("known fetches of none: %v %v", known, err)
	}
}

func TestEntryQueries(t *testing.T) {
	c := openTemp(t)
	add(t, c, sub("A", "news"), sub("B", "news"), sub("C"))
	// A has 5 entries an hour apart, B one, C one.
	err := c.Update(ctx, func(t *Tx) error {
		for i := range 5 {
			if err := t.StoreVersion(entry("A", fmt.Sprint("a", i), "h", t0.Add(time.Duration(i)*time.Hour)), Location{Day: "2026-11-21", Offset: int64(i), Length: 1}); err != nil {
				return err
			}
		}
		if err := t.StoreVersion(entry("B", "b0", "h", t0.Add(90*time.Minute)), Location{Day: "2026-11-21", Length: 1}); err != nil {
			return err
		}
		return t.StoreVersion(entry("C", "c0", "h", t0), Location{Day: "2026-11-21", Length: 1})
	})
	if err != nil {
		t.Fatal(err)
	}
	uids := func(p EntryPage) string {
		var s []string
		for _, e := range p.Entries {
			s = append(s, testids.Name(e.UID))
		}
		return strings.Join(s, ",")
	}
	// Pages of two, newest first, a stable cursor.
	var got []string
	q := EntryQuery{Limit: 2}
	for {
		p, err := c.FeedEntries(ctx, testids.Feed("A"), q)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, uids(p))
		if p.Next == "" {
			break
		}
		q.Cursor = p.Next
	}
	if strings.Join(got, " ") != "a4,a3 a2,a1 a0" {
		t.Fatalf("pages %q", got)
	}
	for _, tc := range []struct {
		q    EntryQuery
		want string
	}{
		{EntryQuery{Since: t0.Add(time.Hour), Until: t0.Add(3 * time.Hour)}, "a3,a2"}, // published an hour before first seen
		{EntryQuery{Order: OrderFirstSeen, Since: t0.Add(3 * time.Hour)}, "a4,a3"},
	} {
		if p, err := c.FeedEntries(ctx, testids.Feed("A"), tc.q); err != nil || uids(p) != tc.want {
			t.Errorf("%+v: %s %v", tc.q, uids(p), err)
		}
	}
	if p, _ := c.LabelEntries(ctx, "news", EntryQuery{Since: t0}); uids(p) != "a4,a3,a2,b0,a1" {
		t.Errorf("label: %s", uids(p))
	}
	if p, _ := c.AllEntries(ctx, EntryQuery{Limit: 3}); uids(p) != "a4,a3,a2" {
		t.Errorf("all: %s", uids(p))
	}
	if _, err := c.FeedEntries(ctx, testids.Feed("A"), EntryQuery{Order: "title"}); !errors.Is(err, ErrBadQuery) {
		t.Errorf("order: %v", err)
	}
	if _, err := c.FeedEntries(ctx, testids.Feed("A"), EntryQuery{Cursor: "x"}); !errors.Is(err, ErrBadQuery) {
		t.Errorf("cursor: %v", err)
	}
	rows, versions, err := c.EntriesByUID(ctx, testids.UID("a2"))
	if err != nil || len(rows) != 1 || len(versions[0]) != 1 || rows[0].FeedID != testids.Feed("A") || versions[0][0].Hash != "h" {
		t.Fatalf("%+v %+v %v", rows, versions, err)
	}
}

// TestOpenAtOnce: processes opening a store without a catalog at once all
// get it whole: one makes it, the others wait for it rather than find its
// file before its schema (SQLITE_BUSY).
func TestOpenAtOnce(t *testing.T) {
	for round := range 20 {
		st, err := storedir.Open(filepath.Join(t.TempDir(), "store"))
		if err != nil {
			t.Fatal(err)
		}
		errs := make(chan error, 4)
		for range cap(errs) {
			go func() {
				c, err := Open(ctx, st, nil)
				if err == nil {
					err = c.Close()
				}
				errs <- err
			}()
		}
		for range cap(errs) {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
}

// TestSubscriptionLabels: the rows of subscription_labels say what the
// subscriptions' labels columns do through adds, edits, removals and a
// rebuild from the log, and migration 9 makes them for a catalog that had
// subscriptions before it (version 8).
func TestSubscriptionLabels(t *testing.T) {
	c := openTemp(t)
	same := func(when string) {
		t.Helper()
		var differ int
		err := c.db.QueryRow(`SELECT (SELECT count(*) FROM (
			SELECT l.value, s.feed_key FROM subscriptions s, json_each(s.labels) l
			EXCEPT SELECT label, feed_key FROM subscription_labels)) + (SELECT count(*) FROM (
			SELECT label, feed_key FROM subscription_labels
			EXCEPT SELECT l.value, s.feed_key FROM subscriptions s, json_each(s.labels) l))`).Scan(&differ)
		if err != nil || differ != 0 {
			t.Errorf("%s: %d rows differ, %v", when, differ, err)
		}
	}
	feeds := func(label string) string {
		t.Helper()
		var s []string
		if err := c.Feeds(ctx, FeedFilter{Label: label}, func(f *Feed) error {
			s = append(s, f.Sub.Name)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		keys, err := c.queryLabelFeeds(ctx, label)
		if err != nil || len(keys) != len(s) {
			t.Errorf("label %s: %d keys, %v; Feeds has %v", label, len(keys), err, s)
		}
		return strings.Join(s, ",")
	}
	add(t, c, sub("a", "news"), sub("b"), sub("d", "news", "tech", "news"))
	same("added")
	if got := feeds("news"); got != "a,d" {
		t.Errorf("news: %s", got)
	}
	err := c.EditSubscriptions(ctx, func(list []ndjson.Subscription) ([]ndjson.Subscription, error) {
		list[1].Labels = []string{"tech"}
		list[2].Labels = nil
		return list[1:], nil
	})
	if err != nil {
		t.Fatal(err)
	}
	same("edited")
	// No code updates the column in place (a change replaces the row), but
	// the rows follow an UPDATE too.
	if _, err := c.db.Exec(`UPDATE subscriptions SET labels = '["x", "tech"]' WHERE feed_key = (SELECT min(feed_key) FROM subscriptions)`); err != nil {
		t.Fatal(err)
	}
	same("updated in place")
	if _, err := c.db.Exec(`UPDATE subscriptions SET labels = '["tech"]' WHERE feed_key = (SELECT min(feed_key) FROM subscriptions)`); err != nil {
		t.Fatal(err)
	}
	if got := feeds("news") + ";" + feeds("tech"); got != ";b" {
		t.Errorf("after the edit, news;tech: %s", got)
	}
	if _, err := c.db.Exec(`DELETE FROM subscriptions; DELETE FROM meta`); err != nil {
		t.Fatal(err)
	}
	same("emptied")
	if err := c.catchUpSubscriptions(ctx); err != nil {
		t.Fatal(err)
	}
	same("rebuilt from the log")
	// A catalog with subscriptions before migration 9.
	c = openAtVersion(t, 8)
	for i, s := range []ndjson.Subscription{sub("a", "news"), sub("b", "tech"), sub("d", "news", "tech", "news"), sub("e")} {
		if _, err := c.db.Exec(`INSERT INTO feeds (feed_id) VALUES (?)`, s.FeedID); err != nil {
			t.Fatal(err)
		}
		labels, _ := json.Marshal(ndjson.NonNil(s.Labels))
		if _, err := c.db.Exec(`INSERT INTO subscriptions (feed_key, position, url, name, labels) SELECT key, ?, ?, ?, ? FROM feeds WHERE feed_id = ?`,
			i, s.URL, s.Name, string(labels), s.FeedID); err != nil {
			t.Fatal(err)
		}
	}
	c = reopen(t, c)
	same("migrated")
	if got := feeds("news") + ";" + feeds("tech"); got != "a,d;b,d" {
		t.Errorf("migrated, news;tech: %s", got)
	}
}
