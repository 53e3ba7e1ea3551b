package e2e

import (
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/feedpipe/feedpipe/internal/testserver"
)

// codeBlocks returns the README's fenced blocks of the given language.
func codeBlocks(t *testing.T, lang string) []string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?ms)^```" + lang + "\n(.*?)^```$")
	var blocks []string
	for _, m := range re.FindAllStringSubmatch(string(readme), -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}

// commands strips comments and blank lines.
func commands(block string) []string {
	var cmds []string
	for _, line := range strings.Split(block, "\n") {
		if i := strings.Index(line, "  #"); i >= 0 {
			line = line[:i]
		}
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			cmds = append(cmds, line)
		}
	}
	return cmds
}

// TestREADMEQuickStart runs the README's first two commands as written:
// ./scripts/demo; and ./scripts/test, which is what runs this test in CI
// (.ci/run runs it, and it sets FEEDPIPE_README_TEST=1 for this test):
// run again inside itself, it would only run the whole suite twice.
func TestREADMEQuickStart(t *testing.T) {
	sourcesRead(t)
	blocks := codeBlocks(t, "sh")
	if len(blocks) == 0 {
		t.Fatal("README.md has no sh blocks")
	}
	quick := commands(blocks[0])
	if strings.Join(quick, " ; ") != "./scripts/demo ; ./scripts/test" {
		t.Fatalf("the README's first commands are %q, want ./scripts/demo and ./scripts/test", quick)
	}
	ci, err := os.ReadFile(filepath.Join(repoRoot(t), ".ci", "run"))
	if err != nil || !regexp.MustCompile(`(?m)^\./scripts/test$`).Match(ci) {
		t.Fatalf(".ci/run does not run ./scripts/test (%v):\n%s", err, ci)
	}
	if testing.Short() {
		t.Skip("-short: not running the demo")
	}
	for _, cmdline := range quick {
		if cmdline == "./scripts/test" {
			if os.Getenv("FEEDPIPE_README_TEST") == "1" {
				t.Logf("%s is running: it is what runs this test", cmdline)
			} else {
				t.Logf("not running %s here: CI runs it (.ci/run), and it runs this test", cmdline)
			}
			continue
		}
		t.Run(cmdline, func(t *testing.T) {
			cmd := exec.Command("bash", "-c", cmdline)
			cmd.Dir = repoRoot(t)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", cmdline, err, out)
			}
			if cmdline == "./scripts/demo" {
				for _, want := range []string{"== cycle 1", "new entries", "== cycle 2", "6 of 6 requests answered 304; 0 new entries", "subscriptions.ndjson",
					"feed-loop: cycle 1: feeds=6", "feed-loop: cycle 2: feeds=6",
					"FEEDPIPE_HOST_RPS=0: they all come from that one server"} {
					if !strings.Contains(string(out), want) {
						t.Errorf("demo output lacks %q:\n%s", want, out)
					}
				}
				// The demo leaves nothing behind, unless --keep.
				m := regexp.MustCompile(`(?m)^Removing (\S+) `).FindSubmatch(out)
				if m == nil {
					t.Fatalf("the demo does not say it removes its directory:\n%s", out)
				}
				if _, err := os.Stat(string(m[1])); err == nil {
					t.Errorf("the demo left %s behind", m[1])
				}
				keep := exec.Command("bash", "-c", "./scripts/demo --keep")
				keep.Dir = repoRoot(t)
				out, err := keep.CombinedOutput()
				m = regexp.MustCompile(`(?m)^and remove it when done:  rm -r (\S+)$`).FindSubmatch(out)
				if err != nil || m == nil {
					t.Fatalf("scripts/demo --keep: %v\n%s", err, out)
				}
				if _, err := os.Stat(filepath.Join(string(m[1]), "store", "subscriptions.ndjson")); err != nil {
					t.Errorf("scripts/demo --keep did not keep its store: %v", err)
				}
				os.RemoveAll(string(m[1]))
			}
		})
	}
}

// TestREADMEExamples runs every other sh block of the README, in order, in
// one shell, against a loopback server standing in for example.org. Only
// `go install` is skipped: the binaries under test are already on PATH.
func TestREADMEExamples(t *testing.T) {
	sourcesRead(t)
	root := repoRoot(t)
	www := t.TempDir()
	for name, src := range map[string]string{"feed.xml": "TechCrunch.xml", "atom.xml": "AmazonWebServicesBlog.xml", "blog.json": "json_feed.json"} {
		b, err := os.ReadFile(filepath.Join(root, "testdata", "feeds", src))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(www, name), b, 0o644)
	}
	srv := httptest.NewServer(testserver.New(www, nil))
	defer srv.Close()

	work := t.TempDir()
	for _, dir := range []string{"testdata", "scripts"} {
		if err := os.Symlink(filepath.Join(root, dir), filepath.Join(work, dir)); err != nil {
			t.Fatal(err)
		}
	}
	// The user's own subscription list of the examples.
	os.WriteFile(filepath.Join(work, "my-subscriptions.opml"), []byte(`<?xml version="1.0"?>
<opml version="2.0"><body><outline text="Mine">
<outline text="Blog" type="rss" xmlUrl="`+srv.URL+`/blog.json"/>
</outline></body></opml>`), 0o644)

	// feed-serve's examples listen on 127.0.0.1:8080: here, on a port
	// free now.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := ln.Addr().String()
	ln.Close()
	// A server started in the background does not outlive a failed
	// example.
	script := []string{"set -euo pipefail", "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT"}
	for _, block := range codeBlocks(t, "sh")[1:] {
		for _, c := range commands(block) {
			if strings.HasPrefix(c, "go install") || strings.HasPrefix(c, "scripts/install") || strings.HasPrefix(c, "./scripts/install") {
				continue // the binaries under test are on PATH; TestInstall installs
			}
			script = append(script, "echo '$ "+strings.ReplaceAll(c, "'", "")+"' >&2", strings.NewReplacer("https://example.org", srv.URL, "127.0.0.1:8080", listen).Replace(c))
		}
	}
	cmd := exec.Command("bash", "-c", strings.Join(script, "\n"))
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "FEEDPIPE_STORE="+filepath.Join(work, "store"), "FEEDPIPE_ALLOW_PRIVATE=1", "FEEDPIPE_LOG_LEVEL=warn",
		"FEEDPIPE_HOST_RPS=0", // example.org is one local server here
		"PATH="+filepath.Join(root, "scripts")+string(os.PathListSeparator)+os.Getenv("PATH"), // feed-loop, as installed
		"XDG_CONFIG_HOME="+filepath.Join(work, "config"))                                      // none of the user's
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("a README command failed: %v\n%s", err, out)
	}
	// The healthz wait printed "curl: (7) Failed to connect" while
	// feed-serve was starting.
	if strings.Contains(string(out), "curl: (") {
		t.Errorf("a README command printed a curl error:\n%s", out)
	}
	// What the examples should have left behind.
	for _, f := range []string{"new-entries.ndjson", "fetched.ndjson", "parsed.ndjson", "events.ndjson", "subscriptions.opml", "saved-entries.ndjson", "one-off.ndjson", "news.atom"} {
		if st, err := os.Stat(filepath.Join(work, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		} else if f == "new-entries.ndjson" && st.Size() == 0 {
			t.Errorf("the README's pipeline stored nothing new:\n%s", out)
		}
	}
}
