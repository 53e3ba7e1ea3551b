package cmdkit

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/sched"
)

// TestSchedFlags: every scheduler flag sets its parameter, wins over its
// environment variable (set here to another good value), and a bad value
// is a usage error that names the flag and says what it wants.
func TestSchedFlags(t *testing.T) {
	for _, tc := range []struct {
		flag, value   string // a good value
		env, envValue string // the flag's variable, with another good value, not the default
		got           func(sched.Params) any
		want          any
		bad, msg      string // a bad value and the message
	}{
		{"policy", "seed", "FEEDPIPE_SCHED_POLICY", "fixed:1h", func(p sched.Params) any { return p.Policy.String() }, "seed",
			"sometimes", `--policy "sometimes": want adaptive, seed or fixed:DURATION such as fixed:15m`},
		{"initial-interval", "20m", "FEEDPIPE_SCHED_INITIAL_INTERVAL_SEC", "600", func(p sched.Params) any { return p.Initial }, 20 * time.Minute,
			"0s", "--initial-interval 0s: want at least 1s"},
		{"min-interval", "10m", "SCHED_MIN_INTERVAL_SEC", "120", func(p sched.Params) any { return p.Min }, 10 * time.Minute,
			"soon", `--min-interval "soon": not a duration such as 90s, 30m or 2h`},
		{"max-interval", "6h", "FEEDPIPE_SCHED_MAX_INTERVAL_SEC", "3600", func(p sched.Params) any { return p.Max }, 6 * time.Hour,
			"500ms", "--max-interval 500ms: want at least 1s"},
		{"jitter", "0.3", "SCHED_JITTER_RATIO", "0.1", func(p sched.Params) any { return p.Jitter }, 0.3,
			"0.9", "--jitter 0.9: want a ratio from 0 to 0.5"},
		{"budget", "48", "FEEDPIPE_SCHED_BUDGET", "12", func(p sched.Params) any { return p.Budget }, 48.0,
			"-1", "--budget -1: want requests per feed and day, 0 for the default"},
		{"disable-threshold", "4", "NEWSFED_DISABLE_THRESHOLD", "7", func(p sched.Params) any { return p.DisableThreshold }, 4,
			"-1", "--disable-threshold -1: want a number of failures, 0 for never"},
		{"probe-disabled", "true", "FEEDPIPE_SCHED_PROBE_DISABLED", "false", func(p sched.Params) any { return p.NoProbe }, false,
			"maybe", `--probe-disabled="maybe": not true or false`},
		{"backoff-cap", "2h", "FEEDPIPE_SCHED_BACKOFF_CAP_SEC", "600", func(p sched.Params) any { return p.BackoffCap }, 2 * time.Hour,
			"0s", "--backoff-cap 0s: want at least 1s"},
		{"error-budget", "8", "FEEDPIPE_SCHED_ERROR_BUDGET", "3", func(p sched.Params) any { return p.ErrorBudget }, 8.0,
			"0", "--error-budget 0: want a positive number of failures"},
		{"max-retry-after", "48h", "FEEDPIPE_SCHED_MAX_RETRY_AFTER_SEC", "3600", func(p sched.Params) any { return p.MaxRetryAfter }, 48 * time.Hour,
			"0s", "--max-retry-after 0s: want at least 1s"},
		{"profile", "true", "FEEDPIPE_SCHED_PROFILE", "false", func(p sched.Params) any { return p.NoProfile }, false,
			"maybe", `--profile="maybe": not true or false`},
		{"up-factor", "1.5", "FEEDPIPE_SCHED_UP_FACTOR", "1.1", func(p sched.Params) any { return p.Up }, 1.5,
			"0.5", "--up-factor 0.5: want a number from 1 to 100"},
		{"down-factor", "0.5", "FEEDPIPE_SCHED_DOWN_FACTOR", "0.9", func(p sched.Params) any { return p.Down }, 0.5,
			"0", "--down-factor 0: want a number in (0, 1]"},
		{"ewma-alpha", "0.4", "FEEDPIPE_SCHED_EWMA_ALPHA", "0.2", func(p sched.Params) any { return p.Alpha }, 0.4,
			"1.5", "--ewma-alpha 1.5: want a number in (0, 1]"},
		{"blend-lambda", "0.7", "FEEDPIPE_SCHED_BLEND_LAMBDA", "0.3", func(p sched.Params) any { return p.Lambda }, 0.7,
			"-0.5", "--blend-lambda -0.5: want a number in (0, 1]"},
		{"backoff-base", "3", "FEEDPIPE_SCHED_BACKOFF_BASE", "1.5", func(p sched.Params) any { return p.BackoffBase }, 3.0,
			"abc", `--backoff-base "abc": not a number`},
		{"error-budget-per-day", "2", "FEEDPIPE_SCHED_ERROR_BUDGET_PER_DAY", "10", func(p sched.Params) any { return p.ErrorBudgetPerDay }, 2.0,
			"0", "--error-budget-per-day 0: want a positive number of failures"},
		{"rate-half-life", "72h", "FEEDPIPE_SCHED_RATE_HALF_LIFE_SEC", "86400", func(p sched.Params) any { return p.RateHalfLife }, 72 * time.Hour,
			"30m", "--rate-half-life 30m0s: want at least 1h"},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			env := map[string]string{tc.env: tc.envValue}
			run := func(args ...string) (sched.Params, int, string) {
				t.Helper()
				var p sched.Params
				var stderr bytes.Buffer
				app := &cli.App{Name: "feed-test", Flags: SchedFlags(), Action: func(c *cli.Context) error {
					var err error
					p, err = schedParams(c, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
					return err
				}}
				app.ErrWriter, app.Writer = &stderr, &bytes.Buffer{}
				status := Run(app, append([]string{"feed-test"}, args...))
				return p, status, stderr.String()
			}
			// The environment alone sets the parameter...
			p, status, stderr := run()
			if status != ExitOK || tc.got(p) == tc.want || tc.got(p) == tc.got(sched.Defaults()) {
				t.Fatalf("%s=%s alone: status %d %q, got %v (the default %v, or the flag's value)", tc.env, tc.envValue, status, stderr, tc.got(p), tc.got(sched.Defaults()))
			}
			// ...and the flag wins over it.
			p, status, stderr = run("--" + tc.flag + "=" + tc.value)
			if status != ExitOK || tc.got(p) != tc.want {
				t.Errorf("--%s=%s with %s=%s: status %d %q, got %v, want %v", tc.flag, tc.value, tc.env, tc.envValue, status, stderr, tc.got(p), tc.want)
			}
			// ...even over a bad value there.
			env = map[string]string{tc.env: tc.bad}
			p, status, stderr = run("--" + tc.flag + "=" + tc.value)
			if status != ExitOK || tc.got(p) != tc.want {
				t.Errorf("--%s=%s with %s=%s: status %d %q, got %v, want %v", tc.flag, tc.value, tc.env, tc.bad, status, stderr, tc.got(p), tc.want)
			}
			env = map[string]string{tc.env: tc.envValue}
			_, status, stderr = run("--" + tc.flag + "=" + tc.bad)
			if status != ExitUsage || !strings.Contains(stderr, tc.msg) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("--%s=%s: status %d, stderr %q; want %d and one line with %q", tc.flag, tc.bad, status, stderr, ExitUsage, tc.msg)
			}
		})
	}
}

// TestSchedFlagsHelp: --help names each scheduler flag's environment
// variable and its default.
func TestSchedFlagsHelp(t *testing.T) {
	envs := map[string]bool{}
	for _, e := range sched.EnvNames() {
		envs[e[0]] = true
	}
	for _, f := range SchedFlags() {
		df, ok := f.(cli.DocGenerationFlag)
		if !ok {
			t.Fatalf("%s: no usage", f.Names()[0])
		}
		usage, def := df.GetUsage(), df.GetDefaultText()
		_, name, _ := strings.Cut(usage, "(env ")
		name, _, _ = strings.Cut(name, ")")
		name, _, _ = strings.Cut(name, ",")
		if !envs[name] || def == "" {
			t.Errorf("--%s: usage %q names no scheduler variable, or no default (%q)", f.Names()[0], usage, def)
		}
	}
}

// TestFixedInterval: feed-store's --interval and its variables, which
// take whole seconds as the README says.
func TestFixedInterval(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want time.Duration
		msg  string // a usage error containing this
	}{
		{nil, nil, 0, ""},
		{[]string{"--interval=2h"}, nil, 2 * time.Hour, ""},
		{[]string{"--interval=0"}, map[string]string{"FEEDPIPE_INTERVAL": "60"}, 0, ""},
		{nil, map[string]string{"FEEDPIPE_INTERVAL": "3600"}, time.Hour, ""},
		{nil, map[string]string{"NEWSFED_POLL_INTERVAL": "900"}, 15 * time.Minute, ""},
		{nil, map[string]string{"FEEDPIPE_INTERVAL": "90m", "NEWSFED_POLL_INTERVAL": "900"}, 90 * time.Minute, ""},
		{[]string{"--interval=30m"}, map[string]string{"FEEDPIPE_INTERVAL": "3600"}, 30 * time.Minute, ""},
		{[]string{"--interval=-1h"}, nil, 0, "--interval -1h0m0s: want at least 1s"},
		{nil, map[string]string{"FEEDPIPE_INTERVAL": "-5"}, 0, `FEEDPIPE_INTERVAL="-5": want whole seconds`},
		{nil, map[string]string{"NEWSFED_POLL_INTERVAL": "hourly"}, 0, `NEWSFED_POLL_INTERVAL="hourly": want whole seconds`},
	} {
		var got time.Duration
		var stderr bytes.Buffer
		app := &cli.App{Name: "feed-test", Flags: []cli.Flag{&cli.DurationFlag{Name: "interval"}}, Action: func(c *cli.Context) error {
			var err error
			got, err = fixedInterval(c, func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			return err
		}}
		app.ErrWriter, app.Writer = &stderr, &bytes.Buffer{}
		status := Run(app, append([]string{"feed-test"}, tc.args...))
		switch {
		case tc.msg != "" && (status != ExitUsage || !strings.Contains(stderr.String(), tc.msg)):
			t.Errorf("%v %v: status %d, stderr %q; want a usage error with %q", tc.args, tc.env, status, stderr.String(), tc.msg)
		case tc.msg == "" && (status != ExitOK || got != tc.want):
			t.Errorf("%v %v: status %d %q, got %s, want %s", tc.args, tc.env, status, stderr.String(), got, tc.want)
		}
	}
}
