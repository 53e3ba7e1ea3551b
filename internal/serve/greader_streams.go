package serve

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// The Google Reader API's streams: unread counts, a stream's items and
// their ids, items by id.

// unreadCounts are the user's unread counts by feed, within the window,
// kept while the catalog is unchanged (and 10 seconds at most).
func (s *Server) unreadCounts(ctx context.Context, reader string, now time.Time) (map[string]catalog.Unread, error) {
	gen := s.changes.look(ctx)
	s.gr.mu.Lock()
	m := s.gr.counts[reader]
	s.gr.mu.Unlock()
	if m != nil && m.gen == gen && time.Since(m.at) < cacheMaxAge && !s.cfg.NoCache {
		return m.counts, nil
	}
	counts, err := s.cat.UnreadCounts(ctx, reader, s.readBefore(now))
	if err != nil {
		return nil, err
	}
	s.gr.mu.Lock()
	if s.gr.counts == nil || len(s.gr.counts) > 1000 {
		s.gr.counts = map[string]*unreadMemo{}
	}
	s.gr.counts[reader] = &unreadMemo{gen: gen, at: time.Now(), counts: counts}
	s.gr.mu.Unlock()
	return counts, nil
}

// unreadCount is GET /reader/api/0/unread-count: by feed, by label, and
// the reading list's.
func (g *greq) unreadCount() {
	counts, err := g.s.unreadCounts(g.ctx(), g.user, g.now)
	if err != nil {
		g.s.serverError(g.w, g.r, err)
		return
	}
	byLabel, err := g.labels()
	if err != nil {
		g.s.serverError(g.w, g.r, err)
		return
	}
	type count struct {
		ID     string `json:"id"`
		Count  int    `json:"count"`
		Newest string `json:"newestItemTimestampUsec"`
	}
	usec := func(t time.Time) string { return strconv.FormatInt(t.UnixMicro(), 10) }
	out := []count{}
	var total int
	var newest time.Time
	for _, id := range sortedKeys(counts) {
		u := counts[id]
		out = append(out, count{ID: "feed/" + id, Count: u.Count, Newest: usec(u.Newest)})
		total += u.Count
		if u.Newest.After(newest) {
			newest = u.Newest
		}
	}
	for _, l := range sortedKeys(byLabel) {
		var c count
		var at time.Time
		for _, id := range byLabel[l] {
			if u, ok := counts[id]; ok {
				c.Count += u.Count
				if u.Newest.After(at) {
					at = u.Newest
				}
			}
		}
		if c.Count > 0 {
			c.ID, c.Newest = labelStream(l), usec(at)
			out = append(out, c)
		}
	}
	if total > 0 {
		out = append(out, count{ID: stateReadingList, Count: total, Newest: usec(newest)})
	}
	g.json(map[string]any{"max": total, "unreadcounts": out})
}

// streamQuery reads a stream's parameters (n, c, ot, nt, r, xt, it) into
// a catalog query for the user; false when the request is answered.
func (g *greq) streamQuery(st stream) (catalog.EntryQuery, bool) {
	q := catalog.EntryQuery{Order: catalog.OrderFirstSeen, Reader: g.user, Limit: greaderDefaultN}
	if v := g.form.get("n"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			badParam(g.w, g.r, "n", "n "+strconv.Quote(clip(v))+" is not a number of items from 1")
			return q, false
		}
		q.Limit = min(n, greaderMaxN)
	}
	if c := g.form.get("c"); c != "" {
		if !IsCursor(c) {
			badParam(g.w, g.r, "c", "c "+strconv.Quote(clip(c))+" is not a continuation this server gave")
			return q, false
		}
		q.Cursor = c
	}
	for _, p := range []struct {
		name string
		t    *time.Time
	}{{"ot", &q.Since}, {"nt", &q.Until}} {
		if v := g.form.get(p.name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 || n > 1<<40 {
				badParam(g.w, g.r, p.name, p.name+" "+strconv.Quote(clip(v))+" is not a time in seconds since 1970")
				return q, false
			}
			*p.t = time.Unix(n, 0)
		}
	}
	q.Oldest = g.form.get("r") == "o"
	for _, x := range g.form["xt"] {
		if x == stateRead || x == "user/"+g.user+"/state/com.google/read" {
			q.Unread = true
		}
	}
	for _, x := range g.form["it"] {
		switch x {
		case stateStarred, "user/" + g.user + "/state/com.google/starred":
			q.Starred = true
		case stateRead, "user/" + g.user + "/state/com.google/read":
			q.Read = true
		}
	}
	switch st.Kind {
	case streamStarred:
		q.Starred = true
	case streamRead:
		q.Read = true
	}
	if q.Unread {
		// Entries before the window count as read.
		if before := g.s.readBefore(g.now); before.After(q.Since) {
			q.Since = before
		}
	}
	return q, true
}

// streamID reads a stream id; false when the request is answered.
func (g *greq) streamID(id string) (stream, bool) {
	st, err := parseStream(id, g.user)
	if err != nil {
		badParam(g.w, g.r, "s", "stream "+strconv.Quote(clip(id))+" is "+err.Error())
		return st, false
	}
	if st.Kind == streamFeed && !ndjson.IsFeedID(st.Feed) {
		subs, err := g.s.cat.Subscriptions(g.ctx())
		if err != nil {
			g.s.serverError(g.w, g.r, err)
			return st, false
		}
		i, err := catalog.FindSubscription(subs, st.Feed)
		if err != nil {
			problem(g.w, g.r, http.StatusNotFound, "no such feed", "no feed is subscribed at "+clip(st.Feed))
			return st, false
		}
		st.Feed = subs[i].FeedID
	}
	return st, true
}

// streamPage reads the stream id and its query's parameters, and runs it;
// false when the request is answered.
func (g *greq) streamPage(id string) (stream, catalog.EntryPage, bool) {
	st, ok := g.streamID(id)
	if !ok {
		return st, catalog.EntryPage{}, false
	}
	q, ok := g.streamQuery(st)
	if !ok {
		return st, catalog.EntryPage{}, false
	}
	page, err := g.page(st, q)
	return st, page, !g.queryError(err)
}

// requiredStream is s=, which the request must give (what says what
// for); false when it is missing and the request answered.
func (g *greq) requiredStream(what string) (string, bool) {
	id := g.form.get("s")
	if id == "" {
		badParam(g.w, g.r, "s", "s is missing: "+what)
	}
	return id, id != ""
}

// page runs a stream's query.
func (g *greq) page(st stream, q catalog.EntryQuery) (catalog.EntryPage, error) {
	switch st.Kind {
	case streamFeed:
		return g.s.cat.FeedEntries(g.ctx(), st.Feed, q)
	case streamLabel:
		return g.s.cat.LabelEntries(g.ctx(), st.Label, q)
	}
	return g.s.cat.AllEntries(g.ctx(), q)
}

// streamJSON is GET /reader/api/0/stream/contents/STREAM (or ?s=).
func (g *greq) streamJSON() { g.streamContents(false) }

// streamAtom is GET /reader/atom/STREAM: the same as an Atom feed.
func (g *greq) streamAtom() { g.streamContents(true) }

// streamContents answers with the items of the request's stream: the
// path's, else s=, else the reading list.
func (g *greq) streamContents(atom bool) {
	st, page, ok := g.streamPage(cmp.Or(g.r.PathValue("stream"), g.form.get("s"), stateReadingList))
	if !ok {
		return
	}
	items := g.items(page.Entries)
	if atom {
		g.atom(st, items, page.Next)
		return
	}
	out := map[string]any{"direction": "ltr", "id": st.id(), "title": g.streamTitle(st), "updated": g.now.Unix(),
		"self": []map[string]string{{"href": g.s.absolute(g.r, selfPath(g.r))}}, "items": items}
	if page.Next != "" {
		out["continuation"] = page.Next
	}
	g.json(out)
}

// queryError answers a query the catalog refused or failed; false when
// there was no error.
func (g *greq) queryError(err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, catalog.ErrBadQuery):
		badParam(g.w, g.r, "c", strings.TrimPrefix(err.Error(), "catalog: "))
	default:
		g.s.serverError(g.w, g.r, err)
	}
	return true
}

// streamTitle is what a stream is called.
func (g *greq) streamTitle(st stream) string {
	switch st.Kind {
	case streamFeed:
		if sb, ok, err := g.s.cat.Subscription(g.ctx(), st.Feed); err == nil && ok {
			fs, _, _ := g.s.cat.State(g.ctx(), st.Feed)
			return feedTitle(sb, fs.Title)
		}
		return st.Feed
	case streamLabel:
		return st.Label
	case streamStarred:
		return "Starred"
	case streamRead:
		return "Read"
	}
	return "Reading list"
}

// itemIDs is GET /reader/api/0/stream/items/ids?s=STREAM: the ids (short
// form) of a stream's items.
func (g *greq) itemIDs() {
	id, ok := g.requiredStream("the stream whose item ids to list")
	if !ok {
		return
	}
	_, page, ok := g.streamPage(id)
	if !ok {
		return
	}
	type ref struct {
		ID              string   `json:"id"`
		DirectStreamIDs []string `json:"directStreamIds"`
		TimestampUsec   string   `json:"timestampUsec"`
	}
	refs := []ref{}
	for _, e := range page.Entries {
		refs = append(refs, ref{ID: itemShort(e.UID), DirectStreamIDs: []string{"feed/" + e.FeedID}, TimestampUsec: strconv.FormatInt(e.FirstSeen.UnixMicro(), 10)})
	}
	out := map[string]any{"itemRefs": refs}
	if page.Next != "" {
		out["continuation"] = page.Next
	}
	g.json(out)
}

// itemUIDs reads the i= of a request; false when it is answered.
func (g *greq) itemUIDs() ([]string, bool) {
	is := g.form["i"]
	if len(is) == 0 {
		badParam(g.w, g.r, "i", "i is missing: give the items, one i= each")
		return nil, false
	}
	uids := make([]string, 0, len(is))
	for _, i := range is {
		uid, err := parseItemID(i)
		if err != nil {
			badParam(g.w, g.r, "i", "item "+strconv.Quote(clip(i))+" is "+err.Error())
			return nil, false
		}
		uids = append(uids, uid)
	}
	return uids, true
}

// itemContents is POST /reader/api/0/stream/items/contents (i=...).
func (g *greq) itemContents() {
	uids, ok := g.itemUIDs()
	if !ok {
		return
	}
	rows, err := g.s.cat.EntriesByUIDs(g.ctx(), uids, g.user)
	if g.queryError(err) {
		return
	}
	g.json(map[string]any{"direction": "ltr", "id": "user/-/state/com.google/items", "updated": g.now.Unix(), "items": g.items(rows)})
}
