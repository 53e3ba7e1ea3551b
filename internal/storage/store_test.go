package storage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/testids"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

var day1 = time.Date(2026, 11, 21, 23, 59, 0, 0, time.UTC)

func openTemp(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestOpenCreatesLayout(t *testing.T) {
	s := openTemp(t)
	for _, d := range []string{DirState, DirRaw, DirFetches, DirEntries, DirEvents, DirIndex} {
		if st, err := os.Stat(filepath.Join(s.Root, d)); err != nil || !st.IsDir() {
			t.Errorf("%s not created: %v", d, err)
		}
	}
}

func TestOpenReportsUncreatableStore(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plainfile")
	os.WriteFile(file, []byte("x"), 0o644)
	_, err := Open(filepath.Join(file, "store"))
	if err == nil || !strings.Contains(err.Error(), "cannot create") || !strings.Contains(err.Error(), "plainfile") {
		t.Fatalf("got %v, want a clear 'cannot create <path>' error", err)
	}
	if _, err := Open(""); err == nil || !strings.Contains(err.Error(), "FEEDPIPE_STORE") {
		t.Fatalf("empty root: %v", err)
	}
}

func readTypes(t *testing.T, s *Store, key string, from int64) (types []string, end int64, bad int) {
	t.Helper()
	end, bad, err := s.ReadLog(key, from, func(l ndjson.Line) error {
		types = append(types, l.Type)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return types, end, bad
}

func TestAppendAndReadLog(t *testing.T) {
	s := openTemp(t)
	key := DayFile(DirEntries, day1)
	if key != "entries/2026-11-21.ndjson" {
		t.Fatalf("DayFile = %q", key)
	}
	off, err := s.AppendLines(key, []byte("{\"type\":\"a\"}\n{\"type\":\"b\"}\n"), Durable)
	if err != nil || off != 0 {
		t.Fatalf("first append at %d, %v", off, err)
	}
	off2, err := s.AppendLines(key, []byte("{\"type\":\"c\"}\n"), Lazy)
	if err != nil || off2 != 26 {
		t.Fatalf("second append at %d, %v; want 26", off2, err)
	}
	types, end, bad := readTypes(t, s, key, 0)
	if strings.Join(types, ",") != "a,b,c" || end != 39 || bad != 0 {
		t.Fatalf("read %v end %d bad %d", types, end, bad)
	}
	types, _, _ = readTypes(t, s, key, off2)
	if strings.Join(types, ",") != "c" {
		t.Fatalf("read from offset: %v", types)
	}
	if types, end, _ := readTypes(t, s, "entries/1999-01-01.ndjson", 0); len(types) != 0 || end != 0 {
		t.Fatal("missing file has records")
	}
}

func TestTornTailIsIgnoredThenCut(t *testing.T) {
	s := openTemp(t)
	key := "events/2026-11-21.ndjson"
	os.WriteFile(s.Path(key), []byte("{\"type\":\"a\"}\n{\"type\":\"b\",\"x\":"), 0o644)
	types, end, bad := readTypes(t, s, key, 0)
	if strings.Join(types, ",") != "a" || end != 13 || bad != 0 {
		t.Fatalf("torn tail: read %v end %d bad %d", types, end, bad)
	}
	// A complete record that only lacks its newline is still not read: a
	// writer may be in the middle of it.
	os.WriteFile(s.Path(key), []byte("{\"type\":\"a\"}\n{\"type\":\"b\"}"), 0o644)
	if types, _, _ := readTypes(t, s, key, 0); len(types) != 1 {
		t.Fatalf("unterminated line read: %v", types)
	}
	for _, torn := range []string{"{\"type\":\"b\",\"x\":", strings.Repeat("y", 200<<10), "{"} {
		os.WriteFile(s.Path(key), []byte("{\"type\":\"a\"}\n"+torn), 0o644)
		off, err := s.AppendLines(key, []byte("{\"type\":\"c\"}\n"), Durable)
		if err != nil || off != 13 {
			t.Fatalf("append after a torn tail of %d bytes: offset %d, %v", len(torn), off, err)
		}
		got, _ := os.ReadFile(s.Path(key))
		if string(got) != "{\"type\":\"a\"}\n{\"type\":\"c\"}\n" {
			t.Fatalf("file after cutting a torn tail of %d bytes: %q", len(torn), got)
		}
	}
	// A file that is one torn line is emptied.
	os.WriteFile(s.Path(key), []byte("{\"type\":"), 0o644)
	if off, err := s.AppendLines(key, []byte("{\"type\":\"d\"}\n"), Durable); err != nil || off != 0 {
		t.Fatalf("offset %d, %v", off, err)
	}
}

func TestWriteFileAtomicLeavesNoTemporaries(t *testing.T) {
	s := openTemp(t)
	for _, content := range []string{"one\n", "two\n"} {
		if err := s.WriteFileAtomic("state/x.json", []byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := os.ReadFile(s.Path("state/x.json"))
	if string(got) != "two\n" {
		t.Fatalf("content %q", got)
	}
	names, _ := os.ReadDir(s.Path("state"))
	if len(names) != 1 {
		t.Fatalf("directory holds %d files, want 1", len(names))
	}
}

func TestRawRoundTrip(t *testing.T) {
	s := openTemp(t)
	body := bytes.Repeat([]byte("<rss>payload</rss>\n"), 1000)
	key, sum, err := s.PutRaw(day1, body)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(key, "raw/2026-11-21/"+sum) || !strings.HasSuffix(key, ".zst") || len(sum) != 64 {
		t.Fatalf("key %q sum %q", key, sum)
	}
	st, _ := os.Stat(s.Path(key))
	if st.Size() >= int64(len(body))/10 {
		t.Errorf("stored %d bytes for %d: not compressed", st.Size(), len(body))
	}
	got, err := s.GetRaw(key, 0)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("GetRaw: %v, equal=%v", err, bytes.Equal(got, body))
	}
	key2, _, _ := s.PutRaw(day1, body)
	if key2 != key {
		t.Fatal("same payload stored twice")
	}
	if _, err := s.GetRaw(key, 100); !errors.Is(err, ErrRawTooLarge) {
		t.Fatalf("cap: %v", err)
	}
	if _, err := s.GetRaw("raw/2026-11-21/missing.zst", 0); err == nil || !strings.Contains(err.Error(), "missing.zst") {
		t.Fatalf("missing payload: %v", err)
	}
}

func TestEditSubscriptionsSerialisesWriters(t *testing.T) {
	s := openTemp(t)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.EditSubscriptions(func(subs []ndjson.Subscription) ([]ndjson.Subscription, error) {
				return append(subs, ndjson.Subscription{Header: ndjson.Head(ndjson.TypeSubscription), FeedID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i), URL: "https://example.org/"}), nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	subs, bad, err := s.Subscriptions()
	if err != nil || bad != 0 || len(subs) != 20 {
		t.Fatalf("%d subscriptions, %d bad, %v; want 20", len(subs), bad, err)
	}
	failed := errors.New("no")
	if err := s.EditSubscriptions(func([]ndjson.Subscription) ([]ndjson.Subscription, error) { return nil, failed }); !errors.Is(err, failed) {
		t.Fatal(err)
	}
	if subs, _, _ := s.Subscriptions(); len(subs) != 20 {
		t.Fatal("a failed edit wrote")
	}
}

func TestEditSubscriptionsRefusesToDropMalformedLines(t *testing.T) {
	s := openTemp(t)
	os.WriteFile(s.Path(SubscriptionsFile), []byte("{\"type\":\"subscription\",\"feed_id\":\"00000000-0000-4000-8000-000000000000\",\"url\":\"https://example.org/\"}\nnot json\n"), 0o644)
	err := s.EditSubscriptions(func(subs []ndjson.Subscription) ([]ndjson.Subscription, error) { return subs, nil })
	if err == nil || !strings.Contains(err.Error(), "1 malformed lines") {
		t.Fatalf("got %v", err)
	}
}

func TestStatesLastWinsAndCompact(t *testing.T) {
	s := openTemp(t)
	st, err := s.States()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1100 {
		if err := st.Put(Durable, FeedState{FeedID: "f1", ConsecutiveFailures: i}, FeedState{FeedID: "f2", LastStatus: 200}); err != nil {
			t.Fatal(err)
		}
	}
	again, err := s.States()
	if err != nil {
		t.Fatal(err)
	}
	if len(again.ByFeed) != 2 || again.ByFeed["f1"].ConsecutiveFailures != 1099 || again.ByFeed["f2"].LastStatus != 200 {
		t.Fatalf("states %+v", again.ByFeed)
	}
	if again.lines > 2*2+1024 {
		t.Fatalf("log not compacted: %d lines", again.lines)
	}
}

func TestRecover(t *testing.T) {
	s := openTemp(t)
	entry := func(uid, hash string) string {
		b, _ := ndjson.Marshal(ndjson.Entry{Header: ndjson.Head(ndjson.TypeEntry), FeedID: testids.Feed("feed1"), EntryUID: testids.UID(uid), ContentHash: hash, SeenCount: 1})
		return string(b)
	}
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	// Entries stored but never indexed nor announced: a crash between the
	// steps. One of them (u2) had its event written before the crash.
	s.AppendLines("entries/2026-11-20.ndjson", []byte(entry("u1", "h1")+entry("u2", "h2")), Durable)
	s.AppendLines("entries/2026-11-21.ndjson", []byte(entry("u1", "h1b")), Durable)
	u2 := ndjson.Entry{EntryUID: testids.UID("u2"), FeedID: testids.Feed("feed1"), ContentHash: "h2"}
	ev, _ := ndjson.Marshal(ndjson.EventFor(&u2, ndjson.At(now), "entries/2026-11-20.ndjson"))
	s.AppendLines("events/2026-11-20.ndjson", ev, Durable)

	announced, err := s.Recover(now)
	if err != nil || len(announced) != 2 || announced[0].EntryUID != testids.UID("u1") || announced[1].ContentHash != "h1b" || announced[0].StoredIn != "entries/2026-11-20.ndjson" {
		t.Fatalf("announced %+v, %v", announced, err)
	}
	idx, _ := s.SeenEntries(testids.Feed("feed1"))
	u1, _ := idx.Latest(testids.UID("u1"))
	if idx.Len() != 2 || u1.Hash != "h1b" || idx.Judge(testids.UID("u1"), "h1") != "" || idx.Judge(testids.UID("u1"), "h9") != "updated" || idx.Judge(testids.UID("u9"), "h1") != "new" {
		t.Fatalf("index %+v", idx)
	}
	events, _ := os.ReadFile(s.Path("events/2026-11-21.ndjson"))
	if strings.Count(string(events), "\n") != 2 {
		t.Fatalf("events written:\n%s", events)
	}
	if again, _ := s.Recover(now); len(again) != 0 {
		t.Fatalf("second recovery announced %d", len(again))
	}
	cp, _ := s.Checkpoint()
	if cp.File != "entries/2026-11-21.ndjson" || cp.Offset == 0 || cp.EventsFile != "events/2026-11-21.ndjson" || cp.EventsOffset == 0 {
		t.Fatalf("checkpoint %+v", cp)
	}
	s.AppendLines("entries/2026-11-21.ndjson", []byte(entry("u3", "h3")), Durable)
	if got, _ := s.Recover(now); len(got) != 1 {
		t.Fatalf("recovery after the checkpoint announced %d, want 1", len(got))
	}
	// An index lost entirely is rebuilt; nothing is announced twice.
	os.RemoveAll(s.Path(DirIndex))
	if got, err := s.Recover(now); len(got) != 0 || err != nil {
		t.Fatalf("rebuild announced %d, %v", len(got), err)
	}
	idx, _ = s.SeenEntries(testids.Feed("feed1"))
	if idx.Len() != 3 {
		t.Fatalf("rebuilt index has %d entries", idx.Len())
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
		{"abcd2222-0000", 1, ""},
		{"abcd2", 1, ""},
		{"https://EXAMPLE.org:443/c", 2, ""},
		{"ef00", 2, ""},
		{"abcd", -1, `"abcd" is ambiguous: it begins 2 feed ids (abcd1111-000…, abcd2222-000…)`},
		{"ef0", -1, `"ef0" is too short: give at least 4 characters`},
		{"9999", -1, `nothing matches "9999" (see feed-sub ls)`},
	} {
		i, err := FindSubscription(subs, tc.ref)
		if tc.err != "" {
			if i != -1 || err == nil || !errors.Is(err, ErrNoSuchSubscription) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %d, %v; want %q", tc.ref, i, err, tc.err)
			}
			continue
		}
		if i != tc.want || err != nil {
			t.Errorf("%s: %d, %v; want %d", tc.ref, i, err, tc.want)
		}
	}
}
