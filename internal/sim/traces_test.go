package sim

import (
	"bytes"
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/parse"
	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
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
	noDatesFile   = filepath.Join(simData, "no-dates.ndjson")
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

// corpusFeedDirs are the folders of the shared corpus that hold feeds as
// publishers serve them (../shared/corpus/README.md): not the validator's
// test cases, the hostile documents or the OPML lists.
var corpusFeedDirs = []string{"feedjira", "jsonfeed", "miniflux", "rome", "simplepie"}

// The shipped no_dates case is what ConvertNoDates makes of the shared
// corpus's undated feeds (every feed document in corpusFeedDirs that
// parses, with items, none of them dated; a document found twice is kept
// once) and of the wsqs trace (go test -update rewrites it). Skipped
// where the corpus is not beside the repository.
func TestConvertNoDates(t *testing.T) {
	dir := tracesDir(t)
	if dir == "" {
		t.Skip("no shared corpus: no shared/corpus/traces above the repository; -traces DIR or FEEDPIPE_TRACES=DIR names it")
	}
	corpus := filepath.Dir(dir)
	var undated []UndatedFeed
	seen := map[[32]byte]bool{}
	for _, sub := range corpusFeedDirs {
		err := filepath.WalkDir(filepath.Join(corpus, sub), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			switch strings.ToLower(filepath.Ext(path)) {
			case ".xml", ".rss", ".atom", ".rdf", ".json":
			default:
				return nil
			}
			body, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(body)
			if seen[sum] {
				return nil
			}
			feed, err := parse.ParseFeed(body, parse.Source{FeedID: "f", BaseURL: "https://example.org/feed"})
			if err != nil || len(feed.Entries) == 0 || slices.ContainsFunc(feed.Entries, func(e ndjson.Entry) bool { return !e.Published.IsZero() }) {
				return nil
			}
			seen[sum] = true
			rel, _ := filepath.Rel(corpus, path)
			undated = append(undated, UndatedFeed{ID: filepath.ToSlash(rel), Items: len(feed.Entries)})
			return nil
		})
		if err != nil {
			t.Skipf("no shared corpus feeds in %s: %v", corpus, err)
		}
	}
	if len(undated) == 0 {
		t.Fatalf("no undated feed in %s", corpus)
	}
	f, err := os.Open(wsqsFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	posting, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	checkTrace(t, noDatesFile, ConvertNoDates(undated, posting), "ConvertNoDates of "+corpus)
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
	for _, name := range []string{generatedFile, wsqsFile, snapshotFile, noDatesFile} {
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

// TestNoDatesCase: the no_dates case (no-dates.ndjson). The corpus's
// undated feeds, which never change, are quiet: no policy polls them much
// more than daily when the budget is tight (the seed policy polled them
// every 10 minutes for five weeks, 145 times a feed-day: the EWMA of the
// first answer's items, all "first seen" at once, was 0); and the feeds
// that post, served without dates, get the budget they leave (adaptive
// found their items after 189 minutes on average at 2 requests a
// feed-day).
func TestNoDatesCase(t *testing.T) {
	f, err := os.Open(noDatesFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		policy      string
		staticReqs  float64 // requests per feed-day of the static feeds, at most
		postingMean float64 // mean delay of the posting feeds' items, minutes, at most
	}{
		{"seed", 2, 500},
		{"adaptive@2", 2, 120},
		{"adaptive@6", 6, 40},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			res, err := SimulateAll(context.Background(), w, []string{tc.policy}, Config{Seed: 1, Params: sched.Defaults()})
			if err != nil {
				t.Fatal(err)
			}
			kinds := map[string]KindResult{}
			for _, k := range res[0].ByKind {
				kinds[k.Kind] = k
			}
			static, posting := kinds[KindStatic], kinds[KindPosting]
			if static.Feeds == 0 || posting.Items == 0 || kinds["no_dates"].Feeds != len(w.Feeds) {
				t.Fatalf("kinds %+v", res[0].ByKind)
			}
			if static.RequestsPerFeedDay > tc.staticReqs || posting.DelayMean > tc.postingMean {
				t.Errorf("static feeds polled %.1f times a feed-day (want at most %g), posting feeds' items found %.1f minutes late (want at most %g)",
					static.RequestsPerFeedDay, tc.staticReqs, posting.DelayMean, tc.postingMean)
			}
		})
	}
}
