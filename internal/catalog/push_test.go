package catalog

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/testids"
	"github.com/feedpipe/feedpipe/internal/websub"
)

// TestWebSubVerification: a hub's verification of intent is confirmed
// only for a subscription we asked for, of that topic and mode (W3C WebSub
// §5.3); a verified one is live for its lease; a denial ends it (§5.2);
// an unsubscription verified is gone.
func TestWebSubVerification(t *testing.T) {
	c := openTemp(t)
	feed := testids.Feed("a")
	t0 := time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)
	w := WebSub{CallbackID: "cb1", Callback: "https://feeds.example/websub/cb1", FeedID: feed, Hub: "https://hub.example/", Topic: "https://a.example/feed", Secret: "s",
		Mode: websub.ModeSubscribe, State: WebSubRequested, AskedAt: t0}
	if err := c.PutWebSub(ctx, w); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ id, mode, topic string }{
		{"cb2", websub.ModeSubscribe, w.Topic},                  // no such callback
		{"cb1", websub.ModeSubscribe, "https://evil.example/x"}, // a topic never asked for
		{"cb1", websub.ModeUnsubscribe, w.Topic},                // a mode never asked for
	} {
		if got, err := c.VerifyWebSub(ctx, tt.id, tt.mode, tt.topic, time.Hour, t0); err != nil || got != VerifyUnknown {
			t.Errorf("VerifyWebSub(%v) = %v, %v; want VerifyUnknown", tt, got, err)
		}
	}
	if got, err := c.VerifyWebSub(ctx, "cb1", websub.ModeSubscribe, w.Topic, 10*24*time.Hour, t0); err != nil || got != VerifySubscribed {
		t.Fatalf("VerifyWebSub = %v, %v", got, err)
	}
	ps, err := c.PushStatuses(ctx, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if p := ps[feed]; p == nil || !p.Live || p.State != WebSubVerified || !p.LeaseEnd.Equal(t0.Add(10*24*time.Hour)) {
		t.Fatalf("after verification: %+v", p)
	}
	if ps, _ := c.PushStatuses(ctx, t0.Add(11*24*time.Hour)); ps[feed].Live {
		t.Error("live after its lease ended")
	}

	// A poll that finds what pushes did not bring ends the live push until
	// the next push.
	if err := c.Update(ctx, func(tx *Tx) error { return tx.MissedPush(feed, t0.Add(2*time.Hour)) }); err != nil {
		t.Fatal(err)
	}
	if ps, _ := c.PushStatuses(ctx, t0.Add(3*time.Hour)); ps[feed].Live || !ps[feed].Missed() {
		t.Errorf("after a miss: %+v", ps[feed])
	}
	if err := c.Pushed(ctx, feed, t0.Add(4*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if ps, _ := c.PushStatuses(ctx, t0.Add(5*time.Hour)); !ps[feed].Live || ps[feed].Pushes != 1 {
		t.Errorf("after a push: %+v", ps[feed])
	}

	// Denied: recorded, not live; a denial of a topic never asked is not.
	if ok, err := c.DenyWebSub(ctx, "cb1", "https://other.example/", "no", t0); err != nil || ok {
		t.Errorf("DenyWebSub of another topic = %v, %v", ok, err)
	}
	if ok, err := c.DenyWebSub(ctx, "cb1", w.Topic, "over quota", t0.Add(6*time.Hour)); err != nil || !ok {
		t.Fatalf("DenyWebSub = %v, %v", ok, err)
	}
	if ps, _ := c.PushStatuses(ctx, t0.Add(7*time.Hour)); ps[feed].Live || ps[feed].State != WebSubDenied || ps[feed].Reason != "over quota" {
		t.Errorf("after a denial: %+v", ps[feed])
	}

	// An unsubscription, verified, removes its row.
	w.Mode = websub.ModeUnsubscribe
	if err := c.PutWebSub(ctx, w); err != nil {
		t.Fatal(err)
	}
	if got, err := c.VerifyWebSub(ctx, "cb1", websub.ModeUnsubscribe, w.Topic, 0, t0); err != nil || got != VerifyUnsubscribed {
		t.Fatalf("VerifyWebSub(unsubscribe) = %v, %v", got, err)
	}
	if all, _ := c.WebSubs(ctx); len(all) != 0 {
		t.Errorf("rows left: %+v", all)
	}
}

// readPage is ReadArchivePage in a transaction of its own.
func readPage(t *testing.T, c *Catalog, p ArchivePage) (Walk, error) {
	t.Helper()
	var w Walk
	err := c.Update(ctx, func(tx *Tx) error {
		var err error
		w, err = tx.ReadArchivePage(p)
		return err
	})
	return w, err
}

// TestArchiveWalk walks chains of archive pages: to their end, into a
// loop, over a broken link (resumed by hand), and up to pages an earlier
// walk read; a page read twice is read once.
func TestArchiveWalk(t *testing.T) {
	c := openTemp(t)
	feed := testids.Feed("a")
	t0 := time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)
	page := func(n int) string { return fmt.Sprintf("https://a.example/archive/%d", n) }
	setHead := func(n int) {
		t.Helper()
		if err := c.Update(ctx, func(tx *Tx) error { return tx.SetArchiveHead(feed, page(n), WalkArchive) }); err != nil {
			t.Fatal(err)
		}
	}
	walk := func() *Walk {
		t.Helper()
		ws, err := c.Walks(ctx, t0.Truncate(24*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		return ws[feed]
	}
	setHead(3)
	if w := walk(); w.Next(false) != "" || w.Next(true) != page(3) {
		t.Fatalf("before a walk: next %q (not wanted), %q (wanted)", w.Next(false), w.Next(true))
	}
	// 3 -> 2 -> 1, the end.
	for n := 3; n >= 1; n-- {
		prev := ""
		if n > 1 {
			prev = page(n - 1)
		}
		w, err := readPage(t, c, ArchivePage{FeedID: feed, URL: page(n), FetchID: "f", At: t0, PrevArchive: prev, Entries: 2})
		if err != nil {
			t.Fatal(err)
		}
		if n > 1 && (w.State != WalkWalking || w.NextURL != page(n-1)) {
			t.Fatalf("after page %d: %+v", n, w)
		}
	}
	if w := walk(); w.State != WalkDone || w.Pages != 3 || w.Entries != 6 || w.Reason != "end: the oldest page reached" || w.Next(true) != "" {
		t.Fatalf("after the chain: %+v", w)
	}
	// Read again (a replay): nothing changes.
	if _, err := readPage(t, c, ArchivePage{FeedID: feed, URL: page(2), At: t0}); !errors.Is(err, ErrPageRead) {
		t.Errorf("a page read twice: %v", err)
	}
	// A new archive page appears (the publisher archived again): the walk
	// reads it and stops at the pages read before.
	setHead(4)
	if w := walk(); w.Next(true) != page(4) {
		t.Fatalf("a new head: next %q", w.Next(true))
	}
	if w, err := readPage(t, c, ArchivePage{FeedID: feed, URL: page(4), At: t0.Add(time.Hour), PrevArchive: page(3)}); err != nil || w.State != WalkDone || w.Reason != "caught up: "+page(3)+" was read before" {
		t.Fatalf("caught up: %+v, %v", w, err)
	}

	// A loop: 10 -> 11 -> 10.
	feed2 := testids.Feed("b")
	if err := c.Update(ctx, func(tx *Tx) error { return tx.SetArchiveHead(feed2, page(10), WalkArchive) }); err != nil {
		t.Fatal(err)
	}
	readPage(t, c, ArchivePage{FeedID: feed2, URL: page(10), At: t0, PrevArchive: page(11)})
	if w, _ := readPage(t, c, ArchivePage{FeedID: feed2, URL: page(11), At: t0, PrevArchive: page(10)}); w.State != WalkStopped || w.Reason != "loop: "+page(11)+" links back to "+page(10) {
		t.Errorf("a loop: %+v", w)
	}

	// A broken link mid-chain stops the walk; asked again, it resumes at
	// that page.
	feed3 := testids.Feed("c")
	if err := c.Update(ctx, func(tx *Tx) error { return tx.SetArchiveHead(feed3, page(20), WalkArchive) }); err != nil {
		t.Fatal(err)
	}
	readPage(t, c, ArchivePage{FeedID: feed3, URL: page(20), At: t0, PrevArchive: page(19)})
	if w, _ := readPage(t, c, ArchivePage{FeedID: feed3, URL: page(19), At: t0, Failed: "http_404"}); w.State != WalkStopped || w.NextURL != page(19) {
		t.Fatalf("a broken link: %+v", w)
	}
	ws, _ := c.Walks(ctx, t0)
	if ws[feed3].Next(true) != "" {
		t.Errorf("a stopped walk goes on by itself: %+v", ws[feed3])
	}
	if ok, err := c.AskWalk(ctx, feed3); !ok || err != nil {
		t.Fatalf("AskWalk = %v, %v", ok, err)
	}
	ws, _ = c.Walks(ctx, t0)
	if ws[feed3].Next(false) != page(19) {
		t.Fatalf("asked again: next %q", ws[feed3].Next(false))
	}
	if w, err := readPage(t, c, ArchivePage{FeedID: feed3, URL: page(19), At: t0.Add(time.Hour)}); err != nil || w.State != WalkDone || w.Pages != 2 {
		t.Errorf("resumed: %+v, %v", w, err)
	}
}

// TestClaimArchivePages: a page is fetched once, whoever asks: claimed,
// busy for another, its record passed on once fetched, never again once
// read; a dead pipeline's claim is taken over.
func TestClaimArchivePages(t *testing.T) {
	c := openTemp(t)
	feed := testids.Feed("a")
	t0 := time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)
	p := ArchiveClaim{FeedID: feed, URL: "https://a.example/archive/1"}
	claim := func(at time.Time) Claim {
		t.Helper()
		res, err := c.ClaimArchivePages(ctx, []ArchiveClaim{p}, at)
		if err != nil {
			t.Fatal(err)
		}
		return res[0].Claim
	}
	if got := claim(t0); got != ClaimFetch {
		t.Fatalf("first claim: %v", got)
	}
	if got := claim(t0.Add(time.Minute)); got != ClaimBusy {
		t.Errorf("claimed again at once: %v", got)
	}
	if got := claim(t0.Add(ClaimStale + time.Minute)); got != ClaimFetch {
		t.Errorf("a stale claim: %v", got)
	}
	if err := c.Update(ctx, func(tx *Tx) error {
		_, err := tx.ReadArchivePage(ArchivePage{FeedID: feed, URL: p.URL, At: t0})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got := claim(t0.Add(time.Hour)); got != ClaimStored {
		t.Errorf("a page read: %v", got)
	}
	var n int
	if err := c.readRow(ctx, once, `SELECT count(*) FROM archive_pages WHERE claimed_at >= ?`, unixMS(t0.Truncate(24*time.Hour))).Scan(&n); err != nil || n != 1 {
		t.Errorf("pages claimed today: %d, %v", n, err)
	}
}
