package serve

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/feedwrite"
	"github.com/feedpipe/feedpipe/internal/media"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// mediaRate is the slowest a client may read a stored file: its answer
// may take a minute, and as long again as the file takes at this rate.
const mediaRate = 128 << 10

// getMedia is GET /media/{sha256}: a file feed-media stored, by its
// SHA-256, with Range requests (RFC 9110 §14), its ETag (the SHA-256
// itself, strong: the bytes never change) and the Content-Type it was
// served with, but never as a type a browser runs or renders as a page
// (rawType, as /raw). Only a file a row of the catalog says is stored is
// served: a download under way is a partial file no request reaches.
func (s *Server) getMedia(w http.ResponseWriter, r *http.Request) {
	sum := r.PathValue("sha256")
	if !ndjson.IsSHA256(sum) {
		writeProblem(w, r, Problem{Title: "bad media id", Status: http.StatusBadRequest, Field: "sha256",
			Detail: "media id " + strconv.Quote(clip(sum)) + " is not one: a stored file is named by its SHA-256, 64 lower-case hex digits, as an entry's media list it"})
		return
	}
	ct, at, ok, err := s.cat.MediaType(r.Context(), sum)
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	if !ok {
		problem(w, r, http.StatusNotFound, "no such media", "no file "+sum+" is stored: it was never downloaded, or was pruned")
		return
	}
	f, err := s.cfg.Store.OpenMedia(sum)
	if errors.Is(err, fs.ErrNotExist) {
		problem(w, r, http.StatusNotFound, "no such media", "the file "+sum+" is no longer in the store (pruned)")
		return
	}
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		s.serverError(w, r, err)
		return
	}
	h := w.Header()
	ct, runnable := rawType(ct)
	if runnable {
		h.Set("Content-Disposition", "attachment")
	}
	h.Set("Content-Type", ct)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	h.Set("ETag", `"`+sum+`"`)
	h.Set("Cache-Control", "public, max-age=31536000, immutable") // a file never changes
	// A large file takes longer than the server's write timeout.
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(time.Minute + time.Duration(fi.Size()/mediaRate)*time.Second))
	http.ServeContent(w, r, "", at, f)
}

// MediaOut is one file of an entry, as its API record lists it: the file
// it asks for, and what feed-media made of it.
type MediaOut struct {
	URL         string      `json:"url"`
	Kind        string      `json:"kind"`
	State       string      `json:"state"` // queued, stored, refused or failed
	Href        string      `json:"href,omitempty"`
	SHA256      string      `json:"sha256,omitempty"`
	Bytes       int64       `json:"bytes"`
	ContentType string      `json:"content_type"`
	Reason      string      `json:"reason"`
	Message     string      `json:"message"`
	Attempts    int         `json:"attempts"`
	FinishedAt  ndjson.Time `json:"finished_at"`
}

// entryMedia is the media list of an entry's record: the message of a
// file not stored only to the token's holder (it can name an address of
// the server's own network), as a fetch's error.
func (s *Server) entryMedia(r *http.Request, feedID, uid string) ([]MediaOut, error) {
	files, err := s.cat.EntryMedia(r.Context(), feedID, uid)
	if err != nil || len(files) == 0 {
		return nil, err
	}
	token := s.holdsToken(r)
	out := make([]MediaOut, 0, len(files))
	for _, f := range files {
		m := MediaOut{URL: f.URL, Kind: f.Kind, State: f.State, SHA256: f.SHA256, Bytes: f.Bytes, ContentType: f.ContentType,
			Reason: f.Reason, Message: f.Message, Attempts: f.Attempts, FinishedAt: ndjson.At(f.Finished)}
		if f.SHA256 != "" {
			m.Href = s.absolute(r, "/media/"+f.SHA256)
		}
		if m.Message != "" && !token {
			m.Message = hiddenMessage
		}
		out = append(out, m)
	}
	return out, nil
}

// pointEnclosures points the enclosures of a meta-feed's entries whose
// files are stored at their stored copies, under base (--media-url): base
// + "/" + the SHA-256, with the stored type and size.
func pointEnclosures(ctx context.Context, cat *catalog.Catalog, f *feedwrite.Feed, base string) error {
	if base == "" || len(f.Entries) == 0 {
		return nil
	}
	refs := make([]ndjson.EntryRef, len(f.Entries))
	for i, e := range f.Entries {
		refs[i] = ndjson.EntryRef{FeedID: e.FeedID, EntryUID: e.EntryUID}
	}
	stored, err := cat.StoredMedia(ctx, refs)
	if err != nil {
		return err
	}
	base = strings.TrimRight(base, "/")
	for i := range f.Entries {
		e := &f.Entries[i]
		files := stored[[2]string{e.FeedID, e.EntryUID}]
		if len(files) == 0 {
			continue
		}
		encs := make([]ndjson.Enclosure, len(e.Enclosures))
		for k, enc := range e.Enclosures {
			u := media.Absolute(enc.URL, e.CanonicalLink)
			for _, m := range files {
				if m.Kind == ndjson.MediaEnclosure && m.URL == u {
					enc = ndjson.Enclosure{URL: base + "/" + m.SHA256, Type: m.ContentType, Length: m.Bytes}
					break
				}
			}
			encs[k] = enc
		}
		e.Enclosures = encs
	}
	return nil
}
