package due

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/testids"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// schedFixture: feeds whose state holds the scheduler's.
//
//	probe     disabled for a 404 a day and a minute ago: its probe is due
//	dead      disabled, not probed: never due
//	nudged    next in an hour, then feed-sub refetch: due now, manual
//	waiting   next in 10 minutes
//	paused    due, but its subscription is paused for a day
//	late      due 2h ago
//	limited   a 503 with Retry-After 2h, a minute ago: not even --all fetches it
func schedFixture(t *testing.T) *storedir.Store {
	t.Helper()
	paused := sub("paused", false)
	paused.PausedUntil = ndjson.At(now.Add(24 * time.Hour))
	subs := []ndjson.Subscription{sub("probe", false), sub("dead", false), sub("nudged", false), sub("waiting", false), paused, sub("late", false), sub("limited", false)}
	decide := func(id string, st sched.State, out sched.Outcome, p sched.Params, at time.Time) catalog.FeedState {
		s, d := sched.Next(st, out, p, sched.Overrides{}, at, nil)
		fs := catalog.FeedState{FeedID: testids.Feed(id), LastFetchAt: ndjson.At(at), LastSuccessAt: ndjson.At(at)}
		fs.Sched, fs.Decision, fs.NextFetchAt, fs.IntervalSec = &s, &d, s.NextAt, s.IntervalSec
		return fs
	}
	gone := sched.Outcome{Status: 404, ErrorClass: "permanent", ErrorCode: "http_404"}
	fixed := func(d time.Duration) sched.Params {
		return sched.Params{Policy: sched.Policy{Kind: sched.PolicyFixed, Every: d}, Jitter: -1}
	}
	ok := sched.Outcome{Status: 200}
	nudged := decide("nudged", sched.State{}, ok, fixed(time.Hour), now.Add(-time.Minute))
	s, d := sched.Next(*nudged.Sched, sched.Outcome{Kind: sched.Nudged}, fixed(time.Hour), sched.Overrides{}, now.Add(-time.Second), nil)
	nudged.Sched, nudged.Decision, nudged.NextFetchAt = &s, &d, s.NextAt
	return fill(t, subs,
		decide("probe", sched.State{}, gone, sched.Params{}, now.Add(-24*time.Hour-time.Minute)),
		decide("dead", sched.State{}, gone, sched.Params{NoProbe: true}, now.Add(-time.Hour)),
		nudged,
		decide("waiting", sched.State{}, ok, fixed(time.Hour), now.Add(-50*time.Minute)),
		decide("paused", sched.State{}, ok, fixed(time.Hour), now.Add(-2*time.Hour)),
		decide("late", sched.State{}, ok, fixed(time.Hour), now.Add(-3*time.Hour)),
		decide("limited", sched.State{}, sched.Outcome{Status: 503, ErrorClass: "rate_limited", ErrorCode: "http_503", RetryAfterSec: 7200}, fixed(time.Hour), now.Add(-time.Minute)),
	)
}

func TestRunSched(t *testing.T) {
	st := schedFixture(t)
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{name: "due by the scheduler, most overdue first", want: "late:scheduled probe:scheduled nudged:manual"},
		// --all lists every feed in service: not the paused, nor the
		// disabled ("every enabled subscription", as its help said).
		{name: "all", cfg: Config{All: true}, want: "late:scheduled probe:scheduled nudged:manual waiting:forced"}, // the forced by feed id,
		{name: "all and the paused", cfg: Config{All: true, IncludePaused: true}, want: "late:scheduled probe:scheduled nudged:manual paused:forced waiting:forced"},
		{name: "by name", cfg: Config{Feeds: []string{testids.Feed("waiting"), testids.Feed("limited")}}, want: "waiting:forced"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Store = st
			dues, err := run(t, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range dues {
				got = append(got, testids.Name(d.FeedID)+":"+d.Reason)
			}
			if strings.Join(got, " ") != tc.want {
				t.Fatalf("got  %s\nwant %s", strings.Join(got, " "), tc.want)
			}
		})
	}
}

func TestExplain(t *testing.T) {
	st := schedFixture(t)
	for _, tc := range []struct {
		ref  string
		want []string
	}{
		{"probe", []string{"https://example.org/probe", "Status: disabled: permanent error http_404 (probe now).", "Disabled: permanent error", "Probed once per max interval", "state           disabled", "HTTP 404", "policy adaptive", "posting rate    not known yet"}},
		{"late", []string{"at the last fetch (0 publication times kept"}},
		{"dead", []string{"Not probed; feed-sub enable puts it back", "never (disabled, not probed)"}},
		{"waiting", []string{"Next fetch 2026-11-21T12:10Z (in 10m)", "next fetch      2026-11-21T12:10:00Z (in 10m)", "fixed:1h"}},
		{"paused", []string{"Overrides: paused until 2026-11-22T12:00:00Z", "Paused by hand until 2026-11-22T12:00:00Z", "next fetch      2026-11-22T12:00:00Z (in 24h), when the pause ends"}},
		{"nudged", []string{"Fetch now: asked for by hand", "due now"}},
		{"limited", []string{"Status: paused for a Retry-After until 2026-11-21 13:59Z."}},
		{"late", []string{"Status: enabled."}},
	} {
		var b bytes.Buffer
		if err := Explain(Config{Store: st, Now: now}, testids.Feed(tc.ref), &b); err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: explanation lacks %q:\n%s", tc.ref, w, b.String())
			}
		}
	}
	// A feed never fetched: the decision for a new feed.
	st2 := fill(t, []ndjson.Subscription{sub("fresh", false)})
	var b bytes.Buffer
	if err := Explain(Config{Store: st2, Now: now}, testids.Feed("fresh"), &b); err != nil || !strings.Contains(b.String(), "Fetch now: a new feed, never fetched.") ||
		!strings.Contains(b.String(), "never fetched\n") {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if err := Explain(Config{Store: st2, Now: now}, "nope", &b); err == nil {
		t.Fatal("unknown feed explained")
	}
}

// TestExplainOneCountdown: --explain counts down to the next fetch from
// now, in the decision and the state alike; the decision counted from when
// it was made, minutes before ("in 51m52s" beside "in 48m51s").
func TestExplainOneCountdown(t *testing.T) {
	st := fill(t, []ndjson.Subscription{sub("a", false)})
	at := now.Add(-3 * time.Minute)
	p := sched.Params{Policy: sched.Policy{Kind: sched.PolicyFixed, Every: 51*time.Minute + 52*time.Second}}
	s, d := sched.Next(sched.State{}, sched.Outcome{At: at, Status: 200, Parsed: true}, p, sched.Overrides{}, at, nil)
	fs := catalog.FeedState{FeedID: testids.Feed("a"), LastFetchAt: ndjson.At(at), LastSuccessAt: ndjson.At(at)}
	fs.SetSched(s, d)
	putStates(t, st, fs)
	var b bytes.Buffer
	if err := Explain(Config{Store: st, Now: now, Sched: p}, testids.Feed("a"), &b); err != nil {
		t.Fatal(err)
	}
	in := regexp.MustCompile(`\(in [^)]*\)`).FindAllString(b.String(), -1)
	want := "(in " + sched.DurationText(s.NextAt.Sub(now)) + ")"
	if len(in) != 2 || in[0] != want || in[1] != want {
		t.Errorf("countdowns %q, want %s twice:\n%s", in, want, b.String())
	}
}

// TestExplainOneRate: --explain gives one posting rate for a feed, the
// one its decision used, in the decision, the state and the inputs alike,
// however long after the fetch it is asked (it gave the rate at the time
// asked beside the decision's), and a 304 does not call the window
// "0-item".
func TestExplainOneRate(t *testing.T) {
	st := fill(t, []ndjson.Subscription{sub("busy", false)})
	// 20 items over 2 hours, then a 304: the window caps the interval.
	at := now.Add(-6 * time.Hour)
	var pub []time.Time
	for i := range 20 {
		pub = append(pub, at.Add(-time.Duration(i)*6*time.Minute))
	}
	p := sched.Params{Scale: 60000, NoProfile: true}
	s, _ := sched.Next(sched.State{}, sched.Outcome{At: at, Status: 200, NewEntries: 20, Items: 20, Parsed: true, Published: pub}, p, sched.Overrides{}, at, nil)
	s, d := sched.Next(s, sched.Outcome{At: at.Add(5 * time.Minute), Status: 304, NotModified: true}, p, sched.Overrides{}, at.Add(5*time.Minute), nil)
	if d.Inputs.WindowCapSec == 0 {
		t.Fatalf("the fixture wants a window cap: %+v", d.Inputs)
	}
	fs := catalog.FeedState{FeedID: testids.Feed("busy"), LastFetchAt: ndjson.At(at.Add(5 * time.Minute)), LastSuccessAt: ndjson.At(at.Add(5 * time.Minute))}
	fs.Sched, fs.Decision, fs.NextFetchAt, fs.IntervalSec = &s, &d, s.NextAt, s.IntervalSec
	putStates(t, st, fs)
	var b bytes.Buffer
	if err := Explain(Config{Store: st, Now: now, Sched: p}, testids.Feed("busy"), &b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	rate := sched.RateText(d.Inputs.RatePerDay)
	for _, want := range []string{"posts about " + rate + ";", "posting rate    " + rate + " at the last fetch", "rate " + rate + ", scale", "leaves the feed's window unseen"} {
		if !strings.Contains(out, want) {
			t.Errorf("explanation lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "0-item") {
		t.Errorf("a 304's window called 0-item:\n%s", out)
	}
}

// TestExplainPattern: --explain says what the feed's posting pattern is,
// and why the decision placed the next fetch where it did; a feed without
// one says so.
func TestExplainPattern(t *testing.T) {
	st := fill(t, []ndjson.Subscription{sub("office", false), sub("young", false)})
	// Two months of items at 09:00-16:59 UTC, Monday to Friday, as its
	// first fetch shows them: 200 of them.
	at := time.Date(2026, 11, 20, 11, 0, 0, 0, time.UTC) // a Friday
	var pub []time.Time
	for d := at.AddDate(0, 0, -60).Truncate(24 * time.Hour); len(pub) < 200 && d.Before(at); d = d.Add(24 * time.Hour) {
		if wd := d.Weekday(); wd == time.Saturday || wd == time.Sunday {
			continue
		}
		for h := 9; h < 17; h++ {
			pub = append(pub, d.Add(time.Duration(h)*time.Hour+17*time.Minute))
		}
	}
	p := sched.Params{Jitter: -1}
	out := sched.Outcome{At: at, Status: 200, NewEntries: len(pub), Items: len(pub), Parsed: true, Published: pub}
	s, d := sched.Next(sched.State{}, out, p, sched.Overrides{}, at, nil)
	if d.Inputs.PatternGain == 0 {
		t.Fatalf("the fixture wants a clear pattern: %+v", d.Inputs)
	}
	fs := catalog.FeedState{FeedID: testids.Feed("office"), LastFetchAt: ndjson.At(at), LastSuccessAt: ndjson.At(at)}
	fs.SetSched(s, d)
	// Three items: no pattern yet.
	s2, d2 := sched.Next(sched.State{}, sched.Outcome{At: at, Status: 200, NewEntries: 3, Items: 3, Parsed: true, Published: pub[len(pub)-3:]}, p, sched.Overrides{}, at, nil)
	fs2 := catalog.FeedState{FeedID: testids.Feed("young"), LastFetchAt: ndjson.At(at), LastSuccessAt: ndjson.At(at)}
	fs2.SetSched(s2, d2)
	putStates(t, st, fs, fs2)
	for _, tc := range []struct {
		ref  string
		want []string
	}{
		{"office", []string{"Pattern: posts mostly at 09-16 UTC, Mon-Fri", "polls follow it",
			"posting pattern posts mostly at 09-16 UTC, Mon-Fri", "; clear: polls follow it, for ×",
			`pattern gain`, `hours "09-16" UTC, days "Mon-Fri"`}},
		{"young", []string{"posting pattern not known yet: too few items"}},
	} {
		var b bytes.Buffer
		if err := Explain(Config{Store: st, Now: at.Add(time.Minute), Sched: p}, testids.Feed(tc.ref), &b); err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: explanation lacks %q:\n%s", tc.ref, w, b.String())
			}
		}
	}
}

// TestRefusedDueWhenAllowed: a feed whose private address was refused is
// not due until its interval ends; once every feed is allowed such
// addresses (FEEDPIPE_ALLOW_PRIVATE=1), the first feed-due lists it at
// once (as it lists one its subscription allows them: feed-sub set
// --allow-private nudges it too), the refused fetch's time naming the
// run, until a feed-fetch with the setting fetched them
// (RecordAllowPrivate).
func TestRefusedDueWhenAllowed(t *testing.T) {
	refusedAt := now.Add(-time.Minute)
	st, d := sched.Next(sched.State{}, sched.Outcome{ErrorClass: "blocked", ErrorCode: sched.CodeAddressRefused}, sched.Params{}, sched.Overrides{}, refusedAt, nil)
	if d.Reason != sched.ReasonRefused || !st.NextAt.After(now) {
		t.Fatalf("the scheduler's refusal: %+v, next %s", d, st.NextAt)
	}
	fs := func(id string) catalog.FeedState {
		s := st
		return catalog.FeedState{FeedID: testids.Feed(id), LastFetchAt: ndjson.At(refusedAt), Sched: &s, Decision: &d, NextFetchAt: s.NextAt}
	}
	allowed := sub("allowed", false)
	allowed.AllowPrivate = true
	store := fill(t, []ndjson.Subscription{sub("refused", false), allowed}, fs("refused"), fs("allowed"))
	for _, tc := range []struct {
		fetched, allowed bool // RecordAllowPrivate(allowed) first
		cfg              Config
		want             string
	}{
		{cfg: Config{}, want: ""},
		{cfg: Config{AllowPrivate: true}, want: "allowed:scheduled refused:scheduled"},
		{cfg: Config{AllowPrivate: true}, want: "allowed:scheduled refused:scheduled"}, // not fetched yet
		{fetched: true, allowed: true, cfg: Config{AllowPrivate: true}, want: ""},
		{fetched: true, allowed: false, cfg: Config{}, want: ""},
		{cfg: Config{AllowPrivate: true}, want: "allowed:scheduled refused:scheduled"},
	} {
		if tc.fetched {
			cat, err := catalog.Open(context.Background(), store, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := RecordAllowPrivate(context.Background(), cat, tc.allowed); err != nil {
				t.Fatal(err)
			}
			cat.Close()
		}
		tc.cfg.Store = store
		dues, err := run(t, tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, due := range dues {
			got = append(got, testids.Name(due.FeedID)+":"+due.Reason)
			if !due.ScheduledAt.Equal(refusedAt) {
				t.Errorf("%s: scheduled_at %s, want the refused fetch's %s", testids.Name(due.FeedID), due.ScheduledAt, refusedAt)
			}
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("AllowPrivate %t: got %s, want %s", tc.cfg.AllowPrivate, strings.Join(got, " "), tc.want)
		}
	}
}
