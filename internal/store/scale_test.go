package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/testids"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// TestScaleMemo: a run takes the scale an earlier one computed while it is
// fresh: younger than scaleMaxAge, for the same list, parameters and
// budget, a tenth of the feeds fetched since at most; else it computes it
// again and keeps it.
func TestScaleMemo(t *testing.T) {
	st, _ := storedir.Open(t.TempDir())
	var names []string
	editSubs(t, st, func([]ndjson.Subscription) ([]ndjson.Subscription, error) {
		var subs []ndjson.Subscription
		for i := range 20 {
			name := fmt.Sprintf("S%d", i)
			names = append(names, name)
			subs = append(subs, ndjson.Subscription{Header: ndjson.Head(ndjson.TypeSubscription), FeedID: testids.Feed(name),
				URL: fmt.Sprintf("http://example.org/%d", i)})
		}
		return subs, nil
	})
	memo := func() scaleMemo {
		t.Helper()
		var m scaleMemo
		if ok, err := openCatalog(t, st).Meta(context.Background(), catalog.MetaScale, &m); !ok || err != nil {
			t.Fatalf("no scale kept (%v)", err)
		}
		return m
	}
	n := 0
	run := func(at time.Time, p sched.Params) float64 {
		t.Helper()
		feed := names[n%len(names)]
		n++
		in := entry(feed, "u1", "h", "T") + fetchRec(feed, func(f *ndjson.Fetch) {
			f.FetchID, f.FetchedAt, f.Parse = testids.Fetch(fmt.Sprint("F", n)), ndjson.At(at), &ndjson.Parse{Items: 1}
		})
		r := runSched(t, st, at, p, in)
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.decision(t).Inputs.Scale
	}
	s := run(t0, sched.Params{})
	m := memo()
	if m.Scale != s || !m.At.Equal(t0) || m.Feeds != 20 {
		t.Fatalf("first run: scale %g, kept %+v", s, m)
	}
	// Fresh: taken as it is.
	for i := 1; i <= 2; i++ {
		if got := run(t0.Add(time.Duration(i)*time.Minute), sched.Params{}); got != m.Scale {
			t.Fatalf("run %d: scale %g, want the kept %g", i, got, m.Scale)
		}
		if again := memo(); !again.At.Equal(t0) {
			t.Fatalf("run %d computed the scale again: %+v", i, again)
		}
	}
	// A tenth of the feeds fetched since: computed again.
	run(t0.Add(3*time.Minute), sched.Params{})
	if m = memo(); !m.At.Equal(t0.Add(3 * time.Minute)) {
		t.Fatalf("after 3 fetches of 20 feeds: %+v", m)
	}
	for _, tc := range []struct {
		name   string
		at     time.Time
		p      sched.Params
		change func()
	}{
		{"too old", t0.Add(3*time.Minute + scaleMaxAge), sched.Params{}, nil},
		{"other parameters", t0.Add(14 * time.Minute), sched.Params{Budget: 48}, nil},
		{"a subscription added", t0.Add(15 * time.Minute), sched.Params{Budget: 48}, func() {
			editSubs(t, st, func(subs []ndjson.Subscription) ([]ndjson.Subscription, error) {
				return append(subs, ndjson.Subscription{Header: ndjson.Head(ndjson.TypeSubscription), FeedID: testids.Feed("new"), URL: "http://example.org/new"}), nil
			})
		}},
	} {
		if tc.change != nil {
			tc.change()
		}
		run(tc.at, tc.p)
		if m = memo(); !m.At.Equal(tc.at) {
			t.Errorf("%s: not computed again: %+v", tc.name, m)
		}
	}
	if m.Feeds != 21 {
		t.Errorf("feeds %d, want 21", m.Feeds)
	}
}
