package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/dedup"
	"github.com/feedpipe/feedpipe/internal/fetch"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/parse"
	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/spool"
	"github.com/feedpipe/feedpipe/internal/store"
	"github.com/feedpipe/feedpipe/internal/sub"
	"github.com/feedpipe/feedpipe/internal/websub"
	"github.com/feedpipe/feedpipe/internal/websub/websubtest"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// clock is a time tests move.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// pushCycle runs feed-fetch on no due record (it hands on the spool) |
// feed-parse | feed-dedup | feed-store at now, and returns the events.
func (w *world) pushCycle(now time.Time) string {
	w.t.Helper()
	ctx := context.Background()
	var fetched, parsed, deduped, out bytes.Buffer
	err := fetch.Run(ctx, fetch.Config{In: strings.NewReader(""), Out: ndjson.NewWriter(&fetched), Store: w.st, Catalog: w.cat,
		Client: httpx.New(httpx.Options{AllowPrivate: true}), Clock: atClock{now}})
	if err != nil {
		w.t.Fatal(err)
	}
	if err := parse.Run(ctx, parse.Config{In: &fetched, Out: ndjson.NewWriter(&parsed), Store: w.st, Workers: 2}); err != nil && !errors.Is(err, pipe.ErrFailed) {
		w.t.Fatal(err)
	}
	if err := dedup.Run(ctx, dedup.Config{In: &parsed, Out: ndjson.NewWriter(&deduped), Store: w.st, Catalog: w.cat}); err != nil {
		w.t.Fatal(err)
	}
	if err := store.Run(ctx, store.Config{In: &deduped, Out: ndjson.NewWriter(&out), Store: w.st, Catalog: w.cat, Now: func() time.Time { return now }}); err != nil {
		w.t.Fatal(err)
	}
	return out.String()
}

// spooled is how many records the spool holds.
func (w *world) spooled() int {
	w.t.Helper()
	items, _, err := spool.Read(w.st)
	if err != nil {
		w.t.Fatal(err)
	}
	return len(items)
}

// hubbedFeed is an Atom feed naming hub and self, with an entry per title.
func hubbedFeed(hub, self string, titles ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom"><title>Hubbed</title><id>urn:hubbed</id>`+
		`<updated>2026-11-21T08:00:00Z</updated><link rel="hub" href="%s"/><link rel="self" href="%s"/>`, hub, self)
	for i, t := range titles {
		fmt.Fprintf(&b, `<entry><id>urn:hubbed:%s</id><title>%s</title><link href="https://hubbed.example/%s"/><updated>2026-11-2%dT08:00:00Z</updated></entry>`, t, t, t, i%9)
	}
	b.WriteString(`</feed>`)
	return b.String()
}

// pushOf is the feed's push as the API shows it.
func (w *world) pushOf(feedID string, now time.Time) *catalog.PushStatus {
	w.t.Helper()
	ps, err := w.cat.PushStatuses(context.Background(), now)
	if err != nil {
		w.t.Fatal(err)
	}
	return ps[feedID]
}

// TestWebSub runs a subscription through a spec-following hub
// (websubtest): subscribe and verify, distribute, a replayed
// distribution, a bad signature, a forged verification, a body over the
// cap, renewal, a denial, unsubscription, and a hub that dies.
func TestWebSub(t *testing.T) {
	hub := websubtest.New()
	defer hub.Close()
	clk := &clock{now: t0.Add(time.Hour)}
	w := newWorld(t, func(c *Config) { c.Now = clk.Now })
	self := w.feeds.URL + "/hubbed.xml"
	if err := os.WriteFile(filepath.Join(w.www, "hubbed.xml"), []byte(hubbedFeed(hub.URL, self, "one", "two")), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := sub.Config{Store: w.st, Catalog: w.cat, Out: io.Discard, Now: clk.Now}
	s, _, err := sub.Add(cfg, sub.Spec{URL: self})
	if err != nil {
		t.Fatal(err)
	}
	w.cycle(clk.Now())
	// The fixtures name hubs on the Internet: not theirs.
	off := ndjson.PushOff
	for _, id := range w.ids {
		if err := sub.Set(cfg, []string{id}, sub.Changes{Push: &off}); err != nil {
			t.Fatal(err)
		}
	}
	sync := func() sub.PushReport { t.Helper(); return w.pushSync(cfg, w.api.URL) }
	next := func(kind string) websubtest.Event {
		t.Helper()
		e, err := hub.Next(5 * time.Second)
		if err != nil || e.Kind != kind {
			t.Fatalf("hub event %+v, %v; want %s", e, err, kind)
		}
		return e
	}

	// Subscribe: the hub verifies our intent at the callback.
	if rep := sync(); rep.Subscribed != 1 {
		t.Fatalf("sync: %+v", rep)
	}
	ev := next("verified")
	callback := ev.Callback
	if !strings.HasPrefix(callback, w.api.URL+"/websub/") || ev.Topic != self {
		t.Fatalf("verified %+v", ev)
	}
	asked := hub.Asked()[0]
	if asked.Get("hub.secret") == "" || asked.Get("hub.lease_seconds") != "864000" {
		t.Errorf("asked %v", asked)
	}
	if p := w.pushOf(s.FeedID, clk.Now()); p == nil || !p.Live || p.Hub != hub.URL+"/" {
		t.Fatalf("push %+v", p)
	}
	if rep := sync(); rep != (sub.PushReport{}) {
		t.Errorf("a second sync did %+v", rep)
	}

	// A distribution reaches the store; the same body again is absorbed.
	body := []byte(hubbedFeed(hub.URL, self, "one", "two", "three"))
	if got := hub.Publish(self, "application/atom+xml", body); got[callback] != 202 {
		t.Fatalf("publish: %v", got)
	}
	events := w.pushCycle(clk.Now())
	if strings.Count(events, `"type":"new_entry"`) != 1 || !strings.Contains(events, `"title":"three"`) {
		t.Fatalf("after a push: %s", events)
	}
	if p := w.pushOf(s.FeedID, clk.Now()); p.Pushes != 1 || !p.LastPushAt.Equal(clk.Now()) {
		t.Errorf("push %+v", p)
	}
	if page := w.page("/web/feeds/"+s.FeedID, 200); !strings.Contains(page, "preferred: verified at") || !strings.Contains(page, "last push") {
		t.Errorf("the feed's page says nothing of its push:\n%s", page)
	}
	hub.Publish(self, "application/atom+xml", body)
	if events := w.pushCycle(clk.Now()); events != "" {
		t.Errorf("a replayed distribution stored: %s", events)
	}

	// A bad signature: answered 202, ignored, counted.
	r := w.do("POST", strings.TrimPrefix(callback, w.api.URL), string(body), "X-Hub-Signature", websub.Sign("sha256", body, []byte("not the secret")))
	if r.status != 202 || w.spooled() != 0 {
		t.Errorf("bad signature: %d, %d spooled", r.status, w.spooled())
	}
	r = w.do("POST", strings.TrimPrefix(callback, w.api.URL), string(body))
	if r.status != 202 || w.spooled() != 0 {
		t.Errorf("no signature: %d, %d spooled", r.status, w.spooled())
	}
	// Over the cap: 413; a callback we do not hold: 410.
	big := bytes.Repeat([]byte("x"), MaxPushBytes+1)
	if r := w.do("POST", strings.TrimPrefix(callback, w.api.URL), string(big)); r.status != 413 {
		t.Errorf("over the cap: %d", r.status)
	}
	if r := w.do("POST", "/websub/"+strings.Repeat("0", 32), string(body)); r.status != 410 {
		t.Errorf("unknown callback: %d", r.status)
	}
	// A forged verification: a topic we never asked for, a mode we did
	// not ask, a callback we do not have: 404.
	path := strings.TrimPrefix(callback, w.api.URL)
	for _, q := range []url.Values{
		{"hub.mode": {"subscribe"}, "hub.topic": {"https://evil.example/feed"}, "hub.challenge": {"forged-challenge-1"}, "hub.lease_seconds": {"100"}},
		{"hub.mode": {"unsubscribe"}, "hub.topic": {self}, "hub.challenge": {"forged-challenge-2"}},
		{"hub.mode": {"denied"}, "hub.topic": {"https://evil.example/feed"}},
	} {
		if r := w.get(path + "?" + q.Encode()); r.status != 404 || q.Get("hub.challenge") != "" && strings.Contains(string(r.body), q.Get("hub.challenge")) {
			t.Errorf("forged %v: %d %s", q, r.status, r.body)
		}
	}
	if r := w.get("/websub/" + strings.Repeat("1", 32) + "?hub.mode=subscribe&hub.topic=" + url.QueryEscape(self) + "&hub.challenge=c"); r.status != 404 {
		t.Errorf("a callback never made: %d", r.status)
	}
	if p := w.pushOf(s.FeedID, clk.Now()); !p.Live {
		t.Errorf("a forged denial ended the push: %+v", p)
	}
	m := string(w.get("/metrics").body)
	for _, line := range []string{`feedpipe_push_bodies_total{origin="websub",result="accepted"} 2`, `feedpipe_push_bodies_total{origin="websub",result="bad_signature"} 2`,
		`feedpipe_push_bodies_total{origin="websub",result="too_large"} 1`, `feedpipe_push_bodies_total{origin="websub",result="unknown"} 1`,
		`feedpipe_websub_verifications_total{mode="subscribe",result="refused"} 2`, `feedpipe_websub_verifications_total{mode="subscribe",result="confirmed"} 1`} {
		if !strings.Contains(m, line) {
			t.Errorf("/metrics lacks %s", line)
		}
	}

	// Renewed a tenth of the lease before it ends.
	lease := w.pushOf(s.FeedID, clk.Now()).LeaseEnd.Time
	clk.set(lease.Add(-12 * time.Hour))
	if rep := sync(); rep.Renewed != 1 {
		t.Fatalf("renewal: %+v", rep)
	}
	next("verified")
	if p := w.pushOf(s.FeedID, clk.Now()); !p.LeaseEnd.After(lease) {
		t.Errorf("lease not renewed: %v, was %v", p.LeaseEnd, lease)
	}

	// Denied by the hub: recorded, not live; asked again a day later.
	if status := hub.Deny(self, callback, "over quota"); status != 200 {
		t.Errorf("denial answered %d", status)
	}
	next("denied")
	if p := w.pushOf(s.FeedID, clk.Now()); p.Live || p.State != catalog.WebSubDenied || p.Reason != "over quota" {
		t.Errorf("after the denial: %+v", p)
	}
	if rep := sync(); rep != (sub.PushReport{}) {
		t.Errorf("asked again at once: %+v", rep)
	}
	clk.set(clk.Now().Add(25 * time.Hour))
	if rep := sync(); rep.Retried != 1 {
		t.Errorf("asked again a day later: %+v", rep)
	}
	next("verified")

	// Push off: unsubscribed; the hub verifies it, the row goes, and a
	// distribution to the old callback gets 410.
	if err := sub.Set(cfg, []string{s.FeedID}, sub.Changes{Push: &off}); err != nil {
		t.Fatal(err)
	}
	if rep := sync(); rep.Unsubscribed != 1 {
		t.Fatalf("unsubscribe: %+v", rep)
	}
	next("unsubscribed")
	if rows, _ := w.cat.WebSubs(context.Background()); len(rows) != 0 || len(hub.Subs(self)) != 0 {
		t.Errorf("left: %+v, at the hub %+v", rows, hub.Subs(self))
	}
	if r := w.do("POST", path, string(body)); r.status != 410 {
		t.Errorf("a distribution after unsubscription: %d", r.status)
	}

	// A hub that dies: the renewal fails, the lease lapses, and the push
	// no longer lives (feed-due then polls at the interval: TestPushHoldsPolls).
	pref := ndjson.PushPreferred
	if err := sub.Set(cfg, []string{s.FeedID}, sub.Changes{Push: &pref}); err != nil {
		t.Fatal(err)
	}
	sync()
	next("verified")
	hub.Close()
	end := w.pushOf(s.FeedID, clk.Now()).LeaseEnd.Time
	clk.set(end.Add(-time.Hour))
	if rep := sync(); rep.Failed != 1 {
		t.Errorf("renewal at a dead hub: %+v", rep)
	}
	if p := w.pushOf(s.FeedID, clk.Now()); !p.Live || p.Reason == "" {
		t.Errorf("a failed renewal, lease running: %+v", p)
	}
	if p := w.pushOf(s.FeedID, end.Add(time.Minute)); p.Live {
		t.Errorf("live after its lease: %+v", p)
	}
}

// TestWebhook: a webhook source takes RSS, Atom, JSON Feed and NDJSON
// entries signed with its secret; a wrong secret, a body over the cap, a
// type it does not take, a disabled or unknown source store nothing.
func TestWebhook(t *testing.T) {
	clk := &clock{now: t0.Add(time.Hour)}
	w := newWorld(t, func(c *Config) { c.Now = clk.Now })
	var msg bytes.Buffer
	cfg := sub.Config{Store: w.st, Catalog: w.cat, Out: io.Discard, Msg: &msg, Now: clk.Now}
	s, _, err := sub.Add(cfg, sub.Spec{URL: "ci", Type: "webhook", Labels: []string{"builds"}})
	if err != nil {
		t.Fatal(err)
	}
	if s.URL != "webhook:ci" || len(s.WebhookSecret) != 64 || !strings.Contains(msg.String(), s.WebhookSecret) {
		t.Fatalf("webhook source %+v; said %s", s, msg.String())
	}
	path := "/webhooks/" + s.FeedID
	post := func(typ, body, secret string) reply {
		t.Helper()
		return w.do("POST", path, body, "Content-Type", typ, "X-Hub-Signature-256", websub.Sign("sha256", []byte(body), []byte(secret)))
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "feeds", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tc := range []struct{ typ, body, title string }{
		{"application/rss+xml", read("TechCrunch.xml"), "Facebook"},
		{"application/atom+xml", read("youtube_atom.xml"), ""},
		{"application/feed+json", read("json_feed.json"), ""},
		{"application/x-ndjson", `{"type":"entry","native_id":"b1","title":"build 1 passed","canonical_link":"https://ci.example/1"}` + "\n" +
			`{"type":"entry","native_id":"b2","title":"build 2 failed"}` + "\n", "build 2 failed"},
	} {
		if r := post(tc.typ, tc.body, s.WebhookSecret); r.status != 202 || !strings.Contains(string(r.body), `"fetch_id"`) {
			t.Fatalf("%s: %d %s", tc.typ, r.status, r.body)
		}
		events := w.pushCycle(clk.Now())
		if !strings.Contains(events, `"type":"new_entry"`) || !strings.Contains(events, tc.title) || !strings.Contains(events, `"labels":["builds"]`) {
			t.Errorf("%s: events %.300s", tc.typ, events)
		}
	}
	for _, tc := range []struct {
		name       string
		status     int
		typ, body  string
		secret     string
		sigHeader  string
		setup      func()
		pathSuffix string
	}{
		{name: "wrong secret", status: 401, typ: "application/rss+xml", body: "<rss/>", secret: "nope"},
		{name: "sha1 is not enough", status: 401, typ: "application/rss+xml", body: "<rss/>", sigHeader: "sha1"},
		{name: "wrong type", status: 415, typ: "text/html", body: "<html/>", secret: s.WebhookSecret},
		{name: "over the cap", status: 413, typ: "application/rss+xml", body: strings.Repeat("x", MaxPushBytes+1), secret: s.WebhookSecret},
		{name: "unknown source", status: 404, typ: "application/rss+xml", body: "<rss/>", secret: s.WebhookSecret, pathSuffix: "x"},
		{name: "disabled", status: 403, typ: "application/rss+xml", body: "<rss/>", secret: s.WebhookSecret, setup: func() {
			if err := sub.SetDisabled(cfg, []string{s.FeedID}, true); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		if tc.setup != nil {
			tc.setup()
		}
		sig := websub.Sign("sha256", []byte(tc.body), []byte(tc.secret))
		if tc.sigHeader == "sha1" {
			sig = websub.Sign("sha1", []byte(tc.body), []byte(s.WebhookSecret))
		}
		p := path
		if tc.pathSuffix != "" {
			p = "/webhooks/" + strings.Repeat("0", 8) + "-0000-5000-8000-000000000000"
		}
		r := w.do("POST", p, tc.body, "Content-Type", tc.typ, "X-Hub-Signature-256", sig)
		r.problem(t, tc.status)
		if w.spooled() != 0 {
			t.Errorf("%s: spooled", tc.name)
		}
	}
	// A feed's walk shows on its page too.
	tc := w.ids["TechCrunch.xml"]
	if err := w.cat.Update(context.Background(), func(tx *catalog.Tx) error {
		return tx.SetArchiveHead(tc, "https://techcrunch.example/archive/1", catalog.WalkArchive)
	}); err != nil {
		t.Fatal(err)
	}
	if r := w.write("POST", "/feeds/"+tc+"/backfill", ""); r.status != 200 || !strings.Contains(string(r.body), `"walk":{"state":"asked"`) {
		t.Errorf("POST /feeds/ID/backfill: %d %s", r.status, r.body)
	}
	if page := w.page("/web/feeds/"+tc, 200); !strings.Contains(page, "<dt>backfill</dt><dd>asked") {
		t.Errorf("the feed's page says nothing of its walk")
	}
	if page := w.page("/web/feeds/"+s.FeedID, 200); !strings.Contains(page, "a webhook source: POSTed to "+path) || strings.Contains(page, s.WebhookSecret) {
		t.Errorf("the source's page:\n%s", page)
	}
	// The API shows the source with its endpoint, its secret redacted.
	var f FeedOut
	w.get("/feeds/"+s.FeedID).json(t, &f)
	if f.PushState == nil || f.PushState.Endpoint != path || f.PushState.Pushes != 4 || f.WebhookSecret != "(redacted)" {
		t.Errorf("GET /feeds/ID: %+v", f.PushState)
	}
}

// TestWebSubHubMoves: a feed that names another hub, or another topic,
// is unsubscribed at the old and subscribed at the new; a changed public
// URL subscribes anew too.
func TestWebSubHubMoves(t *testing.T) {
	a, b := websubtest.New(), websubtest.New()
	defer a.Close()
	defer b.Close()
	clk := &clock{now: t0.Add(time.Hour)}
	w := newWorld(t, func(c *Config) { c.Now = clk.Now })
	cfg := sub.Config{Store: w.st, Catalog: w.cat, Out: io.Discard, Now: clk.Now}
	off := ndjson.PushOff
	for _, id := range w.ids {
		if err := sub.Set(cfg, []string{id}, sub.Changes{Push: &off}); err != nil {
			t.Fatal(err)
		}
	}
	self := w.feeds.URL + "/moving.xml"
	serveFeed := func(hub string) {
		if err := os.WriteFile(filepath.Join(w.www, "moving.xml"), []byte(hubbedFeed(hub, self, "one")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	serveFeed(a.URL)
	if _, _, err := sub.Add(cfg, sub.Spec{URL: self}); err != nil {
		t.Fatal(err)
	}
	w.cycle(clk.Now())
	public := w.api.URL
	sync := func() sub.PushReport { t.Helper(); return w.pushSync(cfg, public) }
	expect := func(h *websubtest.Hub, kind string) {
		t.Helper()
		if e, err := h.Next(5 * time.Second); err != nil || e.Kind != kind {
			t.Fatalf("hub event %+v, %v; want %s", e, err, kind)
		}
	}
	sync()
	expect(a, "verified")
	// The feed names hub b now: unsubscribed at a, subscribed at b.
	serveFeed(b.URL)
	clk.set(clk.Now().Add(2 * time.Hour))
	w.cycle(clk.Now())
	if rep := sync(); rep.Unsubscribed != 1 || rep.Subscribed != 1 {
		t.Fatalf("after the move: %+v", rep)
	}
	expect(a, "unsubscribed")
	expect(b, "verified")
	if len(a.Subs(self)) != 0 || len(b.Subs(self)) != 1 {
		t.Errorf("subscriptions at a %v, at b %v", a.Subs(self), b.Subs(self))
	}
	// A public URL of another name: subscribed anew under it.
	public = strings.Replace(w.api.URL, "127.0.0.1", "localhost", 1)
	if rep := sync(); rep.Unsubscribed != 1 || rep.Subscribed != 1 {
		t.Fatalf("after the public URL changed: %+v", rep)
	}
	var kinds []string // the two verifications come in either order
	for range 2 {
		e, err := b.Next(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, e.Kind)
	}
	if slices.Sort(kinds); strings.Join(kinds, " ") != "unsubscribed verified" {
		t.Errorf("hub b: %v", kinds)
	}
	if subs := b.Subs(self); len(subs) != 1 || !strings.HasPrefix(subs[0].Callback, public+"/websub/") {
		t.Errorf("at b: %+v", subs)
	}
}

// pushSync runs feed-sub push sync with the public URL publicURL (the
// world's feed-serve), failing the test on an error.
func (w *world) pushSync(cfg sub.Config, publicURL string) sub.PushReport {
	w.t.Helper()
	opts := sub.PushOptions{PublicURL: publicURL, Client: httpx.New(httpx.Options{AllowPrivate: true})}
	rep, err := sub.PushSync(context.Background(), cfg, opts)
	if err != nil {
		w.t.Fatal(err)
	}
	return rep
}
