package cmdkit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/pipe"
)

func testApp(action cli.ActionFunc) *cli.App {
	return &cli.App{
		Name:  "feed-test",
		Flags: append([]cli.Flag{&cli.StringFlag{Name: "base-url"}, &cli.BoolFlag{Name: "all"}}, CommonFlags()...),
		Commands: []*cli.Command{{
			Name:   "add",
			Flags:  []cli.Flag{&cli.StringSliceFlag{Name: "label"}, &cli.BoolFlag{Name: "quiet"}, &cli.DurationFlag{Name: "interval"}, &cli.IntFlag{Name: "n"}},
			Action: action,
		}},
		Action: action,
	}
}

func TestInterleave(t *testing.T) {
	app := testApp(nil)
	for _, tc := range []struct{ in, want string }{
		{"feed-test", "feed-test"},
		{"feed-test --all", "feed-test --all"},
		{"feed-test FILE --base-url U", "feed-test --base-url U -- FILE"},
		{"feed-test --base-url=U FILE", "feed-test --base-url=U -- FILE"},
		{"feed-test A --all B", "feed-test --all -- A B"},
		{"feed-test add URL --label a --quiet --label b", "feed-test add --label a --quiet --label b -- URL"},
		{"feed-test --store S add URL --label x", "feed-test --store S add --label x -- URL"},
		{"feed-test add - --label x", "feed-test add --label x -- -"},
		{"feed-test add --label x -- --weird", "feed-test add --label x -- --weird"},
		{"feed-test add URL --store S --label x", "feed-test --store S add --label x -- URL"},
		{"feed-test add URL --all", "feed-test --all add -- URL"},
		// A flag without its value is refused, not given the next argument.
		{"feed-test add URL --label", "--label needs a value"},
		{"feed-test add --label", "--label needs a value"},
		{"feed-test add URL --label -- x", "--label needs a value"},
		{"feed-test add URL --label --quiet", "--label needs a value (one that starts with -, such as -x, is written --label=-x)"},
		{"feed-test add URL --label --store", "--label needs a value (one that starts with -, such as -x, is written --label=-x)"},
		{"feed-test --base-url", "--base-url needs a value"},
		// Whatever flag follows, of the command, the binary or none.
		{"feed-test add URL --store --label x", "--store needs a value (one that starts with -, such as -x, is written --store=-x)"},
		{"feed-test --store --label x add URL", "--store needs a value (one that starts with -, such as -x, is written --store=-x)"},
		{"feed-test --store --json add URL", "--store needs a value (one that starts with -, such as -x, is written --store=-x)"},
		{"feed-test add URL --label --json", "--label needs a value (one that starts with -, such as -x, is written --label=-x)"},
		{"feed-test add URL --label -h", "--label needs a value (one that starts with -, such as -x, is written --label=-x)"},
		{"feed-test --store --help", "--store needs a value (one that starts with -, such as -x, is written --store=-x)"},
		{"feed-test --store S --all add URL", "feed-test --store S --all add -- URL"},
		{"feed-test add URL --label=--quiet", "feed-test add --label=--quiet -- URL"},
		{"feed-test add URL --n -1", "feed-test add --n -1 -- URL"},
		{"feed-test add URL --label -", "feed-test add --label - -- URL"},
	} {
		args, err := interleave(app, strings.Fields(tc.in))
		got := strings.Join(args, " ")
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("interleave(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRunExitStatuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   string
		err    error
		status int
		stderr string
	}{
		{"ok", "feed-test", nil, ExitOK, ""},
		{"failures", "feed-test", fmt.Errorf("fetch: %w", pipe.Failures{Records: 2}.Err("feed", "feeds")), ExitFailed, "feed-test: error: fetch: 2 feeds failed"},
		{"usage", "feed-test", Usagef("--now %q is not a time", "x"), ExitUsage, `feed-test: error: --now "x" is not a time`},
		{"other", "feed-test", errors.New("disk full\nreally"), ExitFailed, "feed-test: error: disk full really\n"},
		{"unknown flag", "feed-test --nope", nil, ExitUsage, "feed-test: error: unknown flag --nope (see feed-test --help)\n"},
		{"unknown subcommand flag", "feed-test add URL --lable x", nil, ExitUsage, "feed-test: error: unknown flag --lable (see feed-test add --help)\n"},
		{"bad duration", "feed-test add URL --interval 30", nil, ExitUsage, `feed-test: error: --interval "30": not a duration such as 90s, 30m or 2h` + "\n"},
		{"bad number", "feed-test add URL --n many", nil, ExitUsage, `--n "many": not a whole number`},
		{"bad boolean", "feed-test add URL --quiet=maybe", nil, ExitUsage, `feed-test: error: --quiet="maybe": not true or false` + "\n"},
		{"bad log level", "feed-test --log-level loud", nil, ExitUsage, "--log-level"},
		{"subcommand flags after args", "feed-test add URL --label x", nil, ExitOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			app := testApp(func(c *cli.Context) error {
				if _, err := Logger(c); err != nil {
					return err
				}
				if c.Command.Name == "add" && (c.Args().First() != "URL" || len(c.StringSlice("label")) == 0 || c.StringSlice("label")[0] != "x") {
					return fmt.Errorf("args %v labels %v", c.Args().Slice(), c.StringSlice("label"))
				}
				return tc.err
			})
			app.ErrWriter = &stderr
			app.Writer = &bytes.Buffer{}
			status := Run(app, strings.Fields(tc.args))
			if status != tc.status || !strings.Contains(stderr.String(), tc.stderr) {
				t.Fatalf("status %d, stderr %q; want %d and %q", status, stderr.String(), tc.status, tc.stderr)
			}
			if tc.status == ExitOK && stderr.Len() > 0 {
				t.Fatalf("stderr on success: %q", stderr.String())
			}
		})
	}
}

func TestUnknownCommand(t *testing.T) {
	for _, tc := range []struct{ args, stderr string }{
		{"feed-test ad URL", "feed-test: error: unknown command \"ad\" (see feed-test --help)\n"},
		{"feed-test", "feed-test: error: no command given\n"},
	} {
		var stderr, stdout bytes.Buffer
		app := &cli.App{Name: "feed-test", Commands: []*cli.Command{{Name: "add", Action: func(*cli.Context) error { return nil }}}}
		app.ErrWriter, app.Writer = &stderr, &stdout
		if status := Run(app, strings.Fields(tc.args)); status != ExitUsage || stderr.String() != tc.stderr {
			t.Errorf("%s: status %d, stderr %q; want 2, %q", tc.args, status, stderr.String(), tc.stderr)
		}
	}
}

// TestSignalExitStatus: a run a signal stopped finishes its action and
// exits as the signal would have killed it, 130 for SIGINT and 143 for
// SIGTERM, not 0 as if it had done everything.
func TestSignalExitStatus(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		err  error
		want int
	}{
		{syscall.SIGTERM, nil, 143},
		{syscall.SIGINT, nil, 130},
		{syscall.SIGTERM, pipe.Failures{Records: 1}.Err("feed", "feeds"), 143},
	} {
		var stderr bytes.Buffer
		finished := false
		app := &cli.App{Name: "feed-test", Action: func(c *cli.Context) error {
			syscall.Kill(os.Getpid(), tc.sig)
			select {
			case <-c.Context.Done():
			case <-time.After(10 * time.Second):
				return errors.New("no cancellation")
			}
			finished = true
			return tc.err
		}}
		app.ErrWriter, app.Writer = &stderr, &bytes.Buffer{}
		if status := Run(app, []string{"feed-test"}); status != tc.want || !finished {
			t.Errorf("%v: status %d (action finished: %t), want %d; stderr %q", tc.sig, status, finished, tc.want, stderr.String())
		}
	}
}

// TestVersion: --version prints the version internal/version gives.
func TestVersion(t *testing.T) {
	var stdout bytes.Buffer
	app := &cli.App{Name: "feed-test", Action: func(*cli.Context) error { return errors.New("ran") }}
	app.Writer, app.ErrWriter = &stdout, &bytes.Buffer{}
	if status := Run(app, []string{"feed-test", "--version"}); status != 0 || stdout.String() != "feed-test version "+Version()+"\n" {
		t.Errorf("--version: status %d, stdout %q", status, stdout.String())
	}
}

// TestReadOnlyNeedsAStore: a command that only reads says there is no
// store, exits 2 and makes none; a writer makes it, and says so.
func TestReadOnlyNeedsAStore(t *testing.T) {
	for _, tc := range []struct {
		access Access
		status int
		stderr string
		made   bool
	}{
		{ReadOnly, ExitUsage, "feed-test: error: no store at %s: --store (or FEEDPIPE_STORE) names none; feed-sub add creates one\n", false},
		{ReadsInPipeline, ExitOK, "feed-test: note: created a new, empty store at %s\n", true},
		{Writes, ExitOK, "feed-test: note: created a new, empty store at %s\n", true},
		{Changes, ExitUsage, "feed-test: error: no store at %s: --store (or FEEDPIPE_STORE) names none; feed-sub add creates one\n", false},
	} {
		store := filepath.Join(t.TempDir(), "typo")
		var stderr bytes.Buffer
		app := &cli.App{Name: "feed-test", Flags: CommonFlags(), Action: func(c *cli.Context) error {
			_, _, err := Setup(c, tc.access)
			return err
		}}
		app.ErrWriter, app.Writer = &stderr, &bytes.Buffer{}
		status := Run(app, []string{"feed-test", "--store", store})
		_, err := os.Stat(store)
		if status != tc.status || stderr.String() != fmt.Sprintf(tc.stderr, store) || (err == nil) != tc.made {
			t.Errorf("access %d: status %d, stderr %q, made %t", tc.access, status, stderr.String(), err == nil)
		}
	}
}
