package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// An event's id is where it ends in the store's events/: its day file's
// day and the offset just past its line, "2026-11-21:18230". The next
// event is the first line from there on, so an id resumes a stream
// (Last-Event-ID) or a listing (cursor) exactly after its event.

// EventID is the id of the event whose line ends at offset end of the
// events/ day file key.
func EventID(key string, end int64) string {
	return strings.TrimSuffix(strings.TrimPrefix(key, storedir.DirEvents+"/"), ".ndjson") + ":" + strconv.FormatInt(end, 10)
}

// ParseEventID reads an event id: the key of its events/ day file and the
// offset past its line; ok is false for anything not of that exact shape.
func ParseEventID(id string) (key string, offset int64, ok bool) {
	day, off, found := strings.Cut(id, ":")
	if !found || !ndjson.IsDay(day) || !isNumber(off, false) || len(off) > 1 && off[0] == '0' {
		return "", 0, false
	}
	n, err := strconv.ParseInt(off, 10, 64)
	if err != nil || n > 1<<50 {
		return "", 0, false
	}
	return storedir.DirEvents + "/" + day + ".ndjson", n, true
}

// eventLine is an event for the API: its line with its id as a first
// member.
func eventLine(id string, raw []byte) []byte {
	raw = bytes.TrimSpace(raw)
	out := make([]byte, 0, len(raw)+len(id)+10)
	out = append(out, `{"id":"`...)
	out = append(out, id...)
	out = append(out, '"')
	if len(raw) > 2 {
		out = append(out, ',')
	}
	return append(out, raw[1:]...)
}

// eventTime is when an event happened: its ingested_at, or at.
func eventTime(l ndjson.Line) time.Time {
	var t struct {
		IngestedAt ndjson.Time `json:"ingested_at"`
		At         ndjson.Time `json:"at"`
	}
	if l.Decode(&t) != nil {
		return time.Time{}
	}
	if !t.IngestedAt.IsZero() {
		return t.IngestedAt.Time
	}
	return t.At.Time
}

var errEnough = errors.New("enough")

// listEvents is GET /events?since=&cursor=&limit=: events as feed-store
// wrote them, oldest first, from a time (their ingested_at) or after an
// event id.
func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, ok := limitParam(w, r, 100, 1000)
	if !ok {
		return
	}
	file, off := "", int64(0)
	var since time.Time
	if c := q.Get("cursor"); c != "" {
		if file, off, ok = ParseEventID(c); !ok {
			badParam(w, r, "cursor", "cursor "+strconv.Quote(clip(c))+" is not an event id (YYYY-MM-DD:OFFSET, as an event's id)")
			return
		}
	} else if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			badParam(w, r, "since", "since "+strconv.Quote(clip(v))+" is not a time: write it as RFC 3339, such as 2026-11-21T08:00:00Z")
			return
		}
		since, file = t, storedir.DayFile(storedir.DirEvents, t)
	}
	var buf bytes.Buffer
	buf.WriteString(`{"events":[`)
	n, last := 0, ""
	_, _, err := s.cfg.Store.FollowLogs(storedir.DirEvents, file, off, func(key string, _, end int64, l ndjson.Line) error {
		if !since.IsZero() && eventTime(l).Before(since) {
			return nil
		}
		if n == limit {
			return errEnough
		}
		if n > 0 {
			buf.WriteByte(',')
		}
		last = EventID(key, end)
		buf.Write(eventLine(last, l.Raw))
		n++
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		s.serverError(w, r, err)
		return
	}
	buf.WriteString("]")
	if last != "" {
		// Where to go on from: a full page has more now; a short one
		// may have more later.
		next := nextURL(r, "cursor", last)
		buf.WriteString(`,"last_id":"` + last + `","next":`) // an event id is digits, dashes and a colon
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.Encode(next)
		buf.Truncate(buf.Len() - 1)
		if errors.Is(err, errEnough) {
			w.Header().Set("Link", "<"+s.absolute(r, next)+`>; rel="next"`)
		}
	}
	buf.WriteString("}\n")
	send(w, r, http.StatusOK, "application/json", buf.Bytes(), time.Time{})
}

// streamEvents is GET /events/stream: Server-Sent Events of what
// feed-store writes to events/, as it writes it. Each event's id resumes
// the stream after it (Last-Event-ID, or ?last_event_id=); without one
// the stream starts at the end of the log (?since= starts it at a time).
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request) {
	file, off := "", int64(0)
	var since time.Time
	resume := r.Header.Get("Last-Event-ID")
	if resume == "" {
		resume = r.URL.Query().Get("last_event_id")
	}
	switch v := r.URL.Query().Get("since"); {
	case resume != "":
		var ok bool
		if file, off, ok = ParseEventID(resume); !ok {
			badParam(w, r, "Last-Event-ID", "event id "+strconv.Quote(clip(resume))+" is not one this server gave (YYYY-MM-DD:OFFSET)")
			return
		}
	case v != "":
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			badParam(w, r, "since", "since "+strconv.Quote(clip(v))+" is not a time: write it as RFC 3339, such as 2026-11-21T08:00:00Z")
			return
		}
		since, file = t, storedir.DayFile(storedir.DirEvents, t)
	default:
		// From now on: past the last complete line of the newest file.
		files, err := s.cfg.Store.DayFiles(storedir.DirEvents)
		if err != nil {
			s.serverError(w, r, err)
			return
		}
		if len(files) > 0 {
			file = files[len(files)-1]
			if file, off, err = s.cfg.Store.FollowLogs(storedir.DirEvents, file, 0, func(string, int64, int64, ndjson.Line) error { return nil }); err != nil {
				s.serverError(w, r, err)
				return
			}
		}
	}
	rc := http.NewResponseController(w)
	rc.SetWriteDeadline(time.Time{}) // a stream lasts
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: pass it on as it comes
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "retry: %d\n\n", s.cfg.Poll.Milliseconds()*2)
	if rc.Flush() != nil {
		return
	}
	s.wg.Add(1)
	defer s.wg.Done()
	tick := time.NewTicker(s.cfg.Poll)
	defer tick.Stop()
	quiet := time.Now()
	for {
		sent := 0
		var err error
		file, off, err = s.cfg.Store.FollowLogs(storedir.DirEvents, file, off, func(key string, _, end int64, l ndjson.Line) error {
			if !since.IsZero() && eventTime(l).Before(since) {
				return nil
			}
			sent++
			_, err := fmt.Fprintf(w, "id: %s\nevent: %s\ndata: %s\n\n", EventID(key, end), sseField(l.Type), bytes.TrimSpace(l.Raw))
			return err
		})
		if err != nil {
			return // the client went away, or the log cannot be read: the client resumes
		}
		if sent == 0 && time.Since(quiet) >= s.cfg.Heartbeat {
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			sent = 1
		}
		if sent > 0 {
			quiet = time.Now()
			if rc.Flush() != nil {
				return
			}
		}
		select {
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// sseField keeps a value on its one line of the stream.
func sseField(s string) string {
	if strings.ContainsAny(s, "\r\n") {
		return "message"
	}
	return s
}
