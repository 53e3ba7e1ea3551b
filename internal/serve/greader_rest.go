package serve

import (
	"net/http"
	"strconv"

	"github.com/feedpipe/feedpipe/internal/catalog"
)

// Read state in the REST API: ?reader=NAME gives the entries of a list
// that reader's marks ("read", "starred") and the feeds of GET /feeds
// that reader's unread count; unread=true and starred=true keep only the
// entries the reader has not read, or has starred (the reader is
// "default" when none is named). The same marks the Google Reader API
// and feed-read make, so that one can check one against the other.

// restReader is the reader a request names: reader=, or the default reader
// when unread= or starred= asks for marks; "" for none.
func restReader(r *http.Request) string {
	q := r.URL.Query()
	if v := q.Get("reader"); v != "" {
		return v
	}
	if q.Get("unread") != "" || q.Get("starred") != "" {
		return catalog.DefaultReader
	}
	return ""
}

// readerQuery reads reader, unread and starred into eq; false when the
// request is answered.
func readerQuery(w http.ResponseWriter, r *http.Request, eq *catalog.EntryQuery) bool {
	eq.Reader = restReader(r)
	if eq.Reader == "" {
		return true
	}
	if err := catalog.CheckReader(eq.Reader); err != nil {
		badParam(w, r, "reader", "reader "+strconv.Quote(clip(eq.Reader))+" is not a reader's name: 1 to 64 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit")
		return false
	}
	q := r.URL.Query()
	for _, p := range []struct {
		name string
		to   *bool
	}{{"unread", &eq.Unread}, {"starred", &eq.Starred}} {
		switch v := q.Get(p.name); v {
		case "", "false", "0":
		case "true", "1":
			*p.to = true
		default:
			badParam(w, r, p.name, p.name+" "+strconv.Quote(clip(v))+" is not true or false")
			return false
		}
	}
	return true
}
