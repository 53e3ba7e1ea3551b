package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// EntryOut is a stored entry as the API shows it: its latest version's
// record as entries/ holds it, and how many versions were stored.
type EntryOut struct {
	ndjson.Entry
	Versions int `json:"versions"`
}

// VersionOut is one stored version of an entry: its number, hash, when it
// was stored, and its record.
type VersionOut struct {
	Version     int           `json:"version"`
	ContentHash string        `json:"content_hash"`
	StoredAt    ndjson.Time   `json:"stored_at"`
	Entry       *ndjson.Entry `json:"entry"` // null when its line is gone (pruned)
}

// entryQuery reads since, until, order, limit and cursor (and q, for
// /entries); false when the request is answered.
func entryQuery(w http.ResponseWriter, r *http.Request, search bool) (catalog.EntryQuery, bool) {
	q := r.URL.Query()
	var eq catalog.EntryQuery
	for _, p := range []struct {
		name string
		t    *time.Time
	}{{"since", &eq.Since}, {"until", &eq.Until}} {
		v := q.Get(p.name)
		if v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			badParam(w, r, p.name, p.name+" "+strconv.Quote(clip(v))+" is not a time: write it as RFC 3339, such as 2026-11-21T08:00:00Z")
			return eq, false
		}
		*p.t = t
	}
	eq.Order = q.Get("order")
	if eq.Order != "" && eq.Order != catalog.OrderPublished && eq.Order != catalog.OrderFirstSeen {
		badParam(w, r, "order", "order "+strconv.Quote(clip(eq.Order))+" is not one: it is published (the default) or first_seen")
		return eq, false
	}
	var ok bool
	if eq.Limit, ok = limitParam(w, r, catalog.DefaultLimit, catalog.MaxLimit); !ok {
		return eq, false
	}
	eq.Cursor = q.Get("cursor")
	if eq.Cursor != "" && !IsCursor(eq.Cursor) {
		badParam(w, r, "cursor", "cursor "+strconv.Quote(clip(eq.Cursor))+" is not one a page of entries gave: take it from the next link of the page before")
		return eq, false
	}
	if !readerQuery(w, r, &eq) {
		return eq, false
	}
	if search {
		eq.Text = q.Get("q")
		if len(eq.Text) > 500 {
			badParam(w, r, "q", "q is longer than 500 bytes: search for fewer words")
			return eq, false
		}
	}
	return eq, true
}

// IsCursor reports whether s has the shape of a cursor the catalog
// gives: two decimal numbers, a time and an id, joined by a dot.
func IsCursor(s string) bool {
	a, b, ok := strings.Cut(s, ".")
	return ok && isNumber(a, true) && isNumber(b, false)
}

func isNumber(s string, signed bool) bool {
	if signed && strings.HasPrefix(s, "-") {
		s = s[1:]
	}
	if s == "" || len(s) > 19 {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	_, err := strconv.ParseInt(s, 10, 64)
	return err == nil
}

// feedEntries is GET /feeds/{id}/entries.
func (s *Server) feedEntries(w http.ResponseWriter, r *http.Request) {
	id, ok := s.feedParam(w, r)
	if !ok {
		return
	}
	eq, ok := entryQuery(w, r, false)
	if !ok {
		return
	}
	page, err := s.cat.FeedEntries(r.Context(), id, eq)
	// An empty page of a feed the store knows nothing of is a 404.
	if err == nil && len(page.Entries) == 0 && eq.Cursor == "" && !s.known(w, r, id) {
		return
	}
	dependsOn(w, id)
	s.sendEntries(w, r, page, err)
}

// known answers 404 for a feed the store knows nothing of: neither
// subscribed nor with entries; a feed removed keeps its entries.
func (s *Server) known(w http.ResponseWriter, r *http.Request, id string) bool {
	if _, ok, err := s.cat.Subscription(r.Context(), id); err != nil {
		s.serverError(w, r, err)
		return false
	} else if ok {
		return true
	}
	page, err := s.cat.FeedEntries(r.Context(), id, catalog.EntryQuery{Limit: 1})
	if err != nil {
		s.serverError(w, r, err)
		return false
	}
	if len(page.Entries) == 0 {
		problem(w, r, http.StatusNotFound, "no such feed", "the store knows no feed "+id+": GET /feeds lists those subscribed")
		return false
	}
	return true
}

// listEntries is GET /entries?label=&q=&since=&until=&order=&limit=&cursor=.
func (s *Server) listEntries(w http.ResponseWriter, r *http.Request) {
	eq, ok := entryQuery(w, r, true)
	if !ok {
		return
	}
	var page catalog.EntryPage
	var err error
	if label := r.URL.Query().Get("label"); label != "" {
		if !validLabel(w, r, "label", label) {
			return
		}
		page, err = s.cat.LabelEntries(r.Context(), label, eq)
	} else {
		page, err = s.cat.AllEntries(r.Context(), eq)
	}
	s.sendEntries(w, r, page, err)
}

// sendEntries answers with a page of entries, their records read from
// entries/.
func (s *Server) sendEntries(w http.ResponseWriter, r *http.Request, page catalog.EntryPage, err error) {
	if errors.Is(err, catalog.ErrBadQuery) {
		field := "cursor"
		if strings.Contains(err.Error(), "search") {
			field = "q"
		}
		badParam(w, r, field, strings.TrimPrefix(strings.TrimPrefix(err.Error(), "catalog: "), catalog.ErrBadQuery.Error()+": "))
		return
	}
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	// Each entry is its line of entries/ as it is, with its count of
	// versions added: no decoding, no encoding.
	var b bytes.Buffer
	b.WriteString(`{"entries":[`)
	var modified time.Time
	n := 0
	marks := restReader(r) != ""
	for _, row := range page.Entries {
		line, err := s.entryLine(row)
		if err != nil {
			s.cfg.Log.Warn("an indexed entry cannot be read", "feed_id", row.FeedID, "entry_uid", row.UID, "err", err)
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.Write(line[:len(line)-1])
		b.WriteString(`,"versions":`)
		b.WriteString(strconv.Itoa(row.Versions))
		if marks {
			b.WriteString(`,"read":` + strconv.FormatBool(row.Read) + `,"starred":` + strconv.FormatBool(row.Starred))
		}
		b.WriteByte('}')
		if row.LastSeen.After(modified) {
			modified = row.LastSeen
		}
	}
	b.WriteByte(']')
	if page.Next != "" {
		next := nextURL(r, "cursor", page.Next)
		b.WriteString(`,"next":`)
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // "&" stays "&", as in every answer
		enc.Encode(next)
		b.Truncate(b.Len() - 1) // Encode's newline
		w.Header().Set("Link", "<"+s.absolute(r, next)+`>; rel="next"`)
	}
	b.WriteString("}\n")
	send(w, r, http.StatusOK, "application/json", b.Bytes(), modified)
}

// withVersions is an entry's line with its count of versions added.
func withVersions(line []byte, versions int) json.RawMessage {
	out := make([]byte, 0, len(line)+20)
	out = append(out, line[:len(line)-1]...)
	out = append(out, `,"versions":`...)
	out = strconv.AppendInt(out, int64(versions), 10)
	return append(out, '}')
}

// getEntry is GET /entries/{uid}?feed_id=: the entry's latest version and
// every version stored. Two feeds' entries may share a uid: feed_id picks
// one; without it, the first stored is shown and also_in names the others.
func (s *Server) getEntry(w http.ResponseWriter, r *http.Request) {
	uid := r.PathValue("uid")
	if !ndjson.IsEntryUID(uid) {
		writeProblem(w, r, Problem{Title: "bad entry uid", Status: http.StatusBadRequest, Field: "uid",
			Detail: "entry uid " + strconv.Quote(clip(uid)) + " is not one: an entry uid is 16 lower-case hex digits"})
		return
	}
	feedID := r.URL.Query().Get("feed_id")
	if feedID != "" && !ndjson.IsFeedID(feedID) {
		badParam(w, r, "feed_id", "feed_id "+strconv.Quote(clip(feedID))+" is not a feed id (a UUID in lower case)")
		return
	}
	rows, versions, err := s.cat.EntriesByUID(r.Context(), uid)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	pick := -1
	var others []string
	for i, row := range rows {
		if pick < 0 && (feedID == "" || row.FeedID == feedID) {
			pick = i
		} else {
			others = append(others, row.FeedID)
		}
	}
	if pick < 0 {
		problem(w, r, http.StatusNotFound, "no such entry", "no entry "+uid+" is stored"+map[bool]string{true: " for feed " + feedID, false: ""}[feedID != ""])
		return
	}
	for _, row := range rows {
		dependsOn(w, row.FeedID) // also_in names the others
	}
	row := rows[pick]
	// The records are the lines of entries/ as they are (EntryOut and
	// VersionOut read them): nothing is decoded (the encoder checks each
	// is JSON).
	latest, err := s.entryLine(row)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	type version struct {
		Version     int             `json:"version"`
		ContentHash string          `json:"content_hash"`
		StoredAt    ndjson.Time     `json:"stored_at"`
		Entry       json.RawMessage `json:"entry"` // null when its line is gone (pruned)
	}
	out := struct {
		Entry    json.RawMessage `json:"entry"`
		History  []version       `json:"history"`
		AlsoIn   []string        `json:"also_in,omitempty"` // feeds with an entry of the same uid
		FeedLink string          `json:"feed"`
		Media    []MediaOut      `json:"media,omitempty"` // its files (feed-media)
	}{Entry: withVersions(latest, row.Versions), AlsoIn: others, FeedLink: "/feeds/" + row.FeedID}
	if out.Media, err = s.entryMedia(r, row.FeedID, uid); err != nil {
		s.serverError(w, r, err)
		return
	}
	for _, v := range versions[pick] {
		vo := version{Version: v.Version, ContentHash: v.Hash, StoredAt: ndjson.At(v.StoredAt), Entry: json.RawMessage("null")}
		if b, err := s.line(v.Location); err == nil && len(b) > 1 && b[0] == '{' && b[len(b)-1] == '}' &&
			bytes.Contains(b, []byte(`"entry_uid":"`+uid+`"`)) {
			vo.Entry = b
		}
		out.History = append(out.History, vo)
	}
	s.sendJSON(w, r, http.StatusOK, out, row.LastSeen)
}
