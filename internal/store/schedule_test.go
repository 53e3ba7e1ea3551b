package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/testids"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// runSched is run with the scheduler's parameters p and no jitter.
func runSched(t *testing.T, st *storedir.Store, at time.Time, p sched.Params, input string) runOut {
	t.Helper()
	p.Jitter = -1
	// The decisions on stdout too, to be checked.
	return runConfig(t, Config{In: strings.NewReader(input), Store: st, Now: func() time.Time { return at }, Sched: p, Decisions: true})
}

func (r runOut) decision(t *testing.T) ndjson.Decision {
	t.Helper()
	for _, l := range r.lines {
		if l.Type == ndjson.TypeDecision {
			var d ndjson.Decision
			if err := l.Decode(&d); err != nil {
				t.Fatal(err)
			}
			return d
		}
	}
	t.Fatalf("no decision record in %d lines", len(r.lines))
	return ndjson.Decision{}
}

func (r runOut) types() string {
	var ts []string
	for _, l := range r.lines {
		ts = append(ts, l.Type)
	}
	return strings.Join(ts, ",")
}

// TestSchedule runs sequences of fetches through feed-store and checks the
// decisions, the stored state and the events, one rule per case.
func TestSchedule(t *testing.T) {
	ok200 := func(f *ndjson.Fetch) { f.Parse = &ndjson.Parse{Items: 10} }
	notMod := func(f *ndjson.Fetch) { f.HTTPStatus, f.NotModified = 304, true }
	gone := func(f *ndjson.Fetch) {
		f.HTTPStatus = 404
		f.Error = &ndjson.Error{Class: ndjson.ClassPermanent, Code: "http_404", Message: "HTTP 404"}
	}
	fail := func(f *ndjson.Fetch) {
		f.HTTPStatus = 500
		f.Error = &ndjson.Error{Class: ndjson.ClassTransient, Code: "http_500", Message: "HTTP 500"}
	}
	limited := func(f *ndjson.Fetch) {
		f.HTTPStatus, f.RetryAfterSec = 503, 5400
		f.Error = &ndjson.Error{Class: ndjson.ClassRateLimited, Code: "http_503", Message: "HTTP 503"}
	}
	refused := func(f *ndjson.Fetch) {
		f.HTTPStatus = 0
		f.Error = &ndjson.Error{Class: ndjson.ClassBlocked, Code: "address_refused", Message: "refusing to connect to a non-public address: 127.0.0.1"}
	}
	maxAge := func(f *ndjson.Fetch) {
		ok200(f)
		f.ResponseHeaders = map[string]string{"Cache-Control": "public, max-age=7200"}
	}
	ttl := func(f *ndjson.Fetch) { f.Parse = &ndjson.Parse{Items: 10, TTLMinutes: 180} }
	type step struct {
		fetch   func(*ndjson.Fetch)
		entries int // new entries before the fetch record
		check   func(t *testing.T, r runOut, fs catalog.FeedState, at time.Time)
	}
	wantNext := func(kind, reason string, after time.Duration) func(*testing.T, runOut, catalog.FeedState, time.Time) {
		return func(t *testing.T, r runOut, fs catalog.FeedState, at time.Time) {
			t.Helper()
			d := r.decision(t)
			if d.Decision != kind || d.Reason != reason {
				t.Errorf("decision %s/%s, want %s/%s", d.Decision, d.Reason, kind, reason)
			}
			if after >= 0 && !d.NextAt.Equal(at.Add(after)) {
				t.Errorf("next_at %s, want %s", d.NextAt, at.Add(after))
			}
		}
	}
	cases := []struct {
		name  string
		p     sched.Params
		sub   ndjson.Subscription // FeedID "A"
		steps []step
	}{
		{name: "fixed policy", p: hourly, steps: []step{{fetch: ok200, check: wantNext("defer", "fixed", time.Hour)}}},
		{name: "own interval clamped", p: hourly, sub: ndjson.Subscription{IntervalSec: 60},
			steps: []step{{fetch: ok200, check: wantNext("defer", "fixed", 5*time.Minute)}}},
		{name: "cron", sub: ndjson.Subscription{Cron: "30 * * * *"},
			steps: []step{{fetch: ok200, check: wantNext("defer", "cron", 30*time.Minute)}}},
		{name: "paused by hand", sub: ndjson.Subscription{PausedUntil: ndjson.At(t0.Add(48 * time.Hour))},
			steps: []step{{fetch: ok200, check: func(t *testing.T, r runOut, fs catalog.FeedState, at time.Time) {
				if d := r.decision(t); d.Decision != "pause" || d.Reason != "paused" || !d.NextAt.Equal(t0.Add(48*time.Hour)) {
					t.Errorf("decision %+v", d)
				}
			}}}},
		{name: "max interval override", sub: ndjson.Subscription{MaxIntervalSec: 600},
			steps: []step{{fetch: notMod}, {fetch: notMod}, {fetch: notMod, check: func(t *testing.T, r runOut, fs catalog.FeedState, at time.Time) {
				if d := r.decision(t); d.Inputs.MaxSec != 600 || fs.IntervalSec > 600 {
					t.Errorf("max %d, interval %d: want at most 600", d.Inputs.MaxSec, fs.IntervalSec)
				}
			}}}},
		{name: "304s stretch the interval", p: sched.Params{Policy: sched.Policy{Kind: sched.PolicySeed}}, steps: []step{
			{fetch: ok200},
			{fetch: notMod}, {fetch: notMod},
			{fetch: notMod, check: func(t *testing.T, r runOut, fs catalog.FeedState, at time.Time) {
				d := r.decision(t)
				if d.Inputs.IntervalAfterSec <= d.Inputs.IntervalBeforeSec || d.Reason != "not_modified" {
					t.Errorf("interval %d -> %d (%s): a feed that stops posting must be polled less", d.Inputs.IntervalBeforeSec, d.Inputs.IntervalAfterSec, d.Reason)
				}
			}}}},
		{name: "seed policy 304", p: sched.Params{Policy: sched.Policy{Kind: sched.PolicySeed}}, steps: []step{
			{fetch: notMod, check: wantNext("defer", "not_modified", time.Duration(float64(15*time.Minute)*1.25))}}},
		{name: "404 disables, probe re-enables", steps: []step{
			{fetch: ok200},
			{fetch: gone, check: func(t *testing.T, r runOut, fs catalog.FeedState, at time.Time) {
				if r.types() != "decision,feed_disabled" {
					t.Fatalf("output %s", r.types())
				}
				var ev ndjson.FeedEvent
				r.lines[1].Decode(&ev)
				if ev.FeedID != testids.Feed("A") || ev.Error == nil || ev.Error.Code != "http_404" || !strings.Contains(ev.DisabledReason, "404") || !ev.NextAt.Equal(at.Add(24*time.Hour)) {
					t.Errorf("event %+v", ev)
				}
				if fs.Sched.Lifecycle != sched.StateDisabled || !fs.NextFetchAt.Equal(at.Add(24*time.Hour)) {
					t.Errorf("state %s, next %s: want disabled, probed in a day", fs.Sched.Lifecycle, fs.NextFetchAt)
				}
			}},
			{fetch: ok200, check: func(t *testing.T, r runOut, fs catalog.FeedState, at time.Time) {
				if r.types() != "decision,feed_reenabled" || fs.Sched.Lifecycle != sched.StateCoolingDown {
					t.Fatalf("output %s, state %s", r.types(), fs.Sched.Lifecycle)
				}
				var ev ndjson.FeedEvent
				r.lines[1].Decode(&ev)
				if !strings.Contains(ev.DisabledReason, "404") || ev.Error != nil {
					t.Errorf("event %+v: want the reason it had been disabled for, and no error", ev)
				}
			}}}},
		{name: "a private address refused: backoff, not disabled", steps: []step{
			{fetch: func(f *ndjson.Fetch) {
				f.Error = &ndjson.Error{Class: ndjson.ClassPermanent, Code: "address_refused", Message: "refused"}
			}, check: func(t *testing.T, r runOut, fs catalog.FeedState, at time.Time) {
				if d := r.decision(t); d.Decision != "backoff" || fs.Sched.Lifecycle == sched.StateDisabled || r.types() != "decision" {
					t.Errorf("decision %s, state %s, output %s: want a backoff (a run with --allow-private must find the feed)", d.Decision, fs.Sched.Lifecycle, r.types())
				}
			}}}},
		// One class per outcome: the decision's is the fetch record's. And
		// a refusal --allow-private lifts spends no error budget: the first
		// answer finds the feed healthy with all of it (it found it
		// cooling down with 1 of 5 left).
		{name: "refusals spend no error budget", steps: []step{
			{fetch: refused, check: func(t *testing.T, r runOut, fs catalog.FeedState, at time.Time) {
				if d := r.decision(t); d.Inputs.ErrorClass != ndjson.ClassBlocked || d.Inputs.ErrorCode != "address_refused" || d.Reason != "address_refused" {
					t.Errorf("decision %s, error class %s/%s: want the fetch record's, blocked/address_refused", d.Reason, d.Inputs.ErrorClass, d.Inputs.ErrorCode)
				}
			}},
			{fetch: refused}, {fetch: refused}, {fetch: refused},
			{fetch: ok200, check: func(t *testing.T, r runOut, fs catalog.FeedState, at time.Time) {
				if d := r.decision(t); d.State != "healthy" || d.Inputs.ErrorBudget != 5 || d.Inputs.ConsecutiveFailures != 0 {
					t.Errorf("after the first answer: state %s, error budget %g of 5, %d failures", d.State, d.Inputs.ErrorBudget, d.Inputs.ConsecutiveFailures)
				}
			}}}},
		// rdf_UTF8.xml of the shared corpus: 60 items without dates. The
		// first fetch keeps 20 (item_limit) and the next shows the other
		// 40 as new: history both times, no burst (it was 12134 items a
		// day, and every 5 minutes).
		{name: "undated items a limited fetch withheld are history", steps: []step{
			{entries: 20, fetch: func(f *ndjson.Fetch) { f.Due.ItemLimit, f.Parse = 20, &ndjson.Parse{Items: 60, Entries: 20} },
				check: func(t *testing.T, r runOut, fs catalog.FeedState, at time.Time) {
					if d := r.decision(t); d.Inputs.RatePerDay > 64 || fs.Sched.Withheld != 40 {
						t.Errorf("rate %g a day, %d withheld: want the prior's, 40", d.Inputs.RatePerDay, fs.Sched.Withheld)
					}
				}},
			{entries: 40, fetch: func(f *ndjson.Fetch) { f.Parse = &ndjson.Parse{Items: 60, Entries: 60} },
				check: func(t *testing.T, r runOut, fs catalog.FeedState, at time.Time) {
					if d := r.decision(t); d.Inputs.RatePerDay > 64 || fs.Sched.Withheld != 0 || d.Inputs.IntervalAfterSec < 900 {
						t.Errorf("rate %g a day, interval %ds, %d withheld: the 40 withheld items are no burst", d.Inputs.RatePerDay, d.Inputs.IntervalAfterSec, fs.Sched.Withheld)
					}
				}}}},
		{name: "404 without probes", p: sched.Params{NoProbe: true}, steps: []step{
			{fetch: gone, check: func(t *testing.T, r runOut, fs catalog.FeedState, at time.Time) {
				if d := r.decision(t); d.Decision != "pause" || !d.NextAt.IsZero() || !fs.NextFetchAt.IsZero() {
					t.Errorf("decision %+v: want a pause without end", d)
				}
			}}}},
		{name: "failures back off, then disable", p: sched.Params{DisableThreshold: 3, ErrorBudget: 100}, steps: []step{
			{fetch: ok200},
			{fetch: fail, check: wantNext("backoff", "http_error", -1)},
			{fetch: fail},
			{fetch: fail, check: func(t *testing.T, r runOut, fs catalog.FeedState, at time.Time) {
				if r.types() != "decision,feed_disabled" || fs.ConsecutiveFailures != 3 {
					t.Errorf("output %s, failures %d", r.types(), fs.ConsecutiveFailures)
				}
			}}}},
		{name: "Retry-After honoured exactly", steps: []step{{fetch: limited, check: wantNext("pause", "retry_after", 5400*time.Second)}}},
		{name: "max-age is a floor", p: sched.Params{Policy: sched.Policy{Kind: sched.PolicyFixed, Every: 10 * time.Minute}},
			steps: []step{{fetch: maxAge, check: wantNext("defer", "fixed", 2*time.Hour)}}},
		{name: "ttl is a floor", p: hourly, steps: []step{{fetch: ttl, check: wantNext("defer", "fixed", 3*time.Hour)}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, _ := storedir.Open(t.TempDir())
			sub := tc.sub
			sub.Header, sub.FeedID, sub.URL = ndjson.Head(ndjson.TypeSubscription), testids.Feed("A"), "http://example.org/a.xml"
			editSubs(t, st, func([]ndjson.Subscription) ([]ndjson.Subscription, error) { return []ndjson.Subscription{sub}, nil })
			at := t0
			for i, s := range tc.steps {
				at = at.Add(time.Duration(i) * 30 * time.Minute)
				var in string
				for e := range s.entries {
					in += entry("A", "u"+string(rune('a'+i))+string(rune('a'+e)), "h", "T")
				}
				fetchedAt := at
				in += fetchRec("A", func(f *ndjson.Fetch) {
					f.FetchID, f.FetchedAt = fetchRecID(i), ndjson.At(fetchedAt)
					s.fetch(f)
				})
				r := runSched(t, st, at, tc.p, in)
				if r.err != nil {
					t.Fatalf("step %d: %v", i, r.err)
				}
				states, _ := statesOf(t, st)
				fs := states.ByFeed[testids.Feed("A")]
				if fs.Sched == nil || fs.Decision == nil || !fs.NextFetchAt.Equal(fs.Sched.NextAt.Time) || fs.IntervalSec != fs.Sched.IntervalSec {
					t.Fatalf("step %d: state does not hold the scheduler's: %+v", i, fs)
				}
				if d := r.decision(t); d.FeedID != testids.Feed("A") || d.FetchID != fetchRecID(i) || d.V != 1 {
					t.Fatalf("step %d: decision record %+v", i, d)
				}
				if s.check != nil {
					s.check(t, r, fs, at)
				}
			}
		})
	}
}

func fetchRecID(i int) string { return testids.Fetch("F" + string(rune('0'+i))) }

// TestFeedEventsStored: a feed_disabled event is in the events file too.
func TestFeedEventsStored(t *testing.T) {
	st, _ := storedir.Open(t.TempDir())
	r := runSched(t, st, t0, sched.Params{}, fetchRec("A", func(f *ndjson.Fetch) {
		f.HTTPStatus = 410
		f.Error = &ndjson.Error{Class: ndjson.ClassPermanent, Code: "http_410", Message: "HTTP 410"}
	}))
	if r.err != nil {
		t.Fatal(r.err)
	}
	data, _ := os.ReadFile(st.Path("events/2026-11-21.ndjson"))
	if !bytes.Contains(data, []byte(`{"type":"feed_disabled","v":1,"feed_id":"`+testids.Feed("A")+`","fetch_id":"`+testids.Fetch("F-A")+`"`)) {
		t.Fatalf("events file: %s", data)
	}
}

// TestDecisionRecordHasEveryField: the decision record carries every field
// of sched.Decision, so nothing the scheduler says is lost on the way, and
// the field-by-field copy gives what a JSON round trip into the record
// gives, on decisions with every field set at random.
func TestDecisionRecordHasEveryField(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		var d sched.Decision
		fillRandom(reflect.ValueOf(&d).Elem(), rng, i%2 == 0)
		rec := DecisionRecord(testids.Feed("A"), testids.Fetch("F"), d)
		got, _ := json.Marshal(rec)
		if want, _ := json.Marshal(decisionByJSON(t, testids.Feed("A"), testids.Fetch("F"), d)); !bytes.Equal(got, want) {
			t.Fatalf("decision %d:\n got %s\nwant %s", i, got, want)
		}
		if i%2 != 0 {
			continue // zero fields are left out of d's JSON: keys only when all are set
		}
		want := append(jsonKeys(d), "feed_id", "fetch_id", "type", "v")
		slices.Sort(want)
		if got := jsonKeys(rec); !slices.Equal(got, want) {
			t.Fatalf("record fields\n%v\nwant\n%v", got, want)
		}
	}
}

// decisionByJSON is d as a record the slow way, through its JSON.
func decisionByJSON(t *testing.T, feedID, fetchID string, d sched.Decision) *ndjson.Decision {
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	rec := &ndjson.Decision{}
	if err := ndjson.Unmarshal(b, rec); err != nil {
		t.Fatal(err)
	}
	rec.Header, rec.FeedID, rec.FetchID = ndjson.Head(ndjson.TypeDecision), feedID, fetchID
	if rec.Inputs.SkipHours == nil {
		rec.Inputs.SkipHours = []int{}
	}
	if rec.Inputs.SkipDays == nil {
		rec.Inputs.SkipDays = []string{}
	}
	return rec
}

// jsonKeys lists the keys of v's JSON object, inputs' as "inputs.KEY".
func jsonKeys(v any) []string {
	b, _ := json.Marshal(v)
	var m map[string]any
	json.Unmarshal(b, &m)
	var ks []string
	for k, v := range m {
		if k == "inputs" {
			for k2 := range v.(map[string]any) {
				ks = append(ks, "inputs."+k2)
			}
			continue
		}
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// fillRandom sets every field of the struct v: all to non-zero values, or
// (sparse) each to a zero or a random one.
func fillRandom(v reflect.Value, rng *rand.Rand, all bool) {
	for i := range v.NumField() {
		f := v.Field(i)
		if !all && rng.IntN(2) == 0 {
			continue
		}
		switch {
		case f.Type() == reflect.TypeFor[ndjson.Time]():
			f.Set(reflect.ValueOf(ndjson.At(t0.Add(time.Duration(rng.Int64N(1e15))))))
		case f.Kind() == reflect.Struct:
			fillRandom(f, rng, all)
		case f.Kind() == reflect.String:
			f.SetString(fmt.Sprintf("s%d", rng.IntN(1000)))
		case f.Kind() == reflect.Int:
			f.SetInt(1 + rng.Int64N(1e6))
		case f.Kind() == reflect.Float64:
			f.SetFloat(rng.Float64() * 1e4)
		case f.Kind() == reflect.Bool:
			f.SetBool(true)
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Int:
			f.Set(reflect.ValueOf([]int{rng.IntN(24), rng.IntN(24)}))
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String:
			f.Set(reflect.ValueOf([]string{"Sunday"}))
		default:
			panic("fillRandom: no case for " + f.Type().String())
		}
	}
}

func TestMaxAge(t *testing.T) {
	for _, tc := range []struct {
		h    map[string]string
		want int
	}{
		{nil, 0},
		{map[string]string{"Cache-Control": "max-age=600"}, 600},
		{map[string]string{"Cache-Control": `public, MAX-AGE="90"`}, 90},
		{map[string]string{"Cache-Control": "no-cache, max-age=600"}, 0},
		{map[string]string{"Cache-Control": "max-age=-5"}, 0},
		{map[string]string{"Expires": "Sat, 21 Nov 2026 11:00:00 GMT", "Date": "Sat, 21 Nov 2026 10:00:00 GMT"}, 3600},
		{map[string]string{"Expires": "0", "Date": "Sat, 21 Nov 2026 10:00:00 GMT"}, 0},
		{map[string]string{"Expires": "Sat, 21 Nov 2026 09:00:00 GMT", "Date": "Sat, 21 Nov 2026 10:00:00 GMT"}, 0},
	} {
		if got := maxAge(tc.h); got != tc.want {
			t.Errorf("maxAge(%v) = %d, want %d", tc.h, got, tc.want)
		}
	}
}

// TestScaleAndBudget: the adaptive scale is computed per run and the
// day's spend is kept for the budget feedback.
func TestScaleAndBudget(t *testing.T) {
	st, _ := storedir.Open(t.TempDir())
	editSubs(t, st, func([]ndjson.Subscription) ([]ndjson.Subscription, error) {
		h := ndjson.Head(ndjson.TypeSubscription)
		return []ndjson.Subscription{{Header: h, FeedID: testids.Feed("A"), URL: "http://example.org/a"}, {Header: h, FeedID: testids.Feed("B"), URL: "http://example.org/b"}}, nil
	})
	in := entry("A", "u1", "h", "T") + fetchRec("A", func(f *ndjson.Fetch) { f.Parse = &ndjson.Parse{Items: 1} })
	if r := runSched(t, st, t0, sched.Params{}, in); r.err != nil {
		t.Fatal(r.err)
	}
	in = fetchRec("A", func(f *ndjson.Fetch) { f.FetchedAt = ndjson.At(t0.Add(time.Hour)) })
	r := runSched(t, st, t0.Add(time.Hour), sched.Params{}, in)
	if d := r.decision(t); d.Inputs.Scale <= 0 || d.Inputs.Scale == sched.DefaultScale {
		t.Errorf("scale %g: want one computed for the budget", d.Inputs.Scale)
	}
	cat := openCatalog(t, st)
	var b budgetState
	if ok, err := cat.Meta(context.Background(), catalog.MetaBudget, &b); !ok || err != nil || b.Fetches != 2 || b.Factor != 1 || !b.Since.Equal(t0) {
		t.Fatalf("budget %+v (%v)", b, err)
	}
	// A day later the factor moves towards budget/spent: 2 fetches a day
	// against 48 is far under, so it grows (at most 2), and the day's
	// underspend is kept for the next days to make up.
	in = fetchRec("A", func(f *ndjson.Fetch) { f.FetchedAt = ndjson.At(t0.Add(25 * time.Hour)) })
	runSched(t, st, t0.Add(25*time.Hour), sched.Params{}, in)
	cat.Meta(context.Background(), catalog.MetaBudget, &b)
	if b.Factor <= 1 || b.Over >= 0 || b.Fetches != 1 || !b.Since.Equal(t0.Add(25*time.Hour)) {
		t.Fatalf("after a day: %+v", b)
	}
	// A budget from before the loop kept what was owed reads as owing
	// nothing.
	cat.SetMeta(context.Background(), catalog.MetaBudget, json.RawMessage(`{"factor":1.5,"since":"2026-06-01T00:00:00Z","fetches":3}`))
	c := &committer{ctx: context.Background(), cat: cat, cfg: Config{Store: st, Log: slog.New(slog.DiscardHandler)}}
	if got := c.loadBudget(t0.Add(26 * time.Hour)); got.Factor != 1.5 || got.Over != 0 || got.Fetches != 3 {
		t.Errorf("an older budget: %+v", got)
	}
}
