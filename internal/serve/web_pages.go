package serve

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/entrytext"
	"github.com/feedpipe/feedpipe/internal/media"
	"github.com/feedpipe/feedpipe/internal/stats"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// The pages of the site: the feeds, a feed, the river of entries, an
// entry, and marking entries. The dashboards are in web_dash.go.

// Sizes of the pages.
const (
	webFeedsPage   = 100 // feeds on a page of the feed list
	webEntriesPage = 40  // entries on a page of the river or a feed
	sparkDays      = 14  // days of a feed's sparkline
)

// labelTab is a label of the subscriptions, with its unread entries.
type labelTab struct {
	Name   string
	Unread int
}

// feedRow is a feed as the feed list shows it.
type feedRow struct {
	ID, Name, URL, Title string
	Labels               []string
	State, StatusText    string
	LastFetch, NextFetch time.Time
	Listed               bool
	LastError            string
	Warnings             []string // of the last body's parse
	IntervalSec          int
	Unread               int
	New                  int // in the sparkline's days
	Spark                template.HTML
	Counts               catalog.FeedCounts
}

// feedRowOf is the row of f at now; full shows the message of its last
// error too (signed in with the token: it may name addresses).
func feedRowOf(f *catalog.Feed, now time.Time, full bool) feedRow {
	st := stats.StatusOf(f.Sub, f.State, now)
	row := feedRow{ID: f.Sub.FeedID, Name: cmp.Or(f.Sub.Name, f.State.Title, f.Sub.URL), URL: f.Sub.URL, Title: f.State.Title,
		Labels: slices.Clone(f.Sub.Labels), State: st.State, StatusText: st.Text, LastFetch: f.State.LastFetchAt.Time,
		Listed: st.Listed, IntervalSec: st.IntervalSec, Counts: f.State.Counts, Warnings: f.State.Warnings}
	if st.Listed {
		row.NextFetch = st.Next
	}
	if e := f.State.LastError; e != nil {
		row.LastError = e.Code
		if full {
			row.LastError = strings.TrimSpace(e.Code + ": " + e.Message)
		}
	}
	return row
}

// feedsData is the feed list's.
type feedsData struct {
	Feeds             []feedRow
	Labels            []labelTab
	Label, State      string
	States            []string
	Next              string
	Subscribed, Shown int
	Unread            int
}

// badReader answers a request whose reader name is not one; false when
// it did.
func (s *Server) reader(w http.ResponseWriter, r *http.Request) (string, bool) {
	reader, err := s.readerOf(r)
	if err != nil {
		s.render(w, r, http.StatusBadRequest, "message", pageData{Title: "Bad reader", Reader: catalog.DefaultReader,
			Data: message{Heading: "Bad reader", Text: "The reader named is not one: " + err.Error() + ". Leave reader out for the default reader."}})
		return "", false
	}
	return reader, true
}

// subsView is what the feeds list and the river show of the
// subscriptions: the subscriptions, the reader's unread entries by feed,
// the labels sorted with the unread entries of each (a feed's counting
// under each of its labels), and the feeds' names by id.
type subsView struct {
	subs   []ndjson.Subscription
	unread map[string]catalog.Unread
	labels []labelTab
	names  map[string]string
}

// subsView reads the subscriptions and reader's unread counts.
func (s *Server) subsView(ctx context.Context, reader string) (v subsView, err error) {
	if v.unread, err = s.cat.UnreadCounts(ctx, reader, time.Time{}); err != nil {
		return v, err
	}
	if v.subs, err = s.cat.Subscriptions(ctx); err != nil {
		return v, err
	}
	v.labels, v.names = labelsOf(v.subs, v.unread)
	return v, nil
}

// labelsOf returns the labels of the subscriptions, sorted, with the
// unread entries of each, and the feeds' names by id.
func labelsOf(subs []ndjson.Subscription, unread map[string]catalog.Unread) ([]labelTab, map[string]string) {
	counts := map[string]int{}
	names := map[string]string{}
	for _, sb := range subs {
		if sb.Name != "" {
			names[sb.FeedID] = sb.Name
		}
		for _, l := range sb.Labels {
			counts[l] += unread[sb.FeedID].Count
		}
	}
	var tabs []labelTab
	for _, l := range sortedKeys(counts) {
		tabs = append(tabs, labelTab{Name: l, Unread: counts[l]})
	}
	return tabs, names
}

// webFeeds is GET /?label=&state=&after=&reader=: the feeds.
func (s *Server) webFeeds(w http.ResponseWriter, r *http.Request) {
	reader, ok := s.reader(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	now := s.cfg.Now()
	q := r.URL.Query()
	d := feedsData{Label: q.Get("label"), State: q.Get("state"), States: feedStates}
	if d.Label != "" && labelProblem(d.Label) != "" || d.State != "" && !contains(feedStates, d.State) {
		s.webMessage(w, r, http.StatusBadRequest, "No such list", "The label or state asked for is not one: the feed list has links to each.")
		return
	}
	after := q.Get("after")
	v, err := s.subsView(ctx, reader)
	if err != nil {
		s.webError(w, r, err)
		return
	}
	d.Labels, d.Subscribed = v.labels, len(v.subs)
	for _, sb := range v.subs {
		d.Unread += v.unread[sb.FeedID].Count
	}
	skipping := after != ""
	c, _ := s.callerOf(r)
	full := c.token
	err = s.cat.Feeds(ctx, catalog.FeedFilter{Label: d.Label}, func(f *catalog.Feed) error {
		if skipping {
			skipping = f.Sub.FeedID != after
			return nil
		}
		row := feedRowOf(f, now, full)
		if d.State != "" && row.State != d.State {
			return nil
		}
		if len(d.Feeds) == webFeedsPage {
			d.Next = pageURL(reader, "/", "label", d.Label, "state", d.State, "after", d.Feeds[len(d.Feeds)-1].ID)
			return errPageFull
		}
		row.Unread = v.unread[row.ID].Count
		d.Feeds = append(d.Feeds, row)
		return nil
	})
	if err != nil && !errors.Is(err, errPageFull) {
		s.webError(w, r, err)
		return
	}
	ids := make([]string, len(d.Feeds))
	for i, f := range d.Feeds {
		ids[i] = f.ID
	}
	perDay, err := s.cat.NewPerDay(ctx, ids, sparkDays, now)
	if err != nil {
		s.webError(w, r, err)
		return
	}
	for i := range d.Feeds {
		f := &d.Feeds[i]
		counts := perDay[f.ID]
		if counts == nil {
			counts = make([]int, sparkDays)
		}
		for _, n := range counts {
			f.New += n
		}
		f.Spark = sparkline(counts, "new entries a day, the last 14 days: "+joinInts(counts))
	}
	d.Shown = len(d.Feeds)
	title := "Feeds"
	if d.Label != "" {
		title = "Feeds: " + d.Label
	}
	s.render(w, r, http.StatusOK, "feeds", pageData{Title: title, Nav: "feeds", Reader: reader, Data: d})
}

func joinInts(v []int) string {
	var b strings.Builder
	for i, n := range v {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(number(float64(n)))
	}
	return b.String()
}

// entryView is an entry as a list or its page shows it.
type entryView struct {
	FeedID, UID, FeedName string
	Title, Link           string
	Published, FirstSeen  time.Time
	Read, Starred         bool
	Snippet               string
	Content               template.HTML // the entry's page only
	Authors               []string
	Enclosures            []ndjson.Enclosure
	Versions              int
}

// entryList is a page of entries with what marks them.
type entryList struct {
	Entries []entryView
	Keys    []string // feed/uid of each, for "mark all shown read"
	Next    string   // the next (older) page
	Unread  int      // of those shown
}

// httpURL returns u when it is an http(s) URL, else "": a link from a
// feed goes nowhere else.
func httpURL(u string) string {
	p, err := url.Parse(strings.TrimSpace(u))
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return ""
	}
	return p.String()
}

// entryViews reads the entries of a page: their records, names and marks.
func (s *Server) entryViews(ctx context.Context, page catalog.EntryPage, names map[string]string) (entryList, error) {
	var l entryList
	for _, row := range page.Entries {
		if _, ok := names[row.FeedID]; !ok {
			// A feed without a name of its own: its title, as its last
			// parse said; or its URL.
			fs, _, err := s.cat.State(ctx, row.FeedID)
			if err != nil {
				return l, err
			}
			names[row.FeedID] = fs.Title
		}
		e, err := s.cat.Entry(row)
		if err != nil {
			return l, err
		}
		v := viewOf(row, &e, names[row.FeedID])
		text := catalog.TextOf(cmp.Or(e.Summary, e.Content))
		v.Snippet = entrytext.Cut(text, 280)
		l.Entries = append(l.Entries, v)
		l.Keys = append(l.Keys, row.FeedID+"/"+row.UID)
		if !row.Read {
			l.Unread++
		}
	}
	return l, nil
}

func viewOf(row catalog.EntryRow, e *ndjson.Entry, feedName string) entryView {
	return entryView{FeedID: row.FeedID, UID: row.UID, FeedName: cmp.Or(feedName, row.FeedID[:8]), Title: entrytext.Title(e),
		Link: httpURL(e.CanonicalLink), Published: row.Published, FirstSeen: row.FirstSeen, Read: row.Read, Starred: row.Starred,
		Versions: row.Versions}
}

// riverData is the river's.
type riverData struct {
	Labels     []labelTab
	Label, Q   string
	UnreadOnly bool
	Unread     int // of the label, or of all
	Problem    string
	entryList
}

// webRiver is GET /web/river?label=&q=&unread=&cursor=&reader=: the
// latest entries of every feed or of a label, newest first, or those a
// search finds.
func (s *Server) webRiver(w http.ResponseWriter, r *http.Request) {
	reader, ok := s.reader(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	q := r.URL.Query()
	d := riverData{Label: q.Get("label"), Q: strings.TrimSpace(q.Get("q")), UnreadOnly: q.Get("unread") != ""}
	if d.Label != "" && labelProblem(d.Label) != "" {
		s.webMessage(w, r, http.StatusBadRequest, "No such label", "The label asked for is not one: the river has a link to each.")
		return
	}
	cursor := q.Get("cursor")
	if cursor != "" && !IsCursor(cursor) || len(d.Q) > 500 {
		s.webMessage(w, r, http.StatusBadRequest, "Bad request", "The page asked for is not one this site links to (a cursor it did not make, or a search longer than 500 bytes).")
		return
	}
	v, err := s.subsView(ctx, reader)
	if err != nil {
		s.webError(w, r, err)
		return
	}
	d.Labels = v.labels
	names := v.names
	if d.Label == "" {
		for _, u := range v.unread {
			d.Unread += u.Count
		}
	} else {
		for _, t := range d.Labels {
			if t.Name == d.Label {
				d.Unread = t.Unread
			}
		}
	}
	eq := catalog.EntryQuery{Limit: webEntriesPage, Cursor: cursor, Text: d.Q, Reader: reader, Unread: d.UnreadOnly}
	var page catalog.EntryPage
	if d.Label != "" {
		page, err = s.cat.LabelEntries(ctx, d.Label, eq)
	} else {
		page, err = s.cat.AllEntries(ctx, eq)
	}
	switch {
	case errors.Is(err, catalog.ErrBadQuery):
		d.Problem = "That search has no word to look for: search for letters or digits."
	case err != nil:
		s.webError(w, r, err)
		return
	}
	if d.entryList, err = s.entryViews(ctx, page, names); err != nil {
		s.webError(w, r, err)
		return
	}
	if page.Next != "" {
		d.Next = pageURL(reader, "/web/river", "label", d.Label, "q", d.Q, "unread", q.Get("unread"), "cursor", page.Next)
	}
	title := "River"
	switch {
	case d.Q != "":
		title = "Search: " + d.Q
	case d.Label != "":
		title = "River: " + d.Label
	}
	s.render(w, r, http.StatusOK, "river", pageData{Title: title, Nav: "river", Reader: reader, Data: d})
}

// entryPage is an entry's page's.
type entryPage struct {
	entryView
	FeedURL string
	// Media are the files feed-media was asked for (the entry's
	// enclosures, and images of its content); Enclosures are then those
	// it was not asked for.
	Media []mediaView
}

// mediaView is a file of an entry on its page: its stored copy, served
// by GET /media/{sha256} from this site, played or shown where the page
// may do so safely, beside the publisher's URL; or why it is not stored.
type mediaView struct {
	Kind   string // enclosure or image
	URL    string // the publisher's, when it is an http(s) URL
	State  string // queued, stored, refused or failed
	Reason string // why not stored: a code (http_404, too_large, ...); its message can name the server's network, so never shown here
	Href   string // the stored copy, /media/{sha256}; "" unless stored
	Type   string
	Bytes  int64
	// Player is how the page shows the stored copy: audio, video, image,
	// or "" (a link only): never for a type the route serves as a file
	// to save (rawType), a page or script of this site.
	Player string
}

// mediaViews are the entry's files as its page shows them.
func mediaViews(files []catalog.MediaFile) []mediaView {
	out := make([]mediaView, 0, len(files))
	for _, f := range files {
		v := mediaView{Kind: f.Kind, URL: httpURL(f.URL), State: f.State, Reason: f.Reason}
		if f.SHA256 != "" && f.State == catalog.MediaStored {
			v.Href, v.Type, v.Bytes = "/media/"+f.SHA256, f.ContentType, f.Bytes
			v.Player = playerOf(f.ContentType)
		}
		out = append(out, v)
	}
	return out
}

// playerOf is the element that shows a stored file of the type ct:
// audio, video or image (img), as the route serves it; "" for any other.
func playerOf(ct string) string {
	served, asFile := rawType(ct)
	if asFile {
		return ""
	}
	mt, _, _ := strings.Cut(served, "/")
	switch mt = strings.ToLower(strings.TrimSpace(mt)); mt {
	case "audio", "video", "image":
		return mt
	}
	return ""
}

// webEntry is GET /web/entries/{id}/{uid}: an entry, its content
// sanitised.
func (s *Server) webEntry(w http.ResponseWriter, r *http.Request) {
	reader, ok := s.reader(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	id, uid := r.PathValue("id"), r.PathValue("uid")
	if !ndjson.IsFeedID(id) || !ndjson.IsEntryUID(uid) {
		s.webMessage(w, r, http.StatusNotFound, "No such entry", "An entry's address is /web/entries/FEED_ID/ENTRY_UID, as the river links it.")
		return
	}
	rows, _, err := s.cat.EntriesByUID(ctx, uid)
	if err != nil {
		s.webError(w, r, err)
		return
	}
	i := slices.IndexFunc(rows, func(e catalog.EntryRow) bool { return e.FeedID == id })
	if i < 0 {
		s.webMessage(w, r, http.StatusNotFound, "No such entry", "The store has no entry "+uid+" of the feed "+id+" (pruned, or never stored).")
		return
	}
	row := rows[i]
	marks, err := s.cat.MarksOf(ctx, reader, []catalog.EntryRow{row})
	if err != nil {
		s.webError(w, r, err)
		return
	}
	row.Marks = marks[row.ID]
	e, err := s.cat.Entry(row)
	if err != nil {
		s.webError(w, r, err)
		return
	}
	sb, _, err := s.cat.Subscription(ctx, id)
	if err != nil {
		s.webError(w, r, err)
		return
	}
	fs, _, err := s.cat.State(ctx, id)
	if err != nil {
		s.webError(w, r, err)
		return
	}
	d := entryPage{entryView: viewOf(row, &e, cmp.Or(sb.Name, fs.Title, sb.URL)), FeedURL: sb.URL}
	base := cmp.Or(d.Link, httpURL(sb.URL))
	d.Content = sanitise(cmp.Or(e.Content, e.Summary), base)
	for _, a := range e.Authors {
		if n := strings.TrimSpace(cmp.Or(a.Name, a.Email)); n != "" {
			d.Authors = append(d.Authors, n)
		}
	}
	files, err := s.cat.EntryMedia(ctx, id, uid)
	if err != nil {
		s.webError(w, r, err)
		return
	}
	d.Media = mediaViews(files)
	for _, enc := range e.Enclosures {
		// An enclosure feed-media was asked for is among the media, as
		// its row names it (pointEnclosures matches them alike).
		abs := media.Absolute(enc.URL, e.CanonicalLink)
		if slices.ContainsFunc(files, func(f catalog.MediaFile) bool { return f.Kind == ndjson.MediaEnclosure && f.URL == abs }) {
			continue
		}
		if u := httpURL(enc.URL); u != "" {
			d.Enclosures = append(d.Enclosures, ndjson.Enclosure{URL: u, Type: enc.Type, Length: enc.Length})
		}
	}
	s.render(w, r, http.StatusOK, "entry", pageData{Title: d.Title, Nav: "river", Reader: reader, Data: d})
}

// feedPage is a feed's page's.
type feedPage struct {
	feedRow
	Sub        ndjson.Subscription
	Interval   template.HTML
	Fetches    template.HTML
	Decisions  []intervalPoint // newest first
	FetchCount int
	UnreadOnly bool
	Unread     int
	Links      map[string]string
	// Push and Walk: the feed's push and archive walk (push.go), nil for
	// none.
	Push *catalog.PushStatus
	Walk *catalog.Walk
	entryList
}

// Bounds of what a feed's page reads.
const (
	feedPageFetches   = 200      // the newest fetches of its strip
	feedPageDecisions = 200      // the newest decisions of its chart
	decisionDays      = 7        // days of decisions/ it looks into
	decisionScanBytes = 64 << 20 // and at most this much of them
)

// webFeed is GET /web/feeds/{id}?unread=&cursor=&reader=: a feed, its
// scheduler's decisions, its fetches and its entries.
func (s *Server) webFeed(w http.ResponseWriter, r *http.Request) {
	reader, ok := s.reader(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	now := s.cfg.Now()
	id := r.PathValue("id")
	q := r.URL.Query()
	cursor := q.Get("cursor")
	if !ndjson.IsFeedID(id) || cursor != "" && !IsCursor(cursor) {
		s.webMessage(w, r, http.StatusNotFound, "No such feed", "A feed's page is /web/feeds/FEED_ID, as the feed list links it.")
		return
	}
	sb, ok, err := s.cat.Subscription(ctx, id)
	if err != nil {
		s.webError(w, r, err)
		return
	}
	if !ok {
		s.webMessage(w, r, http.StatusNotFound, "No such feed", "No feed "+id+" is subscribed: the feed list shows those that are.")
		return
	}
	fs, _, err := s.cat.State(ctx, id)
	if err != nil {
		s.webError(w, r, err)
		return
	}
	f := catalog.Feed{Sub: sb, State: fs}
	c, _ := s.callerOf(r)
	d := feedPage{feedRow: feedRowOf(&f, now, c.token), Sub: sb, UnreadOnly: q.Get("unread") != ""}
	unread, err := s.cat.FeedUnread(ctx, reader, id)
	if err != nil {
		s.webError(w, r, err)
		return
	}
	d.Unread = unread.Count
	base := "/feeds/" + id
	d.Links = map[string]string{"Atom": base + "/feed.atom", "RSS": base + "/feed.rss", "JSON Feed": base + "/feed.json", "API": base}
	if d.Push, d.Walk, err = s.pushOfFeed(ctx, sb, fs, now); err != nil {
		s.webError(w, r, err)
		return
	}

	points, err := s.decisionsOf(id, now, fs)
	if err != nil {
		s.webError(w, r, err)
		return
	}
	d.Interval = intervalChart(points, "the interval the scheduler chose at each decision, against the EWMA of the feed's posting interval")
	for i := len(points) - 1; i >= 0 && len(d.Decisions) < 20; i-- {
		d.Decisions = append(d.Decisions, points[i])
	}

	refs, err := s.cat.Fetches(ctx, id, time.Time{}, feedPageFetches)
	if err != nil {
		s.webError(w, r, err)
		return
	}
	var at []time.Time
	var outcomes []string
	for i := len(refs) - 1; i >= 0; i-- {
		b, err := s.cat.Line(storedir.DirFetches, refs[i].Location)
		var rec ndjson.Fetch
		if err != nil || ndjson.Unmarshal(b, &rec) != nil {
			continue // pruned meanwhile
		}
		at, outcomes = append(at, refs[i].FetchedAt), append(outcomes, outcomeOf(&rec))
	}
	d.FetchCount = len(at)
	from, to := now.Add(-time.Hour), now
	if len(at) > 0 {
		from, to = at[0], at[len(at)-1]
		pad := max(to.Sub(from)/20, time.Minute)
		from, to = from.Add(-pad), to.Add(pad)
	}
	d.Fetches = fetchStrip(at, outcomes, from, to, "the feed's fetches over time: success, 304 or error")

	page, err := s.cat.FeedEntries(ctx, id, catalog.EntryQuery{Limit: webEntriesPage, Cursor: cursor, Reader: reader, Unread: d.UnreadOnly})
	if err != nil {
		s.webError(w, r, err)
		return
	}
	if d.entryList, err = s.entryViews(ctx, page, map[string]string{id: d.Name}); err != nil {
		s.webError(w, r, err)
		return
	}
	if page.Next != "" {
		d.Next = pageURL(reader, "/web/feeds/"+id, "unread", q.Get("unread"), "cursor", page.Next)
	}
	s.render(w, r, http.StatusOK, "feed", pageData{Title: d.Name, Nav: "feeds", Reader: reader, Data: d})
}

// decisionsOf returns the scheduler's decisions on a feed, oldest first:
// those of the decisions/ tap in its last days (newest files first, up
// to decisionScanBytes), or, when the tap has none, the last decision the
// feed's state keeps.
func (s *Server) decisionsOf(feedID string, now time.Time, fs catalog.FeedState) ([]intervalPoint, error) {
	var pts []intervalPoint
	needle := []byte(`"feed_id":"` + feedID + `"`)
	scanned := int64(0)
	for day := 0; day < decisionDays && scanned < decisionScanBytes && len(pts) < feedPageDecisions; day++ {
		var found []intervalPoint
		key := storedir.DayFile(DecisionsDir, now.AddDate(0, 0, -day))
		end, _, err := s.cfg.Store.ReadLog(key, 0, func(l ndjson.Line) error {
			if !bytes.Contains(l.Raw, needle) {
				return nil
			}
			var dc ndjson.Decision
			if l.Type != ndjson.TypeDecision || l.Decode(&dc) != nil || dc.FeedID != feedID {
				return nil
			}
			found = append(found, intervalPoint{At: dc.At.Time, IntervalSec: float64(dc.Inputs.IntervalAfterSec),
				EWMASec: dc.Inputs.EWMASecs, Reason: dc.Reason, Action: dc.Decision})
			return nil
		})
		if err != nil {
			return nil, err
		}
		scanned += end
		pts = append(found, pts...)
	}
	if len(pts) == 0 && fs.Decision != nil {
		dc := fs.Decision
		pts = append(pts, intervalPoint{At: dc.At.Time, IntervalSec: float64(dc.Inputs.IntervalAfterSec), EWMASec: dc.Inputs.EWMASecs,
			Reason: string(dc.Reason), Action: string(dc.Kind)})
	}
	slices.SortStableFunc(pts, func(a, b intervalPoint) int { return a.At.Compare(b.At) })
	if len(pts) > feedPageDecisions {
		pts = pts[len(pts)-feedPageDecisions:]
	}
	return pts, nil
}

// maxMarks caps the entries one form marks: a page shows fewer.
const maxMarks = 1000

// webMark is POST /web/mark: action=read|unread|star|unstar, key=FEED/UID
// (one or more: one entry, or all shown), reader=, back=PATH. It marks
// them for the reader and goes back to the page.
func (s *Server) webMark(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		s.webMessage(w, r, http.StatusBadRequest, "Bad form", "The form could not be read: "+err.Error()+".")
		return
	}
	reader, ok := s.reader(w, r)
	if !ok {
		return
	}
	action := r.PostFormValue("action")
	if !contains([]string{catalog.MarkRead, catalog.MarkUnread, catalog.MarkStar, catalog.MarkUnstar}, action) {
		s.webMessage(w, r, http.StatusBadRequest, "Bad form", "The form's action is read, unread, star or unstar.")
		return
	}
	var keys []catalog.EntryKey
	for _, k := range r.PostForm["key"] {
		feed, uid, _ := strings.Cut(k, "/")
		if !ndjson.IsFeedID(feed) || !ndjson.IsEntryUID(uid) || len(keys) == maxMarks {
			s.webMessage(w, r, http.StatusBadRequest, "Bad form", "An entry to mark is FEED_ID/ENTRY_UID, at most 1000 of them.")
			return
		}
		keys = append(keys, catalog.EntryKey{FeedID: feed, UID: uid})
	}
	if _, err := s.cat.Mark(r.Context(), reader, action, keys, s.cfg.Now()); err != nil {
		s.webError(w, r, err)
		return
	}
	http.Redirect(w, r, localPath(r.PostFormValue("back")), http.StatusSeeOther)
}
