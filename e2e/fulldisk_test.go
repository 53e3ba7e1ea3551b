package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/storage"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// TestFullDiskFailsCleanlyAndCatchesUp runs feed-store under a file size
// limit (ulimit -f), so that its writes fail the way they do on a full
// disk (EFBIG there, ENOSPC on a full disk: the same path): it must fail
// with a clear message, leave the store readable and the index untouched,
// and store everything on the next run, once it can write again.
func TestFullDiskFailsCleanlyAndCatchesUp(t *testing.T) {
	sourcesRead(t)
	store := t.TempDir()
	env := append(os.Environ(), "FEEDPIPE_STORE="+store, "FEEDPIPE_LOG_LEVEL=error")
	feed := filepath.Join(t.TempDir(), "feed.xml")
	os.WriteFile(feed, rssDoc("full", map[int]int{0: 1, 1: 1, 2: 1}), 0o644)
	parse := exec.Command("feed-parse", "--base-url", "https://full.example/feed.xml", feed)
	parse.Env = env
	entries, err := parse.Output()
	if err != nil {
		t.Fatal(err)
	}
	run := func(script string) (string, string, error) {
		cmd := exec.Command("bash", "-c", script)
		cmd.Env, cmd.Stdin = env, bytes.NewReader(entries)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		return out.String(), errOut.String(), err
	}
	out, stderr, err := run("ulimit -f 1 && exec feed-store") // 1 KiB: less than the entries
	if code := exitCode(err); code != 1 || !strings.Contains(stderr, "feed-store: error: storage: append to entries/") || !strings.Contains(stderr, "file too large") {
		t.Fatalf("status %d, stderr %q", code, stderr)
	}
	if out != "" {
		t.Fatalf("announced what was not stored: %s", out)
	}
	if idx, _ := filepath.Glob(filepath.Join(store, "index", "??", "*")); len(idx) != 0 {
		t.Fatalf("indexed what was not stored: %v", idx)
	}
	st, _ := storage.Open(store)
	if n, bad, err := st.ReadLog(storage.DayFile(storage.DirEntries, time.Now()), 0, func(ndjson.Line) error { return nil }); err != nil || bad != 0 || n != 0 {
		t.Fatalf("the entries file after the failure: %d bytes, %d bad lines, %v; want it as it was, empty", n, bad, err)
	}
	// Room again.
	out, stderr, err = run("exec feed-store")
	if err != nil || strings.Count(out, `"type":"new_entry"`) != 3 {
		t.Fatalf("after the disk was freed: %v, stderr %q, stdout %q", err, stderr, out)
	}
}
