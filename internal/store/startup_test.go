package store

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/internal/storage"
	"github.com/feedpipe/feedpipe/internal/testids"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// startupStore is a store of n feeds, every kind of scheduling setting
// among its subscriptions, the scheduler's own states (some feeds have
// none, some states no subscription), snapshots with deltas that
// feed-store runs wrote, and JSON lines after them in both files. Built
// twice, it is the same store.
func startupStore(t *testing.T, n int) *storage.Store {
	t.Helper()
	old := storage.SnapshotMinBytes
	storage.SnapshotMinBytes = 0 // snapshots, however small the files
	t.Cleanup(func() { storage.SnapshotMinBytes = old })
	st, err := storage.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sub := func(i int) ndjson.Subscription {
		s := ndjson.Subscription{Header: ndjson.Head(ndjson.TypeSubscription), FeedID: testids.Feed(fmt.Sprintf("feed-%05d", i)),
			URL: fmt.Sprintf("http://example.org/%d.xml", i)}
		switch i % 11 {
		case 1:
			s.Disabled = true
		case 2:
			s.MinIntervalSec, s.MaxIntervalSec = 900, 4*3600
		case 3:
			s.IntervalSec = 1800
		case 4:
			s.Cron = "15 */2 * * *"
		case 5:
			s.PausedUntil = ndjson.At(t0.Add(3 * time.Hour))
		}
		return s
	}
	subs := make([]ndjson.Subscription, n)
	for i := range subs {
		subs[i] = sub(i)
	}
	subs = append(subs, sub(7)) // one feed listed twice
	if err := st.EditSubscriptions(func([]ndjson.Subscription) ([]ndjson.Subscription, error) { return subs, nil }); err != nil {
		t.Fatal(err)
	}
	// States as the scheduler leaves them after a few fetches, of most
	// feeds and of a few that are no longer subscribed.
	p := sched.Defaults()
	rnd := rand.New(rand.NewPCG(1, 2))
	var batch []storage.FeedState
	for i := range n + 20 {
		if i%7 == 3 {
			continue
		}
		at := t0.Add(-time.Duration(24+rnd.IntN(48)) * time.Hour)
		s, _ := sched.Next(sched.State{}, sched.Outcome{Kind: sched.NeverFetched}, p, sched.Overrides{}, at, nil)
		for k := range 1 + i%6 {
			at = at.Add(time.Duration(1+rnd.IntN(5)) * time.Hour)
			o := sched.Outcome{At: at, Status: 200, Items: 20, Parsed: true, NewEntries: (i + k) % 3}
			for range o.NewEntries {
				o.Published = append(o.Published, at.Add(-time.Duration(rnd.IntN(7200))*time.Second))
			}
			if (i+k)%13 == 0 {
				o = sched.Outcome{At: at, Status: 404, ErrorClass: ndjson.ClassPermanent, ErrorCode: "http_404"}
			}
			s, _ = sched.Next(s, o, p, sched.Overrides{}, at, nil)
		}
		fs := storage.FeedState{FeedID: testids.Feed(fmt.Sprintf("feed-%05d", i)), LastFetchAt: s.FetchedAt, Sched: &s}
		if i%19 == 0 {
			fs.Sched = nil
		}
		batch = append(batch, fs)
	}
	states, err := st.States()
	if err != nil {
		t.Fatal(err)
	}
	if err := states.Put(storage.Lazy, batch...); err != nil {
		t.Fatal(err)
	}
	// Runs of feed-store: deltas.
	for r := range 3 {
		at := t0.Add(time.Duration(r) * time.Hour)
		var in strings.Builder
		for i := r; i < n; i += 61 {
			id := fmt.Sprintf("feed-%05d", i)
			in.WriteString(entry(id, fmt.Sprintf("u%d-%d", i, r), "h", "T"))
			in.WriteString(fetchRec(id, func(f *ndjson.Fetch) {
				f.FetchID, f.FetchedAt, f.Parse = testids.Fetch(fmt.Sprintf("F%d-%d", i, r)), ndjson.At(at), &ndjson.Parse{Items: 5}
			}))
		}
		if r := runWith(t, st, at, sched.Params{}, in.String()); r.err != nil {
			t.Fatal(r.err)
		}
	}
	if m, _ := filepath.Glob(st.Path("index/states.snapshot.*")); len(m) != 3 {
		t.Fatalf("%d deltas, want one per run", len(m))
	}
	// JSON lines after the snapshots: a state no delta holds (an older
	// writer), and a subscription appended by hand.
	fs := batch[5]
	fs.Header, fs.Title = ndjson.Head(storage.TypeFeedState), "after the chain"
	s2 := *fs.Sched
	s2.RateN, s2.RateT = 500, 86400 // a burst: its demand changes
	fs.Sched = &s2
	line, _ := ndjson.Marshal(&fs)
	st.AppendLines(storage.StateFile, line, storage.Lazy)
	line, _ = ndjson.Marshal(sub(n))
	st.AppendLines(storage.SubscriptionsFile, line, storage.Lazy)
	return st
}

// scaleBefore is the scale computed as feed-store did before the
// snapshots had indexes: from every subscription and state, loaded whole.
func scaleBefore(t *testing.T, st *storage.Store, now time.Time, p sched.Params) float64 {
	t.Helper()
	subs, _, err := st.Subscriptions()
	if err != nil {
		t.Fatal(err)
	}
	states, err := st.States()
	if err != nil {
		t.Fatal(err)
	}
	var ds []sched.Demand
	for _, s := range subs {
		if !s.Disabled {
			ds = append(ds, SchedState(states.ByFeed[s.FeedID]).Demand(p, OverridesOf(s), now))
		}
	}
	c := &committer{cfg: Config{Store: st, Log: slog.New(slog.DiscardHandler)}}
	b := c.loadBudget(now)
	budget := p.BudgetPerFeedDay() * float64(len(ds))
	if elapsed := now.Sub(b.Since.Time); elapsed >= 24*time.Hour {
		b.BudgetLoop = b.Day(float64(b.Fetches)*86400/elapsed.Seconds(), budget)
	}
	return sched.ScaleFor(ds, b.Factor*budget)
}

// startScale is the scale feed-store starts with, and whether it read
// the states and the subscriptions lazily.
func startScale(t *testing.T, st *storage.Store, now time.Time) (scale float64, lazyStates, lazySubs bool) {
	t.Helper()
	c, err := newCommitter(schedDefaults(Config{Store: st, Now: func() time.Time { return now }, Log: slog.New(slog.DiscardHandler)}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	return c.cfg.Sched.Scale, c.states.Lazy(), c.subs.Lazy()
}

// flipInIndex changes a byte in the index of the snapshot at key, which
// lies just before the snapshot's head.
func flipInIndex(t *testing.T, st *storage.Store, key string) {
	t.Helper()
	b, err := os.ReadFile(st.Path(key))
	if err != nil {
		t.Fatal(err)
	}
	head := int(binary.LittleEndian.Uint32(b[len(b)-4:]))
	b[len(b)-4-head-20] ^= 1
	os.WriteFile(st.Path(key), b, 0o644)
}

// TestStartupScale checks that the scale feed-store starts with is, to
// the bit, the one computed from every subscription and state loaded
// whole: from the snapshots' indexes, and when they are damaged, missing
// or stale, which makes feed-store load everything as before.
func TestStartupScale(t *testing.T) {
	now := t0.Add(5 * time.Hour)
	for _, tc := range []struct {
		name                 string
		spoil                func(t *testing.T, st *storage.Store)
		lazyStates, lazySubs bool
	}{
		{"indexes", func(*testing.T, *storage.Store) {}, true, true},
		{"state index damaged", func(t *testing.T, st *storage.Store) { flipInIndex(t, st, "index/states.snapshot") }, false, true},
		{"subscription index damaged", func(t *testing.T, st *storage.Store) { flipInIndex(t, st, "index/subscriptions.snapshot") }, true, false},
		{"a delta damaged", func(t *testing.T, st *storage.Store) { flipInIndex(t, st, "index/states.snapshot.2") }, true, true},
		{"snapshots missing", func(t *testing.T, st *storage.Store) {
			m, _ := filepath.Glob(st.Path("index/*.snapshot*"))
			for _, f := range m {
				os.Remove(f)
			}
		}, false, false},
		{"snapshots stale", func(t *testing.T, st *storage.Store) {
			// Both files rewritten as they are: new files, which no
			// snapshot stands for.
			for _, key := range []string{storage.StateFile, storage.SubscriptionsFile} {
				data, _ := os.ReadFile(st.Path(key))
				st.WriteFileAtomic(key, data)
			}
		}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := startupStore(t, 1500)
			tc.spoil(t, st)
			want := scaleBefore(t, st, now, sched.Params{})
			got, lazyStates, lazySubs := startScale(t, st, now)
			if math.Float64bits(got) != math.Float64bits(want) {
				t.Errorf("scale %v, want %v", got, want)
			}
			if lazyStates != tc.lazyStates || lazySubs != tc.lazySubs {
				t.Errorf("lazy states %v, subscriptions %v; want %v, %v", lazyStates, lazySubs, tc.lazyStates, tc.lazySubs)
			}
		})
	}
}

// TestStartupSameDecisions runs feed-store on the same input in two
// stores built alike, one of them without its snapshots: what it writes
// and the states it stores are the same, byte for byte.
func TestStartupSameDecisions(t *testing.T) {
	lazy, whole := startupStore(t, 1200), startupStore(t, 1200)
	m, _ := filepath.Glob(whole.Path("index/*.snapshot*"))
	for _, f := range m {
		os.Remove(f)
	}
	at := t0.Add(4 * time.Hour)
	var in strings.Builder
	for i := 2; i < 1200; i += 37 {
		id := fmt.Sprintf("feed-%05d", i)
		for e := range i % 3 {
			in.WriteString(entry(id, fmt.Sprintf("n%d-%d", i, e), "h", "T"))
		}
		in.WriteString(fetchRec(id, func(f *ndjson.Fetch) {
			f.FetchID, f.FetchedAt, f.Parse = testids.Fetch(fmt.Sprintf("G%d", i)), ndjson.At(at), &ndjson.Parse{Items: 5}
			if i%5 == 0 {
				f.HTTPStatus, f.NotModified, f.Parse = 304, true, nil
			}
		}))
	}
	var outs [2]string
	for k, st := range []*storage.Store{lazy, whole} {
		r := runWith(t, st, at, sched.Params{}, in.String())
		if r.err != nil {
			t.Fatal(r.err)
		}
		var b strings.Builder
		for _, l := range r.lines {
			b.Write(l.Raw)
			b.WriteByte('\n')
		}
		outs[k] = b.String()
	}
	if outs[0] != outs[1] || !strings.Contains(outs[0], `"type":"decision"`) {
		t.Fatalf("feed-store wrote differently from a lazy start:\n%.2000s\nand from the whole states:\n%.2000s", outs[0], outs[1])
	}
	a, _ := os.ReadFile(lazy.Path(storage.StateFile))
	b, _ := os.ReadFile(whole.Path(storage.StateFile))
	if string(a) != string(b) {
		t.Fatal("the state logs differ")
	}
}
