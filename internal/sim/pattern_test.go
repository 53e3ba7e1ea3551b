package sim

import (
	"bytes"
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/sched"
)

// The mixes make the kinds they name, in about their shares, and every
// generated feed carries its true shape (mean 1) for oracle-timed.
func TestGenerateMixes(t *testing.T) {
	tests := []struct {
		mix   string
		kinds []string
		// share of diurnal and weekly feeds, within 0.05
		patterned float64
	}{
		{"mixed", []string{"regular", "bursty", "dormant", "dead", "batch", "sparse", "poisson", "diurnal", "weekly", "scheduled"}, 0.25},
		{"patterned", []string{"diurnal", "weekly"}, 1},
		{"poisson", []string{"poisson"}, 0},
		{"classic", []string{"regular", "bursty", "dormant", "dead", "batch", "sparse"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.mix, func(t *testing.T) {
			w := Generate(GenConfig{Seed: 4, Feeds: 1000, Days: 7, Mix: tt.mix})
			kinds := map[string]int{}
			for _, f := range w.Feeds {
				kinds[f.Kind]++
				if f.Shape == nil && len(f.Posts) == 0 {
					continue // a batch feed whose hour is a declared quiet one: it never posts
				}
				if len(f.Shape) != HoursOfWeek {
					t.Fatalf("%s (%s): shape of %d hours", f.ID, f.Kind, len(f.Shape))
				}
				var sum float64
				for _, v := range f.Shape {
					sum += v
				}
				if math.Abs(sum/HoursOfWeek-1) > 0.01 {
					t.Errorf("%s (%s): shape mean %.3f", f.ID, f.Kind, sum/HoursOfWeek)
				}
			}
			for _, k := range tt.kinds {
				if kinds[k] == 0 {
					t.Errorf("no %s feed: %v", k, kinds)
				}
			}
			if len(kinds) != len(tt.kinds) {
				t.Errorf("kinds %v, want %v", kinds, tt.kinds)
			}
			if got := float64(kinds["diurnal"]+kinds["weekly"]) / 1000; math.Abs(got-tt.patterned) > 0.05 {
				t.Errorf("diurnal and weekly: %.2f of the feeds, want about %.2f", got, tt.patterned)
			}
		})
	}
}

// A diurnal, weekly or scheduled feed posts when its shape says: the
// hours its shape gives most of the weight hold as much of its posts.
func TestPatternedPostsFollowShape(t *testing.T) {
	w := Generate(GenConfig{Seed: 2, Feeds: 200, Days: 28, Mix: "mixed"})
	checked := map[string]int{}
	for _, f := range w.Feeds {
		if f.Kind != "diurnal" && f.Kind != "weekly" && f.Kind != "scheduled" || len(f.Posts) < 200 {
			continue
		}
		// The busiest hours of the week that hold half the shape's weight.
		idx := make([]int, HoursOfWeek)
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int { return int(math.Copysign(1, f.Shape[b]-f.Shape[a])) })
		busy := map[int]bool{}
		var weight float64
		for _, i := range idx {
			if weight >= HoursOfWeek/2 {
				break
			}
			busy[i] = true
			weight += f.Shape[i]
		}
		in := 0
		for _, p := range f.Posts {
			if busy[hourOfWeek(p)] {
				in++
			}
		}
		share, want := float64(in)/float64(len(f.Posts)), weight/HoursOfWeek
		if math.Abs(share-want) > 0.08 {
			t.Errorf("%s (%s): %.2f of %d posts in the hours that hold %.2f of its shape (%d hours)", f.ID, f.Kind, share, len(f.Posts), want, len(busy))
		}
		checked[f.Kind]++
	}
	if checked["diurnal"] == 0 || checked["scheduled"] == 0 {
		t.Errorf("checked %v", checked)
	}
}

// The shape is part of a trace: written and loaded back, it is the same.
func TestTraceShapeRoundTrip(t *testing.T) {
	w := Generate(GenConfig{Seed: 1, Feeds: 20, Days: 2, Mix: "patterned"})
	var b bytes.Buffer
	if err := w.Write(&b); err != nil {
		t.Fatal(err)
	}
	back, err := Load(&b)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range w.Feeds {
		if !slices.Equal(f.Shape, back.Feeds[i].Shape) || f.Kind != back.Feeds[i].Kind {
			t.Fatalf("%s: shape or kind changed in the trace", f.ID)
		}
	}
}

// hourOfWeek counts from Sunday 00:00 UTC.
func TestHourOfWeek(t *testing.T) {
	for _, tt := range []struct {
		at   time.Time
		want int
	}{
		{time.Date(2026, 5, 31, 0, 0, 0, 0, time.UTC), 0},                    // a Sunday
		{time.Date(2026, 6, 1, 9, 30, 0, 0, time.UTC), 24 + 9},               // Monday 09:30
		{time.Date(2026, 6, 6, 23, 59, 59, 0, time.UTC), 6*24 + 23},          // Saturday 23:59:59
		{time.Date(1969, 12, 31, 23, 0, 0, 0, time.UTC), 3*24 + 23},          // before 1970: a Wednesday
		{time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), 4 * 24},                // a Thursday
		{time.Date(2026, 6, 7, 0, 0, 0, 0, time.UTC).Add(-time.Second), 167}, // the last second of a week
	} {
		if got := hourOfWeek(tt.at.Unix()); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.at, got, tt.want)
		}
	}
}

// oracle-timed spends the budget it is given, as the oracle does; knowing
// when feeds post, it finds their items sooner than the oracle on
// patterned feeds, and as soon on constant-rate ones (whose shapes are
// flat but for declared quiet hours).
func TestOracleTimed(t *testing.T) {
	cfg := Config{Seed: 1, Params: sched.Defaults()}
	for _, tt := range []struct {
		mix string
		max float64 // oracle-timed mean / oracle mean
	}{
		{"patterned", 0.8},
		{"poisson", 1.03},
	} {
		w := Generate(GenConfig{Seed: 5, Feeds: 150, Days: 10, Mix: tt.mix, Plain: true})
		res, err := SimulateAll(context.Background(), w, []string{"fixed:1h", "oracle@fixed:1h", "oracle-timed@fixed:1h"}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		f1, o, ot := res[0], res[1], res[2]
		if math.Abs(ot.RequestsPerFeedDay-f1.RequestsPerFeedDay)/f1.RequestsPerFeedDay > 0.03 {
			t.Errorf("%s: oracle-timed spent %.2f requests per feed-day on a budget of %.2f", tt.mix, ot.RequestsPerFeedDay, f1.RequestsPerFeedDay)
		}
		if ot.DelayMean > tt.max*o.DelayMean || ot.Violations != 0 {
			t.Errorf("%s: oracle-timed mean %.1f, oracle %.1f (want at most ×%.2f); %d violations", tt.mix, ot.DelayMean, o.DelayMean, tt.max, ot.Violations)
		}
	}
}

// A timed schedule polls where sqrt(λ) is: a feed that posts only on
// Monday from 09:00 to 10:00 UTC is polled in that hour, and otherwise at
// the max interval.
func TestTimedGap(t *testing.T) {
	o := &timed{lo: 300, hi: 86400}
	o.sq[24+9] = math.Sqrt(168) // the whole week's rate of 1 a day in one hour
	mon9 := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC).Unix()
	s := 3600 * math.Sqrt(168) / 4 // four polls in the hour
	if g := o.gap(mon9, s); g != 900 {
		t.Errorf("in the hour: gap %.0f s, want 900", g)
	}
	if g := o.gap(mon9+3300, s); g != 86400 {
		t.Errorf("at its end: gap %.0f s, want the max", g)
	}
	if g := o.gap(mon9-1200, s); g != 1200+900 {
		t.Errorf("before it: gap %.0f s, want 2100", g)
	}
	if g := o.gap(mon9, s/1000); g != 300 {
		t.Errorf("a tiny scale: gap %.0f s, want the min", g)
	}
}

// oracle-opt keeps oracle-timed's number of polls and moves them to
// where they make the items least late: its week's wait is never longer
// than sqrt(λ)'s, and in a simulation it spends the budget and finds the
// items of patterned feeds sooner still.
func TestOracleOpt(t *testing.T) {
	// A feed posting on weekdays from 09:00 to 13:00 UTC, a little at
	// night: the last poll of a day comes as its hours end.
	o := &timed{lo: 300, hi: 86400}
	for d := 1; d <= 5; d++ {
		for h := range 24 {
			v := 0.05
			if h >= 9 && h < 13 {
				v = 6
			}
			o.sq[d*24+h] = math.Sqrt(v)
		}
	}
	s := 3600.0
	x := &opt{lo: o.lo, hi: o.hi}
	sqrtWeek := newOpt(o, s)
	n := 0
	t0 := shapeWeek.Unix()
	for u := 0.0; u < optWeek; u += math.Max(o.gap(t0+int64(u), s), 1) {
		n++
	}
	if len(sqrtWeek.polls) > n {
		t.Errorf("oracle-opt plans %d polls a week, oracle-timed %d", len(sqrtWeek.polls), n)
	}
	// The same polls unmoved: sqrt(λ)'s week.
	*x = *sqrtWeek
	x.polls = nil
	for u := 0.0; u < optWeek; u += math.Max(o.gap(t0+int64(u), s), 1) {
		x.polls = append(x.polls, u)
	}
	if a, b := sqrtWeek.weekWait(), x.weekWait(); a > b {
		t.Errorf("moved polls wait %.0f item-seconds a week, sqrt(λ)'s %.0f", a, b)
	}
	monday13 := 86400 + 13*3600.0
	found := false
	for _, p := range sqrtWeek.polls {
		found = found || math.Abs(p-monday13) < 1
	}
	if !found {
		t.Errorf("no poll as Monday's hours end (13:00): %v", sqrtWeek.polls)
	}

	cfg := Config{Seed: 1, Params: sched.Defaults()}
	// Whole weeks: a schedule by the week spends its budget over weeks.
	w := Generate(GenConfig{Seed: 5, Feeds: 150, Days: 14, Mix: "patterned", Plain: true})
	res, err := SimulateAll(context.Background(), w, []string{"fixed:1h", "oracle-timed@fixed:1h", "oracle-opt@fixed:1h"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	f1, ot, op := res[0], res[1], res[2]
	if math.Abs(op.RequestsPerFeedDay-f1.RequestsPerFeedDay)/f1.RequestsPerFeedDay > 0.03 {
		t.Errorf("oracle-opt spent %.2f requests per feed-day on a budget of %.2f", op.RequestsPerFeedDay, f1.RequestsPerFeedDay)
	}
	if op.DelayMean > ot.DelayMean || op.Violations != 0 {
		t.Errorf("oracle-opt mean %.1f, oracle-timed %.1f; %d violations", op.DelayMean, ot.DelayMean, op.Violations)
	}
}
