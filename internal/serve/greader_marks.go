package serve

import (
	"strconv"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
)

// The Google Reader API's marks: edit-tag and mark-all-as-read, on the
// user's reader.

// editTag is POST /reader/api/0/edit-tag: i= items, a= states to add,
// r= to remove: read, starred (kept-unread is unread). Other tags
// (labels of items, tracking states) are not kept, and are let be.
func (g *greq) editTag() {
	uids, ok := g.itemUIDs()
	if !ok {
		return
	}
	var actions []string
	for _, a := range g.form["a"] {
		switch g.state(a) {
		case "read":
			actions = append(actions, catalog.MarkRead)
		case "kept-unread":
			actions = append(actions, catalog.MarkUnread)
		case "starred":
			actions = append(actions, catalog.MarkStar)
		}
	}
	for _, r := range g.form["r"] {
		switch g.state(r) {
		case "read":
			actions = append(actions, catalog.MarkUnread)
		case "starred":
			actions = append(actions, catalog.MarkUnstar)
		}
	}
	if len(actions) > 0 {
		// An item id names every feed's entry of its uid: two feeds
		// sharing a uid (a 64-bit hash) is the rare case where a mark
		// falls on both.
		rows, err := g.s.cat.EntriesByUIDs(g.ctx(), uids, "")
		if g.queryError(err) {
			return
		}
		keys := make([]catalog.EntryKey, len(rows))
		for i, e := range rows {
			keys[i] = catalog.EntryKey{FeedID: e.FeedID, UID: e.UID}
		}
		for _, a := range actions {
			if _, err := g.s.cat.Mark(g.ctx(), g.user, a, keys, g.now); err != nil {
				g.s.serverError(g.w, g.r, err)
				return
			}
		}
	}
	g.text("OK")
}

// state is the name of a state tag of the user's (read, starred,
// kept-unread...), or "".
func (g *greq) state(tag string) string {
	for _, who := range []string{"user/-/", "user/" + g.user + "/"} {
		if s, ok := strings.CutPrefix(tag, who+"state/com.google/"); ok {
			return s
		}
	}
	return ""
}

// markAllRead is POST /reader/api/0/mark-all-as-read: s= a feed, a label
// or the reading list; ts= only what was first seen up to then
// (microseconds; seconds and milliseconds taken too).
func (g *greq) markAllRead() {
	id, ok := g.requiredStream("the stream to mark read")
	if !ok {
		return
	}
	st, ok := g.streamID(id)
	if !ok {
		return
	}
	until := g.now.Add(time.Millisecond)
	if v := g.form.get("ts"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			badParam(g.w, g.r, "ts", "ts "+strconv.Quote(clip(v))+" is not a time in microseconds since 1970")
			return
		}
		switch {
		case n < 1e11:
			n *= 1e6
		case n < 1e14:
			n *= 1e3
		}
		// Up to and including the item of that time (the catalog keeps
		// milliseconds).
		until = time.UnixMilli(n/1000 + 1)
	}
	var err error
	switch st.Kind {
	case streamFeed:
		_, err = g.s.cat.MarkAllRead(g.ctx(), g.user, st.Feed, until)
	case streamLabel:
		_, err = g.s.cat.MarkLabelRead(g.ctx(), g.user, st.Label, until)
	case streamReadingList:
		_, err = g.s.cat.MarkAllRead(g.ctx(), g.user, "", until)
	default:
		badParam(g.w, g.r, "s", "stream "+strconv.Quote(clip(id))+" cannot be marked read: give a feed, a label or the reading list")
		return
	}
	if err != nil {
		g.s.serverError(g.w, g.r, err)
		return
	}
	g.text("OK")
}
