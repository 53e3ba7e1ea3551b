package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/testserver"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// pipeline starts the stages as processes connected by pipes, the last
// writing to out, all of them to stderr (nil: discarded).
func pipeline(t *testing.T, env []string, out, stderr io.Writer, stages ...[]string) []*exec.Cmd {
	t.Helper()
	var cmds []*exec.Cmd
	var prevRead *os.File
	for i, args := range stages {
		cmd := command(env, args...)
		cmd.Stderr = stderr
		if prevRead != nil {
			cmd.Stdin = prevRead
		}
		var w *os.File
		if i < len(stages)-1 {
			r, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stdout, w = pw, pw
			defer func(r *os.File) { prevRead = r }(r)
			prevRead = r
		} else {
			cmd.Stdout = out
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The parent's copies of the pipe ends must go, or a reader never
		// sees the end of its input.
		if w != nil {
			w.Close()
		}
		if i > 0 {
			cmd.Stdin.(*os.File).Close()
		}
		cmds = append(cmds, cmd)
	}
	return cmds
}

// feedServer serves the files of a new directory www under dir on
// loopback, as the feeds' publishers, until the test ends.
func feedServer(t *testing.T, dir string) (www string, srv *httptest.Server) {
	t.Helper()
	www = filepath.Join(dir, "www")
	if err := os.MkdirAll(www, 0o755); err != nil {
		t.Fatal(err)
	}
	srv = httptest.NewServer(testserver.New(www, nil))
	t.Cleanup(srv.Close)
	return www, srv
}

// rssDoc writes a feed of items: each item i of the feed has guid
// "<feed>-<i>" and a body that changes with its version.
func rssDoc(feed string, items map[int]int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "<?xml version=\"1.0\"?>\n<rss version=\"2.0\"><channel><title>%s</title>\n", feed)
	for i := len(items) - 1; i >= 0; i-- {
		fmt.Fprintf(&b, "<item><guid>%s-%d</guid><title>Item %d v%d</title><link>https://%s.example/%d</link><description>%s</description></item>\n",
			feed, i, i, items[i], feed, i, strings.Repeat("text ", 50+items[i]))
	}
	b.WriteString("</channel></rss>\n")
	return []byte(b.String())
}

// killOnWrite kills cmd with SIGKILL the moment the file at path (the
// catalog's write-ahead log) changes size or time, so that the kill lands
// in the middle of a commit or just after it; false if cmd ended first.
func killOnWrite(path string, cmd *exec.Cmd) bool {
	stamp := func() (int64, time.Time) {
		fi, err := os.Stat(path)
		if err != nil {
			return -1, time.Time{}
		}
		return fi.Size(), fi.ModTime()
	}
	size, mtime := stamp()
	for {
		if s, m := stamp(); s != size || !m.Equal(mtime) {
			return cmd.Process.Signal(syscall.SIGKILL) == nil
		}
		// Signal 0 asks only whether the process is there; a zombie
		// still is, so look at its state too.
		if cmd.Process.Signal(syscall.Signal(0)) != nil || exited(cmd.Process.Pid) {
			return false
		}
		time.Sleep(20 * time.Microsecond)
	}
}

// exited reports whether the process pid has ended (a zombie waiting to be
// reaped included).
func exited(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the command's closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z'
}

// TestKill9AnywhereLosesAndDoublesNothing kills feed-store or feed-fetch
// with SIGKILL at random moments of many pipeline runs (a third of them as
// feed-store writes the catalog), each followed by a
// normal one, while the feeds keep changing; then checks the store against
// what the feeds served: every entry version stored exactly once, every one
// announced exactly once, no line a reader cannot read.
func TestKill9AnywhereLosesAndDoublesNothing(t *testing.T) {
	sourcesRead(t)
	if testing.Short() {
		t.Skip("-short")
	}
	const feeds, rounds = 60, 16
	rnd := rand.New(rand.NewPCG(1, 2))
	dir := t.TempDir()
	www, srv := feedServer(t, dir)
	store := filepath.Join(dir, "store")
	env := append(os.Environ(), "FEEDPIPE_STORE="+store, "FEEDPIPE_ALLOW_PRIVATE=1", "FEEDPIPE_HOST_RPS=0", "FEEDPIPE_LOG_LEVEL=error")

	versions := make([]map[int]int, feeds) // feed -> item -> version
	write := func() {
		for f := range feeds {
			name := fmt.Sprintf("f%02d", f)
			if err := os.WriteFile(filepath.Join(www, name+".xml"), rssDoc(name, versions[f]), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	var subs strings.Builder
	for f := range feeds {
		versions[f] = map[int]int{}
		for i := range 30 {
			versions[f][i] = 1
		}
		fmt.Fprintf(&subs, "%s/f%02d.xml\n", srv.URL, f)
	}
	write()
	imp := exec.Command("feed-sub", "import", "-")
	imp.Env, imp.Stdin = env, strings.NewReader(subs.String())
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}

	stages := [][]string{{"feed-due", "--all"}, {"feed-fetch"}, {"feed-parse"}, {"feed-dedup"}, {"feed-store"}}
	var events bytes.Buffer // everything announced on stdout, over all runs
	// How long each stage works in a run here, so that the kills land all
	// over it. Kept up to date from the run after each kill: the rounds get
	// lighter than the first, and a machine's load changes.
	life := make([]time.Duration, len(stages))
	timed := func(out *bytes.Buffer, fail func(i int, err error)) {
		start := time.Now()
		for i, c := range pipeline(t, env, out, nil, stages...) {
			if err := c.Wait(); err != nil && fail != nil {
				fail(i, err)
			}
			life[i] = max(time.Since(start), 20*time.Millisecond)
		}
	}
	var first bytes.Buffer
	timed(&first, nil)
	events.Write(first.Bytes())
	kills, commitKills := 0, 0
	for round := range rounds {
		// The publishers move on: new items on some feeds, edits on others.
		for f := range feeds {
			switch rnd.IntN(3) {
			case 0:
				versions[f][len(versions[f])] = 1
			case 1:
				versions[f][rnd.IntN(len(versions[f]))]++
			}
		}
		write()

		var out bytes.Buffer
		cmds := pipeline(t, env, &out, nil, stages...)
		v := 4 // feed-store
		if round%3 == 1 {
			v = 1 // feed-fetch
		}
		victim := cmds[v]
		if round%3 == 2 {
			// In the middle of a catalog commit: at the first write to
			// the catalog's WAL after a random moment.
			time.Sleep(time.Duration(rnd.Int64N(int64(life[v]) / 2)))
			if killOnWrite(filepath.Join(store, "catalog.db-wal"), victim) {
				commitKills++
			}
		} else {
			time.Sleep(time.Duration(rnd.Int64N(int64(life[v]))))
		}
		victim.Process.Signal(syscall.SIGKILL)
		for _, c := range cmds {
			c.Wait()
		}
		if ws, ok := victim.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			kills++ // it was still at work
		}
		events.Write(out.Bytes())

		out.Reset()
		timed(&out, func(i int, err error) {
			t.Fatalf("round %d: stage %s of the run after the kill: %v", round, stages[i][0], err)
		})
		events.Write(out.Bytes())
	}
	t.Logf("%d rounds, %d processes killed at work, %d of them as they wrote the catalog", rounds, kills, commitKills)
	if kills < rounds/2 {
		t.Errorf("only %d of %d kills landed while the process worked: the test proves little", kills, rounds)
	}
	if commitKills < rounds/6 {
		t.Errorf("only %d kills landed in a catalog commit: the test proves little", commitKills)
	}

	st, err := storedir.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	// Every line of every entries and events file reads.
	stored := readVersions(t, st, storedir.DirEntries)
	announcedInFile := readVersions(t, st, storedir.DirEvents)
	// What the feeds serve now must all be stored (the last run was normal).
	for f := range feeds {
		name := fmt.Sprintf("f%02d", f)
		cmd := exec.Command("feed-parse", "--base-url", srv.URL+"/"+name+".xml", filepath.Join(www, name+".xml"))
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		rd := ndjson.NewReader(bytes.NewReader(out))
		for {
			l, err := rd.Next()
			if err != nil {
				break
			}
			if l.Type != ndjson.TypeEntry {
				continue // the file's fetch record
			}
			var e ndjson.Entry
			l.Decode(&e)
			if stored[version{e.EntryUID, e.ContentHash}] == 0 {
				t.Errorf("%s: %q as served now was never stored", name, e.Title)
			}
		}
	}
	announcedOnStdout := announcedVersions(&events)
	for v, n := range stored {
		if n != 1 {
			t.Errorf("entry %s version %s stored %d times", v[0], v[1], n)
		}
		if announcedInFile[v] != 1 {
			t.Errorf("entry %s version %s announced %d times in events/", v[0], v[1], announcedInFile[v])
		}
	}
	for v, n := range announcedOnStdout {
		if stored[v] != 1 || n != 1 {
			t.Errorf("entry %s version %s announced %d times on stdout, stored %d times", v[0], v[1], n, stored[v])
		}
	}
	for v := range announcedInFile {
		if stored[v] != 1 {
			t.Errorf("entry %s version %s announced but stored %d times", v[0], v[1], stored[v])
		}
	}
	if len(stored) < feeds*30 {
		t.Fatalf("only %d entry versions stored", len(stored))
	}
	t.Logf("%d entry versions stored and announced once each", len(stored))
}

// TestKill9BuildingTheLinkIndex kills the first feed-dedup --cross-feed
// run on a store with SIGKILL at random moments of its building the link
// index from entries/ (catalog.KeepLinks; a third of the kills as it
// writes the catalog), each time on a fresh copy of the store: the
// catalog then keeps either no link or every stored link, never a part,
// and the next run builds it whole. Then a feed repeating another's links
// is stored as its aliases.
func TestKill9BuildingTheLinkIndex(t *testing.T) {
	sourcesRead(t)
	if testing.Short() {
		t.Skip("-short")
	}
	const feeds, items, rounds = 40, 30, 12
	rnd := rand.New(rand.NewPCG(3, 4))
	dir := t.TempDir()
	www, srv := feedServer(t, dir)
	pristine := filepath.Join(dir, "pristine")
	envOf := func(store string) []string {
		return append(os.Environ(), "FEEDPIPE_STORE="+store, "FEEDPIPE_ALLOW_PRIVATE=1", "FEEDPIPE_HOST_RPS=0", "FEEDPIPE_LOG_LEVEL=error")
	}
	var subs strings.Builder
	all := map[int]int{}
	for i := range items {
		all[i] = 1
	}
	for f := range feeds {
		name := fmt.Sprintf("f%02d", f)
		if err := os.WriteFile(filepath.Join(www, name+".xml"), rssDoc(name, all), 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&subs, "%s/%s.xml\n", srv.URL, name)
	}
	imp := exec.Command("feed-sub", "import", "-")
	imp.Env, imp.Stdin = envOf(pristine), strings.NewReader(subs.String())
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// Stored without --cross-feed: no link index.
	for _, c := range pipeline(t, envOf(pristine), io.Discard, nil, []string{"feed-due", "--all"}, []string{"feed-fetch"}, []string{"feed-parse"}, []string{"feed-dedup"}, []string{"feed-store"}) {
		if err := c.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	// links counts the catalog's links, and its entries, each with a link
	// of its own; kept is whether it keeps them.
	links := func(store string) (n, entries int, kept bool) {
		t.Helper()
		cat := mustCatalog(t, store)
		defer cat.Close()
		sizes, err := cat.Sizes(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if kept, err = cat.LinksKept(context.Background()); err != nil {
			t.Fatal(err)
		}
		return sizes["links"], sizes["entries"], kept
	}
	n, want, kept := links(pristine)
	if n != 0 || kept || want < feeds*10 {
		t.Fatalf("before any --cross-feed run: %d links of %d entries, kept %v", n, want, kept)
	}
	build := func(store string) *exec.Cmd {
		c := command(envOf(store), "feed-dedup", "--cross-feed")
		c.Stdin = strings.NewReader("")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		return c
	}
	store := filepath.Join(dir, "store")
	if err := os.CopyFS(store, os.DirFS(pristine)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := build(store).Wait(); err != nil {
		t.Fatal(err)
	}
	life := time.Since(start)
	if n, _, kept := links(store); n != want || !kept {
		t.Fatalf("built: %d links, kept %v; want %d", n, kept, want)
	}
	kills, commitKills := 0, 0
	for round := range rounds {
		os.RemoveAll(store)
		if err := os.CopyFS(store, os.DirFS(pristine)); err != nil {
			t.Fatal(err)
		}
		cmd := build(store)
		if round%3 == 2 {
			time.Sleep(time.Duration(rnd.Int64N(int64(life) / 2)))
			if killOnWrite(filepath.Join(store, "catalog.db-wal"), cmd) {
				commitKills++
			}
		} else {
			time.Sleep(time.Duration(rnd.Int64N(int64(life))))
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			kills++
		}
		if n, _, kept := links(store); kept != (n == want) || !kept && n != 0 {
			t.Fatalf("round %d, after the kill: %d links, kept %v: a part of the index", round, n, kept)
		}
		if err := build(store).Wait(); err != nil {
			t.Fatalf("round %d: the run after the kill: %v", round, err)
		}
		if n, _, kept := links(store); n != want || !kept {
			t.Fatalf("round %d, after the next run: %d links, kept %v", round, n, kept)
		}
	}
	t.Logf("%d rounds, %d builds killed at work, %d of them as they wrote the catalog", rounds, kills, commitKills)
	if kills < rounds/2 || commitKills < rounds/6 {
		t.Errorf("only %d kills at work, %d in a commit, of %d: the test proves little", kills, commitKills, rounds)
	}
	// The index built is the one cross-feed reads: a new feed with f00's
	// links, in the same order, is stored as its aliases.
	var dup strings.Builder
	dup.WriteString("<?xml version=\"1.0\"?>\n<rss version=\"2.0\"><channel><title>dup</title>\n")
	for i := items - 1; i >= 0; i-- {
		fmt.Fprintf(&dup, "<item><guid>dup-%d</guid><title>Again %d</title><link>http://f00.example/%d</link></item>\n", i, i, i)
	}
	dup.WriteString("</channel></rss>\n")
	if err := os.WriteFile(filepath.Join(www, "dup.xml"), []byte(dup.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	add := command(envOf(store), "feed-sub", "add", srv.URL+"/dup.xml")
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// The stages' stderr, a file: the processes write it themselves (a
	// buffer would be written by a goroutine for each).
	stderr, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	logged := func() string { b, _ := os.ReadFile(stderr.Name()); return string(b) }
	for _, c := range pipeline(t, envOf(store), io.Discard, stderr, []string{"feed-due"}, []string{"feed-fetch"}, []string{"feed-parse"}, []string{"feed-dedup", "--cross-feed"}, []string{"feed-store", "--log-level", "info"}) {
		if err := c.Wait(); err != nil {
			t.Fatalf("%v: %s", err, logged())
		}
	}
	if !regexp.MustCompile(`msg=stored .* new=0 .* aliases=[1-9]`).MatchString(logged()) {
		t.Errorf("the duplicate feed's entries were not all stored as aliases:\n%s", logged())
	}
}
