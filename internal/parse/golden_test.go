package parse

import (
	"bytes"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// The ids every golden parse uses, so that the goldens depend on nothing
// but the document.
const (
	testFeedID  = "00000000-0000-5000-8000-000000000001"
	testFetchID = "00000000-0000-7000-8000-000000000002"
)

const goldenDir = "testdata/golden"

// goldenInputs returns the feed documents the golden test parses, by file
// name: the project's shared fixtures and the ones copied into this
// package's testdata, one directory per upstream project.
func goldenInputs(t *testing.T) map[string]string {
	t.Helper()
	var paths []string
	for _, pattern := range []string{"../../testdata/feeds/*", "testdata/feeds/*/*"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, m...)
	}
	inputs := map[string]string{}
	for _, p := range paths {
		if ext := filepath.Ext(p); ext != ".xml" && ext != ".json" {
			continue // LICENSE, SOURCE.txt
		}
		name := filepath.Base(p)
		if prev, ok := inputs[name]; ok {
			t.Fatalf("two inputs named %s (%s and %s): their goldens would collide", name, prev, p)
		}
		inputs[name] = p
	}
	if len(inputs) < 60 {
		t.Fatalf("found only %d golden inputs; is the working directory the package?", len(inputs))
	}
	return inputs
}

// testNow is when the goldens' documents were "fetched": dates after it
// are flagged as in the future.
var testNow = time.Date(2026, 11, 21, 8, 30, 0, 0, time.UTC)

func testSource(name string) Source {
	return Source{FeedID: testFeedID, FetchID: testFetchID, BaseURL: "https://example.org/" + name, Now: testNow}
}

// renderFeed is what a golden file holds: the Info record and then one line
// per entry, or the error message with an ".err" extension.
func renderFeed(t *testing.T, body []byte, src Source) (out []byte, ext string) {
	t.Helper()
	feed, err := ParseFeed(body, src)
	if err != nil {
		return []byte(err.Error() + "\n"), ".err"
	}
	var buf bytes.Buffer
	line, err := ndjson.Marshal(feed.Info)
	if err != nil {
		t.Fatal(err)
	}
	buf.Write(line)
	for i := range feed.Entries {
		line, err := ndjson.Marshal(&feed.Entries[i])
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(line)
	}
	return buf.Bytes(), ".ndjson"
}

func TestGolden(t *testing.T) {
	inputs := goldenInputs(t)
	want := map[string]bool{} // golden file names that should exist
	for _, name := range slices.Sorted(maps.Keys(inputs)) {
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(inputs[name])
			if err != nil {
				t.Fatal(err)
			}
			got, ext := renderFeed(t, body, testSource(name))
			other := map[string]string{".ndjson": ".err", ".err": ".ndjson"}[ext]
			path := filepath.Join(goldenDir, name+ext)
			want[name+ext] = true
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Remove(filepath.Join(goldenDir, name+other)); err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
				return
			}
			if _, err := os.Stat(filepath.Join(goldenDir, name+other)); err == nil {
				t.Errorf("%s exists but the parse gave %s", name+other, ext)
			}
			expected, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/parse -update to create it)", err)
			}
			if !bytes.Equal(got, expected) {
				t.Errorf("%s differs from the parse (go test ./internal/parse -update rewrites it):\n%s", path, firstDiff(expected, got))
			}
		})
	}
	// A golden file whose input went away would never be checked again.
	files, err := os.ReadDir(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if want[f.Name()] {
			continue
		}
		if *update {
			if err := os.Remove(filepath.Join(goldenDir, f.Name())); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s/%s has no input feed", goldenDir, f.Name())
	}
}

// firstDiff describes the first line at which two golden texts differ.
func firstDiff(want, got []byte) string {
	wl := strings.Split(string(want), "\n")
	gl := strings.Split(string(got), "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return "line " + strconv.Itoa(i+1) + ":\n  want: " + w + "\n  got:  " + g
		}
	}
	return "(same lines, different bytes)"
}
