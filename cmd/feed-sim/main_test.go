package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/feedpipe/feedpipe/internal/cmdkit"
)

// TestCLI runs feed-sim as people call it.
func TestCLI(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace.ndjson")
	if err := os.WriteFile(trace, []byte(`{"type":"period","start":"2026-06-01T00:00:00Z","end":"2026-06-03T00:00:00Z"}
{"type":"feed","feed_id":"a","window":10,"ttl_minutes":30,"skip_hours":[3]}
{"type":"post","feed_id":"a","at":"2026-05-31T10:00:00Z"}
{"type":"post","feed_id":"a","at":"2026-06-01T10:00:00Z"}
{"type":"post","feed_id":"a","at":"2026-06-02T10:00:00Z"}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.ndjson")
	if err := os.WriteFile(bad, []byte("{\"type\":\"post\",\"feed_id\":\"a\",\"at\":\"2026-06-01T10:00:00Z\"}\n{oops\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	future := filepath.Join(dir, "future.ndjson")
	if err := os.WriteFile(future, []byte("{\"type\":\"post\",\"feed_id\":\"b\",\"at\":\"9999-06-03T07:24:00Z\"}\n{\"type\":\"post\",\"feed_id\":\"a\",\"at\":\"2026-06-03T07:24:00Z\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badField := filepath.Join(dir, "bad-field.ndjson")
	if err := os.WriteFile(badField, []byte("{\"type\":\"post\",\"feed_id\":\"a\",\"at\":\"2026-06-01T10:00:00Z\"}\n{\"type\":\"feed\",\"feed_id\":\"a\",\"window\":1.5}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		stdin  string
		status int
		stdout []string
		stderr string
	}{
		{"help", []string{"--help"}, "", 0, []string{`{"type":"post","feed_id":"a"`, "SCHED_MIN_INTERVAL_SEC", "--budget-of", "oracle-timed", "--mix"}, ""},
		{"trace table", []string{trace}, "", 0, []string{"1 feeds, 2 days", "fixed:15m", "oracle", "violations"}, ""},
		{"trace json", []string{"--json", "--policies", "adaptive@12,fixed:1h", trace}, "", 0, []string{`"policy":"adaptive@12"`, `"budget_per_feed_day":12`, `"policy":"fixed:1h"`}, ""},
		{"stdin", []string{"--policies", "seed", "-"}, "{\"type\":\"post\",\"feed_id\":\"z\",\"at\":\"2026-06-01T10:00:00Z\"}\n", 0, []string{"seed"}, ""},
		{"generate", []string{"--generate", "--feeds", "15", "--days", "2", "--json", "--budget-of", "fixed:1h"}, "", 0, []string{`"policy":"oracle"`, `"feeds":15`}, ""},
		{"targets", []string{"--generate", "--feeds", "15", "--days", "2", "--targets"}, "", -1, []string{"adaptive@0.4*fixed:15m", "limit"}, ""},
		{"write trace", []string{"--generate", "--feeds", "2", "--days", "1", "--write-trace", "-"}, "", 0, []string{`"type":"period"`, `"type":"feed","feed_id":"g0001"`}, ""},
		{"env", []string{"--policies", "seed", trace}, "", 0, nil, ""},
		{"no trace", nil, "", 2, nil, "no TRACE given"},
		{"two traces", []string{trace, trace}, "", 2, nil, "one TRACE at a time"},
		{"missing file", []string{filepath.Join(dir, "nope")}, "", 2, nil, "no such file"},
		{"bad trace", []string{bad}, "", 2, nil, "line 2"},
		{"bad policy", []string{"--policies", "sometimes", trace}, "", 2, nil, `policy "sometimes"`},
		{"budget twice", []string{"--budget", "10", "--budget-of", "fixed:1h", trace}, "", 2, nil, "exclude each other"},
		{"generate and trace", []string{"--generate", trace}, "", 2, nil, "takes no TRACE"},
		{"post far in the future", []string{"--policies", "fixed:1h", future}, "", 2, nil, `line 1: "at" must be in the years 1970-2199, not 9999-06-03T07:24:00Z`},
		{"bad field", []string{badField}, "", 2, nil, `line 2: "window" must be a whole number, not 1.5`},
		{"too many days", []string{"--generate", "--feeds", "1", "--days", "106752", "--policies", "fixed:1h"}, "", 2, nil, "--days 106752: at most 3660 (10 years)"},
		{"too many feeds", []string{"--generate", "--feeds", "100000000", "--days", "1"}, "", 2, nil, "--feeds 100000000: at most 100000"},
		{"too many feed-days", []string{"--generate", "--feeds", "50000", "--days", "200"}, "", 2, nil, "at most 10000000 feed-days"},
		{"start too late", []string{"--generate", "--start", "2199-12-31T00:00:00Z"}, "", 2, nil, "the period must end by 2199-12-01"},
		{"show unknown feed", []string{"--show", "nosuch", "--policies", "seed", trace}, "", 2, nil, `--show "nosuch": no feed with that id`},
		{"budget of nothing", []string{"--budget-of", "nothing", trace}, "", 2, nil, `--budget-of "nothing": want a policy without a budget`},
		{"feeds with a trace", []string{"--feeds", "10", trace}, "", 2, nil, "--feeds only applies with --generate"},
		{"days with a trace", []string{"--days", "10", trace}, "", 2, nil, "--days only applies with --generate"},
		{"start with a trace", []string{"--start", "2026-01-01T00:00:00Z", trace}, "", 2, nil, "--start only applies with --generate"},
		{"plain with a trace", []string{"--plain", trace}, "", 2, nil, "--plain only applies with --generate"},
		{"no-floors with a trace", []string{"--no-floors", trace}, "", 2, nil, "--no-floors only applies with --generate"},
		{"show a feed", []string{"--show", "a", "--policies", "fixed:1h", trace}, "", 0, []string{"fixed:1h"}, "-- fixed:1h 2026-06-01T00:00:00Z"},
		{"mix", []string{"--generate", "--mix", "patterned", "--feeds", "20", "--days", "2", "--by-kind", "--policies", "oracle@fixed:1h,oracle-timed@fixed:1h"}, "", 0, []string{"oracle-timed@fixed:1h", "diurnal", "weekly"}, ""},
		{"bad mix", []string{"--generate", "--mix", "weird"}, "", 2, nil, `--mix "weird": want classic, mixed, patterned, poisson`},
		{"mix with a trace", []string{"--mix", "mixed", trace}, "", 2, nil, "--mix only applies with --generate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "env" {
				t.Setenv("SCHED_JITTER_RATIO", "2")
				tt.status, tt.stderr = 2, "SCHED_JITTER_RATIO"
			}
			var stdout, stderr bytes.Buffer
			a := app()
			a.Writer, a.ErrWriter, a.Reader = &stdout, &stderr, strings.NewReader(tt.stdin)
			status := cmdkit.Run(a, append([]string{"feed-sim"}, tt.args...))
			if tt.status >= 0 && status != tt.status || tt.status < 0 && status > 1 {
				t.Errorf("status %d, want %d; stderr:\n%s", status, tt.status, stderr.String())
			}
			for _, want := range tt.stdout {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("stdout lacks %s:\n%s", want, stdout.String())
				}
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderr, stderr.String())
			}
		})
	}
}
