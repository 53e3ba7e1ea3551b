package serve

import (
	_ "embed"
	"net/http"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/cmdkit"
)

// openAPIDoc is the OpenAPI 3.1 description of every route, served at
// /openapi.json; a test holds it to the routes.
//
//go:embed openapi.json
var openAPIDoc []byte

// openAPI is GET /openapi.json.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	send(w, r, http.StatusOK, "application/json", openAPIDoc, time.Time{})
}

// healthz is GET /healthz: 200 when the catalog answers, 503 when not.
// It never needs the token.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if _, err := s.cat.Checkpoint(r.Context(), catalog.TapEvents); err != nil {
		s.cfg.Log.Error("health: the catalog does not answer", "err", err)
		problem(w, r, http.StatusServiceUnavailable, "unhealthy", "the store's catalog does not answer: the server's log says why")
		return
	}
	s.sendJSON(w, r, http.StatusOK, map[string]string{"status": "ok", "version": cmdkit.Version()}, time.Time{})
}
