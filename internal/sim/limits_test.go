package sim

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/sched"
)

// A bad record is reported with its line and, in a user's terms, its
// field: a time out of range once made a period of centuries, whose
// durations overflowed.
func TestLoadRejects(t *testing.T) {
	const post = `{"type":"post","feed_id":"a","at":"2026-06-03T07:24:00Z"}` + "\n"
	tests := []struct {
		name, trace, want string
	}{
		{"post far in the future", post + `{"type":"post","feed_id":"b","at":"9999-06-03T07:24:00Z"}`, `line 2: "at" must be in the years 1970-2199, not 9999-06-03T07:24:00Z`},
		{"post in 2526", `{"type":"post","feed_id":"b","at":"2526-06-03T07:24:00Z"}` + "\n" + post, `line 1: "at" must be in the years 1970-2199`},
		{"post before 1970", post + `{"type":"post","feed_id":"a","at":"1969-12-31T23:59:59Z"}`, `line 2: "at" must be in the years 1970-2199`},
		{"period end in 2200", `{"type":"period","start":"2199-06-01T00:00:00Z","end":"2200-01-01T00:00:00Z"}` + "\n" + post, `line 1: "end" must be in the years`},
		{"outage till 9999", post + `{"type":"outage","feed_id":"a","from":"2026-06-01T00:00:00Z","to":"9999-01-01T00:00:00Z","status":503}`, `line 2: "to" must be in the years`},
		{"period over 10 years", `{"type":"period","start":"2026-01-01T00:00:00Z","end":"2037-01-01T00:00:00Z"}` + "\n" + post, "line 1: the period lasts 4018 days, more than 3660 (10 years)"},
		{"posts over 10 years apart", `{"type":"post","feed_id":"b","at":"2199-06-03T07:24:00Z"}` + "\n" + post, "line 2 has the first post and line 1 the last: with no period record the period runs from one to a day after the other, 63188 days, more than 3660 (10 years)"},
		{"bad time", post + `{"type":"post","feed_id":"a","at":"yesterday"}`, `line 2: "at" must be an RFC 3339 time such as 2026-06-03T07:24:00Z, not "yesterday"`},
		{"time as a number", post + `{"type":"period","start":5}`, `line 2: "start" must be an RFC 3339 time, not a number`},
		{"negative window", `{"type":"feed","feed_id":"a","window":-1}` + "\n" + post, `line 1: "window" must be 0 or more, not -1`},
		{"negative bytes", post + `{"type":"feed","feed_id":"a","bytes":-5}`, `line 2: "bytes" must be 0 or more, not -5`},
		{"huge bytes", post + `{"type":"feed","feed_id":"a","bytes":9000000000000000000}`, `line 2: "bytes" must be at most 1073741824`},
		{"negative ttl", post + `{"type":"feed","feed_id":"a","ttl_minutes":-60}`, `line 2: "ttl_minutes" must be 0 or more, not -60`},
		{"negative max-age", post + `{"type":"feed","feed_id":"a","max_age_sec":-1}`, `line 2: "max_age_sec" must be 0 or more`},
		{"negative retry-after", post + `{"type":"outage","feed_id":"a","from":"2026-06-01T00:00:00Z","to":"2026-06-02T00:00:00Z","status":503,"retry_after_sec":-1}`, `line 2: "retry_after_sec" must be 0 or more`},
		{"fail ratio above 1", post + `{"type":"outage","feed_id":"a","from":"2026-06-01T00:00:00Z","to":"2026-06-02T00:00:00Z","status":502,"fail_ratio":1.5}`, `line 2: "fail_ratio" must be between 0 and 1, not 1.5`},
		{"skip hour 24", post + `{"type":"feed","feed_id":"a","skip_hours":[3,24]}`, `line 2: "skip_hours" must hold hours 0-23, not 24`},
		{"skip hour -1", post + `{"type":"feed","feed_id":"a","skip_hours":[-1]}`, `line 2: "skip_hours" must hold hours 0-23, not -1`},
		{"skip day", post + `{"type":"feed","feed_id":"a","skip_days":["Sunday","Funday"]}`, `line 2: "skip_days" must hold weekday names such as Sunday, not "Funday"`},
		{"fractional window", post + `{"type":"feed","feed_id":"a","window":1.5}`, `line 2: "window" must be a whole number, not 1.5`},
		{"window as a string", post + `{"type":"feed","feed_id":"a","window":"10"}`, `line 2: "window" must be a whole number, not a string`},
		{"skip hours not a list", post + `{"type":"feed","feed_id":"a","skip_hours":3}`, `line 2: "skip_hours" must be a list of hours such as [1,2], not a number`},
		{"etag as a number", post + `{"type":"feed","feed_id":"a","etag":1}`, `line 2: "etag" must be true or false, not a number`},
		{"short shape", post + `{"type":"feed","feed_id":"a","shape":[1,2,3]}`, `line 2: "shape" must hold 168 numbers, not all 0`},
		{"zero shape", post + `{"type":"feed","feed_id":"a","shape":[` + strings.Repeat("0,", 167) + `0]}`, `line 2: "shape" must hold 168 numbers, not all 0`},
		{"negative shape", post + `{"type":"feed","feed_id":"a","shape":[-1` + strings.Repeat(",1", 167) + `]}`, `line 2: "shape" must hold numbers from 0 to 1e6, not -1`},
		{"shape not a list", post + `{"type":"feed","feed_id":"a","shape":1}`, `line 2: "shape" must be a list of 168 numbers, not a number`},
		{"not JSON", post + `{oops`, "line 2: not a JSON record"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(strings.NewReader(tt.trace))
			if !errors.Is(err, ErrTrace) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an ErrTrace with %q", err, tt.want)
			}
		})
	}
}

func TestLoadAcceptsEdges(t *testing.T) {
	tests := []struct {
		name, trace string
	}{
		{"10 years", `{"type":"period","start":"2026-01-01T00:00:00Z","end":"2036-01-09T00:00:00Z"}
{"type":"post","feed_id":"a","at":"1970-01-01T00:00:00Z"}`},
		{"last moment", `{"type":"post","feed_id":"a","at":"2199-12-31T23:59:59Z"}`},
		{"hints", `{"type":"feed","feed_id":"a","window":0,"skip_hours":[0,23],"skip_days":["sunday","Saturday"],"fail_ratio":1}
{"type":"post","feed_id":"a","at":"2026-06-03T07:24:00.5+02:00"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Load(strings.NewReader(tt.trace)); err != nil {
				t.Error(err)
			}
		})
	}
}

// Days counts a period in seconds: End.Sub(Start) saturates at 292 years,
// which gave a far-future trace a period too short for its requests
// (fixed:1h at 30 requests per feed-day).
func TestDaysOfLongPeriod(t *testing.T) {
	w := &Workload{Start: day0, End: day0.AddDate(500, 0, 0)}
	if got, want := w.Days(), float64(w.End.Unix()-w.Start.Unix())/86400; got != want {
		t.Errorf("Days %v, want %v", got, want)
	}
	_, err := SimulateAll(context.Background(), w, []string{"fixed:1h"}, Config{Params: sched.Defaults()})
	if err == nil || !strings.Contains(err.Error(), "more than 3660") {
		t.Errorf("a 500-year period simulated: %v", err)
	}
}

// The longest period a trace may have costs fixed:1h its 24 requests a
// day and no more.
func TestLongestPeriodSpend(t *testing.T) {
	w := load(t, `{"type":"period","start":"2026-01-01T00:00:00Z","end":"2036-01-09T00:00:00Z"}
{"type":"post","feed_id":"a","at":"2026-06-03T07:24:00Z"}`)
	if got := simulate(t, w, "fixed:1h", 0).RequestsPerFeedDay; got > 24 || got < 23 {
		t.Errorf("fixed:1h at %.2f requests per feed-day over 10 years", got)
	}
}

func TestGenConfigCheck(t *testing.T) {
	tests := []struct {
		name string
		cfg  GenConfig
		want string // "" for none
	}{
		{"defaults", GenConfig{}, ""},
		{"10 years", GenConfig{Feeds: 100, Days: MaxDays}, ""},
		{"most feeds", GenConfig{Feeds: MaxFeeds, Days: 1}, ""},
		{"too many days", GenConfig{Feeds: 1, Days: 106752}, "--days 106752: at most 3660 (10 years)"},
		{"too many feeds", GenConfig{Feeds: 100_000_000, Days: 1}, "--feeds 100000000: at most 100000"},
		{"too many feed-days", GenConfig{Feeds: 10_000, Days: 1000}, "--feeds 10000 × (--days 1000 + 60 days of history): at most 10000000 feed-days"},
		{"start too early", GenConfig{Days: 1, Start: time.Date(1971, 1, 1, 0, 0, 0, 0, time.UTC)}, "--start 1971-01-01T00:00:00Z: at least 1972-06-19"},
		{"end too late", GenConfig{Days: 30, Start: time.Date(2199, 11, 15, 0, 0, 0, 0, time.UTC)}, "the period must end by 2199-12-01"},
		{"a mix", GenConfig{Days: 3, Mix: "patterned"}, ""},
		{"classic by name", GenConfig{Days: 3, Mix: "classic"}, ""},
		{"no such mix", GenConfig{Days: 3, Mix: "weird"}, `--mix "weird": want classic, mixed, patterned, poisson`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Check()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
}

// A workload generated at the edges of the range GenConfig.Check allows
// is written as a trace that loads.
func TestGeneratedEdgesLoad(t *testing.T) {
	for _, start := range []time.Time{EarliestTime.Add(Lookback), LatestTime.Add(-Tail).AddDate(0, 0, -3)} {
		cfg := GenConfig{Seed: 3, Feeds: 300, Days: 3, Start: start}
		if err := cfg.Check(); err != nil {
			t.Fatal(err)
		}
		var trace bytes.Buffer
		if err := Generate(cfg).Write(&trace); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(&trace); err != nil {
			t.Errorf("start %s: %v", start, err)
		}
	}
}

func TestRunUsageErrors(t *testing.T) {
	trace := `{"type":"post","feed_id":"a","at":"2026-06-03T07:24:00Z"}`
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"show an unknown feed", Config{Show: "nosuch"}, `--show "nosuch": no feed with that id`},
		{"budget of no policy", Config{BudgetOf: "nothing", Policies: []string{"adaptive"}}, `--budget-of "nothing": want a policy without a budget`},
		{"budget of a budget", Config{BudgetOf: "adaptive@3", Policies: []string{"oracle"}}, `--budget-of "adaptive@3"`},
		{"generate too much", Config{Generate: &GenConfig{Feeds: 1, Days: MaxDays + 1}}, "--days 3661: at most 3660"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Trace, tt.cfg.Params = strings.NewReader(trace), sched.Defaults()
			err := Run(context.Background(), tt.cfg)
			if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an ErrUsage with %q", err, tt.want)
			}
		})
	}
}
