package serve

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/sub"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// TestDashboard: every metric the Grafana dashboard queries is one
// /metrics serves, for a store with failures and decisions.
func TestDashboard(t *testing.T) {
	w := newWorld(t, func(c *Config) { c.PerFeedMetrics = true })
	if _, _, err := sub.Add(sub.Config{Store: w.st, Catalog: w.cat, Out: io.Discard}, sub.Spec{URL: w.feeds.URL + "/status/404"}); err != nil {
		t.Fatal(err)
	}
	w.cycle(t0.Add(time.Hour))
	d, _ := ndjson.Marshal(ndjson.Decision{Header: ndjson.Head(ndjson.TypeDecision), FeedID: w.ids["TechCrunch.xml"], Decision: "defer", Reason: "posting_rate"})
	if _, err := w.st.AppendLines(DecisionsDir+"/2026-11-21.ndjson", d, storedir.Durable); err != nil {
		t.Fatal(err)
	}
	w.get("/feeds") // the server's own series start with a request
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(w.get("/metrics").body))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../../docs/grafana/feedpipe.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`\b(?:sources|items|fetch|feedpipe)_[a-z_]+`)
	n := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, m := range name.FindAllString(tg.Expr, -1) {
				n++
				m = strings.TrimSuffix(m, "_bucket")
				if families[m] == nil {
					t.Errorf("panel %q queries %s, which /metrics does not serve", p.Title, m)
				}
			}
		}
	}
	if len(dash.Panels) < 8 || n < 15 {
		t.Fatalf("%d panels, %d metrics queried", len(dash.Panels), n)
	}
}
