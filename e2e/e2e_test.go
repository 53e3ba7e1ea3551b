// Package e2e runs feedpipe's real binaries, built once per test run, in
// real pipes against loopback feed servers.
package e2e

import (
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/feedpipe/feedpipe/internal/testenv"
	"github.com/feedpipe/feedpipe/internal/testserver"
)

// binDir holds the binaries built for this test run.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "feedpipe-e2e-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		binDir = dir
		if err := buildBinaries(dir); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: building the binaries:", err)
			return 1
		}
		os.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
		// The binaries read no configuration file of the user's.
		os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
		os.Unsetenv("FEEDPIPE_CONFIG")
		return m.Run()
	}())
}

// buildBinaries builds into dir what scripts/install installs: the
// feedpipe binary, each of its commands a link to it by its name, and the
// commands built on their own (a cmd/feed-*/main.go that is not a thin main
// over internal/apps); and the test server.
func buildBinaries(dir string) error {
	mains, err := filepath.Glob("../cmd/feed-*/main.go")
	if err != nil {
		return err
	}
	args := []string{"build", "-o", dir + string(filepath.Separator), "../cmd/feedpipe", "../tools/testserver"}
	for _, m := range mains {
		b, err := os.ReadFile(m)
		if err != nil {
			return err
		}
		if !strings.Contains(string(b), `"github.com/feedpipe/feedpipe/internal/apps"`) {
			args = append(args, filepath.ToSlash(filepath.Dir(m)))
		}
	}
	build := exec.Command("go", args...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return err
	}
	names, err := exec.Command(filepath.Join(dir, "feedpipe"), "--commands").Output()
	if err != nil {
		return fmt.Errorf("feedpipe --commands: %w", err)
	}
	for _, name := range strings.Fields(string(names)) {
		if err := os.Symlink("feedpipe", filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// sourcesRead reads, once per run, every file the binaries and scripts are
// made of; every test calls it first. The go test cache keys a result on
// the files the tests opened, and the binaries are built by a subprocess it
// cannot see: without this, a change to a binary could replay an old "ok".
// It must run inside a test: opens in TestMain, before m.Run, are not
// recorded.
func sourcesRead(t testing.TB) {
	t.Helper()
	readOnce.Do(func() { readErr = readSources("..") })
	if readErr != nil {
		t.Fatal(readErr)
	}
}

var (
	readOnce sync.Once
	readErr  error
)

func readSources(root string) error {
	for _, dir := range []string{"cmd", "internal", "pkg", "scripts", "tools"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.Contains(path, string(filepath.Separator)+"testdata"+string(filepath.Separator)) {
				return err
			}
			_, err = os.ReadFile(path)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestScripts runs testdata/script/*.txtar. Each script has:
//
//	$SERVER          a feed server over $WORK/www (ETag, Last-Modified, 304,
//	                 /status/NNN, ?delay=, a redirect for /PATH while
//	                 www/PATH.redirect holds "NNN LOCATION"), logging each
//	                 request to $WORK/server.log
//	$FEEDPIPE_STORE  $WORK/store
//	$SCRIPTS         the repository's scripts/ directory
//	$TESTDATA        the repository's testdata/ directory
//
// and the command
//
//	pipe CMD ARGS... | CMD ARGS... | ...
//
// which runs the commands as one pipeline of processes; stdout and stderr
// are the last stage's stdout and every stage's stderr, and the file
// pipestatus gets each stage's exit status ("0 1 0 0 0"). It fails unless
// every stage exits 0 (or, as `! pipe`, unless one does not).
func TestScripts(t *testing.T) {
	sourcesRead(t)
	root := repoRoot(t)
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			www := filepath.Join(env.WorkDir, "www")
			if err := os.MkdirAll(www, 0o755); err != nil {
				return err
			}
			log, err := os.Create(filepath.Join(env.WorkDir, "server.log"))
			if err != nil {
				return err
			}
			srv := httptest.NewServer(testserver.New(www, log))
			env.Defer(func() { srv.Close(); log.Close() })
			env.Setenv("SERVER", srv.URL)
			env.Setenv("FEEDPIPE_STORE", filepath.Join(env.WorkDir, "store"))
			env.Setenv("FEEDPIPE_ALLOW_PRIVATE", "1")
			// Every feed of a script is on one local server: the
			// politeness limits have tests of their own.
			env.Setenv("FEEDPIPE_HOST_RPS", "0")
			env.Setenv("SCRIPTS", filepath.Join(root, "scripts"))
			env.Setenv("TESTDATA", filepath.Join(root, "testdata"))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"pipe": pipeCmd,
		},
	})
}

func pipeCmd(ts *testscript.TestScript, neg bool, args []string) {
	var script strings.Builder
	for _, a := range args {
		if a == "|" {
			script.WriteString(" |")
			continue
		}
		script.WriteString(" '" + strings.ReplaceAll(a, "'", `'\''`) + "'")
	}
	script.WriteString(`
s=("${PIPESTATUS[@]}")
echo "${s[*]}" >pipestatus
for x in "${s[@]}"; do [ "$x" = 0 ] || exit 1; done`)
	err := ts.Exec("bash", "-c", script.String())
	switch {
	case neg && err == nil:
		ts.Fatalf("every stage succeeded")
	case !neg:
		ts.Check(err)
	}
}

// startServe starts feed-serve with env and args, listening on a loopback
// port of its choosing, until the test ends; it returns its base URL
// (http://127.0.0.1:PORT) and its log (stdout and stderr).
func startServe(t testing.TB, env []string, args ...string) (string, *testenv.Buffer) {
	t.Helper()
	addrFile := filepath.Join(t.TempDir(), "addr")
	serve := exec.Command("feed-serve", append([]string{"--listen", "127.0.0.1:0", "--addr-file", addrFile}, args...)...)
	serve.Env = env
	log := &testenv.Buffer{}
	serve.Stdout, serve.Stderr = log, log
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { serve.Process.Kill(); serve.Wait() })
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if b, err := os.ReadFile(addrFile); err == nil && len(b) > 0 {
			return "http://" + strings.TrimSpace(string(b)), log
		} else if time.Now().After(deadline) {
			t.Fatalf("feed-serve did not start:\n%s", log.String())
		}
	}
}
