package apps

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/feedpipe/feedpipe/internal/storedir"
)

// TestPushSyncConfig: feed-sub push sync takes --public-url from the
// configuration file's top level, as every binary does, and from its own
// table; a bad one, or a verb but sync, is a usage error.
func TestPushSyncConfig(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	if _, err := storedir.Open(store); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config.toml")
	for _, tc := range []struct {
		config string
		args   []string
		status int
		stderr string
	}{
		{`public-url = "feeds.example.org"`, []string{"push", "sync"}, 2, `--public-url "feeds.example.org": an absolute http or https URL`},
		{"[feed-sub.push]\npublic-url = \"ftp://x/\"", []string{"push", "sync"}, 2, `--public-url "ftp://x/"`},
		{`public-url = "https://feeds.example.org"`, []string{"push", "sync"}, 0, ""},
		{`public-url = "https://feeds.example.org"`, []string{"push", "now"}, 2, "push takes one argument, sync"},
		{"[feed-sub.push]\nlease = \"-1h\"", []string{"push", "sync"}, 2, "--lease -1h0m0s"},
	} {
		if err := os.WriteFile(config, []byte(tc.config+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		status := Main(append([]string{"feed-sub", "--store", store, "--config", config}, tc.args...), &stdout, &stderr)
		if status != tc.status || !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("%q %v: %d\n%s", tc.config, tc.args, status, stderr.String())
		}
	}
}
