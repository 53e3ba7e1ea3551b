// Command pushbench measures how long a WebSub push takes to come out of
// feed-loop as a new_entry event (scripts/bench-push runs it): a
// spec-following hub on loopback (internal/websub/websubtest), a feed
// server, the real feed-serve at a public URL and the real feed-loop as a
// daemon an hour between cycles; once the hub has verified the
// subscription feed-sub push sync asked for, it publishes N times a feed
// with one more entry, each once the last one's event came (and a pause),
// and reports the time from the hub's POST to the event line on
// feed-loop's stdout: median, p90, p99 and the slowest.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/feedpipe/feedpipe/internal/websub/websubtest"
)

func main() {
	var (
		bin   = flag.String("bin", "", "the directory of the feedpipe binaries and feed-loop")
		n     = flag.Int("n", 100, "pushes")
		pause = flag.Duration("pause", 300*time.Millisecond, "the longest pause after an event before the next push (a random share of it)")
		dir   = flag.String("dir", "", "a directory for the store and the feed (default: a new one, removed)")
		out   = flag.String("o", "", "also write the results as one JSON object to this file")
	)
	flag.Parse()
	if *bin == "" || *n < 1 {
		fmt.Fprintln(os.Stderr, "usage: pushbench -bin DIR [-n N] [-pause D] [-dir DIR] [-o FILE]")
		os.Exit(2)
	}
	if err := run(*bin, *n, *pause, *dir, *out); err != nil {
		fmt.Fprintln(os.Stderr, "pushbench:", err)
		os.Exit(1)
	}
}

// events reads feed-loop's stdout and notes when each titled line came.
type events struct {
	mu   sync.Mutex
	seen map[string]time.Time // by title
	cond chan struct{}
}

func (e *events) read(sc *bufio.Scanner) {
	for sc.Scan() {
		var ev struct{ Type, Title string }
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Type != "new_entry" {
			continue
		}
		e.mu.Lock()
		e.seen[ev.Title] = time.Now()
		e.mu.Unlock()
		select {
		case e.cond <- struct{}{}:
		default:
		}
	}
}

func (e *events) wait(title string, limit time.Duration) (time.Time, bool) {
	deadline := time.After(limit)
	for {
		e.mu.Lock()
		at, ok := e.seen[title]
		e.mu.Unlock()
		if ok {
			return at, true
		}
		select {
		case <-e.cond:
		case <-time.After(5 * time.Millisecond):
		case <-deadline:
			return time.Time{}, false
		}
	}
}

func run(bin string, n int, pause time.Duration, dir, outFile string) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "feedpipe-pushbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	www := filepath.Join(dir, "www")
	if err := os.MkdirAll(www, 0o755); err != nil {
		return err
	}
	hub := websubtest.New()
	defer hub.Close()
	feeds := httptest.NewServer(http.FileServer(http.Dir(www)))
	defer feeds.Close()
	self := feeds.URL + "/feed.xml"
	write := func(upTo int) ([]byte, error) {
		var b strings.Builder
		fmt.Fprintf(&b, `<feed xmlns="http://www.w3.org/2005/Atom"><title>Pushed</title><id>urn:p</id><updated>2026-11-21T08:00:00Z</updated>`+
			`<link rel="hub" href="%s"/><link rel="self" href="%s"/>`, hub.URL, self)
		for i := upTo; i > max(upTo-20, -1); i-- {
			fmt.Fprintf(&b, `<entry><id>urn:p:%d</id><title>push %d</title><link href="https://p.example/%d"/><updated>2026-11-21T08:00:00Z</updated></entry>`, i, i, i)
		}
		b.WriteString(`</feed>`)
		body := []byte(b.String())
		return body, os.WriteFile(filepath.Join(www, "feed.xml"), body, 0o644)
	}
	if _, err := write(0); err != nil {
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := l.Addr().String()
	l.Close()
	env := append(os.Environ(), "FEEDPIPE_STORE="+filepath.Join(dir, "store"), "FEEDPIPE_ALLOW_PRIVATE=1", "FEEDPIPE_HOST_RPS=0",
		"FEEDPIPE_LOG_LEVEL=warn", "FEEDPIPE_PUBLIC_URL=http://"+addr, "FEEDPIPE_BIN="+bin, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
	cmd := func(name string, args ...string) *exec.Cmd {
		c := exec.Command(filepath.Join(bin, name), args...)
		c.Env = env
		return c
	}
	if b, err := cmd("feed-sub", "add", self).CombinedOutput(); err != nil {
		return fmt.Errorf("feed-sub add: %v: %s", err, b)
	}
	serve := cmd("feed-serve", "--listen", addr, "--cpus", "1")
	if err := serve.Start(); err != nil {
		return err
	}
	defer func() { serve.Process.Signal(syscall.SIGTERM); serve.Wait() }()
	loop := cmd("feed-loop", "--interval", "1h")
	loop.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	loop.Stderr = nil // its push lines, one a push: not the bench's
	stdout, err := loop.StdoutPipe()
	if err != nil {
		return err
	}
	if err := loop.Start(); err != nil {
		return err
	}
	defer func() { syscall.Kill(-loop.Process.Pid, syscall.SIGTERM); loop.Wait() }()
	ev := &events{seen: map[string]time.Time{}, cond: make(chan struct{}, 1)}
	go ev.read(bufio.NewScanner(stdout))
	if _, ok := ev.wait("push 0", time.Minute); !ok {
		return fmt.Errorf("the first cycle stored nothing in a minute")
	}
	if e, err := hub.Next(time.Minute); err != nil || e.Kind != "verified" {
		return fmt.Errorf("the hub did not verify the subscription: %+v, %v", e, err)
	}
	var took []time.Duration
	for i := 1; i <= n; i++ {
		body, err := write(i)
		if err != nil {
			return err
		}
		sent := time.Now()
		if got := hub.Publish(self, "application/atom+xml", body); len(got) != 1 {
			return fmt.Errorf("push %d reached %v", i, got)
		}
		at, ok := ev.wait(fmt.Sprintf("push %d", i), 30*time.Second)
		if !ok {
			return fmt.Errorf("push %d: no new_entry in 30 s", i)
		}
		took = append(took, at.Sub(sent))
		time.Sleep(time.Duration(rand.Int64N(int64(pause) + 1)))
	}
	slices.Sort(took)
	// The nearest rank: the p-quantile of 100 is the 100p-th smallest.
	q := func(p float64) time.Duration { return took[max(0, int(math.Ceil(p*float64(len(took))))-1)] }
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	res := map[string]any{"pushes": n, "p50_ms": ms(q(0.50)), "p90_ms": ms(q(0.90)), "p99_ms": ms(q(0.99)), "max_ms": ms(took[len(took)-1]), "min_ms": ms(took[0])}
	fmt.Printf("pushes %d: from the hub's POST to new_entry on feed-loop's stdout: min %.0f ms, median %.0f ms, p90 %.0f ms, p99 %.0f ms, max %.0f ms\n",
		n, res["min_ms"], res["p50_ms"], res["p90_ms"], res["p99_ms"], res["max_ms"])
	if outFile != "" {
		b, _ := json.Marshal(res)
		return os.WriteFile(outFile, append(b, '\n'), 0o644)
	}
	return nil
}
