package store

import (
	"errors"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/websub"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Push and history in feed-store (docs/design.md#push, #backfill).
//
// A pushed body's fetch record (origin websub or webhook) is stored as
// any, but is no poll: it moves nothing of the feed's schedule (no last
// fetch, no validators, no decision), only its title and counts. A poll
// of a feed whose push is live that finds new entries says the pushes
// miss some (catalog.MissedPush): the feed is polled at its interval until
// the next push. Each poll records the hub and topic the feed names (for
// feed-sub push sync) and its first link to its history (for the walk).
//
// An archive page's fetch record (due.reason archive) advances the feed's
// walk (catalog.ReadArchivePage), and its entries are history: stored
// with status backfilled (event backfilled_entry, never new_entry), their
// first_seen their published time, only when their uid is new (the live
// feed's version wins), and not counted by the scheduler as arrivals.

// side is what feed-store keeps of push and history across a run.
type side struct {
	live    map[string]bool               // feeds whose push was live at the start of the run
	targets map[string]catalog.PushTarget // hubs and topics recorded
	heads   map[string]string             // archive heads recorded ("kind url")
	// backfilled counts each feed's entries stored from archive pages
	// since its last archive record.
	backfilled map[string]int
}

// sideWrites are a batch's writes of push and history, in its
// transaction.
type sideWrites struct {
	targets map[string]catalog.PushTarget
	heads   map[string][2]string // feed -> head, kind
	missed  map[string]time.Time
	pages   []catalog.ArchivePage
}

// startSide reads what the run compares polls with.
func (c *committer) startSide() error {
	c.side = side{backfilled: map[string]int{}}
	now := c.cfg.Now()
	ps, err := c.cat.PushStatuses(c.ctx, now)
	if err != nil {
		return err
	}
	c.side.live = map[string]bool{}
	for id, p := range ps {
		if p.Live {
			c.side.live[id] = true
		}
	}
	if c.side.targets, err = c.cat.PushTargets(c.ctx); err != nil {
		return err
	}
	c.side.heads, err = c.cat.ArchiveHeads(c.ctx)
	return err
}

// history are the entries of batch that an archive page's fetch record
// closes (hold's pairing: a feed's entries, then its fetch record).
func history(batch []item) map[*ndjson.Entry]bool {
	var out map[*ndjson.Entry]bool
	closing := map[string]bool{} // feed id -> its next fetch record is an archive page's
	for i := len(batch) - 1; i >= 0; i-- {
		switch it := batch[i]; {
		case it.fetch != nil && it.fetch.Page == nil && !it.fetch.FetchedAt.IsZero():
			closing[it.fetch.Due.FeedID] = it.fetch.Due.Reason == ndjson.ReasonArchive
		case it.entry != nil && closing[it.entry.FeedID]:
			if out == nil {
				out = map[*ndjson.Entry]bool{}
			}
			out[it.entry] = true
		}
	}
	return out
}

// stageHistory is stage for an entry of an archive page: stored only when
// its uid is new, as backfilled, its first_seen when it was published
// (else updated; else at, the page's fetch), never after at.
func (c *committer) stageHistory(e *ndjson.Entry, now, at time.Time, entriesKey string) (*ndjson.Event, error) {
	status, err := c.index.Judge(c.ctx, e.FeedID, e.EntryUID, e.ContentHash)
	if err != nil || status != ndjson.StatusNew {
		return nil, err // stored already: the live feed's version wins
	}
	first := at
	for _, t := range []ndjson.Time{e.Published, e.Updated} {
		if !t.IsZero() {
			if t.Before(at) {
				first = t.Time
			}
			break
		}
	}
	e.Status, e.FirstSeen, e.LastSeen, e.SeenCount = ndjson.StatusBackfilled, ndjson.At(first), ndjson.At(at), 1
	c.index.Add(e.FeedID, catalog.Seen{UID: e.EntryUID, Hash: e.ContentHash, FirstSeen: e.FirstSeen, LastSeen: e.LastSeen, SeenCount: 1})
	c.side.backfilled[e.FeedID]++
	c.cfg.Summary.Backfilled++
	ev := ndjson.EventFor(e, ndjson.At(now), entriesKey)
	return &ev, nil
}

// sideFetch stores a fetch record that is no poll: a pushed body's, or an
// archive page's. It reports false for a poll, which the caller stores.
func (c *committer) sideFetch(f *ndjson.Fetch, w *batchWrites) (bool, error) {
	archive := f.Due.Reason == ndjson.ReasonArchive
	if !f.Pushed() && !archive {
		return false, nil
	}
	feedID := f.Due.FeedID
	if stage := missingStage(f); stage != "" {
		c.failed++
		c.cfg.Log.Error("a fetch record reached feed-store unparsed: is feed-parse in the pipeline?", "feed_id", feedID, "fetch_id", f.FetchID)
		return true, nil
	}
	w.sighted = append(w.sighted, c.sightings(f)...)
	if archive {
		c.cfg.Summary.ArchivePages++
		p := catalog.ArchivePage{FeedID: feedID, URL: f.Due.URL, FetchID: f.FetchID, At: f.FetchedAt.Time, Entries: c.side.backfilled[feedID]}
		delete(c.side.backfilled, feedID)
		switch {
		case f.Error != nil:
			p.Failed = f.Error.Code + " at " + f.Due.URL
		case f.Parse != nil:
			p.PrevArchive, p.Next = f.Parse.PrevArchive, f.Parse.Next
		}
		w.side.pages = append(w.side.pages, p)
		return true, nil
	}
	// A push: the feed's title and counts, nothing of its schedule; a
	// feed with no state yet (a webhook source) gets one that says no
	// poll was made.
	c.cfg.Summary.Pushed++
	prev := c.prior(feedID)
	if prev.err != nil {
		return true, prev.err
	}
	n, u := c.newByFeed[feedID], c.updatedByFeed[feedID]
	delete(c.newByFeed, feedID)
	delete(c.updatedByFeed, feedID)
	c.sch.forget(feedID) // publication times go with a poll's decision
	if !prev.known && f.Due.SourceType != ndjson.SourceWebhook {
		return true, nil
	}
	st := prev.st
	st.FeedID = feedID
	if f.Parse != nil && f.Parse.Title != "" {
		st.Title = f.Parse.Title
	}
	st.Counts.NewEntries += n
	st.Counts.Updated += u
	describe(&st, f)
	c.states[feedID] = st
	w.states = append(w.states, st)
	if f.Parse != nil && bodyRead(f) {
		w.parsed = append(w.parsed, f)
	}
	return true, nil
}

// sidePoll notes what a poll f, stored with the state st, says of push
// and history: the hub and topic the feed names, its first link to its
// history, and new entries a live push did not bring.
func (c *committer) sidePoll(f *ndjson.Fetch, st catalog.FeedState, w *batchWrites) {
	feedID := f.Due.FeedID
	if c.side.live[feedID] && st.NewEntriesLastFetch > 0 {
		if w.side.missed == nil {
			w.side.missed = map[string]time.Time{}
		}
		w.side.missed[feedID] = f.FetchedAt.Time
		c.side.live[feedID] = false
		c.cfg.Log.Info("a poll found entries the pushes did not bring: the feed is polled at its interval until the next push",
			"feed_id", feedID, "new", st.NewEntriesLastFetch)
	}
	if f.Parse == nil || !bodyRead(f) || f.Unchanged {
		return
	}
	// WebSub §4: the Link header first, then the document.
	hubs, self := websub.Links(splitHeader(f.ResponseHeaders["Link"]), nil)
	t := catalog.PushTarget{}
	if len(hubs) > 0 {
		t.Hub = hubs[0]
	} else if len(f.Parse.Hubs) > 0 {
		t.Hub = f.Parse.Hubs[0]
	}
	if t.Hub != "" {
		t.Topic = firstOf(self, f.Parse.Self, f.URL, f.Due.URL)
	}
	if t != c.side.targets[feedID] {
		if w.side.targets == nil {
			w.side.targets = map[string]catalog.PushTarget{}
		}
		w.side.targets[feedID] = t
		c.side.targets[feedID] = t
	}
	head, kind := f.Parse.PrevArchive, catalog.WalkArchive
	if head == "" {
		head, kind = f.Parse.Next, catalog.WalkPaged
	}
	want := ""
	if head != "" {
		want = kind + " " + head
	} else {
		kind = ""
	}
	if want != c.side.heads[feedID] {
		if w.side.heads == nil {
			w.side.heads = map[string][2]string{}
		}
		w.side.heads[feedID] = [2]string{head, kind}
		c.side.heads[feedID] = want
	}
}

// apply writes a batch's push and history in its transaction.
func (s *sideWrites) apply(t *catalog.Tx) error {
	for id, pt := range s.targets {
		if err := t.SetPushTarget(id, pt); err != nil {
			return err
		}
	}
	for id, h := range s.heads {
		if err := t.SetArchiveHead(id, h[0], h[1]); err != nil {
			return err
		}
	}
	for id, at := range s.missed {
		if err := t.MissedPush(id, at); err != nil {
			return err
		}
	}
	for _, p := range s.pages {
		if _, err := t.ReadArchivePage(p); err != nil && !errors.Is(err, catalog.ErrPageRead) {
			return err
		}
	}
	return nil
}

// splitHeader is a flattened header's value as the list of values
// websub.Links reads ("" for none).
func splitHeader(v string) []string {
	if v == "" {
		return nil
	}
	return []string{v}
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
