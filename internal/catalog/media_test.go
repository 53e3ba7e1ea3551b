package catalog

import (
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/testids"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// finish appends m to media/ as feed-media run does, then records it.
func finish(t *testing.T, c *Catalog, m ndjson.Media, next time.Time, validator string) {
	t.Helper()
	m.Header = ndjson.Head(ndjson.TypeMedia)
	key := storedir.DayFile(storedir.DirMedia, m.At.Time)
	m.StoredIn = key
	line, err := ndjson.Marshal(&m)
	if err != nil {
		t.Fatal(err)
	}
	off, err := c.st.AppendLines(key, line, storedir.Durable)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.FinishMedia(ctx, MediaTry{Record: &m, Key: key, End: off + int64(len(line)), NextTryAt: next, Validator: validator}); err != nil {
		t.Fatal(err)
	}
}

func states(t *testing.T, c *Catalog, feed, uid string) string {
	t.Helper()
	files, err := c.EntryMedia(ctx, testids.Feed(feed), testids.UID(uid))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		s := f.URL + "=" + f.State
		if f.SHA256 != "" {
			s += ":" + f.SHA256[:4]
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// TestMediaQueue: files are queued once per entry, taken in order when
// due, and follow the records of their tries; a catalog that lost its rows
// makes them again from the records.
func TestMediaQueue(t *testing.T) {
	c := openTemp(t)
	a, e1, e2 := testids.Feed("A"), testids.UID("e1"), testids.UID("e2")
	n, err := c.QueueMedia(ctx, []MediaWant{
		{a, e1, "https://x.test/1.mp3", ndjson.MediaEnclosure},
		{a, e1, "https://x.test/2.mp3", ndjson.MediaEnclosure},
		{a, e2, "https://x.test/1.mp3", ndjson.MediaEnclosure}, // the same file, another entry
		{a, e1, "https://x.test/1.mp3", ndjson.MediaEnclosure}, // again
	}, t0)
	if err != nil || n != 3 {
		t.Fatalf("queued %d, %v", n, err)
	}
	if n, _ := c.QueueMedia(ctx, []MediaWant{{a, e1, "https://x.test/1.mp3", ndjson.MediaEnclosure}}, t0); n != 0 {
		t.Fatalf("queued again: %d", n)
	}
	jobs, err := c.DueMedia(ctx, t0, 10, nil)
	if err != nil || len(jobs) != 3 || jobs[0].URL != "https://x.test/1.mp3" || jobs[0].EntryUID != e1 || jobs[2].EntryUID != e2 {
		t.Fatalf("due %+v, %v", jobs, err)
	}
	if jobs, _ := c.DueMedia(ctx, t0, 10, []int64{jobs[0].ID, jobs[1].ID}); len(jobs) != 1 || jobs[0].EntryUID != e2 {
		t.Fatalf("due but those being tried: %+v", jobs)
	}
	sum := strings.Repeat("ab", 32)
	at := t0.Add(time.Minute)
	finish(t, c, ndjson.Media{FeedID: a, EntryUID: e1, Kind: ndjson.MediaEnclosure, URL: "https://x.test/1.mp3", Status: ndjson.MediaStored,
		Key: ndjson.MediaKey(sum), SHA256: sum, Bytes: 3000, ContentType: "audio/mpeg", Attempt: 1, StartedAt: ndjson.At(t0), At: ndjson.At(at)}, time.Time{}, "")
	finish(t, c, ndjson.Media{FeedID: a, EntryUID: e1, Kind: ndjson.MediaEnclosure, URL: "https://x.test/2.mp3", Status: ndjson.MediaRetrying,
		Reason: "timeout", Bytes: 1000, Attempt: 1, StartedAt: ndjson.At(t0), At: ndjson.At(at)}, at.Add(time.Hour), `"v1"`)
	finish(t, c, ndjson.Media{FeedID: a, EntryUID: e2, Kind: ndjson.MediaEnclosure, URL: "https://x.test/1.mp3", Status: ndjson.MediaStored,
		Key: ndjson.MediaKey(sum), SHA256: sum, Bytes: 3000, ContentType: "audio/mpeg", Attempt: 1, StartedAt: ndjson.At(t0), At: ndjson.At(at)}, time.Time{}, "")
	if got := states(t, c, "A", "e1"); got != "https://x.test/1.mp3=stored:abab https://x.test/2.mp3=queued" {
		t.Fatalf("e1: %s", got)
	}
	if jobs, _ := c.DueMedia(ctx, at, 10, nil); len(jobs) != 0 {
		t.Fatalf("a retry due before its time: %+v", jobs)
	}
	jobs, _ = c.DueMedia(ctx, at.Add(time.Hour), 10, nil)
	if len(jobs) != 1 || jobs[0].PartialBytes != 1000 || jobs[0].PartialValidator != `"v1"` || jobs[0].Attempts != 1 {
		t.Fatalf("the retry: %+v", jobs)
	}
	if next, ok, _ := c.NextMediaTry(ctx, at); !ok || !next.Equal(at.Add(time.Hour)) {
		t.Errorf("next try %v %v", next, ok)
	}
	if err := c.MediaProgress(ctx, jobs[0].ID, 2000, `"v1"`); err != nil {
		t.Fatal(err)
	}
	if ct, _, ok, err := c.MediaType(ctx, sum); err != nil || !ok || ct != "audio/mpeg" {
		t.Errorf("type %q %v %v", ct, ok, err)
	}
	stored, err := c.StoredMedia(ctx, []ndjson.EntryRef{{FeedID: a, EntryUID: e1}, {FeedID: a, EntryUID: testids.UID("none")}})
	if err != nil || len(stored) != 1 || len(stored[[2]string{a, e1}]) != 1 {
		t.Fatalf("stored %+v, %v", stored, err)
	}

	// The rows lost (a catalog made anew): the records make them again.
	if err := c.Update(ctx, func(t *Tx) error {
		if _, err := t.write(once, `DELETE FROM media`); err != nil {
			return err
		}
		_, err := t.write(once, `DELETE FROM meta WHERE key = ?`, TapMedia)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.CatchUpMedia(ctx); err != nil {
		t.Fatal(err)
	}
	if got := states(t, c, "A", "e1"); got != "https://x.test/1.mp3=stored:abab https://x.test/2.mp3=queued" {
		t.Fatalf("rebuilt e1: %s", got)
	}
	if got := states(t, c, "A", "e2"); got != "https://x.test/1.mp3=stored:abab" {
		t.Fatalf("rebuilt e2: %s", got)
	}

	// Prune: e1 leaves the index; its rows go, the file stays while e2's
	// row names it.
	if err := c.Update(ctx, func(t *Tx) error {
		return t.StoreVersion(entry("A", "e2", "h", t0), Location{Day: "2026-11-21", Length: 10})
	}); err != nil {
		t.Fatal(err)
	}
	if n, err := c.PruneMedia(ctx, true, ""); err != nil || n != 2 {
		t.Fatalf("dry prune: %d, %v", n, err)
	}
	sums, queued, err := c.MediaInUse(ctx, true, "")
	if err != nil || !sums[sum] || len(queued) != 0 {
		t.Fatalf("in use but the gone: %v %v %v", sums, queued, err)
	}
	if n, err := c.PruneMedia(ctx, false, ""); err != nil || n != 2 {
		t.Fatalf("prune: %d, %v", n, err)
	}
	if got := states(t, c, "A", "e1"); got != "" {
		t.Fatalf("e1 after prune: %s", got)
	}
	if sums, _, _ := c.MediaInUse(ctx, false, ""); !sums[sum] {
		t.Fatal("the file e2 has is no longer in use")
	}
}

// TestMediaBudgetAndSettings: the day's bytes are kept for that day only;
// a subscription's media settings go to the catalog and back.
func TestMediaBudgetAndSettings(t *testing.T) {
	c := openTemp(t)
	if err := c.SetMediaBudget(ctx, "2026-11-29", 12345); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.MediaBudget(ctx, "2026-11-29"); n != 12345 {
		t.Errorf("today's bytes %d", n)
	}
	if n, _ := c.MediaBudget(ctx, "2026-11-30"); n != 0 {
		t.Errorf("tomorrow's bytes %d", n)
	}
	s := sub("M")
	s.Media = &ndjson.MediaSettings{Types: []string{"audio/*"}, MaxBytes: 1 << 20, Images: true}
	off := sub("N")
	off.Media = &ndjson.MediaSettings{Types: []string{}}
	add(t, c, s, off)
	got, ok, err := c.Subscription(ctx, s.FeedID)
	if err != nil || !ok || got.Media == nil || got.Media.Types[0] != "audio/*" || got.Media.MaxBytes != 1<<20 || !got.Media.Images {
		t.Fatalf("media settings %+v, %v", got.Media, err)
	}
	if got, _, _ := c.Subscription(ctx, off.FeedID); got.Media != nil {
		t.Fatalf("settings that ask for nothing are kept: %+v", got.Media)
	}
}
