package stats

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/internal/testenv"
	"github.com/feedpipe/feedpipe/internal/testids"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// outcome is a fetch's outcome ago before now.
func outcome(ago time.Duration, status int, class, code string) sched.Outcome {
	return sched.Outcome{At: now.Add(-ago), Status: status, ErrorClass: class, ErrorCode: code}
}

// decided is the state feed-store keeps of feed id after the outcomes, in
// turn, each decided at its time.
func decided(id string, outs ...sched.Outcome) catalog.FeedState {
	fs := catalog.FeedState{FeedID: id}
	var st sched.State
	for _, o := range outs {
		var d sched.Decision
		st, d = sched.Next(st, o, sched.Params{Jitter: -1}, sched.Overrides{}, o.At, nil)
		fs.Sched, fs.Decision, fs.NextFetchAt, fs.IntervalSec = &st, &d, st.NextAt, st.IntervalSec
		fs.LastFetchAt, fs.LastStatus = ndjson.At(o.At), o.Status
		if o.ErrorClass != "" {
			fs.ConsecutiveFailures++
			fs.LastError = &ndjson.Error{Class: o.ErrorClass, Code: o.ErrorCode}
		} else {
			fs.ConsecutiveFailures, fs.LastError = 0, nil
		}
	}
	return fs
}

type statusCase struct {
	name     string
	sub      ndjson.Subscription
	fs       catalog.FeedState
	want     string // State
	text     string
	interval bool      // IntervalSec is the scheduler's
	next     time.Time // zero: not listed
}

// statusCases are a feed in each status, as the scheduler leaves it.
func statusCases() []statusCase {
	created := now.Add(-48 * time.Hour)
	retry := func(ago time.Duration, secs int) sched.Outcome {
		o := outcome(ago, 429, "rate_limited", "http_429")
		o.RetryAfterSec = secs
		return o
	}
	fail := outcome(time.Minute, 500, "transient", "http_500")
	var circuit []sched.Outcome
	for range 5 { // at once: the budget does not refill between them
		circuit = append(circuit, outcome(50*time.Minute, 500, "transient", "http_500"))
	}
	failing := decided("failing", fail)
	gone := decided("gone", outcome(time.Hour, 404, "permanent", "http_404"))
	ok := decided("ok", outcome(time.Minute, 200, "", ""))
	cooling := decided("cooling", outcome(2*time.Hour, 500, "transient", "http_500"), outcome(time.Minute, 200, "", ""))
	limited := decided("limited", retry(time.Minute, 3600))
	limitedOver := decided("limited-over", retry(2*time.Hour, 3600))
	refused := decided("refused", outcome(time.Minute, 0, "blocked", "address_refused"))
	return []statusCase{
		{"never fetched", ndjson.Subscription{FeedID: "new"}, catalog.FeedState{}, StateEnabled, "enabled", false, created},
		{"healthy", ndjson.Subscription{FeedID: "ok"}, ok, StateEnabled, "enabled", true, ok.NextFetchAt.Time},
		{"cooling down", ndjson.Subscription{FeedID: "cooling"}, cooling, StateEnabled, "enabled (cooling down)", true, cooling.NextFetchAt.Time},
		{"backing off", ndjson.Subscription{FeedID: "failing"}, failing, StateFailing, "failing (1): http_500", false, failing.NextFetchAt.Time},
		{"circuit open", ndjson.Subscription{FeedID: "circuit"}, decided("circuit", circuit...), StateFailing, "failing (5): http_500, circuit open", false,
			decided("circuit", circuit...).NextFetchAt.Time},
		// It was "failing (1)" with interval 15m in feed-stats, and not
		// disabled in the metrics.
		{"disabled for a 404", ndjson.Subscription{FeedID: "gone"}, gone, StateDisabled, "disabled: permanent error http_404 (probe in 23h)", false,
			now.Add(23 * time.Hour)},
		// It was "failing (1)" in feed-stats.
		{"Retry-After running", ndjson.Subscription{FeedID: "limited"}, limited, StatePaused, "paused for a Retry-After until 2026-11-21 12:59Z", false,
			now.Add(59 * time.Minute)},
		// It was "paused (retry_after)", due now, in feed-sub ls.
		{"Retry-After over", ndjson.Subscription{FeedID: "limited-over"}, limitedOver, StateEnabled, "enabled (Retry-After over)", true, now.Add(-time.Hour)},
		// It was "failing", counted as such by feed-stats and the metrics,
		// though the scheduler counts no failure.
		{"address refused", ndjson.Subscription{FeedID: "refused"}, refused, StateRefused, "refused: a private address", false,
			refused.NextFetchAt.Time},
		{"disabled by hand", ndjson.Subscription{FeedID: "by-hand", Disabled: true}, ok, StateDisabled, "disabled by hand", false, time.Time{}},
		{"paused by hand", ndjson.Subscription{FeedID: "paused", PausedUntil: ndjson.At(now.Add(5 * time.Hour))}, ok, StatePaused,
			"paused until 2026-11-21 17:00Z", false, now.Add(5 * time.Hour)},
		{"failing, from before the scheduler", ndjson.Subscription{FeedID: "old"}, catalog.FeedState{FeedID: "old", LastFetchAt: ndjson.At(now.Add(-time.Hour)),
			NextFetchAt: ndjson.At(now.Add(time.Hour)), ConsecutiveFailures: 2, LastError: &ndjson.Error{Code: "http_502"}}, StateFailing, "failing (2): http_502", false,
			now.Add(time.Hour)},
	}
}

func TestStatusOf(t *testing.T) {
	for _, tc := range statusCases() {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.sub
			s.CreatedAt = ndjson.At(now.Add(-48 * time.Hour))
			got := StatusOf(s, tc.fs, now)
			wantIv := 0
			if tc.interval {
				wantIv = tc.fs.Sched.IntervalSec
			}
			if got.State != tc.want || got.Text != tc.text || got.IntervalSec != wantIv || got.Listed != !tc.next.IsZero() || !got.Next.Equal(tc.next) {
				t.Errorf("got  %+v\nwant %s %q, interval %ds, next %s", got, tc.want, tc.text, wantIv, tc.next)
			}
		})
	}
}

// TestCommandsAgree: feed-stats's rows and the metrics say of each feed
// what StatusOf says (feed-sub ls and feed-due --explain print its Text:
// their tests). feed-stats worked its state out from the failures in a
// row alone, and the metrics counted feeds disabled by the scheduler as
// enabled.
func TestCommandsAgree(t *testing.T) {
	ctx := context.Background()
	st, cat := testenv.Store(t)
	cases := statusCases()
	var subs []ndjson.Subscription
	var states []catalog.FeedState
	counts := map[string]int{}
	for _, tc := range cases {
		s := tc.sub
		s.Header, s.URL, s.CreatedAt = ndjson.Head(ndjson.TypeSubscription), "https://example.org/"+s.FeedID, ndjson.At(now.Add(-48*time.Hour))
		s.FeedID = testids.Feed(s.FeedID) // the store takes ids of its own shape
		subs = append(subs, s)
		if tc.fs.FeedID != "" {
			fs := tc.fs
			fs.FeedID = s.FeedID
			states = append(states, fs)
		}
		counts[tc.want]++
	}
	cat.EditSubscriptions(ctx, func([]ndjson.Subscription) ([]ndjson.Subscription, error) { return subs, nil })
	if err := cat.Update(ctx, func(tx *catalog.Tx) error { return tx.PutStates(states...) }); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Run(Config{Out: &out, Store: st, Catalog: cat, Now: now, Format: NDJSON}); err != nil {
		t.Fatal(err)
	}
	rows := rowsOf(t, &out)
	for i, tc := range cases {
		fs, _, err := cat.State(ctx, subs[i].FeedID)
		if err != nil {
			t.Fatal(err)
		}
		r, want := rows[subs[i].FeedID], StatusOf(subs[i], fs, now)
		if r.State != tc.want || r.Status != want.Text || r.IntervalSec != want.IntervalSec || (want.Listed && !r.NextFetchAt.Equal(want.Next)) || (!want.Listed && !r.NextFetchAt.IsZero()) {
			t.Errorf("%s: feed-stats row state %q %q, interval %ds, next %s; want %+v", tc.name, r.State, r.Status, r.IntervalSec, r.NextFetchAt, want)
		}
	}
	tot, err := Compute(ctx, cat, now)
	if err != nil {
		t.Fatal(err)
	}
	var metrics bytes.Buffer
	if err := WriteMetrics(&metrics, tot, &Histogram{}); err != nil {
		t.Fatal(err)
	}
	enabled := len(cases) - counts[StateDisabled]
	for _, want := range []string{
		fmt.Sprintf("sources_total{state=\"enabled\"} %d\n", enabled),
		fmt.Sprintf("sources_total{state=\"failing\"} %d\n", counts[StateFailing]),
		fmt.Sprintf("sources_total{state=\"paused\"} %d\n", counts[StatePaused]),
		fmt.Sprintf("sources_total{state=\"disabled\"} %d\n", counts[StateDisabled]),
	} {
		if !bytes.Contains(metrics.Bytes(), []byte(want)) {
			t.Errorf("metrics lack %q:\n%s", want, metrics.String())
		}
	}
}
