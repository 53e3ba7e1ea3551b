package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/dedup"
	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/testids"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// hourly is the scheduler of the tests that are not about it: every hour,
// no jitter. schedule_test.go tests the default, adaptive policy.
var hourly = sched.Params{Policy: sched.Policy{Kind: sched.PolicyFixed, Every: time.Hour}, Jitter: -1}

func entry(feed, uid, hash, title string) string {
	b, _ := ndjson.Marshal(ndjson.Entry{Header: ndjson.Head(ndjson.TypeEntry), FeedID: testids.Feed(feed), EntryUID: testids.UID(uid), ContentHash: hash, Title: title,
		RawRef: ndjson.RawRef{FetchID: testids.Fetch("F-" + feed)}, Authors: []ndjson.Author{}, Categories: []string{}, Enclosures: []ndjson.Enclosure{}})
	return string(b)
}

func fetchRec(feed string, mutate func(*ndjson.Fetch)) string {
	f := ndjson.Fetch{Header: ndjson.Head(ndjson.TypeFetch), FetchID: testids.Fetch("F-" + feed), FetchedAt: ndjson.At(t0),
		Due: ndjson.Due{Header: ndjson.Head(ndjson.TypeDue), FeedID: testids.Feed(feed)}, HTTPStatus: 200, Parse: &ndjson.Parse{Format: "rss"},
		ResponseHeaders: map[string]string{"Etag": `"v1"`, "Last-Modified": "Sat, 21 Nov 2026 09:00:00 GMT"}}
	if mutate != nil {
		mutate(&f)
	}
	b, _ := ndjson.Marshal(f)
	return string(b)
}

type runOut struct {
	lines []ndjson.Line
	sum   Summary
	err   error
}

func run(t *testing.T, st *storedir.Store, at time.Time, input string) runOut {
	t.Helper()
	return runWith(t, st, at, hourly, input)
}

// runWith runs feed-store at the time at with the scheduler's parameters
// p over input, and collects what it wrote.
func runWith(t *testing.T, st *storedir.Store, at time.Time, p sched.Params, input string) runOut {
	t.Helper()
	return runConfig(t, Config{In: strings.NewReader(input), Store: st, Now: func() time.Time { return at }, Sched: p})
}

// runConfig runs feed-store with cfg, its Out and Summary its own, and
// collects what it wrote.
func runConfig(t *testing.T, cfg Config) runOut {
	t.Helper()
	var out bytes.Buffer
	var sum Summary
	cfg.Out, cfg.Summary = ndjson.NewWriter(&out), &sum
	err := Run(context.Background(), cfg)
	r := runOut{sum: sum, err: err}
	rd := ndjson.NewReader(&out)
	for {
		l, err := rd.Next()
		if err != nil {
			break
		}
		l.Raw = append([]byte(nil), l.Raw...)
		r.lines = append(r.lines, l)
	}
	return r
}

func storedEntries(t *testing.T, st *storedir.Store) []ndjson.Entry {
	t.Helper()
	var all []ndjson.Entry
	files, _ := st.DayFiles(storedir.DirEntries)
	for _, f := range files {
		st.ReadLog(f, 0, func(l ndjson.Line) error {
			var e ndjson.Entry
			if err := l.Decode(&e); err != nil {
				t.Fatal(err)
			}
			all = append(all, e)
			return nil
		})
	}
	return all
}

// TestStdoutCarriesEvents: stdout carries the events, each with its feed's
// name and labels and the entry's summary; the decisions go to the
// decisions/ tap, and to stdout only when asked for.
func TestStdoutCarriesEvents(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sub       ndjson.Subscription
		decisions bool
		wantTypes string
		wantName  string
		labels    string
	}{
		{name: "named, labelled", sub: ndjson.Subscription{Name: "My feed", Labels: []string{"news", "tech"}},
			wantTypes: "new_entry,feed_disabled", wantName: "My feed", labels: "news,tech"},
		{name: "no name: the feed's title, found by its first fetch", wantTypes: "new_entry,feed_disabled", wantName: "The A feed"},
		{name: "--decisions", decisions: true, wantTypes: "new_entry,decision,feed_disabled", wantName: "The A feed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, _ := storedir.Open(t.TempDir())
			sub := tc.sub
			sub.Header, sub.FeedID, sub.URL = ndjson.Head(ndjson.TypeSubscription), testids.Feed("A"), "http://example.org/a.xml"
			editSubs(t, st, func([]ndjson.Subscription) ([]ndjson.Subscription, error) { return []ndjson.Subscription{sub}, nil })
			e := entry("A", "u1", "h1", "One")
			e = strings.Replace(e, `"summary":""`, `"summary":"The gist"`, 1)
			// A 410 with an entry (a replay): an event, a decision and a
			// feed_disabled event.
			in := e + fetchRec("A", func(f *ndjson.Fetch) {
				f.Parse.Title = "The A feed"
				f.HTTPStatus, f.Error = 410, &ndjson.Error{Class: ndjson.ClassPermanent, Code: "http_410", Message: "gone"}
			})
			r := runConfig(t, Config{In: strings.NewReader(in), Store: st, Now: func() time.Time { return t0 }, Sched: hourly, Decisions: tc.decisions})
			if r.err != nil {
				t.Fatal(r.err)
			}
			if got := r.types(); got != tc.wantTypes {
				t.Errorf("stdout: %s, want %s", got, tc.wantTypes)
			}
			var ev ndjson.Event
			if err := r.lines[0].Decode(&ev); err != nil {
				t.Fatalf("%v: %s", err, r.lines[0].Raw)
			}
			if ev.FeedName != tc.wantName || strings.Join(ev.Labels, ",") != tc.labels || ev.Labels == nil || ev.Summary != "The gist" {
				t.Errorf("event: feed_name %q, labels %q, summary %q", ev.FeedName, ev.Labels, ev.Summary)
			}
			decisions, _ := os.ReadFile(st.Path("decisions/2026-11-21.ndjson"))
			if strings.Count(string(decisions), "\n") != 1 || !strings.HasPrefix(string(decisions), `{"type":"decision","v":1,"feed_id":"`+testids.Feed("A")) {
				t.Errorf("decisions/:\n%s", decisions)
			}
		})
	}
}

// TestFeedDescribed: a feed's state keeps what its last body read says it
// is (format, version, content type, publisher); a 304 keeps them.
func TestFeedDescribed(t *testing.T) {
	st, _ := storedir.Open(t.TempDir())
	in := fetchRec("A", func(f *ndjson.Fetch) {
		f.ContentType, f.BodySHA256 = "application/rss+xml; charset=utf-8", "ab"
		f.Parse = &ndjson.Parse{Format: "rss", Version: "2.0", Publisher: "Example Inc."}
	})
	if r := run(t, st, t0, in); r.err != nil {
		t.Fatal(r.err)
	}
	in = fetchRec("A", func(f *ndjson.Fetch) {
		f.FetchedAt, f.HTTPStatus, f.NotModified, f.Parse = ndjson.At(t0.Add(time.Hour)), 304, true, nil
	})
	if r := run(t, st, t0.Add(time.Hour), in); r.err != nil {
		t.Fatal(r.err)
	}
	states, _ := statesOf(t, st)
	fs := states.ByFeed[testids.Feed("A")]
	if fs.Format != "rss" || fs.FormatVersion != "2.0" || fs.ContentType != "application/rss+xml; charset=utf-8" || fs.Publisher != "Example Inc." {
		t.Errorf("state: format %q %q, content type %q, publisher %q", fs.Format, fs.FormatVersion, fs.ContentType, fs.Publisher)
	}
}

func TestStoreNewUnchangedUpdated(t *testing.T) {
	st, _ := storedir.Open(t.TempDir())
	first := run(t, st, t0, entry("A", "u1", "h1", "One")+entry("A", "u2", "h2", "Two")+`{"type":"note","v":1}`+"\n"+fetchRec("A", nil))
	if first.err != nil {
		t.Fatal(first.err)
	}
	var types []string
	for _, l := range first.lines {
		types = append(types, l.Type)
	}
	if strings.Join(types, ",") != "new_entry,new_entry,note" {
		t.Fatalf("output %v", types)
	}
	var ev ndjson.Event
	first.lines[0].Decode(&ev)
	if ev.EntryUID != testids.UID("u1") || ev.Title != "One" || ev.StoredIn != "entries/2026-11-21.ndjson" || !ev.IngestedAt.Equal(t0) || len(ev.RawRefs) != 1 || ev.RawRefs[0].FetchID != testids.Fetch("F-A") {
		t.Errorf("event %+v", ev)
	}
	if s := first.sum; s.New != 2 || s.Feeds != 1 || s.Known != 0 {
		t.Errorf("summary %+v", s)
	}
	stored := storedEntries(t, st)
	if len(stored) != 2 || stored[0].Status != "new" || !stored[0].FirstSeen.Equal(t0) || stored[0].SeenCount != 1 {
		t.Fatalf("stored %+v", stored)
	}
	events, _ := os.ReadFile(st.Path("events/2026-11-21.ndjson"))
	if strings.Count(string(events), "\n") != 2 || !strings.HasPrefix(string(events), string(first.lines[0].Raw)) {
		t.Errorf("events file:\n%s", events)
	}

	// The same entries again, even without feed-dedup before: nothing new.
	again := run(t, st, t0.Add(time.Hour), entry("A", "u1", "h1", "One")+entry("A", "u2", "h2", "Two"))
	if len(again.lines) != 0 || again.sum.Known != 2 || len(storedEntries(t, st)) != 2 {
		t.Fatalf("replay stored %d, emitted %d", len(storedEntries(t, st))-2, len(again.lines))
	}

	// A changed entry is a new version.
	later := t0.Add(48 * time.Hour)
	upd := run(t, st, later, entry("A", "u1", "h1b", "One, corrected"))
	if len(upd.lines) != 1 || upd.lines[0].Type != "updated_entry" || upd.sum.Updated != 1 {
		t.Fatalf("update: %+v", upd)
	}
	stored = storedEntries(t, st)
	v2 := stored[len(stored)-1]
	if v2.Status != "updated" || !v2.FirstSeen.Equal(t0) || !v2.LastSeen.Equal(later) || v2.SeenCount != 2 {
		t.Fatalf("version 2: %+v", v2)
	}
	if files, _ := st.DayFiles(storedir.DirEntries); len(files) != 2 || files[1] != "entries/2026-11-23.ndjson" {
		t.Errorf("entries files %v: a version goes to the day it was stored", files)
	}
}

func TestFeedState(t *testing.T) {
	st, _ := storedir.Open(t.TempDir())
	editSubs(t, st, func([]ndjson.Subscription) ([]ndjson.Subscription, error) {
		return []ndjson.Subscription{{Header: ndjson.Head(ndjson.TypeSubscription), FeedID: testids.Feed("own"), URL: "https://own.example/", IntervalSec: 600}}, nil
	})
	state := func(feed string) catalog.FeedState {
		t.Helper()
		s, err := statesOf(t, st)
		if err != nil {
			t.Fatal(err)
		}
		return s.ByFeed[testids.Feed(feed)]
	}
	// Each step is a fetch a minute after the one before, at fetchedAt.
	fetchedAt := t0
	step := func(feed string, mutate func(*ndjson.Fetch)) catalog.FeedState {
		t.Helper()
		fetchedAt = fetchedAt.Add(time.Minute)
		at := fetchedAt
		rec := fetchRec(feed, func(f *ndjson.Fetch) {
			f.FetchedAt = ndjson.At(at)
			if mutate != nil {
				mutate(f)
			}
		})
		if r := run(t, st, at, rec); r.err != nil {
			t.Fatal(r.err)
		}
		return state(feed)
	}

	s := step("A", func(f *ndjson.Fetch) { f.Parse = &ndjson.Parse{Title: "Feed A"}; f.BodySHA256 = "abc" })
	if s.Validators.ETag != `"v1"` || s.LastStatus != 200 || !s.LastSuccessAt.Equal(fetchedAt) || s.ConsecutiveFailures != 0 ||
		!s.NextFetchAt.Equal(fetchedAt.Add(DefaultInterval)) || s.Title != "Feed A" || s.LastBodySHA256 != "abc" || s.IntervalSec != 3600 {
		t.Fatalf("after 200: %+v", s)
	}
	s = step("A", func(f *ndjson.Fetch) { f.HTTPStatus, f.NotModified, f.ResponseHeaders = 304, true, map[string]string{} })
	if s.Validators.ETag != `"v1"` || s.Validators.LastModified == "" || s.Title != "Feed A" {
		t.Fatalf("a 304 lost the validators or title: %+v", s)
	}
	s = step("A", func(f *ndjson.Fetch) {
		f.ResponseHeaders = map[string]string{"Last-Modified": "Sun, 22 Nov 2026 00:00:00 GMT"}
	})
	if s.Validators.ETag != `"v1"` || s.Validators.LastModified != "Sun, 22 Nov 2026 00:00:00 GMT" {
		t.Fatalf("a 200 without ETag must keep the old one and take the new Last-Modified: %+v", s)
	}
	for i := 1; i <= 2; i++ {
		s = step("A", func(f *ndjson.Fetch) {
			f.HTTPStatus = 503
			f.RetryAfterSec = 7200
			f.Error = &ndjson.Error{Class: "rate_limited", Code: "http_503", Message: "HTTP 503"}
			f.ResponseHeaders = map[string]string{"Etag": `"error-page"`}
		})
		if s.ConsecutiveFailures != i || s.LastError == nil || s.LastError.Code != "http_503" {
			t.Fatalf("failure %d: %+v", i, s)
		}
	}
	if s.Validators.ETag != `"v1"` || !s.NextFetchAt.Equal(fetchedAt.Add(2*time.Hour)) || !s.LastSuccessAt.Equal(t0.Add(3*time.Minute)) {
		t.Fatalf("after errors: %+v (validators must not come from an error page; Retry-After beyond the interval wins)", s)
	}
	s = step("A", nil)
	if s.ConsecutiveFailures != 0 || s.LastError != nil {
		t.Fatalf("a success must reset the failures: %+v", s)
	}
	if s = step("own", nil); s.IntervalSec != 600 || !s.NextFetchAt.Equal(fetchedAt.Add(10*time.Minute)) {
		t.Fatalf("the subscription's own interval: %+v", s)
	}
}

func TestReplayedFetchesDoNotTurnStateBack(t *testing.T) {
	st, _ := storedir.Open(t.TempDir())
	later := func(f *ndjson.Fetch) {
		f.FetchID, f.FetchedAt = testids.Fetch("F2"), ndjson.At(t0.Add(time.Hour))
		f.ResponseHeaders = map[string]string{"Etag": `"v2"`}
	}
	run(t, st, t0, fetchRec("A", nil)+fetchRec("A", later))
	// A replay of both, in order.
	run(t, st, t0.Add(2*time.Hour), fetchRec("A", nil)+fetchRec("A", later))
	s, _ := statesOf(t, st)
	got := s.ByFeed[testids.Feed("A")]
	if got.Validators.ETag != `"v2"` || !got.LastFetchAt.Equal(t0.Add(time.Hour)) || !got.NextFetchAt.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("state after replay: %+v", got)
	}
}

func TestNewEntriesCountedInState(t *testing.T) {
	st, _ := storedir.Open(t.TempDir())
	run(t, st, t0, entry("A", "u1", "h1", "One")+entry("A", "u2", "h2", "Two")+fetchRec("A", nil))
	s, _ := statesOf(t, st)
	if s.ByFeed[testids.Feed("A")].NewEntriesLastFetch != 2 {
		t.Fatalf("new_entries_last_fetch %d", s.ByFeed[testids.Feed("A")].NewEntriesLastFetch)
	}
}

func TestCatchesUpAfterACrashBetweenEntriesAndIndex(t *testing.T) {
	st, _ := storedir.Open(t.TempDir())
	openCatalog(t, st) // the store has run before
	// A crash left an entry in entries/ that was never indexed nor
	// announced.
	e := ndjson.Entry{Header: ndjson.Head(ndjson.TypeEntry), FeedID: testids.Feed("A"), EntryUID: testids.UID("u1"), ContentHash: "h1", FirstSeen: ndjson.At(t0), SeenCount: 1, Status: "new"}
	b, _ := ndjson.Marshal(e)
	if _, err := st.AppendLines("entries/2026-11-21.ndjson", b, storedir.Durable); err != nil {
		t.Fatal(err)
	}
	r := run(t, st, t0.Add(time.Minute), entry("A", "u1", "h1", "One"))
	if r.err != nil || len(storedEntries(t, st)) != 1 {
		t.Fatalf("err %v, %d stored: the entry was stored twice", r.err, len(storedEntries(t, st)))
	}
	// Its event, which the crash kept from being written, comes now.
	if len(r.lines) != 1 || r.lines[0].Type != "new_entry" {
		t.Fatalf("output %v", r.lines)
	}
	events, _ := os.ReadFile(st.Path("events/2026-11-21.ndjson"))
	if strings.Count(string(events), "\n") != 1 {
		t.Fatalf("events file:\n%s", events)
	}
}

func TestBadInputIsReportedNotFatal(t *testing.T) {
	st, _ := storedir.Open(t.TempDir())
	// Typed lines that are not JSON are left to the decoding to report
	// (Reader.SetDecoded): they count as the untyped one does.
	r := run(t, st, t0, "{oops\n"+entry("A", "u1", "h1", "One")+`{"type":"entry","v":1,"title":7}`+"\n"+`{"type":"entry","v":1}`+"\n"+
		`{"type":"entry","v":1,oops`+"\n"+`{"type":"fetch","v":1,"fetch_id":`+"\n")
	if r.err == nil || !strings.Contains(r.err.Error(), "5 malformed input lines skipped") || r.sum.New != 1 || len(storedEntries(t, st)) != 1 {
		t.Fatalf("err %v, summary %+v", r.err, r.sum)
	}
}

// TestTwoWritersStoreOnce runs two feed-stores at once on the same input,
// as two pipelines started together would: the store lock makes the second
// wait, and it finds the entries stored.
func TestTwoWritersStoreOnce(t *testing.T) {
	st, _ := storedir.Open(t.TempDir())
	var in strings.Builder
	for i := range 200 {
		in.WriteString(entry("A", fmt.Sprintf("u%d", i), "h", "T"))
	}
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			errs <- Run(context.Background(), Config{In: strings.NewReader(in.String()), Out: ndjson.NewWriter(io.Discard), Store: st, Now: func() time.Time { return t0 }})
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := len(storedEntries(t, st)); n != 200 {
		t.Fatalf("%d entries stored, want 200", n)
	}
}

func TestNoWaitFailsWhenLocked(t *testing.T) {
	st, _ := storedir.Open(t.TempDir())
	unlock, err := st.Lock(storedir.StoreLock, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	err = Run(context.Background(), Config{In: strings.NewReader(entry("A", "u1", "h1", "One")), Out: ndjson.NewWriter(io.Discard), Store: st, NoWait: true})
	if !errors.Is(err, storedir.ErrLocked) || !strings.Contains(err.Error(), "held by another process") {
		t.Fatalf("err %v", err)
	}
	// With nothing to store, it never needs the lock.
	if err := Run(context.Background(), Config{In: strings.NewReader(""), Out: ndjson.NewWriter(io.Discard), Store: st, NoWait: true}); err != nil {
		t.Fatalf("empty input: %v", err)
	}
}

func TestMovedFeedGetsItsNewURL(t *testing.T) {
	st, _ := storedir.Open(t.TempDir())
	editSubs(t, st, func([]ndjson.Subscription) ([]ndjson.Subscription, error) {
		return []ndjson.Subscription{
			{Header: ndjson.Head(ndjson.TypeSubscription), FeedID: testids.Feed("A"), URL: "https://old.example/feed"},
			{Header: ndjson.Head(ndjson.TypeSubscription), FeedID: testids.Feed("B"), URL: "https://b.example/feed"},
			{Header: ndjson.Head(ndjson.TypeSubscription), FeedID: testids.Feed("C"), URL: "https://c.example/feed"},
		}, nil
	})
	r := run(t, st, t0, fetchRec("A", func(f *ndjson.Fetch) {
		f.MovedTo, f.MovedCount, f.NewURL = "https://new.example/feed", 3, "https://new.example/feed"
	})+fetchRec("B", func(f *ndjson.Fetch) {
		f.MovedTo, f.MovedCount = "https://b2.example/feed", 1 // not yet
	})+fetchRec("C", func(f *ndjson.Fetch) {
		f.MovedTo, f.MovedCount, f.NewURL = "https://b.example/feed", 3, "https://b.example/feed" // taken by B
	}))
	if r.err != nil || r.sum.Moved != 1 {
		t.Fatalf("err %v, moved %d", r.err, r.sum.Moved)
	}
	subs := subsOf(t, st)
	if subs[0].URL != "https://new.example/feed" || subs[0].FeedID != testids.Feed("A") || subs[1].URL != "https://b.example/feed" || subs[2].URL != "https://c.example/feed" {
		t.Fatalf("subscriptions %+v", subs)
	}
	states, _ := statesOf(t, st)
	if b := states.ByFeed[testids.Feed("B")]; b.MovedTo != "https://b2.example/feed" || b.MovedCount != 1 {
		t.Fatalf("B's redirect count not kept: %+v", b)
	}
}

func TestBytesSavedAndSameBodyCounted(t *testing.T) {
	st, _ := storedir.Open(t.TempDir())
	r := run(t, st, t0, fetchRec("A", func(f *ndjson.Fetch) { f.HTTPStatus, f.NotModified, f.BytesSaved = 304, true, 5000 })+
		fetchRec("B", func(f *ndjson.Fetch) { f.Unchanged, f.BodySHA256, f.ContentLength = true, "abc", 7000 }))
	if r.sum.BytesSaved != 5000 || r.sum.NotModified != 1 || r.sum.SameBody != 1 {
		t.Fatalf("summary %+v", r.sum)
	}
	states, _ := statesOf(t, st)
	if a, b := states.ByFeed[testids.Feed("A")], states.ByFeed[testids.Feed("B")]; a.Counts.BytesSaved != 5000 || a.Counts.NotModified != 1 || b.LastContentLength != 7000 || b.LastBodySHA256 != "abc" || b.Counts.BytesIn != 7000 || b.Counts.OK != 1 {
		t.Fatalf("states %+v %+v", a, b)
	}
}

func TestPageFetchRecordsLeaveStateAlone(t *testing.T) {
	st, _ := storedir.Open(t.TempDir())
	run(t, st, t0, fetchRec("W", nil))
	r := run(t, st, t0.Add(time.Hour), fetchRec("W", func(f *ndjson.Fetch) {
		f.FetchID, f.FetchedAt = testids.Fetch("page1"), ndjson.At(t0.Add(time.Hour))
		f.Page = &ndjson.Page{Role: "article", SourceFetchID: testids.Fetch("F-W")}
		f.ResponseHeaders = map[string]string{"Etag": `"page-etag"`}
	}))
	states, _ := statesOf(t, st)
	if w := states.ByFeed[testids.Feed("W")]; w.Validators.ETag != `"v1"` || !w.LastFetchAt.Equal(t0) || r.sum.Feeds != 0 {
		t.Fatalf("a page fetch changed the source's state %+v (feeds counted %d)", w, r.sum.Feeds)
	}
}

func TestNewEntriesOfAWebsiteCountForItsFetch(t *testing.T) {
	st, _ := storedir.Open(t.TempDir())
	// Scraped entries point at the pages they came from, not at the
	// website's own fetch.
	e1 := strings.Replace(entry("W", "u1", "h1", "One"), `"fetch_id":"`+testids.Fetch("F-W")+`"`, `"fetch_id":"`+testids.Fetch("page1")+`"`, 1)
	e2 := strings.Replace(entry("W", "u2", "h2", "Two"), `"fetch_id":"`+testids.Fetch("F-W")+`"`, `"fetch_id":"`+testids.Fetch("page2")+`"`, 1)
	run(t, st, t0, e1+e2+fetchRec("W", nil))
	states, _ := statesOf(t, st)
	if n := states.ByFeed[testids.Feed("W")].NewEntriesLastFetch; n != 2 {
		t.Fatalf("new_entries_last_fetch %d, want 2", n)
	}
}

// TestValidatorsOnlyFromBodiesRead: a 2xx whose body broke off, or was
// not read, must not replace the validators, or the next fetch gets a 304
// and the body is never read: one that did not parse (not a feed, too
// many items) must come again, whole, to a parser raised to read it. One
// cut at the size cap and parsed is as whole as it will get.
func TestValidatorsOnlyFromBodiesRead(t *testing.T) {
	const newLM = "Sun, 22 Nov 2026 00:00:00 GMT"
	for _, tc := range []struct {
		name     string
		mutate   func(*ndjson.Fetch)
		etag, lm string // the state's validators after the second fetch
	}{
		{"whole 200", nil, `"v2"`, newLM},
		{"connection reset mid-body", func(f *ndjson.Fetch) {
			f.Error = &ndjson.Error{Class: ndjson.ClassTransient, Code: "connection_reset", Message: "read body: connection reset by peer"}
		}, `"v1"`, "Sat, 21 Nov 2026 09:00:00 GMT"},
		{"short of its Content-Length", func(f *ndjson.Fetch) {
			f.Error = &ndjson.Error{Class: ndjson.ClassTransient, Code: "network", Message: "read body: unexpected EOF"}
		}, `"v1"`, "Sat, 21 Nov 2026 09:00:00 GMT"},
		{"bad content coding", func(f *ndjson.Fetch) {
			f.Error = &ndjson.Error{Class: ndjson.ClassTransient, Code: "network", Message: "read body: gzip: invalid header"}
		}, `"v1"`, "Sat, 21 Nov 2026 09:00:00 GMT"},
		{"whole but not a feed", func(f *ndjson.Fetch) {
			f.Error = &ndjson.Error{Class: ndjson.ClassParse, Code: "not_a_feed", Message: "not an RSS, Atom or JSON feed"}
			f.Parse.Error = f.Error.Message
		}, `"v1"`, "Sat, 21 Nov 2026 09:00:00 GMT"},
		{"too many items", func(f *ndjson.Fetch) {
			f.Error = &ndjson.Error{Class: ndjson.ClassParse, Code: "too_many_items", Message: "more than 10000 items"}
			f.Parse.Error = f.Error.Message
		}, `"v1"`, "Sat, 21 Nov 2026 09:00:00 GMT"},
		{"a website scraped", func(f *ndjson.Fetch) {
			f.Due.SourceType, f.Parse, f.Scrape = ndjson.SourceWebsite, nil, &ndjson.Scrape{Mode: "list"}
		}, `"v2"`, newLM},
		{"a website whose scrape failed", func(f *ndjson.Fetch) {
			f.Due.SourceType, f.Parse, f.Scrape = ndjson.SourceWebsite, nil, &ndjson.Scrape{Mode: "list", Error: "no article found"}
		}, `"v1"`, "Sat, 21 Nov 2026 09:00:00 GMT"},
		{"cut at the size cap", func(f *ndjson.Fetch) {
			f.Truncated = true
			f.Error = &ndjson.Error{Class: ndjson.ClassTransient, Code: "body_too_large", Message: "body over 10 bytes"}
		}, `"v2"`, newLM},
		{"304", func(f *ndjson.Fetch) { f.HTTPStatus, f.NotModified = 304, true }, `"v2"`, newLM},
		{"503 error page", func(f *ndjson.Fetch) {
			f.HTTPStatus = 503
			f.Error = &ndjson.Error{Class: ndjson.ClassTransient, Code: "http_503", Message: "HTTP 503"}
		}, `"v1"`, "Sat, 21 Nov 2026 09:00:00 GMT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, _ := storedir.Open(t.TempDir())
			if r := run(t, st, t0, fetchRec("A", nil)); r.err != nil {
				t.Fatal(r.err)
			}
			later := t0.Add(time.Hour)
			second := fetchRec("A", func(f *ndjson.Fetch) {
				f.FetchID, f.FetchedAt = testids.Fetch("F2"), ndjson.At(later)
				f.ResponseHeaders = map[string]string{"Etag": `"v2"`, "Last-Modified": newLM}
				if tc.mutate != nil {
					tc.mutate(f)
				}
			})
			run(t, st, later, second)
			states, err := statesOf(t, st)
			if err != nil {
				t.Fatal(err)
			}
			if v := states.ByFeed[testids.Feed("A")].Validators; v.ETag != tc.etag || v.LastModified != tc.lm {
				t.Fatalf("validators %+v, want ETag %s, Last-Modified %q", v, tc.etag, tc.lm)
			}
		})
	}
}

// TestUnreadBodyNotStored: a fetch record that brought a body no stage
// read (feed-parse, or feed-scrape for a website, left out of the
// pipeline) is reported and not stored, neither its validators nor a
// success, so that its body is read when the record comes again through
// the whole pipeline.
func TestUnreadBodyNotStored(t *testing.T) {
	key := "raw/2026-11-21/" + strings.Repeat("ab", 32) + ".zst"
	for _, tc := range []struct {
		name, source, want string
		read               func(*ndjson.Fetch)
	}{
		{"feed without feed-parse", ndjson.SourceAuto, "reached feed-store unparsed: is feed-parse in the pipeline?",
			func(f *ndjson.Fetch) { f.Parse = &ndjson.Parse{Format: "rss"} }},
		{"website without feed-scrape", ndjson.SourceWebsite, "reached feed-store unscraped: is feed-scrape in the pipeline?",
			func(f *ndjson.Fetch) { f.Scrape = &ndjson.Scrape{Mode: ndjson.ModeList} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, _ := storedir.Open(t.TempDir())
			var logs bytes.Buffer
			rec := func(read bool) string {
				return fetchRec("A", func(f *ndjson.Fetch) {
					f.Due.SourceType, f.Due.URL, f.Parse = tc.source, "https://a.example/feed", nil
					f.BodyRef = &ndjson.BlobRef{Storage: storedir.RawStorage, Key: key}
					if read {
						tc.read(f)
					}
				})
			}
			err := Run(context.Background(), Config{In: strings.NewReader(rec(false)), Out: ndjson.NewWriter(io.Discard), Store: st,
				Log: slog.New(slog.NewTextHandler(&logs, nil)), Now: func() time.Time { return t0 }, Sched: hourly})
			if !errors.Is(err, pipe.ErrFailed) || !strings.Contains(logs.String(), "fetch of https://a.example/feed "+tc.want) {
				t.Fatalf("err %v, logs:\n%s", err, logs.String())
			}
			states, _ := statesOf(t, st)
			if s, ok := states.ByFeed[testids.Feed("A")]; ok {
				t.Fatalf("the unread fetch was stored: %+v", s)
			}
			// The same record, read this time, is stored: it was not
			// taken for one stored already.
			if r := run(t, st, t0.Add(time.Minute), rec(true)); r.err != nil || r.sum.Feeds != 1 || r.sum.Replayed != 0 {
				t.Fatalf("err %v, summary %+v", r.err, r.sum)
			}
			states, _ = statesOf(t, st)
			if v := states.ByFeed[testids.Feed("A")].Validators; v.ETag != `"v1"` {
				t.Fatalf("validators %+v", v)
			}
		})
	}
}

// TestSightingsCountedNotStored: an unchanged entry seen again (its
// lineage, docs/design.md#deduplication) is dropped by feed-dedup, which passes its uid on in the
// fetch record; feed-store moves its last_seen and counts the sighting in
// the catalog, writes nothing to entries/ or events/, and a replay of the
// same fetch counts nothing twice.
func TestSightingsCountedNotStored(t *testing.T) {
	st, _ := storedir.Open(t.TempDir())
	cycle := func(fetchID string, at time.Time) (deduped string) {
		t.Helper()
		in := entry("A", "u1", "h1", "One") + entry("A", "u2", "h2", "Two") + fetchRec("A", func(f *ndjson.Fetch) {
			f.FetchID, f.FetchedAt = testids.Fetch(fetchID), ndjson.At(at)
		})
		// feed-parse stamps each entry with its fetch's time.
		in = strings.ReplaceAll(in, `"entry_uid"`, `"first_seen":"`+at.Format(time.RFC3339)+`","last_seen":"`+at.Format(time.RFC3339)+`","seen_count":1,"entry_uid"`)
		var out bytes.Buffer
		if err := dedup.Run(context.Background(), dedup.Config{In: strings.NewReader(in), Out: ndjson.NewWriter(&out), Store: st}); err != nil {
			t.Fatal(err)
		}
		if r := run(t, st, at, out.String()); r.err != nil {
			t.Fatal(r.err)
		}
		return out.String()
	}
	cycle("first", t0)
	entriesBefore, _ := st.ReadFile(storedir.DayFile(storedir.DirEntries, t0))
	eventsBefore, _ := st.ReadFile(storedir.DayFile(storedir.DirEvents, t0))

	later := t0.Add(3 * time.Hour)
	out := cycle("second", later)
	if strings.Contains(out, `"type":"entry"`) {
		t.Errorf("feed-dedup passed unchanged entries on:\n%s", out)
	}
	if !strings.Contains(out, `"unchanged_uids":["`+testids.UID("u1")+`","`+testids.UID("u2")+`"]`) {
		t.Errorf("the fetch record does not name the unchanged entries:\n%s", out)
	}
	cycle("second", later) // a replay
	entriesAfter, _ := st.ReadFile(storedir.DayFile(storedir.DirEntries, t0))
	eventsAfter, _ := st.ReadFile(storedir.DayFile(storedir.DirEvents, t0))
	if !bytes.Equal(entriesBefore, entriesAfter) || !bytes.Equal(eventsBefore, eventsAfter) {
		t.Errorf("a sighting wrote to the taps")
	}
	ix := openCatalog(t, st).Index()
	for _, uid := range []string{"u1", "u2"} {
		s, ok, err := ix.Latest(context.Background(), testids.Feed("A"), testids.UID(uid))
		if err != nil || !ok || !s.FirstSeen.Equal(t0) || !s.LastSeen.Equal(later) || s.SeenCount != 2 || s.Versions != 1 {
			t.Errorf("%s: %+v %v %v: want first seen %s, last seen %s, seen twice, one version", uid, s, ok, err, t0, later)
		}
	}
}

// TestBusAckFollowsItsEntries: entries with no fetch record after them
// (the full-text worker's, taken from a stream) are not held past a
// bus_ack, which acknowledges them on their stream once passed on: their
// events come out before it, while the input is still open.
func TestBusAckFollowsItsEntries(t *testing.T) {
	st, _ := storedir.Open(t.TempDir())
	editSubs(t, st, func([]ndjson.Subscription) ([]ndjson.Subscription, error) {
		return []ndjson.Subscription{{Header: ndjson.Head(ndjson.TypeSubscription), FeedID: testids.Feed("A"), URL: "https://a.example/feed"}}, nil
	})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Config{In: inR, Out: ndjson.NewWriter(outW), Store: st, Now: func() time.Time { return t0 }, Sched: hourly})
		outW.Close()
	}()
	go func() {
		io.WriteString(inW, entry("A", "u1", "h1", "One")+`{"type":"bus_ack","v":1,"stream":"enriched","group":"store","ids":["1-0"]}`+"\n")
	}()
	rd := ndjson.NewReader(outR)
	var types []string
	for {
		l, err := rd.Next()
		if err != nil {
			t.Fatalf("output ended after %v: %v", types, err)
		}
		types = append(types, l.Type)
		if l.Type == ndjson.TypeBusAck {
			break
		}
	}
	if want := []string{ndjson.TypeNewEntry, ndjson.TypeBusAck}; fmt.Sprint(types) != fmt.Sprint(want) {
		t.Errorf("before the input ended, feed-store wrote %v, want %v", types, want)
	}
	inW.Close()
	go io.Copy(io.Discard, outR)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
