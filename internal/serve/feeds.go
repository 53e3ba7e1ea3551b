package serve

import (
	"bufio"
	"bytes"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/stats"
	"github.com/feedpipe/feedpipe/internal/sub"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// FeedOut is a feed as the API shows it: its subscription as feed-sub ls
// --json does (credentials redacted), and what its state holds.
type FeedOut struct {
	*sub.Listing
	Title string `json:"title"` // the feed's own title, as its last parse said
	// PollingIntervalSec is the interval the feed is polled at now (the
	// scheduler's, or a fixed one); 0 while it is not polled on one.
	PollingIntervalSec int                `json:"polling_interval_sec"`
	LastSuccessAt      ndjson.Time        `json:"last_success_at"`
	LastStatus         int                `json:"last_status"`
	Counts             catalog.FeedCounts `json:"counts"`
	// Unread is how many of the feed's entries first seen within the
	// unread window the reader of GET /feeds?reader= has not read.
	Unread *int              `json:"unread,omitempty"`
	Links  map[string]string `json:"links"` // entries, and the feed's own meta-feeds
	// Notes are what feed-sub would have said of the change made: a
	// setting adjusted, a feed already subscribed.
	Notes []string `json:"notes,omitempty"`
}

// feedOut is the feed of s and fs as the API shows it at now; full shows
// the message of its last error too (the caller holds the token).
func feedOut(s ndjson.Subscription, fs catalog.FeedState, now time.Time, full bool) *FeedOut {
	if !full {
		fs.LastError = publicError(fs.LastError)
	}
	st := stats.StatusOf(s, fs, now)
	counts := fs.Counts
	if counts.ErrorCodes == nil {
		counts.ErrorCodes = map[string]int{}
	}
	base := "/feeds/" + s.FeedID
	return &FeedOut{Listing: sub.ListingOf(s, fs, now), Title: fs.Title, PollingIntervalSec: st.IntervalSec,
		LastSuccessAt: fs.LastSuccessAt, LastStatus: fs.LastStatus, Counts: counts,
		Links: map[string]string{"self": base, "entries": base + "/entries", "atom": base + "/feed.atom", "rss": base + "/feed.rss", "json": base + "/feed.json"}}
}

// The states GET /feeds?state= selects (stats.StatusOf).
var feedStates = []string{stats.StateEnabled, stats.StateFailing, stats.StateRefused, stats.StatePaused, stats.StateDisabled}

// errPageFull ends a scan of the feeds once a page is full.
var errPageFull = errors.New("page full")

// listFeeds is GET /feeds?label=&state=&limit=&cursor=.
func (s *Server) listFeeds(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	label := q.Get("label")
	if label != "" && !validLabel(w, r, "label", label) {
		return
	}
	state := q.Get("state")
	if state != "" && !contains(feedStates, state) {
		badParam(w, r, "state", "state "+strconv.Quote(state)+" is not a feed state: it is one of "+strings.Join(feedStates, ", "))
		return
	}
	limit, ok := limitParam(w, r, catalog.DefaultLimit, catalog.MaxLimit)
	if !ok {
		return
	}
	cursor := q.Get("cursor")
	if cursor != "" && !ndjson.IsFeedID(cursor) {
		badParam(w, r, "cursor", "cursor "+strconv.Quote(cursor)+" is not one a page of feeds gave (a feed id)")
		return
	}
	now := s.cfg.Now()
	var eq catalog.EntryQuery
	if !readerQuery(w, r, &eq) {
		return
	}
	var unread map[string]catalog.Unread
	if eq.Reader != "" {
		var err error
		if unread, err = s.unreadCounts(r.Context(), eq.Reader, now); err != nil {
			s.serverError(w, r, err)
			return
		}
	}
	page := []*FeedOut{}
	full := s.holdsToken(r)
	var next string
	skipping := cursor != ""
	err := s.cat.Feeds(r.Context(), catalog.FeedFilter{Label: label}, func(f *catalog.Feed) error {
		if skipping {
			skipping = f.Sub.FeedID != cursor
			return nil
		}
		if state != "" && stats.StatusOf(f.Sub, f.State, now).State != state {
			return nil
		}
		if len(page) == limit {
			next = page[len(page)-1].FeedID
			return errPageFull
		}
		out := feedOut(cloneSub(f.Sub), f.State, now, full)
		if unread != nil {
			n := unread[f.Sub.FeedID].Count
			out.Unread = &n
		}
		page = append(page, out)
		return nil
	})
	if err != nil && !errors.Is(err, errPageFull) {
		s.serverError(w, r, err)
		return
	}
	if skipping {
		badParam(w, r, "cursor", "cursor "+cursor+" names a feed no longer subscribed (or not of this list): start from the first page")
		return
	}
	if err := s.withPush(r.Context(), page...); err != nil {
		s.serverError(w, r, err)
		return
	}
	out := struct {
		Feeds []*FeedOut `json:"feeds"`
		Next  string     `json:"next,omitempty"`
	}{Feeds: page}
	if next != "" {
		out.Next = nextURL(r, "cursor", next)
		w.Header().Set("Link", "<"+s.absolute(r, out.Next)+`>; rel="next"`)
	}
	s.sendJSON(w, r, http.StatusOK, out, time.Time{})
}

// cloneSub copies what Feeds reuses.
func cloneSub(s ndjson.Subscription) ndjson.Subscription {
	s.Labels = append([]string(nil), s.Labels...)
	return s
}

// feedParam reads the path's feed id, or a unique prefix of one of 4
// characters or more (as feed-sub takes them); false when the request is
// answered.
func (s *Server) feedParam(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	if ndjson.IsFeedID(id) {
		return id, true
	}
	if len(id) < 4 || len(id) > 35 || strings.Trim(id, "0123456789abcdef-") != "" {
		writeProblem(w, r, Problem{Title: "bad feed id", Status: http.StatusBadRequest, Field: "id",
			Detail: "feed id " + strconv.Quote(clip(id)) + " is not one: a feed id is a UUID in lower case, as GET /feeds lists them, or 4 characters or more of its start"})
		return "", false
	}
	subs, err := s.cat.Subscriptions(r.Context())
	if err != nil {
		s.serverError(w, r, err)
		return "", false
	}
	var matches []string
	for _, sb := range subs {
		if strings.HasPrefix(sb.FeedID, id) {
			matches = append(matches, sb.FeedID)
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], true
	case 0:
		problem(w, r, http.StatusNotFound, "no such feed", "no subscribed feed's id begins "+id+": GET /feeds lists them")
	default:
		problem(w, r, http.StatusConflict, "ambiguous feed id", id+" begins the ids of "+strconv.Itoa(len(matches))+" feeds: "+
			strings.Join(matches[:min(10, len(matches))], ", ")+": give more of it")
	}
	return "", false
}

// feed reads a subscription and its state; false when the request is
// answered (404 for a feed not subscribed).
func (s *Server) feed(w http.ResponseWriter, r *http.Request, id string) (ndjson.Subscription, catalog.FeedState, bool) {
	sb, ok, err := s.cat.Subscription(r.Context(), id)
	if err != nil {
		s.serverError(w, r, err)
		return sb, catalog.FeedState{}, false
	}
	if !ok {
		problem(w, r, http.StatusNotFound, "no such feed", "no feed "+id+" is subscribed: GET /feeds lists those that are")
		return sb, catalog.FeedState{}, false
	}
	fs, _, err := s.cat.State(r.Context(), id)
	if err != nil {
		s.serverError(w, r, err)
		return sb, fs, false
	}
	return sb, fs, true
}

// getFeed is GET /feeds/{id}.
func (s *Server) getFeed(w http.ResponseWriter, r *http.Request) {
	id, ok := s.feedParam(w, r)
	if !ok {
		return
	}
	sb, fs, ok := s.feed(w, r, id)
	if !ok {
		return
	}
	out := feedOut(sb, fs, s.cfg.Now(), s.holdsToken(r))
	if err := s.withPush(r.Context(), out); err != nil {
		s.serverError(w, r, err)
		return
	}
	s.sendJSON(w, r, http.StatusOK, out, fs.LastFetchAt.Time)
}

// privateAllowed answers a request to let a feed reach private addresses
// that this server does not take, and reports whether it does: only with
// --allow-private, and only from the token's holder (every write of this
// API is).
func (s *Server) privateAllowed(w http.ResponseWriter, r *http.Request) bool {
	if s.cfg.AllowPrivate {
		return true
	}
	problem(w, r, http.StatusForbidden, "private addresses refused", "this feed-serve takes no feed on a private address "+
		"(allow_private): start it with --allow-private to let the token's holder add them, or use feed-sub add --allow-private")
	return false
}

// subConfig is the configuration of the functions feed-sub uses; what
// they say goes to msg.
func (s *Server) subConfig(msg *bytes.Buffer) sub.Config {
	return sub.Config{Store: s.cfg.Store, Catalog: s.cat, Out: &bytes.Buffer{}, Msg: msg, Log: s.cfg.Log, Now: s.cfg.Now}
}

// notes are the lines feed-sub would have printed, for the answer.
func notes(msg *bytes.Buffer) []string {
	var out []string
	sc := bufio.NewScanner(msg)
	for sc.Scan() {
		if l := strings.TrimSpace(strings.TrimPrefix(sc.Text(), "feed-sub: ")); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// subError answers a request whose change feed-sub's functions refused.
func (s *Server) subError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, catalog.ErrNoSuchSubscription):
		problem(w, r, http.StatusNotFound, "no such feed", err.Error())
	case errors.Is(err, sub.ErrInvalid):
		problem(w, r, http.StatusUnprocessableEntity, "invalid subscription", err.Error())
	default:
		s.serverError(w, r, err)
	}
}

// bodyError answers a request whose body could not be read.
func bodyError(w http.ResponseWriter, r *http.Request, err error) {
	var eb *errBody
	if errors.As(err, &eb) {
		status := http.StatusBadRequest
		if strings.HasPrefix(eb.Msg, "the body is over") {
			status = http.StatusRequestEntityTooLarge
		}
		writeProblem(w, r, Problem{Title: "bad request body", Status: status, Detail: eb.Msg, Field: eb.Field})
		return
	}
	problem(w, r, http.StatusBadRequest, "bad request body", err.Error())
}

// wantJSON refuses a body that says it is not JSON.
func wantJSON(w http.ResponseWriter, r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if ct == "" || strings.HasPrefix(ct, "application/json") || strings.HasPrefix(ct, "application/merge-patch+json") {
		return true
	}
	problem(w, r, http.StatusUnsupportedMediaType, "not JSON", "the body is "+strconv.Quote(ct)+": send JSON, Content-Type: application/json")
	return false
}

// addFeed is POST /feeds: feed-sub add.
func (s *Server) addFeed(w http.ResponseWriter, r *http.Request) {
	if !wantJSON(w, r) {
		return
	}
	var spec FeedSpec
	if err := decodeBody(r.Body, &spec); err != nil {
		bodyError(w, r, err)
		return
	}
	if strings.TrimSpace(spec.URL) == "" {
		badParam(w, r, "url", `member "url" is missing: the feed's URL (http or https)`)
		return
	}
	if spec.AllowPrivate && !s.privateAllowed(w, r) {
		return
	}
	var msg bytes.Buffer
	u := spec.URL
	if spec.Discover {
		// The URL is checked as add checks it before anything is fetched.
		if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			problem(w, r, http.StatusUnprocessableEntity, "invalid subscription", "url "+strconv.Quote(clip(u))+" is not an http or https URL")
			return
		}
		dc := s.cfg.Discover
		if spec.AllowPrivate {
			dc.Client = dc.Client.Private()
		}
		f, more, err := sub.Discovered(r.Context(), dc, u)
		if err != nil {
			problem(w, r, http.StatusUnprocessableEntity, "no feed found", err.Error())
			return
		}
		msg.WriteString("found " + f.URL + " (" + f.Format + ", " + strconv.Quote(f.Title) + ")")
		if more > 0 {
			msg.WriteString("; " + strconv.Itoa(more) + " more: feed-sub discover " + u)
		}
		msg.WriteString("\n")
		u = f.URL
	}
	sb, added, err := sub.Add(s.subConfig(&msg), sub.Spec{URL: u, Name: spec.Name, Labels: spec.Labels, Type: spec.Type,
		Interval: time.Duration(spec.IntervalSec) * time.Second, Cron: spec.Cron, UserAgent: spec.UserAgent, Headers: spec.Headers,
		BasicAuth: spec.BasicAuth, Scrape: spec.Scrape, Fulltext: spec.Fulltext, AllowPrivate: spec.AllowPrivate, Media: spec.Media,
		Push: spec.Push, Backfill: spec.Backfill})
	if err != nil {
		s.subError(w, r, err)
		return
	}
	fs, _, err := s.cat.State(r.Context(), sb.FeedID)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	out := feedOut(sb, fs, s.cfg.Now(), true) // a write: the caller holds the token
	out.Notes = notes(&msg)
	if err := s.withPush(r.Context(), out); err != nil {
		s.serverError(w, r, err)
		return
	}
	status := http.StatusOK
	if added {
		status = http.StatusCreated
		w.Header().Set("Location", "/feeds/"+sb.FeedID)
	}
	s.sendJSON(w, r, status, out, time.Time{})
}

// patchFeed is PATCH /feeds/{id}: feed-sub set, then disable or enable,
// then pause or resume, each as feed-sub does it. The settings are
// checked before anything changes; a later step that fails leaves the
// earlier ones made, and says so.
func (s *Server) patchFeed(w http.ResponseWriter, r *http.Request) {
	id, ok := s.feedParam(w, r)
	if !ok || !wantJSON(w, r) {
		return
	}
	var p FeedPatch
	if err := decodeBody(r.Body, &p); err != nil {
		bodyError(w, r, err)
		return
	}
	until, pause, err := p.pausedUntil()
	if err != nil {
		bodyError(w, r, err)
		return
	}
	scrape, setScrape, err := p.scrape()
	if err != nil {
		bodyError(w, r, err)
		return
	}
	mediaSettings, setMedia, err := p.media()
	if err != nil {
		bodyError(w, r, err)
		return
	}
	if p.AllowPrivate != nil && *p.AllowPrivate && !s.privateAllowed(w, r) {
		return
	}
	c := sub.Changes{Name: p.Name, Labels: p.Labels, AddLabels: p.AddLabels, RmLabels: p.RmLabels, Type: p.Type,
		Fulltext: p.Fulltext, UserAgent: p.UserAgent, Headers: p.Headers, BasicAuth: p.BasicAuth, AllowPrivate: p.AllowPrivate, Overrides: sub.Overrides{
			Interval: seconds(p.IntervalSec), Min: seconds(p.MinIntervalSec), Max: seconds(p.MaxIntervalSec), Cron: p.Cron},
		Push: p.Push, Backfill: p.Backfill, NewSecret: p.NewSecret}
	if setScrape {
		c.Scrape = func(*ndjson.ScrapeConfig) *ndjson.ScrapeConfig { return scrape }
	}
	if setMedia {
		c.Media = func(*ndjson.MediaSettings) *ndjson.MediaSettings { return mediaSettings }
	}
	settings := setScrape || setMedia || c.Name != nil || c.Labels != nil || len(c.AddLabels) > 0 || len(c.RmLabels) > 0 || c.Type != nil ||
		c.Fulltext != nil || c.UserAgent != nil || c.Headers != nil || c.BasicAuth != nil || c.AllowPrivate != nil || p.IntervalSec != nil ||
		p.MinIntervalSec != nil || p.MaxIntervalSec != nil || p.Cron != nil || p.Push != nil || p.Backfill != nil || p.NewSecret
	if !settings && p.Disabled == nil && !pause {
		problem(w, r, http.StatusUnprocessableEntity, "nothing to change", "the body changes nothing: give a member to change ("+
			strings.Join(members(&p), ", ")+")")
		return
	}
	if _, _, ok := s.feed(w, r, id); !ok {
		return
	}
	var msg bytes.Buffer
	cfg := s.subConfig(&msg)
	refs := []string{id}
	if settings {
		if err := sub.Set(cfg, refs, c); err != nil {
			s.subError(w, r, err)
			return
		}
	}
	if p.Disabled != nil {
		if *p.Disabled {
			err = sub.SetDisabled(cfg, refs, true)
		} else {
			err = sub.Enable(cfg, refs, s.cfg.Sched)
		}
		if err != nil {
			s.partial(w, r, err, &msg)
			return
		}
	}
	if pause {
		if err := sub.Pause(cfg, refs, until); err != nil {
			s.partial(w, r, err, &msg)
			return
		}
	}
	s.answerFeed(w, r, id, &msg)
}

// partial answers a PATCH whose later step failed after earlier ones
// changed the feed.
func (s *Server) partial(w http.ResponseWriter, r *http.Request, err error, msg *bytes.Buffer) {
	if done := notes(msg); len(done) > 0 {
		err = errors.New(err.Error() + " (done before: " + strings.Join(done, "; ") + ")")
	}
	s.subError(w, r, err)
}

// answerFeed answers a change with the feed as it is now.
func (s *Server) answerFeed(w http.ResponseWriter, r *http.Request, id string, msg *bytes.Buffer) {
	sb, fs, ok := s.feed(w, r, id)
	if !ok {
		return
	}
	out := feedOut(sb, fs, s.cfg.Now(), true) // a write: the caller holds the token
	out.Notes = notes(msg)
	if err := s.withPush(r.Context(), out); err != nil {
		s.serverError(w, r, err)
		return
	}
	s.sendJSON(w, r, http.StatusOK, out, time.Time{})
}

func seconds(n *int) *time.Duration {
	if n == nil {
		return nil
	}
	d := time.Duration(*n) * time.Second
	return &d
}

// deleteFeed is DELETE /feeds/{id}: feed-sub rm. The stored entries stay.
func (s *Server) deleteFeed(w http.ResponseWriter, r *http.Request) {
	id, ok := s.feedParam(w, r)
	if !ok {
		return
	}
	var msg bytes.Buffer
	if err := sub.Remove(s.subConfig(&msg), []string{id}); err != nil {
		s.subError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// refetchFeed is POST /feeds/{id}/refetch: feed-sub refetch, the manual
// nudge; the next feed-due lists the feed.
func (s *Server) refetchFeed(w http.ResponseWriter, r *http.Request) {
	id, ok := s.feedParam(w, r)
	if !ok {
		return
	}
	var msg bytes.Buffer
	if err := sub.Refetch(s.subConfig(&msg), []string{id}, s.cfg.Sched); err != nil {
		s.subError(w, r, err)
		return
	}
	s.answerFeed(w, r, id, &msg)
}

// backfillFeed is POST /feeds/{id}/backfill: feed-sub backfill, a walk of
// the feed's archive asked for by hand.
func (s *Server) backfillFeed(w http.ResponseWriter, r *http.Request) {
	id, ok := s.feedParam(w, r)
	if !ok {
		return
	}
	var msg bytes.Buffer
	if err := sub.Backfill(s.subConfig(&msg), []string{id}); err != nil {
		s.subError(w, r, err)
		return
	}
	s.answerFeed(w, r, id, &msg)
}

// Query parameters.

func limitParam(w http.ResponseWriter, r *http.Request, def, max int) (int, bool) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		badParam(w, r, "limit", "limit "+strconv.Quote(clip(v))+" is not a number from 1 to "+strconv.Itoa(max))
		return 0, false
	}
	return n, true
}

// validLabel checks a label from a request: the labels feed-sub keeps
// are any text, but one that names a file or a path is refused here, as
// publish refuses it.
func validLabel(w http.ResponseWriter, r *http.Request, field, label string) bool {
	if msg := labelProblem(label); msg != "" {
		badParam(w, r, field, "label "+strconv.Quote(clip(label))+" "+msg)
		return false
	}
	return true
}

// labelProblem says what makes a label unfit for a URL or a file name; ""
// for none.
func labelProblem(label string) string {
	switch {
	case label == "":
		return "is empty"
	case len(label) > 200:
		return "is longer than 200 bytes"
	case strings.ContainsAny(label, "/\\"):
		return "has a slash in it: such a label has no feed of its own"
	case label == "." || label == ".." || strings.HasPrefix(label, "."):
		return "starts with a dot: such a label has no feed of its own"
	case strings.IndexFunc(label, func(r rune) bool { return r < 0x20 || r == 0x7f || r == 0xfffd }) >= 0:
		return "has a control character in it"
	}
	return ""
}

// nextURL is the request's path and query with param set to value.
func nextURL(r *http.Request, param, value string) string {
	q := r.URL.Query()
	q.Set(param, value)
	return r.URL.EscapedPath() + "?" + q.Encode()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// clip shortens an untrusted value for a message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
