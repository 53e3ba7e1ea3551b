package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"
)

var errNoCatalog = errors.New("serve: no catalog")

// Problem is an RFC 9457 problem detail: what every error of the API
// answers, as application/problem+json.
type Problem struct {
	Type     string `json:"type"`     // "about:blank": the status says what kind
	Title    string `json:"title"`    // short, the same for every problem of its kind
	Status   int    `json:"status"`   // the HTTP status
	Detail   string `json:"detail"`   // what went wrong with this request, and what to do about it
	Instance string `json:"instance"` // the request's path
	// Field names the query parameter or body member at fault; "" for none.
	Field string `json:"field,omitempty"`
}

// problem answers a request with a problem detail.
func problem(w http.ResponseWriter, r *http.Request, status int, title, detail string) {
	writeProblem(w, r, Problem{Type: "about:blank", Title: title, Status: status, Detail: detail})
}

func writeProblem(w http.ResponseWriter, r *http.Request, p Problem) {
	if p.Type == "" {
		p.Type = "about:blank"
	}
	p.Instance = r.URL.Path
	b, _ := json.Marshal(p)
	h := w.Header()
	h.Del("ETag")
	h.Del("Last-Modified")
	h.Set("Content-Type", "application/problem+json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(p.Status)
	if r.Method != http.MethodHead {
		w.Write(append(b, '\n'))
	}
}

// badParam answers a request whose query parameter or body member field
// is wrong.
func badParam(w http.ResponseWriter, r *http.Request, field, detail string) {
	writeProblem(w, r, Problem{Title: "bad request", Status: http.StatusBadRequest, Detail: detail, Field: field})
}

// serverError answers a request the server failed, logging why; the
// client learns only that it failed.
func (s *Server) serverError(w http.ResponseWriter, r *http.Request, err error) {
	s.cfg.Log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	problem(w, r, http.StatusInternalServerError, "internal error", "the server failed to answer: its log says why ("+
		strings.SplitN(err.Error(), ":", 2)[0]+")")
}

// sendJSON answers with v as JSON.
func (s *Server) sendJSON(w http.ResponseWriter, r *http.Request, status int, v any, modified time.Time) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // data, not a page: "&" stays "&"
	if err := enc.Encode(v); err != nil {
		s.serverError(w, r, err)
		return
	}
	send(w, r, status, "application/json", b.Bytes(), modified)
}

// send answers a GET with body, an ETag (a hash of it) and, when modified
// is set, Last-Modified; a GET whose If-None-Match or If-Modified-Since
// says it has this body already gets 304 Not Modified.
func send(w http.ResponseWriter, r *http.Request, status int, contentType string, body []byte, modified time.Time) {
	sendEncoded(w, r, status, contentType, body, body, modified)
}

// sendEncoded is send for a body sent encoded as payload (gzip, with its
// Content-Encoding set): the ETag is the body's.
func sendEncoded(w http.ResponseWriter, r *http.Request, status int, contentType string, body, payload []byte, modified time.Time) {
	sendTagged(w, r, status, contentType, etagOf(body), payload, modified)
}

// etagOf is the weak ETag of a body: a hash of it.
func etagOf(body []byte) string { return `W/"` + strconv.FormatUint(xxhash.Sum64(body), 16) + `"` }

// sendTagged is sendEncoded with the body's ETag known.
func sendTagged(w http.ResponseWriter, r *http.Request, status int, contentType, etag string, payload []byte, modified time.Time) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("X-Content-Type-Options", "nosniff")
	if status == http.StatusOK && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		h.Set("ETag", etag)
		if h.Get("Cache-Control") == "" {
			h.Set("Cache-Control", "no-cache") // kept, asked about again each time
		}
		if !modified.IsZero() {
			h.Set("Last-Modified", modified.UTC().Format(http.TimeFormat))
		}
		if notModified(r, etag, modified) {
			h.Del("Content-Type")
			h.Del("Content-Encoding")
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	h.Set("Content-Length", strconv.Itoa(len(payload)))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		w.Write(payload)
	}
}

// notModified reports whether the request's validators match (RFC 9110
// §13.1): If-None-Match, weakly compared, else If-Modified-Since.
func notModified(r *http.Request, etag string, modified time.Time) bool {
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		for _, t := range strings.Split(inm, ",") {
			t = strings.TrimSpace(t)
			if t == "*" || strings.TrimPrefix(t, "W/") == strings.TrimPrefix(etag, "W/") {
				return true
			}
		}
		return false
	}
	if ims := r.Header.Get("If-Modified-Since"); ims != "" && !modified.IsZero() {
		t, err := http.ParseTime(ims)
		return err == nil && !modified.Truncate(time.Second).After(t)
	}
	return false
}
