package cmdkit

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/sched"
)

// The scheduler's flags, for the binaries that call sched.Next (feed-store,
// feed-due, feed-sub). Each has an environment variable that ParamsFromEnv
// reads (the seeds' names are aliases); a flag wins over it. The flags do
// not name the variables to urfave/cli, which would parse them a second
// time in another format: SchedParams reads them.
const (
	flagPolicy           = "policy"
	flagInitialInterval  = "initial-interval"
	flagMinInterval      = "min-interval"
	flagMaxInterval      = "max-interval"
	flagJitter           = "jitter"
	flagBudget           = "budget"
	flagDisableThreshold = "disable-threshold"
	flagProbeDisabled    = "probe-disabled"
	flagBackoffCap       = "backoff-cap"
	flagErrorBudget      = "error-budget"
	flagMaxRetryAfter    = "max-retry-after"
	flagProfile          = "profile"
)

// SchedFlags are the scheduler's flags. Their defaults come from the
// environment, then from sched.Defaults.
func SchedFlags() []cli.Flag {
	d := sched.Defaults()
	env := func(name string) string {
		for _, e := range sched.EnvNames() {
			if e[0] == name {
				if e[1] != "" {
					return " (env " + e[0] + ", or " + e[1] + ")"
				}
				return " (env " + e[0] + ")"
			}
		}
		return ""
	}
	cat := "Scheduler"
	// DefaultText, not the zero Value urfave/cli would print: the default
	// is decided after the environment, in SchedParams.
	return []cli.Flag{
		&cli.StringFlag{Name: flagPolicy, Category: cat, DefaultText: "adaptive", Usage: "scheduling policy: adaptive, seed or fixed:DURATION such as fixed:1h" + env("FEEDPIPE_SCHED_POLICY")},
		&cli.DurationFlag{Name: flagInitialInterval, Category: cat, DefaultText: d.Initial.String(), Usage: "interval of a feed without history" + env("FEEDPIPE_SCHED_INITIAL_INTERVAL_SEC") + ", seconds"},
		&cli.DurationFlag{Name: flagMinInterval, Category: cat, DefaultText: d.Min.String(), Usage: "shortest interval between fetches of a feed" + env("FEEDPIPE_SCHED_MIN_INTERVAL_SEC") + ", seconds"},
		&cli.DurationFlag{Name: flagMaxInterval, Category: cat, DefaultText: d.Max.String(), Usage: "longest interval; also how often a feed disabled for errors is probed" + env("FEEDPIPE_SCHED_MAX_INTERVAL_SEC") + ", seconds"},
		&cli.Float64Flag{Name: flagJitter, Category: cat, DefaultText: fmt.Sprintf("%g", d.Jitter), Usage: "jitter ratio in [0, 0.5]: intervals are drawn from I·[1-j, 1+j]" + env("FEEDPIPE_SCHED_JITTER_RATIO")},
		&cli.Float64Flag{Name: flagBudget, Category: cat, DefaultText: "24, as fixed 1h", Usage: "adaptive policy: requests per feed and day the whole store may spend" + env("FEEDPIPE_SCHED_BUDGET")},
		&cli.IntFlag{Name: flagDisableThreshold, Category: cat, DefaultText: fmt.Sprint(d.DisableThreshold), Usage: "failures in a row that disable a feed; 0 never" + env("FEEDPIPE_SCHED_DISABLE_THRESHOLD")},
		&cli.BoolFlag{Name: flagProbeDisabled, Category: cat, DefaultText: "true", Usage: "probe a feed disabled for errors once per max interval and re-enable it when it answers; --probe-disabled=false keeps it disabled until feed-sub enable" + env("FEEDPIPE_SCHED_PROBE_DISABLED")},
		&cli.DurationFlag{Name: flagBackoffCap, Category: cat, DefaultText: d.BackoffCap.String(), Usage: "longest backoff delay after failures" + env("FEEDPIPE_SCHED_BACKOFF_CAP_SEC") + ", seconds"},
		&cli.Float64Flag{Name: flagErrorBudget, Category: cat, DefaultText: fmt.Sprintf("%g, refilled %g a day", d.ErrorBudget, d.ErrorBudgetPerDay), Usage: "failures before a feed's circuit opens" + env("FEEDPIPE_SCHED_ERROR_BUDGET")},
		&cli.DurationFlag{Name: flagMaxRetryAfter, Category: cat, DefaultText: d.MaxRetryAfter.String(), Usage: "longest Retry-After honoured" + env("FEEDPIPE_SCHED_MAX_RETRY_AFTER_SEC") + ", seconds"},
		&cli.BoolFlag{Name: flagProfile, Category: cat, DefaultText: "true", Usage: "adaptive policy: poll more in the hours and weekdays a feed posts" + env("FEEDPIPE_SCHED_PROFILE")},
	}
}

// SchedEnvHelp lists every scheduler environment variable, for a --help
// description.
func SchedEnvHelp() string {
	var b strings.Builder
	b.WriteString("Scheduler environment (flags win; docs/scheduler.md §5):\n")
	for _, e := range sched.EnvNames() {
		name := e[0]
		if e[1] != "" {
			name += " (" + e[1] + ")"
		}
		fmt.Fprintf(&b, "   %s: %s\n", name, e[2])
	}
	return b.String()
}

// SchedParams are the scheduler's parameters: sched.Defaults, changed by
// the environment, changed by the flags given. A bad value is a usage
// error.
func SchedParams(c *cli.Context) (sched.Params, error) {
	return schedParams(c, os.LookupEnv)
}

func schedParams(c *cli.Context, lookup func(string) (string, bool)) (sched.Params, error) {
	p, err := sched.ParamsFromEnv(lookup)
	if err != nil {
		return sched.Params{}, Usage(err)
	}
	dur := func(name string, dst *time.Duration) error {
		if !c.IsSet(name) {
			return nil
		}
		v := c.Duration(name)
		if v < time.Second {
			return Usagef("--%s %s: want at least 1s", name, v)
		}
		*dst = v
		return nil
	}
	if c.IsSet(flagPolicy) {
		if p.Policy, err = sched.ParsePolicy(c.String(flagPolicy)); err != nil {
			return sched.Params{}, Usagef("--%s %q: want adaptive, seed or fixed:DURATION such as fixed:15m", flagPolicy, c.String(flagPolicy))
		}
	}
	for _, f := range []struct {
		name string
		dst  *time.Duration
	}{{flagInitialInterval, &p.Initial}, {flagMinInterval, &p.Min}, {flagMaxInterval, &p.Max}, {flagBackoffCap, &p.BackoffCap}, {flagMaxRetryAfter, &p.MaxRetryAfter}} {
		if err := dur(f.name, f.dst); err != nil {
			return sched.Params{}, err
		}
	}
	if c.IsSet(flagJitter) {
		j := c.Float64(flagJitter)
		if !(j >= 0 && j <= 0.5) {
			return sched.Params{}, Usagef("--%s %g: want a ratio from 0 to 0.5", flagJitter, j)
		}
		p.Jitter = j
		if j == 0 {
			p.Jitter = -1 // none; 0 in Params means the default
		}
	}
	if c.IsSet(flagBudget) {
		b := c.Float64(flagBudget)
		if !(b >= 0 && b <= 1e6) {
			return sched.Params{}, Usagef("--%s %g: want requests per feed and day, 0 for the default", flagBudget, b)
		}
		p.Budget = b
	}
	if c.IsSet(flagDisableThreshold) {
		n := c.Int(flagDisableThreshold)
		switch {
		case n < 0:
			return sched.Params{}, Usagef("--%s %d: want a number of failures, 0 for never", flagDisableThreshold, n)
		case n == 0:
			p.DisableThreshold = -1
		default:
			p.DisableThreshold = n
		}
	}
	if c.IsSet(flagProbeDisabled) {
		p.NoProbe = !c.Bool(flagProbeDisabled)
	}
	if c.IsSet(flagErrorBudget) {
		b := c.Float64(flagErrorBudget)
		if !(b > 0 && b <= 1e6) {
			return sched.Params{}, Usagef("--%s %g: want a positive number of failures", flagErrorBudget, b)
		}
		p.ErrorBudget = b
	}
	if c.IsSet(flagProfile) {
		p.NoProfile = !c.Bool(flagProfile)
	}
	if p.Max < p.Min {
		return sched.Params{}, Usagef("the max interval %s is below the min interval %s", p.Max, p.Min)
	}
	return p, nil
}
