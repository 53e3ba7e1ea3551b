package sim

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/sched"
)

var (
	update = flag.Bool("update", false, "rewrite the generated trace in testdata/sim")
	traces = flag.String("traces", "", "convert the real traces in this directory (../shared/corpus/traces) into testdata/sim")
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

func TestConvertTraces(t *testing.T) {
	if *traces == "" {
		t.Skip("-traces DIR converts the real traces")
	}
	open := func(name string) *os.File {
		f, err := os.Open(filepath.Join(*traces, name))
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
	writeTrace(t, wsqsFile, w)
	w, err = ConvertSnapshots(open("snapshot-item-times.ndjson"), snapshotEnd, 14)
	if err != nil {
		t.Fatal(err)
	}
	writeTrace(t, snapshotFile, w)
}

func writeTrace(t *testing.T, name string, w *Workload) {
	t.Helper()
	var b bytes.Buffer
	if err := w.Write(&b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The shipped generated trace is what the generator makes: the generator
// is deterministic, and a change to it shows in this file's diff.
func TestGeneratedTraceIsCurrent(t *testing.T) {
	var b bytes.Buffer
	if err := Generate(generatedCfg).Write(&b); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(generatedFile, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(generatedFile)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("Generate(%+v) differs from %s; run go test -update and review the diff", generatedCfg, generatedFile)
	}
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
