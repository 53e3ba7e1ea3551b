package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadOnlyStoreFailsClearly makes the store unwritable (mode 0555;
// under root, which writes anyway, feed-store runs as nobody): feed-store
// must fail at once with a message naming the store and the cause,
// announce nothing and leave the store as it was; once writable again,
// the same input is stored.
func TestReadOnlyStoreFailsClearly(t *testing.T) {
	sourcesRead(t)
	parent, err := os.MkdirTemp("", "feedpipe-ro-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(parent, "store"), 0o755); os.RemoveAll(parent) })
	store := filepath.Join(parent, "store")
	if err := os.Chmod(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "FEEDPIPE_STORE="+store, "FEEDPIPE_LOG_LEVEL=error")
	feed := filepath.Join(parent, "feed.xml")
	os.WriteFile(feed, rssDoc("ro", map[int]int{0: 1, 1: 1}), 0o644)
	parse := exec.Command("feed-parse", "--base-url", "https://ro.example/feed.xml", feed)
	parse.Env = env
	entries, err := parse.Output()
	if err != nil {
		t.Fatal(err)
	}
	run := func(asNobody bool) (string, string, error) {
		cmd := exec.Command(filepath.Join(binDir, "feed-store"))
		cmd.Env, cmd.Stdin = env, bytes.NewReader(entries)
		if asNobody {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		}
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		return out.String(), errOut.String(), err
	}
	// The store exists (a first run made it), then is made read-only.
	if _, stderr, err := run(false); err != nil {
		t.Fatalf("first run: %v %s", err, stderr)
	}
	before := listFiles(t, store)
	root := os.Geteuid() == 0
	if root {
		if err := os.Chmod(binDir, 0o755); err != nil { // nobody must reach the binary
			t.Fatal(err)
		}
	}
	if err := os.Chmod(store, 0o555); err != nil {
		t.Fatal(err)
	}
	// A third item: the run after the store is writable again has one new
	// entry to store.
	os.WriteFile(feed, rssDoc("ro", map[int]int{0: 1, 1: 1, 2: 1}), 0o644)
	parse = exec.Command("feed-parse", "--base-url", "https://ro.example/feed.xml", feed)
	parse.Env = env
	if entries, err = parse.Output(); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := run(root)
	if code := exitCode(err); code == 0 || !strings.Contains(stderr, "cannot write to the store "+store) || !strings.Contains(stderr, "permission denied") {
		t.Fatalf("status %d, stderr %q", code, stderr)
	}
	if out != "" {
		t.Fatalf("announced what was not stored: %s", out)
	}
	if after := listFiles(t, store); after != before {
		t.Fatalf("the read-only store changed:\nbefore %s\nafter  %s", before, after)
	}
	if err := os.Chmod(store, 0o755); err != nil {
		t.Fatal(err)
	}
	out, stderr, err = run(false)
	if err != nil || strings.Count(out, `"type":"new_entry"`) != 1 {
		t.Fatalf("once writable: %v, stderr %q, stdout %q", err, stderr, out)
	}
}

// listFiles lists the files under dir with their sizes.
func listFiles(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		fmt.Fprintf(&b, "%s:%d ", rel, fi.Size())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestReadOnlyStoreEveryWriter: every command that writes a store says
// the same of one it cannot write (its directory and files read-only;
// under root, which writes anyway, the commands run as nobody), and exits
// 2: those that learn it when SQLite refuses a write (feed-read mark, a
// Reader API user) as those that check first.
func TestReadOnlyStoreEveryWriter(t *testing.T) {
	sourcesRead(t)
	parent, err := os.MkdirTemp("", "feedpipe-ro-")
	if err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(parent, "store")
	t.Cleanup(func() { exec.Command("chmod", "-R", "u+w", parent).Run(); os.RemoveAll(parent) })
	os.Chmod(parent, 0o755)
	env := append(os.Environ(), "FEEDPIPE_STORE="+store, "FEEDPIPE_LOG_LEVEL=error")
	feed := filepath.Join(parent, "feed.xml")
	os.WriteFile(feed, rssDoc("ro", map[int]int{0: 1}), 0o644)
	setup := exec.Command("bash", "-c", `feed-sub add https://ro.example/feed.xml >/dev/null &&
		feed-parse --base-url https://ro.example/feed.xml "$1" | feed-store >/dev/null &&
		feed-read --limit 1 | cut -f5`, "bash", feed)
	setup.Env = env
	uid, err := setup.Output()
	if err != nil || len(strings.TrimSpace(string(uid))) != 16 {
		t.Fatalf("setup: %v %q", err, uid)
	}
	root := os.Geteuid() == 0
	// Readable by all, writable by none (root aside).
	if out, err := exec.Command("chmod", "-R", "a+rX,a-w", store).CombinedOutput(); err != nil {
		t.Fatalf("chmod: %v %s", err, out)
	}
	if root {
		os.Chmod(binDir, 0o755)
	}
	for _, args := range [][]string{
		{"feed-sub", "add", "https://ro.example/other.xml"},
		{"feed-sub", "rm", "https://ro.example/feed.xml"},
		{"feed-sub", "refetch", "--all"},
		{"feed-read", "mark", "read", strings.TrimSpace(string(uid))},
		{"feed-read", "mark", "read", "--all"},
		{"feed-read", "show", strings.TrimSpace(string(uid))},
		{"feed-store", "heartbeat", "--start", "1795255200", "--end", "1795255201", "--status", "0"},
		{"feed-serve", "user", "add", "alice"},
	} {
		cmd := exec.Command(filepath.Join(binDir, args[0]), args[1:]...)
		cmd.Env = env
		cmd.Stdin = strings.NewReader("a password of some length\n")
		if root {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		if code := exitCode(err); code != 2 || !strings.Contains(stderr.String(), "cannot write to the store "+store) {
			t.Errorf("%v on a read-only store: status %d, stderr %q; want 2 and \"cannot write to the store %s\"", args, code, stderr.String(), store)
		}
	}
}
