package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sys/unix"

	"github.com/feedpipe/feedpipe/internal/bus/redistest"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/testserver"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// The bus's tests run the real feed-loop, as a coordinator and as
// workers, the real binaries and a real redis-server, against generated
// feeds answering in 250 ms on many loopback addresses, each a host with
// its own politeness limits. TestBusCycle runs at issue 28's scale, 2,000
// feeds over 200 hosts; the failure tests at a tenth of it, or at the full
// one with FEEDPIPE_BUS_FULL=1 (scripts/bench-bus times the cycle).
var (
	busFeeds = 240
	busHosts = 24
)

const busRPS = 2 // per host, across all workers

func init() {
	if os.Getenv("FEEDPIPE_BUS_FULL") == "1" {
		busFeeds, busHosts = 2000, 200
	}
}

// busEnv is a Redis, a feed server on hosts addresses, a coordinator's
// store subscribed to feeds feeds, and workers.
type busEnv struct {
	t       *testing.T
	feeds   int
	hosts   int
	redis   *redistest.Server
	rdb     *redis.Client
	h       *testserver.Handler
	dir     string
	store   string
	env     []string
	mu      sync.Mutex
	served  []served
	workers map[string]*exec.Cmd
	addrs   []string // the hosts' addresses
}

// served is a request the feed server answered.
type served struct {
	host, path string
	at         time.Time
}

func newBusEnv(t *testing.T) *busEnv {
	t.Helper()
	return newBusEnvOf(t, busFeeds, busHosts)
}

// newBusEnvOf is a busEnv of feeds feeds over hosts hosts.
func newBusEnvOf(t *testing.T, feeds, hosts int) *busEnv {
	t.Helper()
	sourcesRead(t)
	e := &busEnv{t: t, feeds: feeds, hosts: hosts, redis: redistest.Start(t), dir: t.TempDir(), workers: map[string]*exec.Cmd{}}
	e.rdb = e.redis.Client()
	e.store = filepath.Join(e.dir, "coordinator")
	www := filepath.Join(e.dir, "www")
	os.MkdirAll(www, 0o755)
	e.h = testserver.New(www, nil)
	rec := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.served = append(e.served, served{host: r.Host, path: r.URL.Path, at: time.Now()})
		e.mu.Unlock()
		e.h.ServeHTTP(w, r)
	})
	var subs strings.Builder
	var addrs []string
	for i := range e.hosts {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.%d.%d:0", 20+i/250, 1+i%250))
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: rec}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		addrs = append(addrs, ln.Addr().String())
	}
	e.addrs = addrs
	for i := range e.feeds {
		fmt.Fprintf(&subs, "http://%s/gen/%d.xml?delay=250ms\n", addrs[i%e.hosts], i)
	}
	os.WriteFile(filepath.Join(e.dir, "subs.txt"), []byte(subs.String()), 0o644)
	e.env = append(os.Environ(), "FEEDPIPE_REDIS="+e.redis.URL(), "FEEDPIPE_ALLOW_PRIVATE=1", "FEEDPIPE_BIN="+binDir,
		fmt.Sprintf("FEEDPIPE_HOST_RPS=%d", busRPS), "FEEDPIPE_BUS_TAKEOVER=3s", "FEEDPIPE_LOG_LEVEL=warn")
	imp := command(append(e.env, "FEEDPIPE_STORE="+e.store), "feed-sub", "import", filepath.Join(e.dir, "subs.txt"))
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("feed-sub import: %v\n%s", err, out)
	}
	t.Cleanup(e.stopWorkers)
	return e
}

// loopCmd is feed-loop in a role, in a process group of its own, its
// stderr to dir/name.log.
func (e *busEnv) loopCmd(name, role string, args ...string) *exec.Cmd {
	store := e.store
	if role == "worker" {
		store = filepath.Join(e.dir, name)
	}
	cmd := command(append(e.env, "FEEDPIPE_STORE="+store, "FEEDPIPE_BUS_NODE="+name),
		append([]string{filepath.Join(repoRoot(e.t), "scripts", "feed-loop"), "--role", role}, args...)...)
	// A session of its own: its cycles run in process groups of their own
	// (feed-loop's jobs), and a machine that dies takes the whole session.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	log, err := os.OpenFile(filepath.Join(e.dir, name+".log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		e.t.Fatal(err)
	}
	cmd.Stderr = log
	e.t.Cleanup(func() { log.Close() })
	return cmd
}

// startWorker starts a worker's feed-loop and waits until its take is
// waiting for work (its heartbeat says so), so that the workers started
// share the cycle.
func (e *busEnv) startWorker(name string) {
	e.t.Helper()
	cmd := e.loopCmd(name, "worker")
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.workers[name] = cmd
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, _ := e.rdb.HExists(context.Background(), "{feedpipe}:node:"+name, "doing take due (workers)").Result()
		if n {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("worker %s did not start taking", name)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill kills feed-loop's session with SIGKILL: the loop and every stage
// of its cycle, as a machine that dies.
func kill(cmd *exec.Cmd) {
	for range 3 { // a stage started meanwhile is in the next pass
		dirs, _ := os.ReadDir("/proc")
		for _, d := range dirs {
			pid, err := strconv.Atoi(d.Name())
			if err != nil {
				continue
			}
			if sid, err := unix.Getsid(pid); err == nil && sid == cmd.Process.Pid {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	cmd.Wait()
}

func (e *busEnv) stopWorkers() {
	for _, cmd := range e.workers {
		cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, cmd := range e.workers {
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			kill(cmd)
		}
	}
	e.workers = map[string]*exec.Cmd{}
}

// coordinate runs one coordinator cycle to its end and returns its
// status and log.
func (e *busEnv) coordinate(args ...string) (int, string) {
	e.t.Helper()
	if e.feeds > 1000 {
		args = append([]string{"--interval", "300"}, args...) // a cycle may take longer than a minute
	}
	cmd := e.loopCmd("coordinator", "coordinator", append([]string{"--once"}, args...)...)
	err := cmd.Run()
	log, _ := os.ReadFile(filepath.Join(e.dir, "coordinator.log"))
	if err != nil && cmd.ProcessState == nil {
		e.t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), string(log)
}

func (e *busEnv) requests() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.served)
}

// waitRequests waits until the server has answered n requests in all.
func (e *busEnv) waitRequests(n int) {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for e.requests() < n {
		if time.Now().After(deadline) {
			e.t.Fatalf("the server answered %d requests in a minute, want %d", e.requests(), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fetched counts the requests of each feed path.
func (e *busEnv) fetched() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := map[string]int{}
	for _, s := range e.served {
		n[s.path]++
	}
	return n
}

// checkOnce checks that every feed was fetched, and those fetched twice
// are among allowed (nil: none may be); it returns how many were.
func (e *busEnv) checkOnce(allowed map[string]bool) int {
	e.t.Helper()
	twice := 0
	n := e.fetched()
	for i := range e.feeds {
		p := fmt.Sprintf("/gen/%d.xml", i)
		switch c := n[p]; {
		case c == 0:
			e.t.Errorf("%s was never fetched", p)
		case c > 1 && !allowed[p]:
			e.t.Errorf("%s was fetched %d times, and was in no killed worker's hands", p, c)
		case c > 1:
			twice++
		}
	}
	return twice
}

// checkRate checks each host's requests, as the server saw them, across
// all workers: never two closer than half the interval 1/busRPS (which
// two workers each keeping its own limit would make), and never more in
// a window of 2 s than the rate allows, plus one for the time between
// Redis's grant of a slot and the request's arrival here.
func (e *busEnv) checkRate() {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	byHost := map[string][]time.Time{}
	for _, s := range e.served {
		byHost[s.host] = append(byHost[s.host], s.at)
	}
	interval := time.Second / busRPS
	const window = 2 * time.Second
	bad := 0
	for host, ts := range byHost {
		sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
		for i := range ts {
			j := i
			for j < len(ts) && ts[j].Sub(ts[i]) < window {
				j++
			}
			if n := j - i; n > int(window/interval)+1 || i > 0 && ts[i].Sub(ts[i-1]) < interval/2 {
				bad++
				if bad < 5 {
					e.t.Errorf("%s: %d requests within %v from %v, or two closer than %v: over %d a second across the workers",
						host, n, window, ts[i].Format("15:04:05.000"), interval/2, busRPS)
				}
			}
		}
	}
}

// checkStored checks that the coordinator's store holds each entry
// version once, want in all, and that the events stream announced each
// once.
func (e *busEnv) checkStored(want int) {
	e.t.Helper()
	st, err := storedir.Open(e.store)
	if err != nil {
		e.t.Fatal(err)
	}
	defer st.Close()
	versions := readVersions(e.t, st, storedir.DirEntries)
	doubled := 0
	for _, n := range versions {
		if n > 1 {
			doubled++
		}
	}
	if len(versions) != want || doubled > 0 {
		log, _ := os.ReadFile(filepath.Join(e.dir, "coordinator.log"))
		e.t.Errorf("the store holds %d entry versions, %d of them more than once; want %d, each once\n%s", len(versions), doubled, want, log)
	}
	msgs, err := e.rdb.XRange(context.Background(), "{feedpipe}:events", "-", "+").Result()
	if err != nil {
		e.t.Fatal(err)
	}
	announced := map[version]int{}
	for _, m := range msgs {
		var ev ndjson.Event
		if err := ndjson.Unmarshal([]byte(m.Values["record"].(string)), &ev); err != nil {
			e.t.Fatal(err)
		}
		announced[version{ev.EntryUID, ev.ContentHash}]++
	}
	for v, n := range announced {
		if n != 1 || versions[v] != 1 {
			e.t.Errorf("entry %v announced %d times on the events stream, stored %d times", v, n, versions[v])
		}
	}
	if len(announced) != len(versions) {
		e.t.Errorf("the events stream announced %d entry versions, the store holds %d", len(announced), len(versions))
	}
}

// inHand is the feed paths of the due records a worker held (taken, not
// handed on).
func (e *busEnv) inHand(worker string) map[string]bool {
	e.t.Helper()
	ctx := context.Background()
	p, err := e.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: "{feedpipe}:due", Group: "workers", Start: "-", End: "+", Count: 10000, Consumer: worker}).Result()
	if err != nil {
		e.t.Fatal(err)
	}
	paths := map[string]bool{}
	for _, pe := range p {
		msgs, err := e.rdb.XRange(ctx, "{feedpipe}:due", pe.ID, pe.ID).Result()
		if err != nil || len(msgs) != 1 {
			e.t.Fatalf("due %s: %v", pe.ID, err)
		}
		var d ndjson.Due
		ndjson.Unmarshal([]byte(msgs[0].Values["record"].(string)), &d)
		u, _ := url.Parse(d.URL)
		paths[u.Path] = true
	}
	return paths
}

// TestBusCycle: one coordinator and three workers: a cold cycle fetches
// every feed once, with each host's limit held across the workers, and
// stores every entry once; a warm one answers 304 for all.
func TestBusCycle(t *testing.T) {
	e := newBusEnvOf(t, 2000, 200)
	for _, w := range []string{"w1", "w2", "w3"} {
		e.startWorker(w)
	}
	status, log := e.coordinate()
	if status != 0 || !strings.Contains(log, fmt.Sprintf("cycle 1: feeds=%d not_modified=0", e.feeds)) {
		t.Fatalf("cold cycle: status %d\n%s", status, log)
	}
	e.checkOnce(nil)
	e.checkRate()
	e.checkStored(e.feeds * 10)
	// Every worker did some of the work.
	for _, w := range []string{"w1", "w2", "w3"} {
		files, _ := filepath.Glob(filepath.Join(e.dir, w, "fetches", "*.ndjson"))
		if len(files) == 0 {
			t.Errorf("%s fetched nothing", w)
		}
	}
	status, log = e.coordinate("--all")
	if status != 0 || !strings.Contains(log, fmt.Sprintf("feeds=%d not_modified=%d", e.feeds, e.feeds)) {
		t.Errorf("warm cycle: status %d\n%s", status, log)
	}
	out, err := command(e.env, "feed-bus", "status").CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("coordinator")) || !bytes.Contains(out, []byte("worker")) {
		t.Errorf("feed-bus status: %v\n%s", err, out)
	}
	e.checkServe()
}

// checkServe starts feed-serve beside the coordinator, with the bus's
// Redis in its environment (FEEDPIPE_REDIS), and reads the bus's status
// on /metrics, at GET /bus and on the dashboard.
func (e *busEnv) checkServe() {
	e.t.Helper()
	base, _ := startServe(e.t, append(e.env, "FEEDPIPE_STORE="+e.store))
	get := func(path string) string {
		resp, err := http.Get(base + path)
		if err != nil {
			e.t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			e.t.Errorf("feed-serve %s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	for path, want := range map[string][]string{
		"/metrics":       {"feedpipe_bus_up 1", `feedpipe_bus_nodes{role="worker"} 3`, `feedpipe_bus_group_pending{group="workers",stream="due"} 0`, `feedpipe_bus_stream_length{stream="events"}`},
		"/bus":           {`"name":"due"`, `"name":"workers"`, `"role":"coordinator"`},
		"/web/dashboard": {`<td>parsed</td>`, `<td>store</td>`},
	} {
		body := get(path)
		for _, w := range want {
			if !strings.Contains(body, w) {
				e.t.Errorf("feed-serve %s lacks %s:\n%s", path, w, body)
			}
		}
	}
}

// startCycle starts three workers, w1 to w3, and a coordinator's one
// cycle, which waitCycle waits for.
func (e *busEnv) startCycle() *exec.Cmd {
	e.t.Helper()
	for _, w := range []string{"w1", "w2", "w3"} {
		e.startWorker(w)
	}
	coord := e.loopCmd("coordinator", "coordinator", "--once")
	if err := coord.Start(); err != nil {
		e.t.Fatal(err)
	}
	return coord
}

// waitCycle waits for the coordinator's cycle to end, fails the test
// unless it ended well, and returns its log.
func (e *busEnv) waitCycle(coord *exec.Cmd) []byte {
	e.t.Helper()
	coord.Wait()
	log, _ := os.ReadFile(filepath.Join(e.dir, "coordinator.log"))
	if coord.ProcessState.ExitCode() != 0 {
		e.t.Fatalf("coordinator: %v\n%s", coord.ProcessState, log)
	}
	return log
}

// TestBusKillWorker: a worker killed (SIGKILL, its whole pipeline) in the
// middle of a cycle loses nothing: the others, or it once restarted, take
// over what it held; only feeds it held were fetched twice; every entry
// is stored once.
func TestBusKillWorker(t *testing.T) {
	e := newBusEnv(t)
	// A window of a fifth of the feeds, so that every worker holds some
	// whichever starts its take first (two windows of 128 would hold the
	// whole cycle).
	e.env = append(e.env, fmt.Sprintf("FEEDPIPE_BUS_WINDOW=%d", e.feeds/5))
	coord := e.startCycle()
	e.waitRequests(e.feeds / 3)
	victim := "w2"
	for _, w := range []string{"w1", "w3"} {
		if len(e.inHand(w)) > len(e.inHand(victim)) {
			victim = w
		}
	}
	kill(e.workers[victim])
	held := e.inHand(victim)
	e.startWorker(victim)
	e.waitCycle(coord)
	if len(held) == 0 {
		t.Errorf("%s held nothing when it was killed: the test killed it too early or too late", victim)
	}
	twice := e.checkOnce(held)
	t.Logf("%s held %d feeds when killed; %d were fetched twice", victim, len(held), twice)
	e.checkStored(e.feeds * 10)
}

// TestBusKillCoordinator: the coordinator killed in the middle of a cycle
// and started again loses nothing and doubles nothing: its records are
// taken again and the store's idempotence absorbs what it had stored; no
// feed is put on the bus, nor fetched, twice.
func TestBusKillCoordinator(t *testing.T) {
	e := newBusEnv(t)
	coord := e.startCycle()
	// Kill it once it has stored some of the cycle.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if files, _ := filepath.Glob(filepath.Join(e.store, "entries", "*.ndjson")); len(files) > 0 {
			if st, _ := os.Stat(files[0]); st != nil && st.Size() > 0 && e.requests() > e.feeds/2 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the coordinator stored nothing in a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	kill(coord)
	status, log := e.coordinate()
	if status != 0 {
		t.Fatalf("the coordinator started again: status %d\n%s", status, log)
	}
	e.checkOnce(nil)
	e.checkStored(e.feeds * 10)
}

// TestBusRedisRestart: Redis killed and started again in the middle of a
// cycle: every stage waits for it, says so, and the cycle ends with every
// feed fetched once and every entry stored once.
func TestBusRedisRestart(t *testing.T) {
	e := newBusEnv(t)
	// No worker dies here: a takeover shorter than the outage (Redis down
	// 2 s, and slow to come back on a loaded machine) would hand records
	// still being fetched to another worker, a second fetch this test
	// counts as a fault. Exec takes the last of a repeated variable.
	e.env = append(e.env, "FEEDPIPE_BUS_TAKEOVER=30s")
	coord := e.startCycle()
	e.waitRequests(e.feeds / 3)
	e.redis.Kill()
	time.Sleep(2 * time.Second)
	e.redis.Start()
	log := e.waitCycle(coord)
	e.checkOnce(nil)
	e.checkStored(e.feeds * 10)
	w1, _ := os.ReadFile(filepath.Join(e.dir, "w1.log"))
	for _, l := range [][]byte{log, w1} {
		if !bytes.Contains(l, []byte("redis is unavailable")) || !bytes.Contains(l, []byte("redis is back")) {
			t.Errorf("the outage was not said:\n%s", l)
		}
	}
}

// TestBusHostileRecord: a record on the parsed stream that is not what a
// worker writes (a payload not matching its sha256) is refused by the
// coordinator with a line that says why, and the rest is stored.
func TestBusHostileRecord(t *testing.T) {
	e := newBusEnv(t)
	for _, w := range []string{"w1", "w2", "w3"} {
		e.startWorker(w)
	}
	fetch := `{"type":"fetch","v":1,"fetch_id":"01937a4e-8e35-7c6b-9f3e-5f8d5e2f6a01","due":{"type":"due","v":1,"feed_id":"6ba7b811-9dad-51d1-80b4-00c04fd430c8","url":"http://example.org/"},` +
		`"body_ref":{"storage":"localfs","key":"raw/2026-11-28/` + strings.Repeat("ab", 32) + `.zst"},"body_sha256":"` + strings.Repeat("ab", 32) + `","content_length":3}`
	if err := e.rdb.XAdd(context.Background(), &redis.XAddArgs{Stream: "{feedpipe}:parsed", Values: map[string]any{"record": fetch, "body": "not zstd"}}).Err(); err != nil {
		t.Fatal(err)
	}
	status, log := e.coordinate()
	if status != 1 || !strings.Contains(log, "refused a record: its payload does not decode") {
		t.Errorf("coordinator: status %d, want 1 and the refusal said\n%s", status, log)
	}
	e.checkStored(e.feeds * 10)
	if n, _ := e.rdb.XLen(context.Background(), "{feedpipe}:dead").Result(); n != 1 {
		t.Errorf("%d records on the dead stream, want the one refused", n)
	}
}

// TestLoopRole: feed-loop's --role is one, coordinator or worker; another
// is a usage error, before anything runs.
func TestLoopRole(t *testing.T) {
	sourcesRead(t)
	cmd := command(append(os.Environ(), "FEEDPIPE_STORE="+t.TempDir(), "FEEDPIPE_BIN="+binDir),
		filepath.Join(repoRoot(t), "scripts", "feed-loop"), "--role", "leader", "--once")
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 2 || !bytes.Contains(out, []byte("--role 'leader' is not one, coordinator or worker")) {
		t.Errorf("feed-loop --role leader: %v\n%s", err, out)
	}
}

// TestBusFulltext: the full-text stage as a worker on the events stream.
// A feed labelled fulltext links to pages of its host; after the cycle
// that stores its entries, feed-bus take events | feed-scrape --events
// --label fulltext | feed-bus put enriched completes each with its page's
// text, acknowledges every other event with nothing put, and the
// coordinator's next cycle (--enriched) stores those next versions: the
// store holds each entry's page text, announced once on the events stream
// as an updated_entry.
func TestBusFulltext(t *testing.T) {
	e := newBusEnv(t)
	www := filepath.Join(e.dir, "www")
	os.MkdirAll(filepath.Join(www, "articles"), 0o755)
	host := e.addrs[0]
	var items strings.Builder
	const pages = 3
	for k := range pages {
		fmt.Fprintf(&items, "<item><title>Article %d</title><link>http://%s/articles/a%d.html</link><guid>a%d</guid><description>Teaser %d.</description><pubDate>Mon, 0%d Nov 2026 10:00:00 GMT</pubDate></item>\n",
			k, host, k, k, k, k+1)
		var body strings.Builder
		for p := range 6 {
			fmt.Fprintf(&body, "<p>Paragraph %d of article %d: the full text the feed leaves out, long enough for a reader to take it for the article's own words and not a menu.</p>\n", p, k)
		}
		page := fmt.Sprintf("<!doctype html><html><head><title>Article %d</title></head><body><nav><a href=\"/\">Home</a></nav><article><h1>Article %d</h1>%s</article></body></html>", k, k, body.String())
		os.WriteFile(filepath.Join(www, "articles", fmt.Sprintf("a%d.html", k)), []byte(page), 0o644)
	}
	feed := fmt.Sprintf(`<?xml version="1.0"?><rss version="2.0"><channel><title>Teasers</title><link>http://%s/</link><description>d</description>%s</channel></rss>`, host, items.String())
	os.WriteFile(filepath.Join(www, "teasers.xml"), []byte(feed), 0o644)
	add := command(append(e.env, "FEEDPIPE_STORE="+e.store), "feed-sub", "add", "http://"+host+"/teasers.xml", "--label", "fulltext")
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("feed-sub add: %v\n%s", err, out)
	}
	e.startWorker("w1")
	if status, log := e.coordinate(); status != 0 {
		t.Fatalf("cycle: status %d\n%s", status, log)
	}
	e.stopWorkers()
	e.checkStored(e.feeds*10 + pages)

	// The stage-2 worker, on a machine of its own: a scratch store.
	ft := command(append(e.env, "FEEDPIPE_STORE="+filepath.Join(e.dir, "fulltext"), "FEEDPIPE_BUS_NODE=ft1", "FEEDPIPE_LOG_LEVEL=info"), "bash", "-c",
		"set -o pipefail; feed-bus take events --group fulltext --idle 2s | feed-scrape --events --label fulltext | feed-bus put enriched")
	out, err := ft.CombinedOutput()
	if err != nil {
		t.Fatalf("the full-text worker: %v\n%s", err, out)
	}
	ctx := context.Background()
	if n, _ := e.rdb.XLen(ctx, "{feedpipe}:enriched").Result(); n != pages {
		t.Errorf("%d records on the enriched stream, want %d\n%s", n, pages, out)
	}
	if p, err := e.rdb.XPending(ctx, "{feedpipe}:events", "fulltext").Result(); err != nil || p.Count != 0 {
		t.Errorf("events left unacknowledged by the fulltext group: %+v %v", p, err)
	}

	if status, log := e.coordinate("--enriched"); status != 0 {
		t.Fatalf("the cycle that stores the enriched entries: status %d\n%s", status, log)
	}
	// The events stream holds what the fulltext group has not read (what
	// every group acknowledged is trimmed): the updates only.
	st, err := storedir.Open(e.store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if v := readVersions(t, st, storedir.DirEntries); len(v) != e.feeds*10+2*pages {
		t.Errorf("the store holds %d entry versions, want %d", len(v), e.feeds*10+2*pages)
	}
	if p, err := e.rdb.XPending(ctx, "{feedpipe}:enriched", "store").Result(); err != nil || p.Count != 0 {
		t.Errorf("enriched records left unacknowledged by the store: %+v %v", p, err)
	}
	out, err = command(append(e.env, "FEEDPIPE_STORE="+e.store), "feed-read", "--json", "--label", "fulltext").CombinedOutput()
	if err != nil {
		t.Fatalf("feed-read: %v\n%s", err, out)
	}
	for k := range pages {
		if want := fmt.Sprintf("Paragraph 5 of article %d", k); !bytes.Contains(out, []byte(want)) {
			t.Errorf("the store's entry %d has not its page's text (%q):\n%s", k, want, out)
		}
	}
	msgs, _ := e.rdb.XRange(ctx, "{feedpipe}:events", "-", "+").Result()
	updated := 0
	for _, m := range msgs {
		if strings.Contains(m.Values["record"].(string), `"type":"updated_entry"`) {
			updated++
		}
	}
	if updated != pages {
		t.Errorf("%d updated_entry events, want %d", updated, pages)
	}
}
