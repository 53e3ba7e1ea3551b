package sim

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/sched"
)

var (
	update = flag.Bool("update", false, "rewrite the shipped traces in testdata/sim")
	traces = flag.String("traces", "", "the real traces (default: $FEEDPIPE_TRACES, or shared/corpus/traces in a directory above the repository)")
)

const simData = "../../testdata/sim"

// The shipped files, what makes them, and the period of the snapshot trace.
var (
	generatedFile = filepath.Join(simData, "generated-s1-f100-d30.ndjson")
	generatedCfg  = GenConfig{Seed: 1, Feeds: 100, Days: 30}
	wsqsFile      = filepath.Join(simData, "wsqs-rss-archive.ndjson")
	snapshotFile  = filepath.Join(simData, "snapshots.ndjson")
	snapshotEnd   = time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
)

// tracesDir is where the real traces are: -traces, else $FEEDPIPE_TRACES,
// else shared/corpus/traces in the nearest directory above this package
// that has one (../shared/corpus/traces beside the repository). "" when
// there is none, as in a checkout on its own.
func tracesDir(t *testing.T) string {
	for _, dir := range []string{*traces, os.Getenv("FEEDPIPE_TRACES")} {
		if dir != "" {
			return dir
		}
	}
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if fi, err := os.Stat(filepath.Join(dir, "shared", "corpus", "traces")); err == nil && fi.IsDir() {
			return filepath.Join(dir, "shared", "corpus", "traces")
		}
		up := filepath.Dir(dir)
		if up == dir {
			return ""
		}
		dir = up
	}
}

// The shipped real traces are what converting the corpus's traces makes
// now (go test -update rewrites them). Skipped where the corpus is not
// beside the repository.
func TestConvertTraces(t *testing.T) {
	dir := tracesDir(t)
	if dir == "" {
		t.Skip("no real traces: no shared/corpus/traces above the repository; -traces DIR or FEEDPIPE_TRACES=DIR names them")
	}
	open := func(name string) *os.File {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	w, err := ConvertWSQS(open("wsqs-rss-archive/items.ndjson"), open("wsqs-rss-archive/archive_commits.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	checkTrace(t, wsqsFile, w, "ConvertWSQS of "+dir)
	w, err = ConvertSnapshots(open("snapshot-item-times.ndjson"), snapshotEnd, 14)
	if err != nil {
		t.Fatal(err)
	}
	checkTrace(t, snapshotFile, w, "ConvertSnapshots of "+dir)
}

// checkTrace compares w, written as a trace, with the shipped file name,
// after rewriting it with -update.
func checkTrace(t *testing.T, name string, w *Workload, what string) {
	t.Helper()
	var b bytes.Buffer
	if err := w.Write(&b); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(name, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(name)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("%s differs from %s; run go test -update and review the diff", what, name)
	}
}

// The shipped generated trace is what the generator makes: the generator
// is deterministic, and a change to it shows in this file's diff.
func TestGeneratedTraceIsCurrent(t *testing.T) {
	checkTrace(t, generatedFile, Generate(generatedCfg), fmt.Sprintf("Generate(%+v)", generatedCfg))
}

// Every shipped trace loads and simulates under every policy with no
// politeness violation.
func TestShippedTraces(t *testing.T) {
	for _, name := range []string{generatedFile, wsqsFile, snapshotFile} {
		t.Run(filepath.Base(name), func(t *testing.T) {
			f, err := os.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			w, err := Load(f)
			if err != nil {
				t.Fatal(err)
			}
			cfg := Config{Seed: 1, Params: sched.Defaults()}
			res, err := SimulateAll(context.Background(), w, []string{"seed", "adaptive@fixed:1h", "fixed:1h", "oracle@fixed:1h"}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res {
				if r.Violations != 0 {
					t.Errorf("%s: %d politeness violations", r.Policy, r.Violations)
				}
				if r.Items == 0 || r.Found == 0 || r.Requests == 0 {
					t.Errorf("%s: nothing simulated: %+v", r.Policy, r)
				}
			}
		})
	}
}
