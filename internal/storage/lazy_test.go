package storage

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// schedFeedState is feed i's state in round r, with a scheduler state
// whose demand inputs differ from feed to feed and round to round; some
// feeds have none.
func schedFeedState(i, r int) FeedState {
	st := &sched.State{IntervalSec: 600 + i%7*60 + r, FetchedAt: ndjson.At(day1.Add(time.Duration(i*7+r*3600) * time.Second)),
		RateN: float64(i%13) / 3, RateT: 86400 * float64(1+i%5), BurstN: float64(r % 3), BurstT: 3600, Peak: float64(i % 11),
		Window: i % 30, Hints: sched.Hints{TTLMinutes: i % 4 * 15}, Pub: []int64{1, 2, int64(r)}}
	if i%17 == 0 {
		st.Lifecycle = sched.StateDisabled
	}
	fs := FeedState{Header: ndjson.Head(TypeFeedState), FeedID: fmt.Sprintf("%08d-feed", i), Title: fmt.Sprintf("feed %d round %d", i, r), LastStatus: 200 + r,
		LastFetchAt: st.FetchedAt, Counts: FeedCounts{Fetches: r, ErrorCodes: map[string]int{"x": r}}, Sched: st}
	if i%23 == 0 {
		fs.Sched = nil
	}
	return fs
}

// logStates is what the state log says, read as JSON alone: what every
// load must agree with.
func logStates(t *testing.T, s *Store) map[string]FeedState {
	t.Helper()
	want := map[string]FeedState{}
	_, _, err := s.ReadLog(StateFile, 0, func(l ndjson.Line) error {
		var fs FeedState
		if l.Type == TypeFeedState && l.Decode(&fs) == nil && fs.FeedID != "" {
			want[fs.FeedID] = fs
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return want
}

// checkStates checks the full load and a lazy one against the log, and
// returns the lazy one, open.
func checkStates(t *testing.T, s *Store, what string) *States {
	t.Helper()
	want := logStates(t, s)
	full, err := s.States()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(full.ByFeed, want) {
		t.Fatalf("%s: the full load differs from the log (%d feeds, want %d)", what, len(full.ByFeed), len(want))
	}
	lazy, err := s.OpenStates()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lazy.Close)
	for id, fs := range want {
		got, ok, err := lazy.Get(id)
		if err != nil || !ok || !reflect.DeepEqual(got, fs) {
			t.Fatalf("%s: lazy Get(%s) = %v, %v; want the log's state", what, id, ok, err)
		}
	}
	if _, ok, err := lazy.Get("no-such-feed"); ok || err != nil {
		t.Fatalf("%s: a feed never stored was found (%v)", what, err)
	}
	if lazy.numFeeds() != len(want) || lazy.lines != full.lines {
		t.Fatalf("%s: lazy load counts %d feeds, %d lines; want %d, %d", what, lazy.numFeeds(), lazy.lines, len(want), full.lines)
	}
	return lazy
}

func deltaFiles(t *testing.T, s *Store) []string {
	t.Helper()
	m, err := filepath.Glob(s.Path(snapshotKey(snapshotStates)) + ".*")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestStatesChain runs a writer that loads lazily through rounds of
// updates, checking after each that the lazy load, the full load and the
// log agree: the deltas each round writes, the whole snapshot merged from
// them when there are too many, and what a load does with a chain that is
// broken, stale or damaged.
func TestStatesChain(t *testing.T) {
	withSnapshots(t)
	const n = 1100
	// chained is a store whose states have a whole snapshot and five
	// deltas, the lazy and full loads checked at each step.
	chained := func(t *testing.T) *Store {
		s := openTemp(t)
		st, err := s.States()
		if err != nil {
			t.Fatal(err)
		}
		all := make([]FeedState, n)
		for i := range all {
			all[i] = schedFeedState(i, 0)
		}
		if err := st.Put(Lazy, all...); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(s.Path(snapshotKey(snapshotStates))); err != nil {
			t.Fatalf("no whole snapshot after the first states: %v", err)
		}
		// Rounds of a few feeds each, by a lazy writer: a delta each.
		for r := 1; r <= 5; r++ {
			st, err := s.OpenStates()
			if err != nil {
				t.Fatal(err)
			}
			if !st.Lazy() {
				t.Fatalf("round %d: the load is not lazy", r)
			}
			var batch []FeedState
			for i := r; i < n; i += 97 {
				batch = append(batch, schedFeedState(i, r))
			}
			batch = append(batch, schedFeedState(n+r, r)) // a new feed
			if err := st.Put(Lazy, batch...); err != nil {
				t.Fatal(err)
			}
			st.Close()
			if got := len(deltaFiles(t, s)); got != r {
				t.Fatalf("round %d: %d deltas", r, got)
			}
		}
		checkStates(t, s, "after the rounds")
		return s
	}

	t.Run("broken chain", func(t *testing.T) {
		c := chained(t)
		os.Remove(c.Path(deltaKey(3)))
		if st := checkStates(t, c, "delta 3 missing"); st.deltas != 2 || len(st.pending) == 0 {
			t.Fatalf("the chain goes on past a missing delta: %d deltas, %d feeds after it", st.deltas, len(st.pending))
		}
		// A writer mends it: its delta covers the lines after the break.
		st := checkStates(t, c, "again")
		if err := st.Put(Lazy, schedFeedState(7, 9)); err != nil {
			t.Fatal(err)
		}
		if st := checkStates(t, c, "mended"); st.deltas != 3 || len(st.pending) != 0 {
			t.Fatalf("after a writer: %d deltas, %d feeds after them", st.deltas, len(st.pending))
		}
	})
	t.Run("damaged delta", func(t *testing.T) {
		c := chained(t)
		b, _ := os.ReadFile(c.Path(deltaKey(1)))
		b[len(snapshotMagic)+10] ^= 1
		os.WriteFile(c.Path(deltaKey(1)), b, 0o644)
		if st := checkStates(t, c, "delta 1 damaged"); st.deltas != 0 {
			t.Fatalf("a damaged delta was used: %d deltas", st.deltas)
		}
	})
	t.Run("delta of another chain", func(t *testing.T) {
		c := chained(t)
		other := chained(t)
		st, _ := other.OpenStates()
		st.Put(Lazy, schedFeedState(1, 50)) // delta 6 of the copy
		st.Close()
		// Delta 6 of another history beside this one's 5: it follows
		// the same delta 5, but its lines are not this log's.
		os.Rename(other.Path(deltaKey(6)), c.Path(deltaKey(6)))
		if st := checkStates(t, c, "foreign delta"); st.deltas != 5 {
			t.Fatalf("a delta of another log was used: %d deltas", st.deltas)
		}
	})
	t.Run("lines without a delta", func(t *testing.T) {
		// An older feedpipe, or a crash between the log and the delta.
		c := chained(t)
		data, _ := encodeLines([]FeedState{schedFeedState(2, 60), schedFeedState(n+99, 60)})
		if _, err := c.AppendLines(StateFile, data, Lazy); err != nil {
			t.Fatal(err)
		}
		st := checkStates(t, c, "old writer")
		if len(st.pending) != 2 {
			t.Fatalf("%d feeds after the chain, want 2", len(st.pending))
		}
		if err := st.Put(Lazy, schedFeedState(3, 60)); err != nil {
			t.Fatal(err)
		}
		if st := checkStates(t, c, "after a delta of them"); len(st.pending) != 0 || st.deltas != 6 {
			t.Fatalf("the next delta left feeds out: %d after it", len(st.pending))
		}
	})
	t.Run("delta of lost lines", func(t *testing.T) {
		// A power cut kept a delta but not the lines it covers.
		c := chained(t)
		fi, _ := os.Stat(c.Path(StateFile))
		st, _ := c.OpenStates()
		if err := st.Put(Lazy, schedFeedState(4, 70)); err != nil {
			t.Fatal(err)
		}
		st.Close()
		os.Truncate(c.Path(StateFile), fi.Size())
		if st := checkStates(t, c, "lost lines"); st.deltas != 5 {
			t.Fatalf("a delta of lines the log lost was used: %d deltas", st.deltas)
		}
		// And lines that took their place.
		data, _ := encodeLines([]FeedState{schedFeedState(5, 71)})
		c.AppendLines(StateFile, append(data, data...), Lazy)
		if st := checkStates(t, c, "other lines"); st.deltas != 5 {
			t.Fatalf("a delta of other lines was used: %d deltas", st.deltas)
		}
	})
	t.Run("log replaced", func(t *testing.T) {
		c := chained(t)
		data, _ := encodeLines([]FeedState{schedFeedState(1, 80), schedFeedState(2, 80)})
		c.WriteFileAtomic(StateFile, data)
		if st := checkStates(t, c, "replaced"); st.tipID != 0 || len(st.ByFeed) != 2 {
			t.Fatal("a snapshot of the old log was used")
		}
	})
	t.Run("damaged index", func(t *testing.T) {
		c := chained(t)
		f, _ := os.Open(c.Path(StateFile))
		snap, ok := loadSnapshot[FeedState](c, snapshotKey(snapshotStates), f)
		f.Close()
		if !ok {
			t.Fatal("no whole snapshot")
		}
		snap.close()
		b, _ := os.ReadFile(c.Path(snapshotKey(snapshotStates)))
		b[snap.indexOff+100] ^= 1
		os.WriteFile(c.Path(snapshotKey(snapshotStates)), b, 0o644)
		st := checkStates(t, c, "damaged index")
		if st.Lazy() || !st.unindexed {
			t.Fatal("a damaged index was used")
		}
		// The first writer rewrites the snapshot, with a sound index.
		if err := st.Put(Lazy, schedFeedState(6, 90)); err != nil {
			t.Fatal(err)
		}
		if st := checkStates(t, c, "rewritten"); !st.Lazy() || st.deltas != 0 {
			t.Fatal("the snapshot was not rewritten with an index")
		}
	})
	t.Run("damaged record", func(t *testing.T) {
		c := chained(t)
		st, _ := c.OpenStates()
		defer st.Close()
		j, _ := st.chain[0].find(schedFeedState(10, 0).FeedID)
		off := st.chain[0].u64(st.chain[0].offsAt, j)
		b, _ := os.ReadFile(c.Path(snapshotKey(snapshotStates)))
		b[off+3] ^= 1
		os.WriteFile(c.Path(snapshotKey(snapshotStates)), b, 0o644)
		// The index was read before: Get finds the record wrong, and
		// loads every state instead.
		want := logStates(t, c)
		got, ok, err := st.Get(schedFeedState(10, 0).FeedID)
		if err != nil || !ok || !reflect.DeepEqual(got, want[got.FeedID]) || st.Lazy() {
			t.Fatalf("Get of a damaged record: %v %v, lazy %v", ok, err, st.Lazy())
		}
	})

	// Past maxDeltas the writer merges a whole snapshot: the records of
	// the old one and the deltas, in feed id order, with its own.
	s := chained(t)
	for r := 6; r <= maxDeltas+1; r++ {
		st, err := s.OpenStates()
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Put(Lazy, schedFeedState(r, r), schedFeedState(r+1000, r)); err != nil {
			t.Fatal(err)
		}
		st.Close()
	}
	if d := deltaFiles(t, s); len(d) != 0 {
		t.Fatalf("%d deltas after a whole snapshot", len(d))
	}
	st := checkStates(t, s, "merged")
	if !newRecordReader(st.chain[0]).inOrder {
		t.Error("the merged snapshot's records are not in feed id order")
	}
}

// TestStatesCompactLazy: a lazy writer compacts the log like a full one.
func TestStatesCompactLazy(t *testing.T) {
	withSnapshots(t)
	s := openTemp(t)
	st, _ := s.States()
	for r := range 2 {
		var batch []FeedState
		for i := range 600 {
			batch = append(batch, schedFeedState(i, r))
		}
		if err := st.Put(Lazy, batch...); err != nil {
			t.Fatal(err)
		}
	}
	for r := 2; r < 6; r++ {
		st, _ := s.OpenStates()
		var batch []FeedState
		for i := range 600 {
			batch = append(batch, schedFeedState(i, r))
		}
		if err := st.Put(Lazy, batch...); err != nil {
			t.Fatal(err)
		}
		st.Close()
	}
	st = checkStates(t, s, "compacted")
	if st.lines > 2*600+1024 {
		t.Fatalf("%d lines for 600 feeds: never compacted", st.lines)
	}
}

func TestIndexProjectionsKeepEveryField(t *testing.T) {
	var in sched.DemandInputs
	fill(reflect.ValueOf(&in).Elem(), 1)
	for _, want := range []sched.DemandInputs{in, {}} {
		got, ok := readDemandInputs(appendDemandInputs(nil, want))
		if !ok || got != want {
			t.Errorf("DemandInputs: got %+v, want %+v", got, want)
		}
	}
	var sub SubSched
	fill(reflect.ValueOf(&sub).Elem(), 2)
	for _, want := range []SubSched{sub, {}} {
		got, ok := readSubSched(appendSubSched(nil, want))
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("SubSched: got %+v, want %+v", got, want)
		}
		// Decoded over another one, as SchedInputs does.
		into := sub
		into.Overrides.Cron, into.Overrides.PausedUntil = "other", time.Unix(5, 0).UTC()
		if !readSubSchedInto(&into, appendSubSched(nil, want)) || !reflect.DeepEqual(into, want) {
			t.Errorf("SubSched over another: got %+v, want %+v", into, want)
		}
	}
}

// schedSubs are subscriptions with every kind of setting the scale
// reads, some of feeds that have no state, one feed listed twice.
func schedSubs(n int) []ndjson.Subscription {
	subs := testSubs(n, "sched")
	for i := range subs {
		s := &subs[i]
		switch i % 9 {
		case 1:
			s.Disabled = true
		case 2:
			s.MinIntervalSec, s.MaxIntervalSec = 900, 7200
		case 3:
			s.Cron = "*/30 * * * *"
		case 4:
			s.PausedUntil = ndjson.At(day1.Add(time.Hour))
		case 5:
			s.FeedID = fmt.Sprintf("%08d-0000-4000-8000-00000000ffff", i) // no state
		}
	}
	subs[n-1].FeedID = subs[10].FeedID // listed twice: both count
	return subs
}

type schedInput struct {
	Sub SubSched
	In  sched.DemandInputs
}

func collectInputs(t *testing.T, subs *Subs, states *States) []schedInput {
	t.Helper()
	got := make([]schedInput, subs.Len())
	seen := make([]bool, len(got))
	err := SchedInputs(subs, states, func(place int, sub *SubSched, in *sched.DemandInputs) {
		if seen[place] {
			t.Fatalf("place %d twice", place)
		}
		seen[place] = true
		got[place] = schedInput{*sub, *in}
	})
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.Index(seen, false); i >= 0 {
		t.Fatalf("place %d missing", i)
	}
	return got
}

// TestSchedInputs checks that what the scale reads is the same however
// the subscriptions and states are loaded: lazily from the indexes (with
// deltas, lines after the snapshots and this run's states over them), or
// whole.
func TestSchedInputs(t *testing.T) {
	withSnapshots(t)
	s := openTemp(t)
	const n = 2000
	subs := schedSubs(n)
	editSubs(t, s, subs)
	st, _ := s.States()
	var batch []FeedState
	for i := range n + 50 { // 50 states of feeds not subscribed
		batch = append(batch, schedFeedState(i, 0))
	}
	st.Put(Lazy, batch...)
	for r := 1; r <= 3; r++ {
		st, _ := s.OpenStates()
		st.Put(Lazy, schedFeedState(r*11, r), schedFeedState(r*13, r))
		st.Close()
	}
	// Lines after both snapshots.
	more := schedSubs(n + 5)[n:]
	data, _ := encodeLines(more)
	s.AppendLines(SubscriptionsFile, data, Lazy)
	data, _ = encodeLines([]FeedState{schedFeedState(12, 9)})
	s.AppendLines(StateFile, data, Lazy)

	all, _, err := s.Subscriptions()
	if err != nil {
		t.Fatal(err)
	}
	want := func() []schedInput {
		states := logStates(t, s)
		var want []schedInput
		for i := range all {
			fs := states[all[i].FeedID]
			want = append(want, schedInput{subSchedOf(&all[i]), stateDemandInputs(&fs)})
		}
		return want
	}()
	for _, lazySubs := range []bool{true, false} {
		for _, lazyStates := range []bool{true, false} {
			subs, err := s.OpenSubscriptions()
			if err != nil {
				t.Fatal(err)
			}
			if !lazySubs {
				subs.All()
			}
			states, err := s.OpenStates()
			if err != nil {
				t.Fatal(err)
			}
			if !lazyStates {
				states.Load()
			}
			if subs.idx == nil == lazySubs || states.Lazy() != lazyStates {
				t.Fatalf("not the loads asked for")
			}
			// A state this run changed, not yet in a delta.
			changed := schedFeedState(20, 99)
			states.ByFeed[changed.FeedID] = changed
			w := slices.Clone(want)
			for i := range w {
				if all[i].FeedID == changed.FeedID {
					w[i].In = stateDemandInputs(&changed)
				}
			}
			if got := collectInputs(t, subs, states); !reflect.DeepEqual(got, w) {
				for i := range got {
					if !reflect.DeepEqual(got[i], w[i]) {
						t.Fatalf("lazy subscriptions %v, lazy states %v: place %d is %+v, want %+v", lazySubs, lazyStates, i, got[i], w[i])
					}
				}
			}
			subs.Close()
			states.Close()
		}
	}
}

// TestLazySubs checks lookups in the lazy subscription list against the
// whole one, and what a damaged index does.
func TestLazySubs(t *testing.T) {
	withSnapshots(t)
	s := openTemp(t)
	subs := schedSubs(1500)
	editSubs(t, s, subs)
	more := testSubs(1502, "more")[1500:]
	more[1].FeedID = subs[3].FeedID // the later wins
	data, _ := encodeLines(more)
	s.AppendLines(SubscriptionsFile, data, Lazy)
	all := loadSubs(t, s)
	last := map[string]ndjson.Subscription{}
	for _, sub := range all {
		last[sub.FeedID] = sub
	}
	check := func(what string, wantLazy bool) {
		t.Helper()
		l, err := s.OpenSubscriptions()
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if (l.idx != nil) != wantLazy || l.Len() != len(all) {
			t.Fatalf("%s: lazy %v, %d subscriptions; want %v, %d", what, l.idx != nil, l.Len(), wantLazy, len(all))
		}
		for _, id := range slices.Sorted(maps.Keys(last)) {
			got, ok, err := l.Get(id)
			if err != nil || !ok || !reflect.DeepEqual(got, last[id]) {
				t.Fatalf("%s: Get(%s) = %+v, %v, %v; want %+v", what, id, got, ok, err, last[id])
			}
		}
		if _, ok, _ := l.Get("nothing"); ok {
			t.Fatalf("%s: found a feed not subscribed", what)
		}
		if got, _ := l.All(); !reflect.DeepEqual(got, all) {
			t.Fatalf("%s: All differs", what)
		}
	}
	check("lazy", true)
	// A damaged index: the whole list, and the load writes a snapshot
	// with a sound one.
	f, _ := os.Open(s.Path(SubscriptionsFile))
	snap, _ := loadSnapshot[ndjson.Subscription](s, snapshotKey(snapshotSubscriptions), f)
	f.Close()
	snap.close()
	b, _ := os.ReadFile(s.Path(snapshotKey(snapshotSubscriptions)))
	b[snap.indexOff+7] ^= 1
	os.WriteFile(s.Path(snapshotKey(snapshotSubscriptions)), b, 0o644)
	check("damaged index", false)
	check("rewritten", true)
	// No snapshot at all.
	os.Remove(s.Path(snapshotKey(snapshotSubscriptions)))
	SnapshotMinBytes = 1 << 40
	check("no snapshot", false)
}

func TestIndexFind(t *testing.T) {
	withSnapshots(t)
	s := openTemp(t)
	subs := testSubs(300, "find")
	last := map[string]int{}
	for i := range subs {
		subs[i].FeedID = fmt.Sprintf("00000000-0000-4000-8000-000000000%03d", (i*37)%100) // each three times, in no order
		last[subs[i].FeedID] = i
	}
	editSubs(t, s, subs)
	l, err := s.OpenSubscriptions()
	if err != nil || l.idx == nil {
		t.Fatal("no index", err)
	}
	defer l.Close()
	x := l.idx
	for j := 1; j < x.n; j++ {
		if x.key(j-1) > x.key(j) || x.key(j-1) == x.key(j) && x.rec(j-1) > x.rec(j) {
			t.Fatalf("places %d and %d out of order", j-1, j)
		}
	}
	for k, i := range last {
		if j, ok := x.find(k); !ok || x.key(j) != k || x.rec(j) != i {
			t.Errorf("find(%q): place %d, record %d, %v; want record %d", k, j, x.rec(j), ok, i)
		}
	}
	for _, k := range []string{"0", "00000000-0000-4000-8000-000000001000", "zzz", "00000000-0000-4000-8000-000000000050x", "a"} {
		if _, ok := x.find(k); ok {
			t.Errorf("found %q", k)
		}
	}
}

// TestStatesCompactKeepsEachFeedsLatest: compaction leaves one line per
// feed, its latest state: the Put's own for the feeds in it, the last line
// that decodes for the others (a damaged last line is skipped, as a load
// skips it), and the snapshot it writes loads the same states.
func TestStatesCompactKeepsEachFeedsLatest(t *testing.T) {
	withSnapshots(t)
	s := openTemp(t)
	st, _ := s.States()
	want := map[string]FeedState{}
	for r := range 3 {
		var batch []FeedState
		for i := range 600 {
			batch = append(batch, schedFeedState(i, r))
			want[batch[i].FeedID] = batch[i]
		}
		if err := st.Put(Lazy, batch...); err != nil {
			t.Fatal(err)
		}
	}
	damaged := schedFeedState(550, 9).FeedID
	if _, err := s.AppendLines(StateFile, []byte(`{"type":"feed_state","v":1,"feed_id":"`+damaged+`","last_status":"not a number"}`+"\n"), Lazy); err != nil {
		t.Fatal(err)
	}
	st, _ = s.OpenStates()
	var last []FeedState
	for i := range 500 { // 1,800 lines and these 500 pass 2*600+1024: compaction
		last = append(last, schedFeedState(i, 7))
		want[last[i].FeedID] = last[i]
	}
	if err := st.Put(Lazy, last...); err != nil {
		t.Fatal(err)
	}
	st.Close()
	b, err := os.ReadFile(s.Path(StateFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("\n")); n != 600 {
		t.Fatalf("the compacted log has %d lines, want one for each of 600 feeds", n)
	}
	got := checkStates(t, s, "compacted")
	if err := got.Load(); err != nil {
		t.Fatal(err)
	}
	for id, fs := range want {
		fs.Header = ndjson.Head(TypeFeedState)
		if !reflect.DeepEqual(got.ByFeed[id], fs) {
			t.Fatalf("feed %s after compaction:\n got %+v\nwant %+v", id, got.ByFeed[id], fs)
		}
	}
}
