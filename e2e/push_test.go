package e2e

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/websub/websubtest"
)

// freeAddr is a loopback address no one listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// lines keeps what a process writes to stdout, line by line, with the
// time each came.
type lines struct {
	mu   sync.Mutex
	all  []string
	when []time.Time
}

func (l *lines) read(r *bufio.Scanner) {
	for r.Scan() {
		l.mu.Lock()
		l.all, l.when = append(l.all, r.Text()), append(l.when, time.Now())
		l.mu.Unlock()
	}
}

// waitFor waits for a line holding want after the first n lines, and
// returns its index.
func (l *lines) waitFor(t *testing.T, n int, want string, limit time.Duration) int {
	t.Helper()
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		l.mu.Lock()
		for i := n; i < len(l.all); i++ {
			if strings.Contains(l.all[i], want) {
				l.mu.Unlock()
				return i
			}
		}
		l.mu.Unlock()
	}
	t.Fatalf("no line with %q within %s", want, limit)
	return -1
}

// TestPushLoop runs push with the real binaries: feed-serve at a public
// URL, feed-loop as a daemon (an hour between cycles: only pushes bring
// news meanwhile), a spec-following hub on loopback. The first cycle
// polls the feed and feed-sub push sync subscribes it; the hub verifies
// at feed-serve's callback; a distribution reaches feed-loop's stdout as
// new_entry within seconds; feed-due --explain says the push lives and,
// past the lease (a hub that died never renews it), that the feed is
// polled at its interval again.
func TestPushLoop(t *testing.T) {
	sourcesRead(t)
	hub := websubtest.New()
	defer hub.Close()
	e := newLoopEnv(t)
	addr := freeAddr(t)
	public := "http://" + addr
	e.env = append(e.env, "FEEDPIPE_PUBLIC_URL="+public, "FEEDPIPE_BIN="+binDir)
	self := e.srv.URL + "/hubbed.xml"
	feed := func(titles ...string) {
		var b strings.Builder
		fmt.Fprintf(&b, `<feed xmlns="http://www.w3.org/2005/Atom"><title>Hubbed</title><id>urn:h</id><updated>2026-11-21T08:00:00Z</updated>`+
			`<link rel="hub" href="%s"/><link rel="self" href="%s"/>`, hub.URL, self)
		for _, title := range titles {
			fmt.Fprintf(&b, `<entry><id>urn:h:%s</id><title>%s</title><link href="https://h.example/%s"/><updated>2026-11-21T08:00:00Z</updated></entry>`, title, title, title)
		}
		b.WriteString(`</feed>`)
		if err := os.WriteFile(filepath.Join(e.dir, "www", "hubbed.xml"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	feed("first")
	e.add(t, "hubbed.xml")

	serve := exec.Command("feed-serve", "--listen", addr, "--cpus", "1")
	serve.Env = e.env
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { serve.Process.Signal(syscall.SIGTERM); serve.Wait() }()
	for i := 0; ; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if i > 400 {
			t.Fatal("feed-serve does not listen")
		}
		time.Sleep(25 * time.Millisecond)
	}

	// The loop writes its events to a pipe the test reads as they come.
	out := &lines{}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	l := &loop{done: make(chan error, 1)}
	l.cmd = exec.Command(filepath.Join(repoRoot(t), "scripts", "feed-loop"), "--interval", "1h")
	l.cmd.Env, l.cmd.Stdout, l.cmd.Stderr = e.env, w, &l.stderr
	l.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	go func() { l.done <- l.cmd.Wait() }()
	t.Cleanup(func() { syscall.Kill(-l.cmd.Process.Pid, syscall.SIGKILL) })
	go out.read(bufio.NewScanner(r))

	out.waitFor(t, 0, `"title":"first"`, 30*time.Second)
	if ev, err := hub.Next(30 * time.Second); err != nil || ev.Kind != "verified" || ev.Topic != self || !strings.HasPrefix(ev.Callback, public+"/websub/") {
		t.Fatalf("hub: %+v, %v\n%s", ev, err, l.log())
	}
	out.mu.Lock()
	n := len(out.all)
	out.mu.Unlock()
	feed("first", "second")
	body, _ := os.ReadFile(filepath.Join(e.dir, "www", "hubbed.xml"))
	sent := time.Now()
	if got := hub.Publish(self, "application/atom+xml", body); len(got) != 1 {
		t.Fatalf("published to %v", got)
	}
	i := out.waitFor(t, n, `"title":"second"`, 10*time.Second)
	out.mu.Lock()
	line, came := out.all[i], out.when[i]
	out.mu.Unlock()
	if !strings.Contains(line, `"type":"new_entry"`) {
		t.Errorf("the pushed entry came as %s", line)
	}
	t.Logf("from the hub's POST to new_entry on feed-loop's stdout: %v", came.Sub(sent))
	l.waitFor(t, "feed-loop: push: ", 5*time.Second)

	explain := func(now string) string {
		t.Helper()
		cmd := exec.Command("feed-due", "--explain", self, "--now", now)
		cmd.Env = e.env
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		return string(b)
	}
	now := time.Now().UTC()
	if x := explain(now.Format(time.RFC3339)); !strings.Contains(x, "subscription    verified") || !strings.Contains(x, "once a day while the push lives") {
		t.Errorf("--explain while the push lives:\n%s", x)
	}
	// The hub dies: no renewal; past the lease the feed is polled at its
	// interval, by itself.
	hub.Close()
	if x := explain(now.Add(11 * 24 * time.Hour).Format(time.RFC3339)); !strings.Contains(x, "the push does not live") {
		t.Errorf("--explain past the lease:\n%s", x)
	}
	ls := exec.Command("feed-sub", "ls")
	ls.Env = e.env
	b, err := ls.CombinedOutput()
	if err != nil || !strings.Contains(string(b), "PUSH") || !strings.Contains(string(b), "verified, lease") {
		t.Errorf("feed-sub ls: %v\n%s", err, b)
	}
}
