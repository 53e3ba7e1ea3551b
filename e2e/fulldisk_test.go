package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/storedir"
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
	// Three entries of some 25 KB each: more than the 64 KiB limit below
	// lets entries/ take, which the catalog's files stay within.
	os.WriteFile(feed, rssDoc("full", map[int]int{0: 5000, 1: 5000, 2: 5000}), 0o644)
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
	// The catalog exists, as in any store that has run.
	if _, _, err := run("exec feed-stats"); err != nil {
		t.Fatal(err)
	}
	// Under so low a limit that the catalog, in WAL mode, cannot even
	// make its shared memory file: a clean failure too.
	_, stderr, err := run("ulimit -f 1 && exec feed-store")
	if code := exitCode(err); code != 1 || !strings.Contains(stderr, "feed-store: error: catalog: cannot write") || !strings.Contains(stderr, "is the disk full?") {
		t.Fatalf("status %d, stderr %q", code, stderr)
	}
	out, stderr, err := run("ulimit -f 64 && exec feed-store")
	if code := exitCode(err); code != 1 || !strings.Contains(stderr, "feed-store: error: store: append to entries/") || !strings.Contains(stderr, "file too large") {
		t.Fatalf("status %d, stderr %q", code, stderr)
	}
	if out != "" {
		t.Fatalf("announced what was not stored: %s", out)
	}
	cat := mustCatalog(t, store)
	sizes, _ := cat.Sizes(context.Background())
	cat.Close()
	if sizes["entries"] != 0 {
		t.Fatalf("indexed what was not stored: %v", sizes)
	}
	if n, bad, err := mustStore(t, store).ReadLog(storedir.DayFile(storedir.DirEntries, time.Now()), 0, func(ndjson.Line) error { return nil }); err != nil || bad != 0 || n != 0 {
		t.Fatalf("the entries file after the failure: %d bytes, %d bad lines, %v; want it as it was, empty", n, bad, err)
	}
	// Room again.
	out, stderr, err = run("exec feed-store")
	if err != nil || strings.Count(out, `"type":"new_entry"`) != 3 {
		t.Fatalf("after the disk was freed: %v, stderr %q, stdout %q", err, stderr, out)
	}
}
