package due

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/testids"
	"github.com/feedpipe/feedpipe/internal/websub"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// withCatalog runs fn on the store's catalog.
func withCatalog(t *testing.T, st *storedir.Store, fn func(*catalog.Catalog) error) {
	t.Helper()
	cat, err := catalog.Open(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	if err := fn(cat); err != nil {
		t.Fatal(err)
	}
}

// verified gives feed a verified WebSub subscription whose lease runs
// until leaseEnd.
func verified(t *testing.T, st *storedir.Store, feed string, leaseEnd time.Time) {
	t.Helper()
	withCatalog(t, st, func(cat *catalog.Catalog) error {
		return cat.PutWebSub(context.Background(), catalog.WebSub{CallbackID: strings.ReplaceAll(feed, "-", ""), Callback: "https://x/websub/a", FeedID: feed,
			Hub: "https://hub.example/", Topic: "https://example.org/t", Secret: "s", Mode: websub.ModeSubscribe, State: catalog.WebSubVerified,
			AskedAt: now.Add(-time.Hour), VerifiedAt: now.Add(-time.Hour), LeaseSec: 864000, LeaseEnd: leaseEnd})
	})
}

func dueIDs(t *testing.T, cfg Config) string {
	t.Helper()
	dues, err := run(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range dues {
		for _, name := range []string{"pushed", "polled", "only", "lapsed", "missed", "hook"} {
			if d.FeedID == testids.Feed(name) {
				ids = append(ids, name+":"+d.Reason)
			}
		}
	}
	slices.Sort(ids)
	return strings.Join(ids, " ")
}

// TestPushHoldsPolls: while a feed's push lives it is polled once a day
// (none with push only); a lapsed lease and a poll that found what the
// pushes missed put it back on its interval; a webhook source is never
// due; a refetch is not held.
func TestPushHoldsPolls(t *testing.T) {
	only := sub("only", false)
	only.Push = ndjson.PushOnly
	hook := sub("hook", false)
	hook.SourceType, hook.URL = ndjson.SourceWebhook, "webhook:hook"
	st := fill(t, []ndjson.Subscription{sub("pushed", false), sub("polled", false), only, sub("lapsed", false), sub("missed", false), hook},
		state("pushed", -2*time.Hour, -2*time.Hour, -time.Minute),
		state("polled", -25*time.Hour, -25*time.Hour, -time.Minute), // its daily safety poll
		state("only", -25*time.Hour, -25*time.Hour, -time.Minute),
		state("lapsed", -2*time.Hour, -2*time.Hour, -time.Minute),
		state("missed", -2*time.Hour, -2*time.Hour, -time.Minute),
	)
	for _, name := range []string{"pushed", "polled", "only", "missed"} {
		verified(t, st, testids.Feed(name), now.Add(5*24*time.Hour))
	}
	verified(t, st, testids.Feed("lapsed"), now.Add(-time.Minute))
	withCatalog(t, st, func(cat *catalog.Catalog) error {
		if err := cat.Pushed(context.Background(), testids.Feed("missed"), now.Add(-3*time.Hour)); err != nil {
			return err
		}
		return cat.Update(context.Background(), func(tx *catalog.Tx) error { return tx.MissedPush(testids.Feed("missed"), now.Add(-2*time.Hour)) })
	})
	if got, want := dueIDs(t, Config{Store: st}), "lapsed:scheduled missed:scheduled polled:scheduled"; got != want {
		t.Errorf("due %q, want %q", got, want)
	}
	// A push after the miss: held again.
	withCatalog(t, st, func(cat *catalog.Catalog) error {
		return cat.Pushed(context.Background(), testids.Feed("missed"), now.Add(-time.Minute))
	})
	if got, want := dueIDs(t, Config{Store: st}), "lapsed:scheduled polled:scheduled"; got != want {
		t.Errorf("after a push: due %q, want %q", got, want)
	}
	// --all and --feed are not held; a webhook source is never due.
	if got := dueIDs(t, Config{Store: st, All: true}); !strings.Contains(got, "pushed:scheduled") || strings.Contains(got, "hook") {
		t.Errorf("--all: %q", got)
	}
	if _, err := run(t, Config{Store: st, Feeds: []string{"webhook:hook"}}); err != nil {
		t.Fatal(err)
	}
	if got := dueIDs(t, Config{Store: st, Feeds: []string{"webhook:hook"}}); got != "" {
		t.Errorf("a webhook source by name: %q", got)
	}
}

// TestArchiveDue: a walk's next page is due after the feeds' fetches, one
// a run, 20 a day at most, and none while the feed backs off or is paused.
func TestArchiveDue(t *testing.T) {
	bf := sub("walked", false)
	bf.Backfill = true
	st := fill(t, []ndjson.Subscription{bf, sub("unasked", false), sub("due", false)},
		state("walked", -10*time.Minute, -10*time.Minute, time.Hour),
		state("unasked", -10*time.Minute, -10*time.Minute, time.Hour),
		state("due", -time.Hour, -time.Hour, -time.Minute))
	withCatalog(t, st, func(cat *catalog.Catalog) error {
		return cat.Update(context.Background(), func(tx *catalog.Tx) error {
			if err := tx.SetArchiveHead(testids.Feed("walked"), "https://example.org/archive/9", catalog.WalkArchive); err != nil {
				return err
			}
			return tx.SetArchiveHead(testids.Feed("unasked"), "https://example.org/u/archive/9", catalog.WalkArchive)
		})
	})
	dues, err := run(t, Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if len(dues) != 2 || dues[0].FeedID != testids.Feed("due") || dues[1].Reason != ndjson.ReasonArchive || dues[1].URL != "https://example.org/archive/9" ||
		dues[1].FeedID != testids.Feed("walked") || !dues[1].ScheduledAt.IsZero() {
		t.Fatalf("dues %+v", dues)
	}
	// The feed asked for by hand walks too.
	withCatalog(t, st, func(cat *catalog.Catalog) error {
		_, err := cat.AskWalk(context.Background(), testids.Feed("unasked"))
		return err
	})
	if dues, _ := run(t, Config{Store: st}); len(dues) != 3 {
		t.Errorf("after AskWalk: %d dues", len(dues))
	}
	// 20 pages claimed today: none more.
	withCatalog(t, st, func(cat *catalog.Catalog) error {
		var claims []catalog.ArchiveClaim
		for i := range catalog.MaxArchivePagesPerDay {
			claims = append(claims, catalog.ArchiveClaim{FeedID: testids.Feed("walked"), URL: "https://example.org/other/" + string(rune('a'+i))})
		}
		_, err := cat.ClaimArchivePages(context.Background(), claims, now.Add(-time.Hour))
		return err
	})
	for _, d := range mustRun(t, Config{Store: st}) {
		if d.FeedID == testids.Feed("walked") {
			t.Errorf("a 21st page today: %+v", d)
		}
	}
	// Backing off: none.
	backoff := state("unasked", -10*time.Minute, -20*time.Minute, time.Hour)
	backoff.Sched = schedIn("backoff")
	putStates(t, st, backoff)
	for _, d := range mustRun(t, Config{Store: st}) {
		if d.FeedID == testids.Feed("unasked") {
			t.Errorf("a page of a feed that backs off: %+v", d)
		}
	}
}

func mustRun(t *testing.T, cfg Config) []ndjson.Due {
	t.Helper()
	dues, err := run(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dues
}

// schedIn is a scheduler state in lifecycle l.
func schedIn(l string) *sched.State {
	return &sched.State{Lifecycle: sched.Lifecycle(l)}
}
