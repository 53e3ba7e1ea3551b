package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/internal/testserver"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// TestTwoPipelinesAtOnce starts two whole pipelines on one store at the
// same moment, round after round, while feed-sub adds subscriptions and
// feed-due, feed-stats and feed-sub ls read: every process exits 0 (the
// writers wait for each other rather than fail), each scheduled run is
// fetched once across both pipelines, and every entry version is stored
// and announced once.
func TestTwoPipelinesAtOnce(t *testing.T) {
	sourcesRead(t)
	if testing.Short() {
		t.Skip("-short")
	}
	const feeds, rounds = 40, 4
	dir := t.TempDir()
	www := filepath.Join(dir, "www")
	os.MkdirAll(www, 0o755)
	var requests bytes.Buffer // written under the handler's lock, read once the server is closed
	srv := httptest.NewServer(testserver.New(www, &requests))
	defer srv.Close()
	store := filepath.Join(dir, "store")
	env := append(os.Environ(), "FEEDPIPE_STORE="+store, "FEEDPIPE_ALLOW_PRIVATE=1", "FEEDPIPE_HOST_RPS=0", "FEEDPIPE_LOG_LEVEL=warn")
	// At info, feed-fetch says which runs it left to the other pipeline.
	infoEnv := append(env[:len(env):len(env)], "FEEDPIPE_LOG_LEVEL=info")

	items := make([]map[int]int, feeds) // feed -> item -> version
	for f := range feeds {
		items[f] = map[int]int{}
	}
	var subs strings.Builder
	for f := range feeds {
		fmt.Fprintf(&subs, "%s/f%02d.xml\n", srv.URL, f)
	}
	imp := exec.Command("feed-sub", "import", "-")
	imp.Env, imp.Stdin = env, strings.NewReader(subs.String())
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}

	stages := [][]string{{"feed-due"}, {"feed-fetch"}, {"feed-parse"}, {"feed-dedup"}, {"feed-store"}}
	// refetch makes every feed due now: one scheduled run, the same in
	// both pipelines.
	refetch := append([]string{"feed-sub", "refetch"}, strings.Fields(subs.String())...)
	var events bytes.Buffer
	added, busy := 0, 0
	for round := range rounds {
		// Every feed changes: a new item each, and an edit.
		for f := range feeds {
			items[f][len(items[f])] = 1
			items[f][0]++
			name := fmt.Sprintf("f%02d", f)
			if err := os.WriteFile(filepath.Join(www, name+".xml"), rssDoc(name, items[f]), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if out, err := command(env, refetch...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		var outA, outB bytes.Buffer
		// The stages' stderr in files: the processes write them directly.
		errA, errB := stderrFile(t, dir, "A", round), stderrFile(t, dir, "B", round)
		a := pipeline(t, infoEnv, &outA, errA, stages...)
		b := pipeline(t, infoEnv, &outB, errB, stages...)

		// Meanwhile: a writer that must wait its turn, and readers.
		var wg sync.WaitGroup
		others := make(chan string, 16)
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range 3 {
				name := fmt.Sprintf("added-%d-%d", round, i)
				if err := os.WriteFile(filepath.Join(www, name+".xml"), rssDoc(name, map[int]int{0: 1, 1: 1}), 0o644); err != nil {
					others <- err.Error()
					continue
				}
				url := srv.URL + "/" + name + ".xml"
				if out, err := command(env, "feed-sub", "add", url).CombinedOutput(); err != nil {
					others <- fmt.Sprintf("feed-sub add %s: %v: %s", url, err, out)
				}
			}
		}()
		go func() {
			defer wg.Done()
			for _, args := range [][]string{{"feed-due", "--all"}, {"feed-stats"}, {"feed-sub", "ls"}, {"feed-due", "--all"}} {
				if out, err := command(env, args...).CombinedOutput(); err != nil {
					others <- fmt.Sprintf("%s: %v: %s", strings.Join(args, " "), err, out)
				}
			}
		}()
		var failed []string
		for i, c := range append(a, b...) {
			if err := c.Wait(); err != nil {
				failed = append(failed, fmt.Sprintf("%s of pipeline %c: %v", c.Args[0], 'A'+rune(i/len(a)), err))
			}
		}
		logA, _ := os.ReadFile(errA.Name())
		logB, _ := os.ReadFile(errB.Name())
		if failed != nil {
			t.Errorf("round %d: %s\n%s%s", round, strings.Join(failed, "; "), logA, logB)
		}
		wg.Wait()
		close(others)
		for msg := range others {
			t.Errorf("round %d: %s", round, msg)
		}
		added += 3
		busy += strings.Count(string(logA)+string(logB), "another pipeline is fetching this scheduled run")
		events.Write(outA.Bytes())
		events.Write(outB.Bytes())

		if t.Failed() {
			t.FailNow()
		}
	}

	t.Logf("%d runs skipped as the other pipeline's", busy)
	if busy == 0 {
		t.Errorf("no pipeline ever met a run the other had claimed: the test proves little")
	}
	// One more run stores the feeds the last round added (the others are
	// not due).
	var last bytes.Buffer
	for _, c := range pipeline(t, env, &last, nil, stages...) {
		if err := c.Wait(); err != nil {
			t.Fatalf("the last run: %s: %v", c.Args[0], err)
		}
	}
	events.Write(last.Bytes())
	// Each feed was asked for once a round, by one of the pipelines, and
	// each added one once.
	srv.Close() // waits for the handlers
	gets := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(requests.Bytes()))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 1 && f[0] == "GET" {
			gets[f[1]]++
		}
	}
	for path, n := range gets {
		want := 1 // an added feed
		if strings.HasPrefix(path, "/f") {
			want = rounds
		}
		if n != want {
			t.Errorf("%s fetched %d times in %d rounds", path, n, rounds)
		}
	}
	if len(gets) != feeds+added {
		t.Errorf("%d feeds fetched, want %d", len(gets), feeds+added)
	}
	out, err := command(env, "feed-sub", "ls", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(out, []byte(`"type":"subscription"`)); n != feeds+added {
		t.Errorf("%d subscriptions listed, want %d: an add that ran beside the pipelines was lost", n, feeds+added)
	}
	st, err := storedir.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	stored := readVersions(t, st, storedir.DirEntries)
	announced := readVersions(t, st, storedir.DirEvents)
	onStdout := announcedVersions(&events)
	want := 0
	for f := range feeds {
		want += len(items[f]) + rounds - 1 // every item, and item 0 once per edit
	}
	want += added * 2
	if len(stored) != want {
		t.Errorf("%d entry versions stored, want %d", len(stored), want)
	}
	for v, n := range stored {
		if n != 1 || announced[v] != 1 || onStdout[v] != 1 {
			t.Errorf("entry %s version %s stored %d times, announced %d times in events/ and %d on stdout", v[0], v[1], n, announced[v], onStdout[v])
		}
	}
}

// stderrFile is a new file in dir for the stderr of a pipeline's stages.
func stderrFile(t *testing.T, dir, pipeline string, round int) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("stderr-%s-%d.log", pipeline, round)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// command is a feedpipe binary with env.
func command(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = env
	return cmd
}

// version is an entry version: entry_uid, content_hash.
type version [2]string

// readVersions counts the entry versions in the store's day files of dir
// (entries/ or events/, whose feed events it leaves out); every line must
// read, and no file may end in a torn line.
func readVersions(t *testing.T, st *storedir.Store, dir string) map[version]int {
	t.Helper()
	counts := map[version]int{}
	files, err := st.DayFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(st.Path(f))
		if err != nil {
			t.Fatal(err)
		}
		if len(raw) > 0 && raw[len(raw)-1] != '\n' {
			t.Errorf("%s ends in a torn line", f)
		}
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(nil, 1<<20)
		for n := 1; sc.Scan(); n++ {
			var rec struct {
				EntryUID    string `json:"entry_uid"`
				ContentHash string `json:"content_hash"`
			}
			l, err := ndjson.NewReader(strings.NewReader(sc.Text())).Next()
			if err != nil || l.Decode(&rec) != nil {
				t.Errorf("%s line %d does not read: %v", f, n, err)
				continue
			}
			if l.Type == ndjson.TypeFeedDisabled || l.Type == ndjson.TypeFeedReenabled {
				continue
			}
			counts[version{rec.EntryUID, rec.ContentHash}]++
		}
	}
	return counts
}

// announcedVersions counts the new_entry and updated_entry events of a
// stream.
func announcedVersions(events *bytes.Buffer) map[version]int {
	counts := map[version]int{}
	rd := ndjson.NewReader(bytes.NewReader(events.Bytes()))
	for {
		l, err := rd.Next()
		if err != nil {
			break
		}
		if l.Type != ndjson.TypeNewEntry && l.Type != ndjson.TypeUpdatedEntry {
			continue // decision records, feed events
		}
		var ev ndjson.Event
		l.Decode(&ev)
		counts[version{ev.EntryUID, ev.ContentHash}]++
	}
	return counts
}
