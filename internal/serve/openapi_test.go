package serve

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestOpenAPI: openapi.json documents every route the server has and no
// other, each documented operation is answered by its route (never by
// "no such resource" or "method not allowed"), and every $ref resolves.
func TestOpenAPI(t *testing.T) {
	w := newWorld(t)
	var doc struct {
		OpenAPI    string                                `json:"openapi"`
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components map[string]map[string]json.RawMessage `json:"components"`
	}
	r := w.get("/openapi.json")
	r.json(t, &doc)
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q", doc.OpenAPI)
	}
	var documented []string
	for path, ops := range doc.Paths {
		for m := range ops {
			if m != "parameters" {
				documented = append(documented, strings.ToUpper(m)+" "+path)
			}
		}
	}
	var served []string
	for _, rt := range routes {
		paths := rt.docs
		if paths == nil {
			paths = []string{rt.pattern}
		}
		for _, p := range paths {
			served = append(served, rt.method+" "+p)
		}
	}
	slices.Sort(documented)
	slices.Sort(served)
	if !slices.Equal(documented, served) {
		t.Fatalf("openapi.json documents\n%s\nthe server has\n%s", strings.Join(documented, "\n"), strings.Join(served, "\n"))
	}
	// Each operation, with real values in its path, reaches its route.
	var e EntryOut
	for _, s := range w.storedEntries() {
		e.Entry = s
		break
	}
	values := strings.NewReplacer("{id}", w.ids["TechCrunch.xml"], "{uid}", e.EntryUID, "{label}", "news")
	for _, op := range documented {
		method, path, _ := strings.Cut(op, " ")
		path = values.Replace(path)
		switch {
		case strings.HasPrefix(path, "/fetches/") || strings.HasPrefix(path, "/raw/"):
			path = strings.Replace(path, w.ids["TechCrunch.xml"], e.RawRef.FetchID, 1)
		case method == "DELETE":
			path = "/feeds/00000000-0000-5000-8000-000000000000" // keep the feed
		case path == "/events/stream":
			path += "?last_event_id=2026-13-01:0" // answered at once (400), not a stream
		case path == "/bus":
			continue // served only with a bus (feed-serve --redis): TestBusStatus
		}
		r := w.do(method, path, "{}", auth()...)
		var p Problem
		json.Unmarshal(r.body, &p)
		if r.status == 405 || p.Title == "no such resource" {
			t.Errorf("%s %s: %d %s", method, path, r.status, r.body)
		}
	}
	// Every $ref names a schema that is there.
	raw := string(r.body)
	for _, m := range regexp.MustCompile(`"\$ref": "#/components/schemas/(\w+)"`).FindAllStringSubmatch(raw, -1) {
		if doc.Components["schemas"][m[1]] == nil {
			t.Errorf("$ref to a missing schema %s", m[1])
		}
	}
	if !strings.Contains(raw, `"$ref"`) {
		t.Errorf("no $ref at all: is the document read?")
	}
}
