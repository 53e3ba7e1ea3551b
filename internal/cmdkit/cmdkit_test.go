package cmdkit

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

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
	} {
		got := strings.Join(interleave(app, strings.Fields(tc.in)), " ")
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
