package storage

import (
	"fmt"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// withSnapshots makes every file, however small, get a snapshot.
func withSnapshots(t *testing.T) {
	old := SnapshotMinBytes
	SnapshotMinBytes = 0
	t.Cleanup(func() { SnapshotMinBytes = old })
}

func testSubs(n int, name string) []ndjson.Subscription {
	subs := make([]ndjson.Subscription, n)
	for i := range subs {
		subs[i] = ndjson.Subscription{Header: ndjson.Head(ndjson.TypeSubscription), FeedID: fmt.Sprintf("%08d-0000-4000-8000-000000000000", i),
			URL: fmt.Sprintf("https://example.org/%d.xml", i), Name: fmt.Sprintf("%s %d", name, i), Labels: []string{"a", "b"},
			IntervalSec: i % 7, CreatedAt: ndjson.At(day1), Scrape: []byte(`{"discovery_mode":"list"}`),
			Access: ndjson.Access{Headers: map[string]string{"X-A": "1"}}}
	}
	return subs
}

func editSubs(t *testing.T, s *Store, subs []ndjson.Subscription) {
	t.Helper()
	if err := s.EditSubscriptions(func([]ndjson.Subscription) ([]ndjson.Subscription, error) { return subs, nil }); err != nil {
		t.Fatal(err)
	}
}

// snapshotUsable reports whether the snapshot called name matches its
// file now.
func snapshotUsable[T any](t *testing.T, s *Store, name, key string) bool {
	t.Helper()
	f, err := os.Open(s.Path(key))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, ok := loadSnapshot[T](s, snapshotKey(name), f)
	return ok
}

func loadSubs(t *testing.T, s *Store) []ndjson.Subscription {
	t.Helper()
	subs, bad, err := s.Subscriptions()
	if err != nil || bad != 0 {
		t.Fatalf("Subscriptions: %d bad, %v", bad, err)
	}
	return subs
}

func TestSubscriptionsSnapshot(t *testing.T) {
	withSnapshots(t)
	s := openTemp(t)
	want := testSubs(5000, "first")
	editSubs(t, s, want)
	if _, err := os.Stat(s.Path(snapshotKey(snapshotSubscriptions))); err != nil {
		t.Fatalf("no snapshot after an edit: %v", err)
	}
	if !snapshotUsable[ndjson.Subscription](t, s, snapshotSubscriptions, SubscriptionsFile) {
		t.Fatal("the snapshot an edit wrote does not match")
	}
	if got := loadSubs(t, s); !reflect.DeepEqual(got, want) {
		t.Fatalf("from the snapshot: %d subscriptions, want %d, or they differ", len(got), len(want))
	}

	// A list rewritten behind the snapshot's back (another feedpipe
	// version, an editor) is read as it is.
	want = testSubs(5000, "second")
	data, _ := encodeLines(want)
	if err := os.WriteFile(s.Path(SubscriptionsFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if snapshotUsable[ndjson.Subscription](t, s, snapshotSubscriptions, SubscriptionsFile) {
		t.Fatal("a snapshot of the old list matches the new one")
	}
	if got := loadSubs(t, s); !reflect.DeepEqual(got, want) {
		t.Fatal("a stale snapshot was used")
	}

	// That load wrote a new snapshot; lines appended after it are read
	// too.
	if !snapshotUsable[ndjson.Subscription](t, s, snapshotSubscriptions, SubscriptionsFile) {
		t.Fatal("no new snapshot")
	}
	more := testSubs(5001, "more")[5000:]
	data, _ = encodeLines(more)
	if _, err := s.AppendLines(SubscriptionsFile, data, Lazy); err != nil {
		t.Fatal(err)
	}
	if got := loadSubs(t, s); !reflect.DeepEqual(got, append(want, more...)) {
		t.Fatal("the lines after the snapshot were lost")
	}

	// A torn or garbled snapshot is ignored.
	key := s.Path(snapshotKey(snapshotSubscriptions))
	snap, _ := os.ReadFile(key)
	flipped := append([]byte{}, snap...)
	flipped[len(flipped)/3] ^= 0x20 // inside a chunk: its checksum fails
	for _, bad := range [][]byte{snap[:len(snap)/2], append(append([]byte{}, snap[:len(snap)-10]...), "0123456789"...), flipped, nil} {
		os.WriteFile(key, bad, 0o644)
		if got := loadSubs(t, s); !reflect.DeepEqual(got, append(want, more...)) {
			t.Fatal("a damaged snapshot was used")
		}
	}
}

func TestStatesSnapshot(t *testing.T) {
	withSnapshots(t)
	s := openTemp(t)
	st, err := s.States()
	if err != nil {
		t.Fatal(err)
	}
	state := func(i, round int) FeedState {
		return FeedState{FeedID: fmt.Sprintf("%08d-feed", i), Title: fmt.Sprintf("feed %d round %d", i, round),
			LastFetchAt: ndjson.At(day1.Add(time.Duration(round) * time.Minute)), IntervalSec: 3600,
			LastError: &ndjson.Error{Code: "x"}, Counts: FeedCounts{Fetches: round, ErrorCodes: map[string]int{"x": round}}}
	}
	// Enough rounds to compact (which writes a snapshot), then a tail.
	n := 2000
	for round := range 5 {
		batch := make([]FeedState, 0, n)
		for i := range n {
			if round < 4 || i%3 == 0 {
				batch = append(batch, state(i, round))
			}
		}
		if err := st.Put(Lazy, batch...); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(s.Path(snapshotKey(snapshotStates))); err != nil {
		t.Fatalf("no snapshot after compaction: %v", err)
	}
	if !snapshotUsable[FeedState](t, s, snapshotStates, StateFile) {
		t.Fatal("the snapshot compaction wrote does not match")
	}
	got, err := s.States()
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(s.Path(snapshotKey(snapshotStates)))
	want, err := s.States() // from the JSON alone
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.ByFeed, want.ByFeed) || got.lines != want.lines {
		t.Fatalf("snapshot and log differ: %d feeds, %d lines; want %d, %d", len(got.ByFeed), got.lines, len(want.ByFeed), want.lines)
	}
	if fs := got.ByFeed[state(3, 0).FeedID]; fs.Title != "feed 3 round 4" {
		t.Errorf("the tail after the snapshot was not applied: %q", fs.Title)
	}
	if fs := got.ByFeed[state(4, 0).FeedID]; fs.Title != "feed 4 round 3" {
		t.Errorf("got %q", fs.Title)
	}
	// And once more, whatever that load left behind.
	again, err := s.States()
	if err != nil || !reflect.DeepEqual(again.ByFeed, want.ByFeed) || again.lines != want.lines {
		t.Fatalf("after a rewritten snapshot: %v", err)
	}
}

// fill sets every exported field of v, however deep, to a value that is
// not zero, so that a field the codec dropped would show.
func fill(v reflect.Value, n int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(-n - 1))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(n + 1))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(n) + 0.5)
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), n+i)
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(v.Index(i), n+i)
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, n)
		fill(e, n)
		v.SetMapIndex(k, e)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.Struct:
		if v.Type() == timeType {
			v.Set(reflect.ValueOf(time.Unix(int64(1e9+n), 123456789).UTC()))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), n+i)
			}
		}
	}
}

func roundTrip[T any](t *testing.T, records []T) []T {
	t.Helper()
	c, err := codecFor(reflect.TypeFor[T]())
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeRecords[T](c, string(encodeRecords(c, nil, records)))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestSnapshotCodecKeepsEveryField(t *testing.T) {
	var fs FeedState
	fill(reflect.ValueOf(&fs).Elem(), 1)
	var sub ndjson.Subscription
	fill(reflect.ValueOf(&sub).Elem(), 2)
	empty := ndjson.Subscription{Labels: []string{}, Scrape: []byte{}, Access: ndjson.Access{Headers: map[string]string{}}}
	if got := roundTrip(t, []FeedState{fs, {}}); !reflect.DeepEqual(got, []FeedState{fs, {}}) {
		t.Errorf("FeedState:\n got %+v\nwant %+v", got, []FeedState{fs, {}})
	}
	want := []ndjson.Subscription{sub, {}, empty}
	if got := roundTrip(t, want); !reflect.DeepEqual(got, want) {
		t.Errorf("Subscription:\n got %+v\nwant %+v", got, want)
	}
}

func TestSnapshotCodecSurvivesGarbage(t *testing.T) {
	var fs FeedState
	fill(reflect.ValueOf(&fs).Elem(), 1)
	c, _ := codecFor(reflect.TypeFor[FeedState]())
	data := encodeRecords(c, nil, []FeedState{fs, fs})
	for i := range data {
		for _, b := range []byte{0, 0xff, data[i] ^ 1} {
			bad := append([]byte{}, data...)
			bad[i] = b
			decodeRecords[FeedState](c, string(bad)) // must not panic
		}
		if _, err := decodeRecords[FeedState](c, string(data[:i])); err == nil {
			t.Fatalf("a record cut at %d decoded", i)
		}
	}
}
