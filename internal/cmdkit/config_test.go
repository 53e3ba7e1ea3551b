package cmdkit

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/sched"
)

// configApp is a binary with flags of every kind the binaries use, a
// subcommand, and the scheduler's flags; its action reports the values.
func configApp(got *string) *cli.App {
	report := func(c *cli.Context) error {
		p, err := SchedParams(c)
		if err != nil {
			return err
		}
		*got = fmt.Sprintf("timeout=%s name=%s n=%d rps=%g labels=%s private=%t policy=%s", c.Duration("timeout"), c.String("name"), c.Int("n"),
			c.Float64("rps"), strings.Join(c.StringSlice("label"), ","), c.Bool("allow-private"), p.Policy)
		return nil
	}
	return &cli.App{
		Name: "feed-test",
		Flags: append(append([]cli.Flag{
			&cli.DurationFlag{Name: "timeout", Value: 10 * time.Second, EnvVars: []string{"TEST_TIMEOUT"}},
			&cli.StringFlag{Name: "name", Value: "default", EnvVars: []string{"TEST_NAME"}},
			&cli.IntFlag{Name: "n", Value: 1},
			&cli.Float64Flag{Name: "rps", Value: 1},
			&cli.StringSliceFlag{Name: "label"},
			&cli.BoolFlag{Name: "allow-private", EnvVars: []string{"TEST_PRIVATE"}},
		}, CommonFlags()...), SchedFlags()...),
		Action: report,
		Commands: []*cli.Command{{
			Name: "add",
			Flags: append([]cli.Flag{
				&cli.StringSliceFlag{Name: "label"},
				&cli.StringFlag{Name: "name", Value: "none"},
				&cli.BoolFlag{Name: "allow-private"},
			}, SchedFlags()...),
			Action: report,
		}},
	}
}

// TestConfigFile: every flag can be set in the configuration file, below
// the flags and the environment and above the defaults; tables aim keys at
// one binary or subcommand.
func TestConfigFile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		file   string // "" writes no file
		env    map[string]string
		args   string
		want   string // the values, or an error message
		status int
	}{
		{"no file", "", nil, "", "timeout=10s name=default n=1 rps=1 labels= private=false policy=adaptive", 0},
		{"top level", `timeout = "30s"
name = "top"
n = 3
rps = 2
label = ["a", "b"]
allow-private = true
policy = "seed"`, nil, "", "timeout=30s name=top n=3 rps=2 labels=a,b private=true policy=seed", 0},
		{"seconds and one string", "timeout = 90\nlabel = \"a\"\nrps = 0.5", nil, "", "timeout=1m30s name=default n=1 rps=0.5 labels=a private=false policy=adaptive", 0},
		{"the binary's table wins", "name = \"top\"\n[feed-test]\nname = \"mine\"\n[feed-other]\nname = \"theirs\"", nil, "", "timeout=10s name=mine n=1 rps=1 labels= private=false policy=adaptive", 0},
		{"environment over file", "timeout = \"30s\"\nname = \"file\"\npolicy = \"seed\"", map[string]string{"TEST_TIMEOUT": "45", "TEST_NAME": "env", "FEEDPIPE_SCHED_POLICY": "fixed:2h"}, "",
			"timeout=45s name=env n=1 rps=1 labels= private=false policy=fixed:2h", 0},
		{"flags over environment", "name = \"file\"", map[string]string{"TEST_NAME": "env", "FEEDPIPE_SCHED_POLICY": "fixed:2h"}, "--name flag --policy seed",
			"timeout=10s name=flag n=1 rps=1 labels= private=false policy=seed", 0},
		{"a subcommand's own flags only from its table", "name = \"top\"\nlabel = \"top\"\n[feed-test]\nlabel = \"bin\"\n[feed-test.add]\nname = \"add\"", nil, "add",
			"timeout=10s name=add n=1 rps=1 labels= private=false policy=adaptive", 0},
		{"a subcommand's shared flags from everywhere", "[feed-test]\npolicy = \"seed\"", nil, "add",
			"timeout=10s name=none n=1 rps=1 labels= private=false policy=seed", 0},
		// feed-sub add --allow-private is a setting of one feed: the
		// switch for every feed at the top level does not set it.
		{"allow-private is not a subcommand's from the top", "allow-private = true", nil, "add",
			"timeout=10s name=none n=1 rps=1 labels= private=false policy=adaptive", 0},
		{"a typo in the binary's table", "[feed-test]\ntimout = 3", nil, "", "[feed-test] timout: no such flag (see feed-test --help)", 2},
		{"a typo in a subcommand's table", "[feed-test.add]\nlable = \"x\"", nil, "add", "[feed-test.add] lable: no such flag (see feed-test add --help)", 2},
		{"unknown top-level keys are another binary's", "concurrency = 3", nil, "", "timeout=10s name=default n=1 rps=1 labels= private=false policy=adaptive", 0},
		{"wrong type", "n = \"three\"", nil, "", "n: want a whole number", 2},
		{"bad duration", "[feed-test]\ntimeout = \"soon\"", nil, "", `[feed-test] timeout: want a duration such as "90s" or "1h", or whole seconds`, 2},
		{"bad scheduler value", "policy = \"often\"", nil, "", `--policy "often": want adaptive, seed or fixed:DURATION`, 2},
		{"not TOML", "name = ", nil, "", "configuration file", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv("XDG_CONFIG_HOME", dir)
			for _, k := range []string{"TEST_TIMEOUT", "TEST_NAME", "TEST_PRIVATE", "FEEDPIPE_SCHED_POLICY", "FEEDPIPE_CONFIG"} {
				t.Setenv(k, tc.env[k])
				if tc.env[k] == "" {
					os.Unsetenv(k)
				}
			}
			if tc.file != "" {
				os.MkdirAll(filepath.Join(dir, "feedpipe"), 0o755)
				if err := os.WriteFile(filepath.Join(dir, "feedpipe", "config.toml"), []byte(tc.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var got string
			var stderr bytes.Buffer
			app := configApp(&got)
			app.ErrWriter, app.Writer = &stderr, &bytes.Buffer{}
			status := Run(app, append([]string{"feed-test"}, strings.Fields(tc.args)...))
			if status != tc.status {
				t.Fatalf("status %d, want %d; stderr %q", status, tc.status, stderr.String())
			}
			if tc.status == 0 && got != tc.want {
				t.Errorf("got\n  %s\nwant\n  %s", got, tc.want)
			}
			if tc.status != 0 && !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tc.want)
			}
		})
	}
}

// TestConfigTopLevel: the top level of the file holds the tables of
// binaries and the flags some binary has at its top (or shares with its
// subcommands): anything else is an error, as in a table.
func TestConfigTopLevel(t *testing.T) {
	defer func(b func() map[string]*cli.App) { Binaries = b }(Binaries)
	var got string
	Binaries = func() map[string]*cli.App {
		other := &cli.App{Name: "feed-other", Flags: []cli.Flag{&cli.IntFlag{Name: "concurrency"}},
			Commands: []*cli.Command{{Name: "prune", Flags: []cli.Flag{&cli.StringFlag{Name: "raw-keep"}}}}}
		return map[string]*cli.App{"feed-test": configApp(&got), "feed-other": other}
	}
	for _, tc := range []struct {
		file, want string // want: the values, or an error
	}{
		{"concurrency = 3\nname = \"top\"", "name=top"},
		{"policy = \"seed\"\n[feed-other]\nconcurrency = 2\n[feed-other.prune]\nraw-keep = \"30d\"", "policy=seed"},
		{"concurency = 3", "config.toml: concurency: no feedpipe binary has such a flag (a key at the top level sets the flag of that name of every binary that has it)"},
		{"[feed-tset]\nname = \"x\"", "config.toml: [feed-tset]: no feedpipe binary is named so (a table is one of feed-other, feed-test)"},
		{"raw-keep = \"30d\"", "config.toml: raw-keep: a key at the top level sets a flag of every binary, and raw-keep is only feed-other prune's: put it in [feed-other.prune]"},
	} {
		dir := t.TempDir()
		t.Setenv("XDG_CONFIG_HOME", dir)
		os.Unsetenv("FEEDPIPE_CONFIG")
		os.MkdirAll(filepath.Join(dir, "feedpipe"), 0o755)
		os.WriteFile(filepath.Join(dir, "feedpipe", "config.toml"), []byte(tc.file), 0o644)
		got = ""
		var stderr bytes.Buffer
		app := configApp(&got)
		app.ErrWriter, app.Writer = &stderr, &bytes.Buffer{}
		status := Run(app, []string{"feed-test"})
		if !strings.Contains(got+stderr.String(), tc.want) || (status == 0) != (got != "") {
			t.Errorf("%q: status %d, got %q, stderr %q; want %q", tc.file, status, got, stderr.String(), tc.want)
		}
	}
}

// TestConfigFlag: --config (or FEEDPIPE_CONFIG) names the file; one it
// names must exist, the default one need not.
func TestConfigFlag(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "none"))
	file := filepath.Join(dir, "mine.toml")
	os.WriteFile(file, []byte("name = \"mine\"\n"), 0o644)
	for _, tc := range []struct {
		args, env, want string
		status          int
	}{
		{"--config " + file, "", "name=mine", 0},
		{"", file, "name=mine", 0},
		{"", "", "name=default", 0},
		{"--config " + filepath.Join(dir, "missing.toml"), "", "missing.toml: no such file", 2},
	} {
		t.Setenv("FEEDPIPE_CONFIG", tc.env)
		if tc.env == "" {
			os.Unsetenv("FEEDPIPE_CONFIG")
		}
		var got string
		var stderr bytes.Buffer
		app := configApp(&got)
		app.ErrWriter, app.Writer = &stderr, &bytes.Buffer{}
		status := Run(app, append([]string{"feed-test"}, strings.Fields(tc.args)...))
		if status != tc.status || !strings.Contains(got+stderr.String(), tc.want) {
			t.Errorf("%q FEEDPIPE_CONFIG=%q: status %d, got %q, stderr %q; want %d, %q", tc.args, tc.env, status, got, stderr.String(), tc.status, tc.want)
		}
	}
}

// TestEnvDurations: a duration in the environment is a Go duration or
// whole seconds (milliseconds in a variable ending in _MS), for the flags
// urfave/cli reads and the scheduler's variables alike.
func TestEnvDurations(t *testing.T) {
	for _, tc := range []struct {
		env, value string
		want       string // the flag's value, or an error
	}{
		{"TEST_TIMEOUT", "60", "timeout=1m0s"},
		{"TEST_TIMEOUT", " 90s ", "timeout=1m30s"},
		{"TEST_TIMEOUT", "1h", "timeout=1h0m0s"},
		{"TEST_TIMEOUT", "0", "timeout=0s"},
		{"TEST_TIMEOUT", "soon", `TEST_TIMEOUT="soon": want a duration such as 90s or 1h, or whole seconds`},
		{"TEST_TIMEOUT", "-5", `TEST_TIMEOUT="-5": want a duration`},
		{"TEST_TIMEOUT_MS", "2500", "timeout=2.5s"},
		{"FEEDPIPE_SCHED_MIN_INTERVAL_SEC", "600", "min=10m0s"},
		{"FEEDPIPE_SCHED_MIN_INTERVAL_SEC", "10m", "min=10m0s"},
		{"SCHED_MIN_INTERVAL_SEC", "1h", "min=1h0m0s"},
		{"FEEDPIPE_SCHED_MIN_INTERVAL_SEC", "soon", `FEEDPIPE_SCHED_MIN_INTERVAL_SEC="soon"`},
	} {
		t.Run(tc.env+"="+tc.value, func(t *testing.T) {
			for _, k := range []string{"TEST_TIMEOUT", "TEST_TIMEOUT_MS", "FEEDPIPE_SCHED_MIN_INTERVAL_SEC", "SCHED_MIN_INTERVAL_SEC"} {
				os.Unsetenv(k)
			}
			t.Setenv(tc.env, tc.value)
			var got string
			var stderr bytes.Buffer
			app := &cli.App{Name: "feed-test",
				Flags: append([]cli.Flag{&cli.DurationFlag{Name: "timeout", EnvVars: []string{"TEST_TIMEOUT", "TEST_TIMEOUT_MS"}}}, SchedFlags()...),
				Action: func(c *cli.Context) error {
					p, err := SchedParams(c)
					if err != nil {
						return err
					}
					if strings.Contains(tc.env, "SCHED") {
						got = "min=" + p.Min.String()
					} else {
						got = "timeout=" + c.Duration("timeout").String()
					}
					return nil
				}}
			app.ErrWriter, app.Writer = &stderr, &bytes.Buffer{}
			status := Run(app, []string{"feed-test"})
			if !strings.Contains(got+stderr.String(), tc.want) || (status == 0) != (got != "") {
				t.Errorf("status %d, got %q, stderr %q; want %q", status, got, stderr.String(), tc.want)
			}
			if got == "" && status != ExitUsage {
				t.Errorf("status %d for a bad value, want %d", status, ExitUsage)
			}
		})
	}
	if sched.Defaults().Min != 5*time.Minute {
		t.Fatal("the scheduler's default min interval changed: the cases above assume 5m")
	}
}
