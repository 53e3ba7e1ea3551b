package apps

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/feedpipe/feedpipe/internal/version"
)

// TestDispatch: the feedpipe binary runs the command it is called by (a
// link by the command's name, anywhere), or the one its first argument
// names; alone it lists them, and anything else is a usage error.
func TestDispatch(t *testing.T) {
	for _, tc := range []struct {
		args           []string
		status         int
		stdout, stderr string // what each must hold
	}{
		{[]string{"/usr/local/bin/feed-stats", "--version"}, 0, "feed-stats version " + version.String() + "\n", ""},
		{[]string{"feed-due", "--help"}, 0, "feed-due [--all", ""},
		{[]string{"/opt/feedpipe/bin/feedpipe", "feed-sub", "--help"}, 0, "feed-sub add https://example.org/feed.xml", ""},
		{[]string{"feedpipe", "feed-sub", "nosuch"}, 2, "", `feed-sub: error: unknown command "nosuch"`},
		{[]string{"feedpipe"}, 0, "feed-fetch   fetch due feeds", ""},
		{[]string{"feedpipe", "--help"}, 0, "   feedpipe COMMAND [ARGS...]", ""},
		{[]string{"feedpipe", "--version"}, 0, "feedpipe version " + version.String() + "\n", ""},
		{[]string{"feedpipe", "--commands"}, 0, strings.Join(Names(), "\n") + "\n", ""},
		{[]string{"feedpipe", "feed-nope"}, 2, "", `feedpipe: error: unknown command "feed-nope": it is one of feed-bus, feed-dedup, `},
	} {
		var stdout, stderr bytes.Buffer
		status := Main(tc.args, &stdout, &stderr)
		if status != tc.status || !strings.Contains(stdout.String(), tc.stdout) || !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("%q: status %d, stdout %q, stderr %q; want %d, %q, %q", tc.args, status, stdout.String(), stderr.String(), tc.status, tc.stdout, tc.stderr)
		}
	}
}

// TestTableIsCmd: each command of the table is a thin main in cmd/ (so
// that go install ./cmd/... installs it under its name), and each thin
// main over this package is in the table (so that the feedpipe binary,
// which scripts/install installs, runs it).
func TestTableIsCmd(t *testing.T) {
	mains, err := filepath.Glob("../../cmd/feed-*/main.go")
	if err != nil || len(mains) == 0 {
		t.Fatalf("cmd/feed-*/main.go: %v %v", mains, err)
	}
	var thin []string
	for _, m := range mains {
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(filepath.Dir(m))
		if bytes.Contains(b, []byte(`"github.com/feedpipe/feedpipe/internal/apps"`)) {
			thin = append(thin, name)
			if _, ok := table[name]; !ok {
				t.Errorf("cmd/%s runs internal/apps, but the table has no %s", name, name)
			}
		} else if _, ok := standaloneFlags[name]; !ok {
			t.Errorf("cmd/%s is built on its own: standaloneFlags must list its flags", name)
		}
	}
	for _, name := range Names() {
		if !slices.Contains(thin, name) {
			t.Errorf("the table has %s, but cmd/%s/main.go is not a thin main over internal/apps", name, name)
		}
		if app := table[name](); app.Name != name {
			t.Errorf("the table's %s builds the app %s", name, app.Name)
		}
	}
}
