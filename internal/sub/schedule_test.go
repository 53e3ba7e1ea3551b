package sub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

func ptr[T any](v T) *T { return &v }

func TestSetOverrides(t *testing.T) {
	for _, tc := range []struct {
		name  string
		o     Overrides
		err   bool
		check func(s ndjson.Subscription) bool
		msg   string
	}{
		{name: "interval", o: Overrides{Interval: ptr(30 * time.Minute)}, check: func(s ndjson.Subscription) bool { return s.IntervalSec == 1800 }},
		{name: "interval raised", o: Overrides{Interval: ptr(time.Minute)}, check: func(s ndjson.Subscription) bool { return s.IntervalSec == 300 }, msg: "raised to the minimum"},
		{name: "interval lowered", o: Overrides{Interval: ptr(48 * time.Hour)}, check: func(s ndjson.Subscription) bool { return s.IntervalSec == 86400 }, msg: "lowered to the maximum"},
		{name: "interval cleared", o: Overrides{Interval: ptr(time.Duration(0))}, check: func(s ndjson.Subscription) bool { return s.IntervalSec == 0 }},
		{name: "negative", o: Overrides{Interval: ptr(-time.Minute)}, err: true},
		{name: "min max", o: Overrides{Min: ptr(10 * time.Minute), Max: ptr(2 * time.Hour)},
			check: func(s ndjson.Subscription) bool { return s.MinIntervalSec == 600 && s.MaxIntervalSec == 7200 }},
		{name: "max below min", o: Overrides{Min: ptr(2 * time.Hour), Max: ptr(time.Hour)}, err: true},
		// Outside the scheduler's clamps: kept, as they count under other
		// global clamps, with a note that they cannot widen them.
		{name: "min below the global min", o: Overrides{Min: ptr(2 * time.Minute)}, check: func(s ndjson.Subscription) bool { return s.MinIntervalSec == 120 },
			msg: "note: min interval 2m0s is below the scheduler's min interval (5m0s by default), which still holds"},
		{name: "max above the global max", o: Overrides{Max: ptr(48 * time.Hour)}, check: func(s ndjson.Subscription) bool { return s.MaxIntervalSec == 48*3600 },
			msg: "note: max interval 48h0m0s is above the scheduler's max interval (24h0m0s by default), which still holds"},
		{name: "cron", o: Overrides{Cron: ptr(" */20 * * * * ")}, check: func(s ndjson.Subscription) bool { return s.Cron == "*/20 * * * *" }},
		{name: "cron descriptor", o: Overrides{Cron: ptr("@every 2h")}, check: func(s ndjson.Subscription) bool { return s.Cron == "@every 2h" }},
		{name: "bad cron", o: Overrides{Cron: ptr("61 * * * *")}, err: true},
		{name: "cron with zone", o: Overrides{Cron: ptr("TZ=Europe/Paris 0 8 * * *")}, err: true},
		// A cron may not poll more often than an interval may.
		{name: "cron every negative", o: Overrides{Cron: ptr("@every -1h")}, err: true},
		{name: "cron every zero", o: Overrides{Cron: ptr("@every 0s")}, err: true},
		{name: "cron every 1ms", o: Overrides{Cron: ptr("@every 1ms")}, err: true},
		{name: "cron every minute", o: Overrides{Cron: ptr("* * * * *")}, err: true},
		{name: "cron every 5m", o: Overrides{Cron: ptr("*/5 * * * *")}, check: func(s ndjson.Subscription) bool { return s.Cron == "*/5 * * * *" }},
		{name: "nothing", err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			a, _, _ := Add(e.cfg, Spec{URL: "https://example.org/a", Interval: time.Hour})
			e.msg.Reset()
			err := SetOverrides(e.cfg, []string{a.FeedID}, tc.o)
			if tc.err {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("err %v, want ErrInvalid", err)
				}
				if e.subs(t)[0].IntervalSec != 3600 {
					t.Fatal("a refused change changed the subscription")
				}
				return
			}
			if err != nil || !tc.check(e.subs(t)[0]) || !strings.Contains(e.msg.String(), tc.msg) {
				t.Fatalf("err %v, sub %+v, messages %q", err, e.subs(t)[0], e.msg)
			}
		})
	}
}

// The min and max intervals are checked as the feed would have them: the
// one given against the one set before too.
func TestSetMinMaxAgainstStored(t *testing.T) {
	for _, tc := range []struct {
		name       string
		before, o  Overrides
		want       string // in the error; "" for none
		minS, maxS int    // after a change made
	}{
		{"min above stored max", Overrides{Max: ptr(6 * time.Hour)}, Overrides{Min: ptr(7 * time.Hour)},
			"https://example.org/a: invalid subscription: min interval 7h0m0s is above the max interval 6h0m0s the feed has already", 0, 0},
		{"max below stored min", Overrides{Min: ptr(7 * time.Hour)}, Overrides{Max: ptr(6 * time.Hour)},
			"max interval 6h0m0s is below the min interval 7h0m0s the feed has already", 0, 0},
		{"both given", Overrides{}, Overrides{Min: ptr(8 * time.Hour), Max: ptr(7 * time.Hour)},
			"max interval 7h0m0s is below min interval 8h0m0s", 0, 0},
		{"max cleared with it", Overrides{Max: ptr(6 * time.Hour)}, Overrides{Min: ptr(7 * time.Hour), Max: ptr(time.Duration(0))}, "", 7 * 3600, 0},
		{"max raised with it", Overrides{Max: ptr(6 * time.Hour)}, Overrides{Min: ptr(7 * time.Hour), Max: ptr(8 * time.Hour)}, "", 7 * 3600, 8 * 3600},
		{"min below stored max", Overrides{Max: ptr(6 * time.Hour)}, Overrides{Min: ptr(6 * time.Hour)}, "", 6 * 3600, 6 * 3600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			a, _, _ := Add(e.cfg, Spec{URL: "https://example.org/a"})
			if err := SetOverrides(e.cfg, []string{a.FeedID}, tc.before); err != nil && tc.before != (Overrides{}) {
				t.Fatal(err)
			}
			before := e.subs(t)[0]
			err := SetOverrides(e.cfg, []string{a.FeedID}, tc.o)
			s := e.subs(t)[0]
			if tc.want != "" {
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("err %v, want one line with %q", err, tc.want)
				}
				if s.MinIntervalSec != before.MinIntervalSec || s.MaxIntervalSec != before.MaxIntervalSec {
					t.Fatalf("a refused change changed %+v", s)
				}
				return
			}
			if err != nil || s.MinIntervalSec != tc.minS || s.MaxIntervalSec != tc.maxS {
				t.Fatalf("err %v, min %d max %d, want %d %d", err, s.MinIntervalSec, s.MaxIntervalSec, tc.minS, tc.maxS)
			}
		})
	}
}

func TestAddChecksCron(t *testing.T) {
	for _, tc := range []struct{ cron, want string }{
		{"every hour", `bad cron expression "every hour"`},
		{"@every -1h", `bad cron expression "@every -1h": the interval must be positive`},
		{"@every 1ms", `bad cron expression "@every 1ms": it fires every 1ms; a feed is polled at most every 5m0s`},
	} {
		e := newEnv(t)
		if _, _, err := Add(e.cfg, Spec{URL: "https://example.org/a", Cron: tc.cron}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("add --cron %q: err %v, want %q", tc.cron, err, tc.want)
		}
	}
}

func TestPause(t *testing.T) {
	e := newEnv(t)
	a, _, _ := Add(e.cfg, Spec{URL: "https://example.org/a"})
	if err := Pause(e.cfg, []string{a.FeedID}, now.Add(-time.Hour)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a pause in the past: %v", err)
	}
	if err := Pause(e.cfg, []string{a.FeedID}, now.Add(72*time.Hour)); err != nil || !e.subs(t)[0].PausedUntil.Equal(now.Add(72*time.Hour)) {
		t.Fatalf("pause: %v %+v", err, e.subs(t)[0])
	}
	e.out.Reset()
	List(e.cfg, ListOptions{})
	if !strings.Contains(e.out.String(), "paused until 2026-11-24 12:00Z") || strings.Contains(e.out.String(), " now ") {
		t.Errorf("ls: want paused, and not next now:\n%s", e.out)
	}
	if err := Pause(e.cfg, []string{a.FeedID}, time.Time{}); err != nil || !e.subs(t)[0].PausedUntil.IsZero() {
		t.Fatalf("resume: %v", err)
	}
}

// disabledState is a feed the scheduler disabled for a 404 an hour ago.
func disabledState(t *testing.T, e *env, feedID string) {
	t.Helper()
	st, d := sched.Next(sched.State{}, sched.Outcome{At: now.Add(-time.Hour), Status: 404, ErrorClass: "permanent", ErrorCode: "http_404"},
		sched.Params{}, sched.Overrides{}, now.Add(-time.Hour), nil)
	if st.Lifecycle != sched.StateDisabled {
		t.Fatalf("fixture: %s", st.Lifecycle)
	}
	fs := catalog.FeedState{FeedID: feedID, LastFetchAt: ndjson.At(now.Add(-time.Hour)), LastStatus: 404, ConsecutiveFailures: 1,
		LastError: &ndjson.Error{Class: "permanent", Code: "http_404"}}
	fs.SetSched(st, d)
	e.putStates(t, fs)
}

func state(t *testing.T, e *env, feedID string) catalog.FeedState {
	t.Helper()
	cat := e.catalog(t)
	defer cat.Close()
	fs, _, err := cat.State(context.Background(), feedID)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func TestDisabledShownThenEnabled(t *testing.T) {
	e := newEnv(t)
	a, _, _ := Add(e.cfg, Spec{URL: "https://example.org/a"})
	disabledState(t, e, a.FeedID)
	e.out.Reset()
	List(e.cfg, ListOptions{})
	if !strings.Contains(e.out.String(), "disabled: permanent error http_404 (probe in 23h)") {
		t.Errorf("ls:\n%s", e.out)
	}
	if err := Enable(e.cfg, []string{a.FeedID}, sched.Params{}); err != nil {
		t.Fatal(err)
	}
	fs := state(t, e, a.FeedID)
	if fs.Sched.Lifecycle != sched.StateHealthy || !fs.NextFetchAt.Equal(now) || fs.ConsecutiveFailures != 0 || fs.Sched.DisabledReason != "" {
		t.Fatalf("after enable: %+v %+v", fs, fs.Sched)
	}
	if !strings.Contains(e.msg.String(), "re-enabled https://example.org/a") {
		t.Errorf("messages %q", e.msg)
	}
}

func TestRefetch(t *testing.T) {
	e := newEnv(t)
	a, _, _ := Add(e.cfg, Spec{URL: "https://example.org/a"})
	b, _, _ := Add(e.cfg, Spec{URL: "https://example.org/b"})
	// a: fetched a minute ago, next in an hour. b: a Retry-After runs.
	stA, dA := sched.Next(sched.State{}, sched.Outcome{At: now.Add(-time.Minute), Status: 200}, sched.Params{}, sched.Overrides{}, now.Add(-time.Minute), nil)
	stB, dB := sched.Next(sched.State{}, sched.Outcome{At: now.Add(-time.Minute), Status: 429, RetryAfterSec: 3600}, sched.Params{}, sched.Overrides{}, now.Add(-time.Minute), nil)
	fa, fb := catalog.FeedState{FeedID: a.FeedID, LastFetchAt: ndjson.At(now.Add(-time.Minute))}, catalog.FeedState{FeedID: b.FeedID, LastFetchAt: ndjson.At(now.Add(-time.Minute))}
	fa.SetSched(stA, dA)
	fb.SetSched(stB, dB)
	e.putStates(t, fa, fb)

	if err := Refetch(e.cfg, []string{a.FeedID, b.FeedID}, sched.Params{}); err != nil {
		t.Fatal(err)
	}
	if fs := state(t, e, a.FeedID); !fs.NextFetchAt.Equal(now) || fs.Sched.Reason != sched.ReasonManual || !fs.Sched.Due(now) {
		t.Errorf("a after refetch: next %s, reason %s", fs.NextFetchAt, fs.Sched.Reason)
	}
	if fs := state(t, e, b.FeedID); !fs.NextFetchAt.Equal(now.Add(59*time.Minute)) || fs.Sched.Reason != sched.ReasonRetryAfter {
		t.Errorf("b after refetch: next %s, reason %s: a Retry-After holds a nudge", fs.NextFetchAt, fs.Sched.Reason)
	}
	if !strings.Contains(e.msg.String(), "due now: https://example.org/a") || !strings.Contains(e.msg.String(), "Retry-After") {
		t.Errorf("messages %q", e.msg)
	}
	if err := Refetch(e.cfg, []string{"nope"}, sched.Params{}); !errors.Is(err, catalog.ErrNoSuchSubscription) {
		t.Errorf("unknown feed: %v", err)
	}
}

// refetch and enable log each decision as feed-store does (msg=scheduled
// and the keys of docs/design.md#states-and-decisions, in feed-store's order), store it for feed-due
// --explain, and write nothing on stdout, which is for what ls and export
// list.
func TestNudgesLogDecisions(t *testing.T) {
	e := newEnv(t)
	var logs bytes.Buffer
	e.cfg.Log = slog.New(slog.NewTextHandler(&logs, nil))
	a, _, _ := Add(e.cfg, Spec{URL: "https://example.org/a"})
	b, _, _ := Add(e.cfg, Spec{URL: "https://example.org/b"})
	disabledState(t, e, a.FeedID)
	stB, dB := sched.Next(sched.State{}, sched.Outcome{At: now.Add(-time.Minute), Status: 429, RetryAfterSec: 3600}, sched.Params{}, sched.Overrides{}, now.Add(-time.Minute), nil)
	fb := catalog.FeedState{FeedID: b.FeedID, LastFetchAt: ndjson.At(now.Add(-time.Minute))}
	fb.SetSched(stB, dB)
	e.putStates(t, fb)
	e.out.Reset()
	logs.Reset()

	line := func(feedID, state, decision, nextAt, reason, budget, retry string) *regexp.Regexp {
		return regexp.MustCompile(`(?m)^time=\S+ level=INFO msg=scheduled feed_id=` + feedID + ` state=` + state + ` decision=` + decision +
			` next_at=` + regexp.QuoteMeta(nextAt) + ` reason=` + reason + ` ewma_secs=0 error_budget=` + budget + ` retry_after_secs=` + retry + `$`)
	}
	if err := Enable(e.cfg, []string{a.FeedID}, sched.Params{}); err != nil {
		t.Fatal(err)
	}
	// The budget is full again after enable.
	if re := line(a.FeedID, "healthy", "fetch_now", "2026-11-21T12:00:00Z", "manual", "5", "0"); !re.MatchString(logs.String()) {
		t.Errorf("enable logged:\n%s\nwant a line matching %s", logs.String(), re)
	}
	if fs := state(t, e, a.FeedID); fs.Decision == nil || fs.Decision.Kind != sched.FetchNow || fs.Decision.Reason != sched.ReasonManual {
		t.Errorf("enable stored the decision %+v", fs.Decision)
	}
	logs.Reset()
	if err := Refetch(e.cfg, []string{a.FeedID, b.FeedID}, sched.Params{}); err != nil {
		t.Fatal(err)
	}
	for _, re := range []*regexp.Regexp{
		line(a.FeedID, "healthy", "fetch_now", "2026-11-21T12:00:00Z", "manual", "5", "0"),
		// b: the Retry-After holds the nudge, 59 of its 60 minutes left.
		line(b.FeedID, "paused", "pause", "2026-11-21T12:59:00Z", "retry_after", "5", "3540"),
	} {
		if !re.MatchString(logs.String()) {
			t.Errorf("refetch logged:\n%s\nwant a line matching %s", logs.String(), re)
		}
	}
	// Enable nudges as refetch does: a running Retry-After holds it too.
	if err := Enable(e.cfg, []string{b.FeedID}, sched.Params{}); err != nil {
		t.Fatal(err)
	}
	if fs := state(t, e, b.FeedID); fs.Decision == nil || fs.Decision.Reason != sched.ReasonRetryAfter || !fs.NextFetchAt.Equal(now.Add(59*time.Minute)) {
		t.Errorf("enable inside a Retry-After: next %s, decision %+v", fs.NextFetchAt, fs.Decision)
	}
	if e.out.Len() > 0 {
		t.Errorf("stdout: %q", e.out)
	}
}

// ls --json carries what the table shows of a feed's state: a feed the
// scheduler disabled is disabled there too, with why and its last error.
func TestListJSONCarriesState(t *testing.T) {
	e := newEnv(t)
	gone, _, _ := Add(e.cfg, Spec{URL: "https://example.org/gone"})
	failing, _, _ := Add(e.cfg, Spec{URL: "https://example.org/failing"})
	byHand, _, _ := Add(e.cfg, Spec{URL: "https://example.org/by-hand"})
	fresh, _, _ := Add(e.cfg, Spec{URL: "https://example.org/new"})
	disabledState(t, e, gone.FeedID)
	st, d := sched.Next(sched.State{}, sched.Outcome{At: now.Add(-time.Minute), Status: 500, ErrorClass: "transient", ErrorCode: "http_500"},
		sched.Params{}, sched.Overrides{}, now.Add(-time.Minute), nil)
	fs := catalog.FeedState{FeedID: failing.FeedID, LastFetchAt: ndjson.At(now.Add(-time.Minute)), ConsecutiveFailures: 1,
		LastError: &ndjson.Error{Class: "transient", Code: "http_500"},
		Format:    "atom", FormatVersion: "1.0", ContentType: "application/atom+xml", Publisher: "Example Inc."}
	fs.SetSched(st, d)
	e.putStates(t, fs)
	if err := SetDisabled(e.cfg, []string{byHand.FeedID}, true); err != nil {
		t.Fatal(err)
	}
	e.out.Reset()
	if err := List(e.cfg, ListOptions{JSON: true}); err != nil {
		t.Fatal(err)
	}
	type listed struct {
		FeedID              string        `json:"feed_id"`
		Disabled            bool          `json:"disabled"`
		State               string        `json:"state"`
		StateReason         string        `json:"state_reason"`
		DisabledReason      string        `json:"disabled_reason"`
		ConsecutiveFailures int           `json:"consecutive_failures"`
		LastError           *ndjson.Error `json:"last_error"`
		LastFetchAt         ndjson.Time   `json:"last_fetch_at"`
		NextFetchAt         ndjson.Time   `json:"next_fetch_at"`
		Format              string        `json:"format"`
		FormatVersion       string        `json:"format_version"`
		ContentType         string        `json:"content_type"`
		Publisher           string        `json:"publisher"`
	}
	got := map[string]listed{}
	for _, line := range strings.Split(strings.TrimSpace(e.out.String()), "\n") {
		if !strings.HasPrefix(line, `{"type":"subscription","v":1,`) || !strings.Contains(line, `"state":`) {
			t.Fatalf("line %s", line)
		}
		var l listed
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		got[l.FeedID] = l
	}
	for _, tc := range []struct {
		name   string
		feedID string
		want   listed
	}{
		{"disabled for a 404", gone.FeedID, listed{State: "disabled", StateReason: "disabled", DisabledReason: "permanent error permanent/http_404",
			ConsecutiveFailures: 1, LastError: &ndjson.Error{Class: "permanent", Code: "http_404"},
			LastFetchAt: ndjson.At(now.Add(-time.Hour)), NextFetchAt: ndjson.At(now.Add(23 * time.Hour))}},
		{"failing", failing.FeedID, listed{State: "backoff", StateReason: string(d.Reason), ConsecutiveFailures: 1,
			LastError: &ndjson.Error{Class: "transient", Code: "http_500"}, LastFetchAt: ndjson.At(now.Add(-time.Minute)), NextFetchAt: st.NextAt,
			Format: "atom", FormatVersion: "1.0", ContentType: "application/atom+xml", Publisher: "Example Inc."}},
		{"disabled by hand", byHand.FeedID, listed{Disabled: true}},
		{"never fetched: due now", fresh.FeedID, listed{NextFetchAt: ndjson.At(now)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, want := got[tc.feedID], tc.want
			want.FeedID = tc.feedID
			if (l.LastError == nil) != (want.LastError == nil) || (l.LastError != nil && *l.LastError != *want.LastError) {
				t.Errorf("last_error %+v, want %+v", l.LastError, want.LastError)
			}
			l.LastError, want.LastError = nil, nil
			if fmt.Sprint(l) != fmt.Sprint(want) {
				t.Errorf("got  %+v\nwant %+v", l, want)
			}
		})
	}
}

// enable says what it did; a feed with nothing to enable is left as it is,
// not made due now (refetch does that).
func TestEnableSaysWhatItDoes(t *testing.T) {
	fetched := func(outcomes ...sched.Outcome) *sched.State {
		var st sched.State
		for _, o := range outcomes {
			st, _ = sched.Next(st, o, sched.Params{}, sched.Overrides{}, o.At, nil)
		}
		return &st
	}
	ok := sched.Outcome{At: now.Add(-time.Minute), Status: 200}
	failed := sched.Outcome{At: now.Add(-time.Minute), Status: 500, ErrorClass: "transient", ErrorCode: "http_500"}
	gone := sched.Outcome{At: now.Add(-2 * time.Hour), Status: 404, ErrorClass: "permanent", ErrorCode: "http_404"}
	for _, tc := range []struct {
		name        string
		st          *sched.State // nil: never fetched
		byHand      bool         // disabled by hand first
		pausedUntil time.Time
		msg         string
		dueNow      bool
	}{
		{name: "healthy", st: fetched(ok), msg: "feed-sub: https://example.org/a is enabled already; nothing changed (feed-sub refetch makes it due now)\n"},
		{name: "cooling down", st: fetched(gone, ok), msg: "is enabled already; nothing changed"},
		{name: "never fetched", msg: "is enabled already; nothing changed"},
		{name: "paused by hand", st: fetched(ok), pausedUntil: now.Add(time.Hour),
			msg: "feed-sub: https://example.org/a is enabled already; it is paused until 2026-11-21T13:00:00Z: feed-sub resume lifts the pause\n"},
		{name: "disabled by hand", st: fetched(ok), byHand: true, msg: "feed-sub: enabled https://example.org/a; due now\n", dueNow: true},
		{name: "disabled by hand, never fetched", byHand: true, msg: "feed-sub: enabled https://example.org/a\n"},
		{name: "failing", st: fetched(failed), msg: "feed-sub: enabled https://example.org/a again (it was failing: 1 in a row, the last http_500); due now\n", dueNow: true},
		{name: "disabled for errors", st: fetched(gone), msg: "feed-sub: re-enabled https://example.org/a (it was disabled: permanent error permanent/http_404); due now\n", dueNow: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			a, _, _ := Add(e.cfg, Spec{URL: "https://example.org/a"})
			if tc.byHand {
				SetDisabled(e.cfg, []string{a.FeedID}, true)
			}
			if !tc.pausedUntil.IsZero() {
				Pause(e.cfg, []string{a.FeedID}, tc.pausedUntil)
			}
			var before catalog.FeedState
			if tc.st != nil {
				before = catalog.FeedState{FeedID: a.FeedID, LastFetchAt: tc.st.FetchedAt}
				if tc.st.LastError != "" { // class/code
					before.LastError = &ndjson.Error{Code: tc.st.LastError[strings.Index(tc.st.LastError, "/")+1:]}
				}
				before.SetSched(*tc.st, sched.Decision{})
				e.putStates(t, before)
			}
			e.msg.Reset()
			if err := Enable(e.cfg, []string{a.FeedID}, sched.Params{}); err != nil {
				t.Fatal(err)
			}
			if got := e.msg.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, tc.msg) {
				t.Errorf("messages %q, want %q", e.msg, tc.msg)
			}
			if e.subs(t)[0].Disabled {
				t.Error("still disabled")
			}
			after := state(t, e, a.FeedID)
			if due := after.Sched != nil && after.Sched.Reason == sched.ReasonManual && after.NextFetchAt.Equal(now); due != tc.dueNow {
				t.Errorf("due now %v, want %v (next %s)", due, tc.dueNow, after.NextFetchAt)
			}
			if !tc.dueNow && !after.NextFetchAt.Equal(before.NextFetchAt.Time) {
				t.Errorf("next fetch moved from %s to %s", before.NextFetchAt, after.NextFetchAt)
			}
		})
	}
}

// TestListStatusAfterRetryAfter: once a Retry-After has ended the feed is
// due, and ls says so in both columns, as feed-stats does (stats.StatusOf):
// it said "paused (retry_after)" beside NEXT "now".
func TestListStatusAfterRetryAfter(t *testing.T) {
	e := newEnv(t)
	a, _, _ := Add(e.cfg, Spec{URL: "https://example.org/a"})
	b, _, _ := Add(e.cfg, Spec{URL: "https://example.org/b"})
	over := now.Add(-2 * time.Hour)
	stA, dA := sched.Next(sched.State{}, sched.Outcome{At: over, Status: 429, RetryAfterSec: 3600}, sched.Params{}, sched.Overrides{}, over, nil)
	stB, dB := sched.Next(sched.State{}, sched.Outcome{At: now.Add(-time.Minute), Status: 429, RetryAfterSec: 3600}, sched.Params{}, sched.Overrides{}, now.Add(-time.Minute), nil)
	fa, fb := catalog.FeedState{FeedID: a.FeedID, LastFetchAt: ndjson.At(over)}, catalog.FeedState{FeedID: b.FeedID, LastFetchAt: ndjson.At(now.Add(-time.Minute))}
	fa.SetSched(stA, dA)
	fb.SetSched(stB, dB)
	e.putStates(t, fa, fb)
	e.out.Reset()
	if err := List(e.cfg, ListOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`enabled \(Retry-After over\) +2h ago +now +https://example.org/a\n`),
		regexp.MustCompile(`paused for a Retry-After until 2026-11-21 12:59Z +1m ago +in 59m +https://example.org/b\n`),
	} {
		if !want.MatchString(e.out.String()) {
			t.Errorf("ls lacks %s:\n%s", want, e.out)
		}
	}
	e.out.Reset()
	if err := List(e.cfg, ListOptions{JSON: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(e.out.String(), `"status":"enabled","status_text":"enabled (Retry-After over)"`) ||
		!strings.Contains(e.out.String(), `"status":"paused","status_text":"paused for a Retry-After until 2026-11-21 12:59Z"`) {
		t.Errorf("ls --json:\n%s", e.out)
	}
}
