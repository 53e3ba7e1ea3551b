package due

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/testenv"
	"github.com/feedpipe/feedpipe/internal/testids"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func sub(id string, disabled bool) ndjson.Subscription {
	return ndjson.Subscription{Header: ndjson.Head(ndjson.TypeSubscription), FeedID: testids.Feed(id), URL: "https://example.org/" + id, Name: id,
		Disabled: disabled, CreatedAt: ndjson.At(now.Add(-48 * time.Hour)), Labels: []string{"l"}}
}

func state(id string, lastFetch, lastSuccess, next time.Duration) catalog.FeedState {
	return catalog.FeedState{FeedID: testids.Feed(id), LastFetchAt: ndjson.At(now.Add(lastFetch)), LastSuccessAt: ndjson.At(now.Add(lastSuccess)),
		NextFetchAt: ndjson.At(now.Add(next)), Validators: ndjson.Validators{ETag: `"` + id + `"`}}
}

// fixture makes a store with these feeds:
//
//	new       never fetched
//	due       fetched 1h ago, next fetch 5m ago
//	later     fetched 10m ago, next fetch in 50m
//	stale     last success 20 days ago, due
//	off       disabled, never fetched
//	overdue   next fetch 3h ago
func fixture(t *testing.T) *storedir.Store {
	t.Helper()
	day := 24 * time.Hour
	return fill(t, []ndjson.Subscription{sub("new", false), sub("due", false), sub("later", false), sub("stale", false), sub("off", true), sub("overdue", false)},
		state("due", -time.Hour, -time.Hour, -5*time.Minute),
		state("later", -10*time.Minute, -10*time.Minute, 50*time.Minute),
		state("stale", -time.Hour, -20*day, -time.Minute),
		state("overdue", -4*time.Hour, -4*time.Hour, -3*time.Hour),
	)
}

// fill makes a store whose catalog has subs and states.
func fill(t *testing.T, subs []ndjson.Subscription, states ...catalog.FeedState) *storedir.Store {
	t.Helper()
	st, cat := testenv.Store(t)
	err := cat.EditSubscriptions(context.Background(), func([]ndjson.Subscription) ([]ndjson.Subscription, error) { return subs, nil })
	if err != nil {
		t.Fatal(err)
	}
	putStates(t, st, states...)
	return st
}

// putStates writes states in the store's catalog.
func putStates(t *testing.T, st *storedir.Store, states ...catalog.FeedState) {
	t.Helper()
	cat, err := catalog.Open(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	if err := cat.Update(context.Background(), func(tx *catalog.Tx) error { return tx.PutStates(states...) }); err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, cfg Config) ([]ndjson.Due, error) {
	t.Helper()
	var out bytes.Buffer
	cfg.Out = ndjson.NewWriter(&out)
	cfg.Now = now
	err := Run(cfg)
	var dues []ndjson.Due
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if line == "" {
			continue
		}
		var d ndjson.Due
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatal(err)
		}
		dues = append(dues, d)
	}
	return dues, err
}

func TestRun(t *testing.T) {
	st := fixture(t)
	for _, tc := range []struct {
		name  string
		cfg   Config
		want  string // feed:reason:item_limit, in output order
		error string
	}{
		{name: "due now, most overdue first", cfg: Config{}, want: "new:new:20 overdue:scheduled:0 due:scheduled:0 stale:scheduled:20"},
		{name: "all", cfg: Config{All: true}, want: "new:new:20 overdue:scheduled:0 due:scheduled:0 stale:scheduled:20 later:forced:0"},
		{name: "one feed by id", cfg: Config{Feeds: []string{testids.Feed("later")}}, want: "later:forced:0"},
		{name: "by URL, even disabled", cfg: Config{Feeds: []string{"https://example.org/off"}}, want: "off:forced:20"},
		{name: "unknown feed", cfg: Config{Feeds: []string{"nope"}}, error: "nothing matches"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Store = st
			dues, err := run(t, tc.cfg)
			if tc.error != "" {
				if err == nil || !strings.Contains(err.Error(), tc.error) || !errors.Is(err, catalog.ErrNoSuchSubscription) {
					t.Fatalf("err %v, want %q", err, tc.error)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range dues {
				got = append(got, testids.Name(d.FeedID)+":"+d.Reason+":"+strconv.Itoa(d.ItemLimit))
			}
			if strings.Join(got, " ") != tc.want {
				t.Fatalf("got  %s\nwant %s", strings.Join(got, " "), tc.want)
			}
		})
	}
}

func TestDueRecordFields(t *testing.T) {
	dues, err := run(t, Config{Store: fixture(t), Feeds: []string{testids.Feed("due"), testids.Feed("new")}})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]ndjson.Due{}
	for _, d := range dues {
		byID[testids.Name(d.FeedID)] = d
	}
	d := byID["due"]
	if d.Type != "due" || d.V != 1 || d.URL != "https://example.org/due" || d.Validators.ETag != `"due"` ||
		d.SourceType != "auto" || len(d.Labels) != 1 || !d.ScheduledAt.Equal(now) {
		t.Errorf("due record %+v", d)
	}
	if n := byID["new"]; n.Validators.ETag != "" || n.ItemLimit != 20 {
		t.Errorf("new feed record %+v", n)
	}
	// Without --feed, a scheduled record carries the time it fell due, so a
	// replay of the same record names the same scheduled run.
	dues, _ = run(t, Config{Store: fixture(t)})
	for _, d := range dues {
		if testids.Name(d.FeedID) == "due" && !d.ScheduledAt.Equal(now.Add(-5*time.Minute)) {
			t.Errorf("scheduled_at %s, want the next_fetch_at", d.ScheduledAt)
		}
		if testids.Name(d.FeedID) == "new" && !d.ScheduledAt.Equal(now.Add(-48*time.Hour)) {
			t.Errorf("new feed scheduled_at %s, want its creation", d.ScheduledAt)
		}
	}
}

func TestEmptyStore(t *testing.T) {
	st, _ := storedir.Open(t.TempDir())
	dues, err := run(t, Config{Store: st, All: true})
	if err != nil || len(dues) != 0 {
		t.Fatalf("%d records, %v", len(dues), err)
	}
}

// TestNoValidatorsAfterAParseFailure: a store written before feed-store
// kept only the validators of bodies read may hold those of a body that
// failed to parse; the next fetch must not send them, or a 304 would skip
// the body for good.
func TestNoValidatorsAfterAParseFailure(t *testing.T) {
	st := fixture(t)
	failed := state("due", -time.Hour, -2*time.Hour, -5*time.Minute)
	failed.LastError = &ndjson.Error{Class: ndjson.ClassParse, Code: "too_many_items", Message: "more than 10 items"}
	transient := state("stale", -time.Hour, -2*time.Hour, -5*time.Minute)
	transient.LastError = &ndjson.Error{Class: ndjson.ClassTransient, Code: "http_503", Message: "HTTP 503"}
	putStates(t, st, failed, transient)
	dues, err := run(t, Config{Store: st, Feeds: []string{testids.Feed("due"), testids.Feed("stale")}})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dues {
		want := map[string]string{"due": "", "stale": `"stale"`}[testids.Name(d.FeedID)]
		if d.Validators.ETag != want {
			t.Errorf("%s: ETag %q, want %q", testids.Name(d.FeedID), d.Validators.ETag, want)
		}
	}
}

// TestNothingDueSaysNext: with nothing due, a person at a terminal (Msg) is
// told which feed is due next and when, or why none will be.
func TestNothingDueSaysNext(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store *storedir.Store
		want  string
	}{
		{"the next", fill(t, []ndjson.Subscription{sub("later", false), sub("off", true), sub("soon", false)},
			state("later", -10*time.Minute, -10*time.Minute, 50*time.Minute), state("soon", -10*time.Minute, -10*time.Minute, 12*time.Minute)),
			"feed-due: nothing is due now; next: soon (https://example.org/soon), in 12m, at 2026-11-21T12:12:00Z\n"},
		{"all disabled", fill(t, []ndjson.Subscription{sub("off", true)}),
			"feed-due: nothing is due, and nothing will be: every subscription is disabled (feed-sub ls says why; feed-sub enable puts one back)\n"},
		{"none", fill(t, nil), "feed-due: nothing is due: there are no subscriptions (feed-sub add URL subscribes to a feed)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var msg bytes.Buffer
			dues, err := run(t, Config{Store: tc.store, Msg: &msg})
			if err != nil || len(dues) != 0 {
				t.Fatal(dues, err)
			}
			if msg.String() != tc.want {
				t.Errorf("said %q\nwant %q", msg.String(), tc.want)
			}
		})
	}
	// Something due: nothing said.
	var msg bytes.Buffer
	if dues, err := run(t, Config{Store: fixture(t), Msg: &msg}); err != nil || len(dues) == 0 || msg.Len() > 0 {
		t.Errorf("%d due, %v; said %q", len(dues), err, msg.String())
	}
}
