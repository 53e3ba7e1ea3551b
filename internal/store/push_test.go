package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/fetch"
	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/ids"
	"github.com/feedpipe/feedpipe/internal/parse"
	"github.com/feedpipe/feedpipe/internal/spool"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/websub"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// spoolPush spools a pushed body of the feed at at, as feed-serve does.
func spoolPush(t *testing.T, st *storedir.Store, feedID, url, body string, at time.Time) ndjson.Fetch {
	t.Helper()
	id, err := ids.FetchID(at, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	key, sum, err := st.PutRaw(at, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	f := ndjson.Fetch{Header: ndjson.Head(ndjson.TypeFetch), FetchID: id, Origin: ndjson.OriginWebSub,
		Due:          ndjson.Due{Header: ndjson.Head(ndjson.TypeDue), FeedID: feedID, URL: url, Labels: []string{}, Reason: ndjson.ReasonPush},
		RequestedURL: url, URL: url, Redirects: []ndjson.Redirect{}, FetchedAt: ndjson.At(at), HTTPStatus: 200,
		RequestHeaders: map[string]string{}, ResponseHeaders: map[string]string{}, BodyRef: &ndjson.BlobRef{Storage: storedir.RawStorage, Key: key},
		BodySHA256: sum, ContentType: "application/atom+xml", ContentLength: int64(len(body))}
	if err := spool.Put(st, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// drain runs feed-fetch on no due record: it hands the spool on.
func (w *world) drain(now time.Time) string {
	w.t.Helper()
	var out bytes.Buffer
	if err := fetch.Run(context.Background(), fetch.Config{In: strings.NewReader(""), Out: ndjson.NewWriter(&out), Store: w.st,
		Client: httpx.New(httpx.Options{AllowPrivate: true}), Clock: atClock{now}}); err != nil {
		w.t.Fatal(err)
	}
	return out.String()
}

func stateOf(t *testing.T, st *storedir.Store, feedID string) catalog.FeedState {
	t.Helper()
	cat, err := catalog.Open(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	fs, _, err := cat.State(context.Background(), feedID)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// TestPushIsNoPoll: a pushed body's entries are stored as news, and the
// feed's schedule is as the last poll left it; a spooled record handed on
// twice (a feed-fetch stopped between the append and the removal of its
// file) is appended once and stored once.
func TestPushIsNoPoll(t *testing.T) {
	w := newWorld(t)
	w.serve("feed.xml", archiveDoc(1, "", ""))
	id := w.subscribe("/feed.xml")
	w.cycle(t0)
	before := stateOf(t, w.st, id)
	at := t0.Add(10 * time.Minute)
	body := strings.Replace(archiveDoc(1, "", ""), "</feed>", `<entry><id>urn:pushed:1</id><title>pushed</title>`+
		`<link href="https://archived.example/p"/><published>2026-11-21T10:05:00Z</published></entry></feed>`, 1)
	spoolPush(t, w.st, id, w.srv.URL+"/feed.xml", body, at)
	handed := w.drain(at)
	if !strings.Contains(handed, `"origin":"websub"`) {
		t.Fatalf("feed-fetch handed on %s", handed)
	}
	// As if it stopped before removing the file: it is there again.
	var f ndjson.Fetch
	if err := ndjson.Unmarshal([]byte(strings.TrimSpace(handed)), &f); err != nil {
		t.Fatal(err)
	}
	if err := spool.Put(w.st, &f); err != nil {
		t.Fatal(err)
	}
	again := w.drain(at.Add(time.Second))
	if strings.TrimSpace(again) != strings.TrimSpace(handed) {
		t.Errorf("handed on again:\n%s\nnot as before:\n%s", again, handed)
	}
	lines := 0
	w.st.ReadLogsSince(storedir.DirFetches, "", 0, func(_ string, l ndjson.Line) error {
		if strings.Contains(string(l.Raw), f.FetchID) {
			lines++
		}
		return nil
	})
	if lines != 1 {
		t.Errorf("the pushed record is %d times in fetches/", lines)
	}
	out := w.store(strings.NewReader(handed+again), parse.DefaultParser, at)
	if n := events(out, ndjson.TypeNewEntry); n != 1 || !strings.Contains(out, `"title":"pushed"`) {
		t.Errorf("%d new entries from a body handed on twice: %s", n, out)
	}
	after := stateOf(t, w.st, id)
	if !after.LastFetchAt.Equal(before.LastFetchAt.Time) || !after.NextFetchAt.Equal(before.NextFetchAt.Time) || after.Validators != before.Validators {
		t.Errorf("a push moved the schedule: %+v -> %+v", before, after)
	}
	if items, _, _ := spool.Read(w.st); len(items) != 0 {
		t.Errorf("%d records left in the spool", len(items))
	}
}

// TestPushMiss: a poll that finds new entries while the feed's push lives
// says the pushes missed them; a poll records the hub and topic the feed
// names, its Link header first.
func TestPushMiss(t *testing.T) {
	w := newWorld(t)
	w.serve("feed.xml", strings.Replace(archiveDoc(1, "", ""), `<title>Archived</title>`,
		`<title>Archived</title><link rel="hub" href="https://doc-hub.example/"/><link rel="self" href="https://example.org/topic"/>`, 1))
	id := w.subscribe("/feed.xml")
	w.cycle(t0)
	cat, err := catalog.Open(context.Background(), w.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	targets, _ := cat.PushTargets(context.Background())
	if got := targets[id]; got.Hub != "https://doc-hub.example/" || got.Topic != "https://example.org/topic" {
		t.Errorf("target %+v", got)
	}
	if err := cat.PutWebSub(context.Background(), catalog.WebSub{CallbackID: strings.Repeat("ab", 16), Callback: "https://x/websub/ab", FeedID: id,
		Hub: "https://doc-hub.example/", Topic: "https://example.org/topic", Secret: "s", Mode: websub.ModeSubscribe, State: catalog.WebSubVerified,
		AskedAt: t0, VerifiedAt: t0, LeaseSec: 864000, LeaseEnd: t0.Add(10 * 24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	w.serve("feed.xml", strings.Replace(archiveDoc(2, "", ""), `<title>Archived</title>`, `<title>Archived</title><link rel="hub" href="https://doc-hub.example/"/>`, 1))
	w.cycle(t0.Add(25 * time.Hour))
	ps, err := cat.PushStatuses(context.Background(), t0.Add(26*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if p := ps[id]; p.Live || !p.Missed() || !p.MissedAt.Equal(t0.Add(25*time.Hour)) {
		t.Errorf("after a poll found more: %+v", p)
	}
	targets, _ = cat.PushTargets(context.Background())
	if got := targets[id]; got.Topic != w.srv.URL+"/feed.xml" {
		t.Errorf("a feed with no self link: topic %q, want its URL", got.Topic)
	}
}
