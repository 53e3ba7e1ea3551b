package e2e

import (
	"bytes"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/testserver"
)

// TestLoopFinishesTheCycleOnSignal stops a running feed-loop in the middle
// of a cycle, the way systemd (SIGTERM to the script) and a terminal
// (SIGINT to the whole process group) do, and checks that the cycle in
// flight still stores what it fetched before the loop exits. It also checks
// that a second loop on the same store is refused while the first runs.
func TestLoopFinishesTheCycleOnSignal(t *testing.T) {
	sourcesRead(t)
	for _, tc := range []struct {
		name  string
		group bool
		sig   syscall.Signal
	}{
		{"SIGTERM to the script", false, syscall.SIGTERM},
		{"SIGINT to the process group", true, syscall.SIGINT},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			www := filepath.Join(dir, "www")
			os.MkdirAll(www, 0o755)
			os.WriteFile(filepath.Join(www, "a.xml"), []byte(`<rss version="2.0"><channel><title>A</title><item><title>One</title><link>https://a.example/1</link></item></channel></rss>`), 0o644)
			srv := httptest.NewServer(testserver.New(www, nil))
			defer srv.Close()
			env := append(os.Environ(), "FEEDPIPE_STORE="+filepath.Join(dir, "store"), "FEEDPIPE_ALLOW_PRIVATE=1")
			loop := filepath.Join(repoRoot(t), "scripts", "feed-loop")

			add := exec.Command("feed-sub", "add", srv.URL+"/a.xml?delay=1500ms")
			add.Env = env
			if out, err := add.CombinedOutput(); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(loop, "--interval", "60")
			cmd.Env, cmd.Stdout, cmd.Stderr = env, &stdout, &stderr
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(500 * time.Millisecond) // the cycle is now waiting for the slow feed

			second := exec.Command(loop, "--once")
			second.Env = env
			out, err := second.CombinedOutput()
			if code := exitCode(err); code != 2 || !strings.Contains(string(out), "another feed-loop is already running") {
				t.Errorf("second loop: status %d, output %q", code, out)
			}

			target := cmd.Process.Pid
			if tc.group {
				target = -target
			}
			if err := syscall.Kill(target, tc.sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("loop exited with %v\n%s", err, stderr.String())
				}
			case <-time.After(15 * time.Second):
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				t.Fatalf("loop did not stop\n%s", stderr.String())
			}
			log := stderr.String()
			if !strings.Contains(log, "cycle 1: feeds=1 not_modified=0 same_body=0 errors=0 new=1") || !strings.Contains(log, "feed-loop: stopping") {
				t.Errorf("the cycle in flight did not finish:\n%s", log)
			}
			if !strings.Contains(stdout.String(), `"type":"new_entry"`) {
				t.Errorf("no event on stdout: %q", stdout.String())
			}
		})
	}
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
