package apps

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/cmdkit"
	"github.com/feedpipe/feedpipe/internal/storedir"
)

// TestUserCommand runs feed-serve user as people call it, the password
// on stdin.
func TestUserCommand(t *testing.T) {
	defer catalog.SetTestIterations(1000)()
	store := filepath.Join(t.TempDir(), "store")
	if _, err := storedir.Open(store); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args           []string
		stdin          string
		status         int
		stdout, stderr string
	}{
		{[]string{"user", "list"}, "", 0, "", ""},
		{[]string{"user", "add", "alice"}, "correct horse\n", 0, "", "added user alice (reader)"},
		{[]string{"user", "add", "bob", "--admin", "--log-level", "debug"}, "b0b b0b b0b b0b", 0, "", "added user bob (admin)"},
		{[]string{"user", "add", "alice"}, "x long enough\n", 2, "", "user exists"},
		{[]string{"user", "add", "Carol"}, "x long enough\n", 2, "", "bad reader name"},
		{[]string{"user", "add", "carol"}, "", 2, "", "no password on stdin"},
		{[]string{"user", "add", "carol"}, "short\n", 2, "", "fewer than 12 characters"},
		{[]string{"user", "add"}, "x\n", 2, "", "one NAME"},
		{[]string{"user", "list"}, "", 0, "alice\treader\t", ""},
		{[]string{"user", "ls"}, "", 0, "bob\tadmin\t", ""},
		{[]string{"user", "role", "alice", "admin"}, "", 0, "", ""},
		{[]string{"user", "role", "alice", "root"}, "", 2, "", "no such role"},
		{[]string{"user", "role", "mallory", "admin"}, "", 2, "", "no such user"},
		{[]string{"user", "role", "alice"}, "", 2, "", "NAME and a role"},
		{[]string{"user", "passwd", "alice"}, "battery staple\r\n", 0, "", ""},
		{[]string{"user", "passwd", "mallory"}, "x long enough\n", 2, "", "no such user"},
		{[]string{"user", "remove", "bob"}, "", 0, "", ""},
		{[]string{"user", "remove", "bob"}, "", 2, "", "no such user"},
	} {
		var stdout, stderr bytes.Buffer
		app := &cli.App{Name: "feed-serve", Flags: cmdkit.CommonFlags(), Commands: []*cli.Command{userCommand()},
			Reader: strings.NewReader(tc.stdin), Writer: &stdout, ErrWriter: &stderr}
		status := cmdkit.Run(app, append([]string{"feed-serve", "--store", store}, tc.args...))
		if status != tc.status || !strings.Contains(stdout.String(), tc.stdout) || !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("%v: %d\n%s\n%s", tc.args, status, stdout.String(), stderr.String())
		}
	}
	st, _ := storedir.Open(store)
	cat, err := catalog.Open(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	users, _ := cat.Users(context.Background())
	if len(users) != 1 || users[0].Name != "alice" || users[0].Role != catalog.RoleAdmin {
		t.Fatalf("users %+v", users)
	}
	if cat.CheckPassword(context.Background(), "alice", "battery staple") != nil {
		t.Errorf("the password set by passwd (its CRLF dropped) is not alice's")
	}
}
