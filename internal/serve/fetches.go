package serve

import (
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// fetchParam reads the path's fetch id; false when the request is
// answered.
func fetchParam(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	if !ndjson.IsFetchID(id) {
		writeProblem(w, r, Problem{Title: "bad fetch id", Status: http.StatusBadRequest, Field: "id",
			Detail: "fetch id " + strconv.Quote(clip(id)) + " is not one: a fetch id is a UUID in lower case, as an entry's raw_ref.fetch_id"})
		return "", false
	}
	return id, true
}

// getFetch is GET /fetches/{fetch_id}: the fetch record as fetches/ holds
// it.
func (s *Server) getFetch(w http.ResponseWriter, r *http.Request) {
	id, ok := fetchParam(w, r)
	if !ok {
		return
	}
	f, ok, err := s.cat.FetchRecord(r.Context(), id)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	if !ok {
		problem(w, r, http.StatusNotFound, "no such fetch", "no fetch "+id+" is in the store (or it was pruned)")
		return
	}
	if !s.holdsToken(r) {
		f.Error = publicError(f.Error)
		if f.Parse != nil && f.Parse.Error != "" {
			f.Parse.Error = hiddenMessage
		}
	}
	b, err := ndjson.Marshal(f)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	dependsOn(w, f.Due.FeedID)
	send(w, r, http.StatusOK, "application/json", b, f.FetchedAt.Time)
}

// getRaw is GET /raw/{fetch_id}: the payload exactly as it was served,
// with its Content-Type. The store reads it by the key of its fetch
// record, checked (ndjson.IsRawKey) and below the store's root: no
// request names a file. What a browser makes of it is held back: it is
// never sniffed, and an HTML payload runs in a sandbox without scripts.
func (s *Server) getRaw(w http.ResponseWriter, r *http.Request) {
	id, ok := fetchParam(w, r)
	if !ok {
		return
	}
	f, ok, err := s.cat.FetchRecord(r.Context(), id)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	if !ok || f.BodyRef == nil {
		problem(w, r, http.StatusNotFound, "no such payload", "no payload of fetch "+id+" is in the store: the fetch is unknown, stored no body (a 304, an error), or was pruned")
		return
	}
	if !ndjson.IsRawKey(f.BodyRef.Key) {
		s.serverError(w, r, errBadKey)
		return
	}
	body, ct, ok, err := s.cat.Raw(r.Context(), id, MaxRawBytes)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	if !ok {
		problem(w, r, http.StatusNotFound, "no such payload", "the payload of fetch "+id+" is no longer in the store (pruned)")
		return
	}
	h := w.Header()
	ct, runnable := rawType(ct)
	if runnable {
		h.Set("Content-Disposition", "attachment")
	}
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	h.Set("X-Fetch-Url", f.URL)
	h.Set("Cache-Control", "public, max-age=31536000, immutable") // a payload never changes
	send(w, r, http.StatusOK, ct, body, f.FetchedAt.Time)
}

// rawType is the Content-Type a stored payload is served with: the one
// it was served with, but never a type a browser would run or render as
// a page of this site (HTML, XHTML, SVG, script): those are sent as
// application/octet-stream, runnable true, to be saved, not opened. (The
// sandbox policy and nosniff hold besides.)
func rawType(ct string) (string, bool) {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || ct == "" {
		return "application/octet-stream", false
	}
	switch {
	case mt == "text/html", mt == "application/xhtml+xml", mt == "image/svg+xml", mt == "text/xsl", mt == "application/xslt+xml",
		strings.Contains(mt, "javascript"), strings.Contains(mt, "ecmascript"), strings.HasSuffix(mt, "+html"):
		return "application/octet-stream", true
	}
	return ct, false
}

// hiddenMessage stands for a message of an error shown only with the
// token: it may name addresses of the server's own network.
const hiddenMessage = "(shown with the API token)"

// publicError is e as anyone may see it: its class and code, not its
// message.
func publicError(e *ndjson.Error) *ndjson.Error {
	if e == nil || e.Message == "" {
		return e
	}
	return &ndjson.Error{Class: e.Class, Code: e.Code, Message: hiddenMessage}
}

type keyError string

func (e keyError) Error() string { return string(e) }

// errBadKey is a fetch record whose body key is not a payload's.
const errBadKey = keyError("serve: a fetch record names a payload key of the wrong shape: refused")
