package e2e

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/testenv"
	"github.com/feedpipe/feedpipe/internal/testserver"
)

// loopEnv is a store, a feed server over www with the named feeds, and
// the environment of a loop over them.
type loopEnv struct {
	dir, store string
	root       string // the repository
	srv        *httptest.Server
	env        []string
}

func newLoopEnv(t *testing.T, feeds ...string) *loopEnv {
	t.Helper()
	dir := t.TempDir()
	www := filepath.Join(dir, "www")
	os.MkdirAll(www, 0o755)
	for _, name := range []string{"a.xml", "b.xml", "c.xml"} {
		os.WriteFile(filepath.Join(www, name), []byte(`<rss version="2.0"><channel><title>`+name+`</title><item><title>One</title><link>https://`+name+`.example/1</link></item></channel></rss>`), 0o644)
	}
	srv := httptest.NewServer(testserver.New(www, nil))
	t.Cleanup(srv.Close)
	e := &loopEnv{dir: dir, store: filepath.Join(dir, "store"), root: repoRoot(t), srv: srv,
		env: append(os.Environ(), "FEEDPIPE_STORE="+filepath.Join(dir, "store"), "FEEDPIPE_ALLOW_PRIVATE=1", "FEEDPIPE_HOST_RPS=0", "FEEDPIPE_LOG_LEVEL=warn",
			// No feed-media run: with --once it outlives the loop by
			// design (it finishes the downloads), and would still be
			// opening the catalog as the test's store is removed. These
			// feeds have no media; e2e/media_test.go tests the loop's.
			"FEEDPIPE_LOOP_MEDIA=0")}
	for _, f := range feeds {
		e.add(t, f)
	}
	return e
}

func (e *loopEnv) add(t *testing.T, feed string) {
	t.Helper()
	add := exec.Command("feed-sub", "add", e.srv.URL+"/"+feed)
	add.Env = e.env
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}

// loop is a running feed-loop, in a process group of its own as a shell
// would start it; its stderr is read as it comes.
type loop struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr testenv.Buffer
	done   chan error
}

func (l *loop) log() string { return l.stderr.String() }

func (e *loopEnv) start(t *testing.T, args ...string) *loop {
	t.Helper()
	l := &loop{done: make(chan error, 1)}
	l.cmd = exec.Command(filepath.Join(repoRoot(t), "scripts", "feed-loop"), args...)
	l.cmd.Env, l.cmd.Stdout, l.cmd.Stderr = e.env, &l.stdout, &l.stderr
	l.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { l.done <- l.cmd.Wait() }()
	t.Cleanup(func() { syscall.Kill(-l.cmd.Process.Pid, syscall.SIGKILL) })
	return l
}

// waitFor waits until the loop's stderr has want, or fails.
func (l *loop) waitFor(t *testing.T, want string, limit time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(l.log(), want) {
			return
		}
	}
	t.Fatalf("no %q on stderr within %s:\n%s", want, limit, l.log())
}

// wait waits for the loop to exit and returns its status.
func (l *loop) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case err := <-l.done:
		return exitCode(err)
	case <-time.After(limit):
		syscall.Kill(-l.cmd.Process.Pid, syscall.SIGKILL)
		t.Fatalf("the loop did not stop within %s\n%s", limit, l.log())
	}
	return -1
}

func (l *loop) signal(t *testing.T, sig syscall.Signal, group bool) {
	t.Helper()
	pid := l.cmd.Process.Pid
	if group {
		pid = -pid
	}
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatal(err)
	}
}

// lockFree reports whether loop.lock can be taken now: no process, the
// loop's children among them, holds it.
func (e *loopEnv) lockFree(t *testing.T) bool {
	t.Helper()
	return exec.Command("flock", "-n", filepath.Join(e.store, "loop.lock"), "true").Run() == nil
}

// TestLoopFinishesTheCycleOnSignal stops a running feed-loop in the middle
// of a cycle, the way systemd (SIGTERM to the script) and a terminal
// (SIGINT to the whole process group) do, and checks that it says so at
// once, that the cycle in flight still stores what it fetched, and that the
// loop then exits with the cycle's status. It also checks that a second
// loop on the same store is refused while the first runs.
func TestLoopFinishesTheCycleOnSignal(t *testing.T) {
	sourcesRead(t)
	for _, tc := range []struct {
		name  string
		group bool
		sig   syscall.Signal
		ack   string
	}{
		{"SIGTERM to the script", false, syscall.SIGTERM, "feed-loop: SIGTERM: finishing the cycle in flight (at most 60s); send SIGTERM again to stop now"},
		{"SIGINT to the process group", true, syscall.SIGINT, "feed-loop: finishing the cycle in flight; press Ctrl-C again to stop now"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newLoopEnv(t, "a.xml?delay=1500ms")
			l := e.start(t, "--interval", "60")
			time.Sleep(500 * time.Millisecond) // the cycle is now waiting for the slow feed

			second := exec.Command(filepath.Join(repoRoot(t), "scripts", "feed-loop"), "--once")
			second.Env = e.env
			out, err := second.CombinedOutput()
			if code := exitCode(err); code != 2 || !strings.Contains(string(out), "another feed-loop is already running") {
				t.Errorf("second loop: status %d, output %q", code, out)
			}

			l.signal(t, tc.sig, tc.group)
			l.waitFor(t, tc.ack, 300*time.Millisecond) // at once, not after the cycle
			if strings.Contains(l.log(), "cycle 1:") {
				t.Errorf("the signal was acknowledged only after the cycle:\n%s", l.log())
			}
			if status := l.wait(t, 15*time.Second); status != 0 {
				t.Errorf("status %d, want the cycle's 0\n%s", status, l.log())
			}
			log := l.log()
			if !strings.Contains(log, "cycle 1: feeds=1 not_modified=0 same_body=0 errors=0 new=1") || !strings.Contains(log, "status=0\nfeed-loop: stopping\n") {
				t.Errorf("the cycle in flight did not finish:\n%s", log)
			}
			if !strings.Contains(l.stdout.String(), `"type":"new_entry"`) {
				t.Errorf("no event on stdout: %q", l.stdout.String())
			}
			if !e.lockFree(t) {
				t.Error("loop.lock is still held after the loop exited")
			}
		})
	}
}

// TestLoopSecondSignalStopsTheCycle: a second Ctrl-C stops the cycle in
// flight: the fetch under way finishes and is stored, the feeds not
// fetched yet stay due, every stage exits 130, and so does the loop.
func TestLoopSecondSignalStopsTheCycle(t *testing.T) {
	sourcesRead(t)
	e := newLoopEnv(t, "a.xml?delay=2s", "b.xml?delay=2s", "c.xml?delay=2s")
	e.env = append(e.env, "FEEDPIPE_HOST_CONCURRENCY=1") // one host: one feed at a time
	start := time.Now()
	l := e.start(t, "--interval", "60")
	time.Sleep(500 * time.Millisecond)
	l.signal(t, syscall.SIGINT, true)
	l.waitFor(t, "press Ctrl-C again to stop now", time.Second)
	l.signal(t, syscall.SIGINT, true)
	l.waitFor(t, "feed-loop: stopping the cycle in flight", time.Second)
	if status := l.wait(t, 10*time.Second); status != 130 {
		t.Errorf("status %d, want 130\n%s", status, l.log())
	}
	if took := time.Since(start); took > 4500*time.Millisecond {
		t.Errorf("stopping took %s: the cycle was not stopped", took)
	}
	log := l.log()
	if !strings.Contains(log, "cycle 1: feeds=1 not_modified=0 same_body=0 errors=0 new=1 updated=0") || !strings.Contains(log, "status=130 (stopped)") {
		t.Errorf("the feed in flight was not stored, or the cycle not marked stopped:\n%s", log)
	}
	due := exec.Command("feed-due")
	due.Env = e.env
	out, err := due.Output()
	if err != nil || strings.Count(string(out), `"type":"due"`) != 2 {
		t.Errorf("feed-due after the stop: %v, %d due records, want the 2 not fetched", err, strings.Count(string(out), `"type":"due"`))
	}
	if !e.lockFree(t) {
		t.Error("loop.lock is still held after the loop exited")
	}
}

// TestLoopStopTimeout: a cycle that does not end is stopped, then killed,
// so that a stop takes at most --stop-timeout.
func TestLoopStopTimeout(t *testing.T) {
	sourcesRead(t)
	e := newLoopEnv(t, "a.xml?delay=30s")
	l := e.start(t, "--stop-timeout", "4")
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	l.signal(t, syscall.SIGTERM, false)
	status := l.wait(t, 10*time.Second)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the stop took %s, want at most the 4s of --stop-timeout", took)
	}
	log := l.log()
	if status == 0 || !strings.Contains(log, "the cycle is still running after 3s: stopping it") || !strings.Contains(log, "killing the cycle") {
		t.Errorf("status %d\n%s", status, log)
	}
	if out, _ := exec.Command("pgrep", "-f", "feed-fetch.*"+e.store).CombinedOutput(); len(out) > 0 {
		t.Errorf("stages left running: %s", out)
	}
}

// TestLoopSIGHUPReloads: SIGHUP neither kills the loop nor leaves its lock
// to a child: the next cycle reads the --env-file again, and the
// subscriptions (as every cycle does). The loop then stops cleanly and
// another can start at once.
func TestLoopSIGHUPReloads(t *testing.T) {
	sourcesRead(t)
	// Caught here, SIGHUP is at its default in the loop even when the
	// tests run under nohup, which would give it to the loop ignored
	// (TestLoopSaysSIGHUPIsIgnored).
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	e := newLoopEnv(t, "a.xml")
	envFile := filepath.Join(e.dir, "env")
	os.WriteFile(envFile, []byte("# the loop's own settings\nFEEDPIPE_LOOP_INTERVAL=2\n"), 0o644)
	l := e.start(t, "--env-file", envFile)
	l.waitFor(t, "cycle 1: feeds=1", 5*time.Second)
	if strings.Contains(l.log(), "SIGHUP is ignored") {
		t.Errorf("the loop says SIGHUP is ignored when it is not:\n%s", l.log())
	}
	os.WriteFile(envFile, []byte("FEEDPIPE_LOOP_INTERVAL='3'\n"), 0o644)
	e.add(t, "b.xml")
	l.signal(t, syscall.SIGHUP, false)
	// bash runs the trap once the step in hand ends (the events, media,
	// push and prune steps follow a cycle's line): under load, seconds.
	l.waitFor(t, "feed-loop: SIGHUP: reloading before the next cycle", 5*time.Second)
	l.waitFor(t, "cycle 2:", 5*time.Second)
	log := l.log()
	if !strings.Contains(log, "reloaded: interval=3s") || !strings.Contains(log, "cycle 2: feeds=1 not_modified=0 same_body=0 errors=0 new=1") ||
		strings.Index(log, "reloaded: interval=3s") > strings.Index(log, "cycle 2:") {
		t.Errorf("the reload did not take before cycle 2:\n%s", log)
	}
	// A SIGHUP while it sleeps does not wake it early, nor end it.
	l.signal(t, syscall.SIGHUP, false)
	time.Sleep(300 * time.Millisecond)
	select {
	case err := <-l.done:
		t.Fatalf("SIGHUP ended the loop: %v\n%s", err, l.log())
	default:
	}
	l.signal(t, syscall.SIGTERM, false)
	if status := l.wait(t, 5*time.Second); status != 0 {
		t.Errorf("status %d\n%s", status, l.log())
	}
	if !e.lockFree(t) {
		t.Error("loop.lock is still held after the loop exited")
	}
	again := exec.Command(filepath.Join(repoRoot(t), "scripts", "feed-loop"), "--once")
	again.Env = e.env
	if out, err := again.CombinedOutput(); err != nil {
		t.Errorf("a new loop: %v\n%s", err, out)
	}
}

// TestLoopSaysSIGHUPIsIgnored: started under nohup, the loop cannot trap
// SIGHUP (a shell never traps a signal ignored when it started) and says
// so, rather than let a reload go unheard.
func TestLoopSaysSIGHUPIsIgnored(t *testing.T) {
	sourcesRead(t)
	nohup, err := exec.LookPath("nohup")
	if err != nil {
		t.Skip("no nohup (coreutils) to start the loop with SIGHUP ignored")
	}
	e := newLoopEnv(t, "a.xml")
	loop := exec.Command(nohup, filepath.Join(e.root, "scripts", "feed-loop"), "--once")
	loop.Env = e.env
	var stderr bytes.Buffer
	loop.Stderr = &stderr
	if err := loop.Run(); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if want := "feed-loop: warning: SIGHUP is ignored (started under nohup?)"; !strings.Contains(stderr.String(), want) {
		t.Errorf("no %q on stderr:\n%s", want, stderr.String())
	}
}

// TestLoopSubstitutesNothingOnceTrapsAreSet: past its first trap, feed-loop
// runs no command or process substitution, for bash 5.2 can misparse a
// trap's action when the signal comes while it reads one (the reload lost,
// the loop exiting 1: seen under ./scripts/test).
func TestLoopSubstitutesNothingOnceTrapsAreSet(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "scripts", "feed-loop"))
	if err != nil {
		t.Fatal(err)
	}
	trapped := false
	for i, line := range strings.Split(string(b), "\n") {
		code := strings.TrimSpace(line)
		if strings.HasPrefix(code, "#") {
			continue
		}
		// The first trap the script sets (not one in its help text).
		trapped = trapped || strings.HasPrefix(line, "trap '")
		if !trapped {
			continue
		}
		if s := strings.ReplaceAll(code, "$((", ""); strings.Contains(s, "$(") || strings.Contains(s, "<(") || strings.Contains(s, ">(") || strings.Contains(s, "`") {
			t.Errorf("scripts/feed-loop:%d: a substitution once the traps are set: %s", i+1, code)
		}
	}
	if !trapped {
		t.Fatal("scripts/feed-loop sets no trap")
	}
}

// TestLoopSIGHUPStorm: SIGHUPs every 20 ms through cycles and pauses for
// 3 s neither stop the loop nor make bash complain of a trap: it reloads.
func TestLoopSIGHUPStorm(t *testing.T) {
	sourcesRead(t)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP) // see TestLoopSIGHUPReloads
	defer signal.Stop(hup)
	e := newLoopEnv(t, "a.xml")
	l := e.start(t, "--interval", "1")
	l.waitFor(t, "cycle 1:", 5*time.Second)
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-l.done:
			t.Fatalf("the loop ended under SIGHUPs: %v\n%s", err, l.log())
		default:
		}
		l.signal(t, syscall.SIGHUP, false)
	}
	l.signal(t, syscall.SIGTERM, false)
	if status := l.wait(t, 10*time.Second); status != 0 {
		t.Errorf("status %d\n%s", status, l.log())
	}
	// What bash says when it misparses a trap (see
	// TestLoopSubstitutesNothingOnceTrapsAreSet).
	for _, bad := range []string{"trap:", "syntax error", "unexpected EOF"} {
		if strings.Contains(l.log(), bad) {
			t.Errorf("%q on stderr:\n%s", bad, l.log())
		}
	}
	if !strings.Contains(l.log(), "reloaded: interval=1s") {
		t.Errorf("no reload under SIGHUPs:\n%s", l.log())
	}
}

// TestLoopLockNeverHeldByAChild: whatever kills the loop, even SIGKILL,
// its lock goes with it: no child (a stage, a sleep) keeps it.
func TestLoopLockNeverHeldByAChild(t *testing.T) {
	sourcesRead(t)
	for _, tc := range []struct {
		name  string
		feed  string
		after string // kill the loop once its stderr has this
	}{
		{"while it sleeps", "a.xml", "cycle 1:"},
		{"in a cycle", "a.xml?delay=3s", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newLoopEnv(t, tc.feed)
			l := e.start(t, "--interval", "60")
			if tc.after != "" {
				l.waitFor(t, tc.after, 5*time.Second)
			} else {
				time.Sleep(500 * time.Millisecond)
			}
			for _, sig := range []syscall.Signal{syscall.SIGKILL} {
				l.signal(t, sig, false)
			}
			l.wait(t, 5*time.Second)
			if !e.lockFree(t) {
				t.Errorf("loop.lock is held after the loop was killed %s", tc.name)
			}
		})
	}
}

// TestLoopStatusIsTheLastCycles: a loop stopped between cycles exits with
// the status of its last cycle.
func TestLoopStatusIsTheLastCycles(t *testing.T) {
	sourcesRead(t)
	e := newLoopEnv(t, "status/503")
	l := e.start(t, "--interval", "60")
	l.waitFor(t, "status=1\n", 5*time.Second)
	l.signal(t, syscall.SIGTERM, false)
	// The signal may land while the loop records the cycle (feed-store
	// heartbeat), which it lets finish: 5 s was short on a machine at
	// load 20.
	if status := l.wait(t, 15*time.Second); status != 1 {
		t.Errorf("status %d, want the last cycle's 1\n%s", status, l.log())
	}
}

// TestStageStoppedBySignal: a stage stopped early by a signal finishes
// what it holds (the fetch in flight is stored and written) and exits 130
// for SIGINT, 143 for SIGTERM, not 0.
func TestStageStoppedBySignal(t *testing.T) {
	sourcesRead(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			e := newLoopEnv(t)
			var in strings.Builder
			for _, f := range []string{"a.xml", "b.xml"} {
				fmt.Fprintf(&in, `{"type":"due","v":1,"url":%q}`+"\n", e.srv.URL+"/"+f+"?delay=1s")
			}
			cmd := exec.Command("feed-fetch", "--host-concurrency", "1")
			var stdout, stderr bytes.Buffer
			cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = e.env, strings.NewReader(in.String()), &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(400 * time.Millisecond)
			cmd.Process.Signal(sig)
			err := cmd.Wait()
			if code, want := exitCode(err), 128+int(sig); code != want {
				t.Errorf("status %d, want %d\n%s", code, want, stderr.String())
			}
			if n := strings.Count(stdout.String(), `"type":"fetch"`); n != 1 {
				t.Errorf("%d fetch records, want the one in flight\n%s", n, stdout.String())
			}
		})
	}
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestRefetchSaysDueNowOnceSaved: feed-sub refetch says "due now" only
// once the change is saved (here, once the store's writer lock is free), and a closed stderr (feed-sub refetch X 2>&1 | true) does
// not stop it before the save.
func TestRefetchSaysDueNowOnceSaved(t *testing.T) {
	sourcesRead(t)
	e := newLoopEnv(t, "a.xml")
	if out, err := e.run("feed-loop --once"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}

	// The store's writer lock, held as a feed-store holds it.
	lock, err := os.OpenFile(filepath.Join(e.store, storedir.StoreLock), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	refetch := exec.Command("feed-sub", "refetch", e.srv.URL+"/a.xml")
	refetch.Env = e.env
	var msgs loop
	refetch.Stderr = &msgs.stderr
	if err := refetch.Start(); err != nil {
		t.Fatal(err)
	}
	msgs.waitFor(t, "waiting for the store lock", 3*time.Second)
	time.Sleep(200 * time.Millisecond)
	if strings.Contains(msgs.log(), "due now") {
		t.Fatalf("said due now before it could save:\n%s", msgs.log())
	}
	syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if err := refetch.Wait(); err != nil || !strings.Contains(msgs.log(), "feed-sub: due now: "+e.srv.URL+"/a.xml") {
		t.Fatalf("%v\n%s", err, msgs.log())
	}

	// A save that fails (no room: ulimit -f 0) says nothing is due.
	if out, err := e.run("ulimit -f 0 && exec feed-sub refetch " + e.srv.URL + "/a.xml"); err == nil || strings.Contains(string(out), "due now") {
		t.Errorf("a refetch that could not be saved: %v\n%s", err, out)
	}

	// stderr a pipe nobody reads any more.
	if out, err := e.run("feed-loop --once"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	refetch = exec.Command("feed-sub", "refetch", e.srv.URL+"/a.xml")
	refetch.Env, refetch.Stdout, refetch.Stderr = e.env, w, w
	err = refetch.Run()
	w.Close()
	if code := exitCode(err); code != 0 {
		t.Errorf("refetch with stderr closed: status %d, want 0", code)
	}
	due := exec.Command("feed-due")
	due.Env = e.env
	if out, err := due.Output(); err != nil || !strings.Contains(string(out), `"reason":"manual"`) {
		t.Errorf("the refetch was not saved: %v %s", err, out)
	}
}

// run runs a shell command line in e's environment, with the repository's
// scripts on PATH.
func (e *loopEnv) run(line string) ([]byte, error) {
	cmd := exec.Command("bash", "-c", line)
	cmd.Env = append(append([]string(nil), e.env...), "PATH="+filepath.Join(e.root, "scripts")+string(os.PathListSeparator)+os.Getenv("PATH"))
	return cmd.CombinedOutput()
}
