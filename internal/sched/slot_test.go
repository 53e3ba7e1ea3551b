package sched

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func unix(s string) int64 {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.Unix()
}

func TestAddRuns(t *testing.T) {
	at := func(ss ...string) []int64 {
		var out []int64
		for _, s := range ss {
			out = append(out, unix(s))
		}
		return out
	}
	run := func(first, last string, n int64) Run { return Run{unix(first), unix(last), n} }
	tests := []struct {
		name string
		runs []Run
		pubs []int64
		want []Run
	}{
		{"first items make runs", nil,
			at("2026-06-01T07:00:00Z", "2026-06-01T07:01:00Z", "2026-06-01T09:00:00Z"),
			[]Run{run("2026-06-01T07:00:00Z", "2026-06-01T07:01:00Z", 2), run("2026-06-01T09:00:00Z", "2026-06-01T09:00:00Z", 1)}},
		{"an item within 30 minutes extends the last run", []Run{run("2026-06-01T07:00:00Z", "2026-06-01T07:01:00Z", 2)},
			at("2026-06-01T07:30:59Z"),
			[]Run{run("2026-06-01T07:00:00Z", "2026-06-01T07:30:59Z", 3)}},
		{"30 minutes apart starts a run", []Run{run("2026-06-01T07:00:00Z", "2026-06-01T07:01:00Z", 2)},
			at("2026-06-01T07:31:00Z"),
			[]Run{run("2026-06-01T07:00:00Z", "2026-06-01T07:01:00Z", 2), run("2026-06-01T07:31:00Z", "2026-06-01T07:31:00Z", 1)}},
		{"history already counted is ignored", []Run{run("2026-06-01T07:00:00Z", "2026-06-01T07:01:00Z", 2)},
			at("2026-05-30T07:00:00Z", "2026-06-01T07:00:30Z"),
			[]Run{run("2026-06-01T07:00:00Z", "2026-06-01T07:01:00Z", 2)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := slices.Clone(tt.runs)
			got := addRuns(tt.runs, tt.pubs)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
			if !slices.Equal(tt.runs, before) {
				t.Errorf("the runs given were changed")
			}
			if !runsSound(got) {
				t.Errorf("%v is not sound", got)
			}
		})
	}
	var many []int64
	for d := range 3 * RunWindow {
		many = append(many, unix("2026-06-01T07:00:00Z")+int64(d)*86400)
	}
	if got := addRuns(nil, many); len(got) != RunWindow || got[RunWindow-1][1] != many[len(many)-1] {
		t.Errorf("keeps %d runs ending %d, want the last %d", len(got), got[len(got)-1][1], RunWindow)
	}
}

func TestDailySlot(t *testing.T) {
	daily := func(n int, times ...string) []Run { // one run a day, at the given times of day in turn
		var runs []Run
		for i := range n {
			tod, _ := time.Parse("15:04", times[i%len(times)])
			end := unix("2026-06-01T00:00:00Z") + int64(i)*86400 + int64(tod.Hour()*3600+tod.Minute()*60)
			runs = append(runs, Run{end - 60, end, 4})
		}
		return runs
	}
	tests := []struct {
		name       string
		runs       []Run
		window     int
		tod        string // "" for no slot
		wantSpread time.Duration
	}{
		{"three days at 07:05", daily(3, "07:05"), 20, "07:05", 0},
		{"two days are not enough", daily(2, "07:05"), 20, "", 0},
		{"the latest time of day, and the spread", daily(5, "07:05", "07:20", "07:00"), 20, "07:20", 20 * time.Minute},
		{"around midnight", daily(4, "23:50", "00:10"), 20, "00:10", 20 * time.Minute},
		{"more than 30 minutes apart", daily(4, "07:00", "07:31"), 20, "", 0},
		{"two runs in a day", append(daily(3, "07:00"), Run{unix("2026-06-03T19:00:00Z"), unix("2026-06-03T19:00:00Z"), 1}), 20, "", 0},
		{"runs that fill the window may have lost items", daily(3, "07:00"), 4, "", 0},
		{"unknown window", daily(3, "07:00"), 0, "07:00", 0},
		{"a day-long run is no slot", func() []Run {
			runs := daily(4, "22:00")
			for i := range runs {
				runs[i][0] = runs[i][1] - 14*3600
			}
			return runs
		}(), 20, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tod, spread, ok := dailySlot(tt.runs, tt.window)
			if ok != (tt.tod != "") {
				t.Fatalf("slot found: %v, want %v", ok, tt.tod != "")
			}
			if !ok {
				return
			}
			if got := time.Unix(tod, 0).UTC().Format("15:04"); got != tt.tod || time.Duration(spread)*time.Second != tt.wantSpread {
				t.Errorf("slot %s spread %ds, want %s spread %v", got, spread, tt.tod, tt.wantSpread)
			}
		})
	}
}

func TestNextSlot(t *testing.T) {
	tod := int64(7*3600 + 5*60)
	for _, tt := range []struct {
		now    string
		spread int64
		want   string
	}{
		{"2026-06-01T06:00:00Z", 0, "2026-06-01T07:07:00Z"},       // the margin after the slot
		{"2026-06-01T07:07:00Z", 0, "2026-06-02T07:07:00Z"},       // at the poll: the next day's
		{"2026-06-01T07:30:00Z", 0, "2026-06-02T07:07:00Z"},       // after it
		{"2026-06-01T06:00:00Z", 20 * 60, "2026-06-01T07:15:00Z"}, // half the spread when that is more
		{"2026-06-01T23:59:00Z", 0, "2026-06-02T07:07:00Z"},
	} {
		if got := time.Unix(nextSlot(unix(tt.now), tod, tt.spread), 0).UTC().Format(time.RFC3339); got != tt.want {
			t.Errorf("nextSlot(%s, spread %d) = %s, want %s", tt.now, tt.spread, got, tt.want)
		}
	}
}

// TestSlotPollOnlyLater checks the jitter of a slot's poll: never before
// the slot, at most slotMargin after it.
func TestSlotPollOnlyLater(t *testing.T) {
	p := Defaults()
	st := State{}
	at := unix("2026-06-01T07:30:00Z")
	out := Outcome{At: time.Unix(at, 0).UTC(), Status: 200, NewEntries: 12, Items: 20, Parsed: true}
	for d := range 3 {
		for k := range 4 {
			out.Published = append(out.Published, time.Unix(at-int64(d)*86400-1800+int64(k)*60, 0).UTC())
		}
	}
	for seed := range uint64(50) {
		_, d := Next(st, out, p, Overrides{}, out.At, rand.New(rand.NewPCG(seed, 1)))
		want := time.Date(2026, 6, 2, 7, 5, 0, 0, time.UTC)
		if d.Reason != ReasonDailySlot {
			t.Fatalf("reason %s, want %s", d.Reason, ReasonDailySlot)
		}
		if next := d.NextAt.Time; next.Before(want) || next.After(want.Add(slotMargin*time.Second)) {
			t.Fatalf("seed %d: next %s, want in [%s, +%ds]", seed, next, want, slotMargin)
		}
	}
}
