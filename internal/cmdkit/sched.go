package cmdkit

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/sched"
)

// The scheduler's flags, for the binaries that call sched.Next (feed-store,
// feed-due, feed-sub). Each has an environment variable that ParamsFromEnv
// reads (the older names are aliases: docs/design.md#configuration); a flag wins over it. The flags do
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
	flagUpFactor         = "up-factor"
	flagDownFactor       = "down-factor"
	flagEWMAAlpha        = "ewma-alpha"
	flagBlendLambda      = "blend-lambda"
	flagBackoffBase      = "backoff-base"
	flagErrorRefill      = "error-budget-per-day"
	flagRateHalfLife     = "rate-half-life"
)

// flagEnv is each scheduler flag's environment variable (sched.EnvNames
// has its alias): the flag wins over both.
var flagEnv = map[string]string{
	flagPolicy:           "FEEDPIPE_SCHED_POLICY",
	flagInitialInterval:  "FEEDPIPE_SCHED_INITIAL_INTERVAL_SEC",
	flagMinInterval:      "FEEDPIPE_SCHED_MIN_INTERVAL_SEC",
	flagMaxInterval:      "FEEDPIPE_SCHED_MAX_INTERVAL_SEC",
	flagJitter:           "FEEDPIPE_SCHED_JITTER_RATIO",
	flagBudget:           "FEEDPIPE_SCHED_BUDGET",
	flagDisableThreshold: "FEEDPIPE_SCHED_DISABLE_THRESHOLD",
	flagProbeDisabled:    "FEEDPIPE_SCHED_PROBE_DISABLED",
	flagBackoffCap:       "FEEDPIPE_SCHED_BACKOFF_CAP_SEC",
	flagErrorBudget:      "FEEDPIPE_SCHED_ERROR_BUDGET",
	flagErrorRefill:      "FEEDPIPE_SCHED_ERROR_BUDGET_PER_DAY",
	flagMaxRetryAfter:    "FEEDPIPE_SCHED_MAX_RETRY_AFTER_SEC",
	flagRateHalfLife:     "FEEDPIPE_SCHED_RATE_HALF_LIFE_SEC",
	flagProfile:          "FEEDPIPE_SCHED_PROFILE",
	flagUpFactor:         "FEEDPIPE_SCHED_UP_FACTOR",
	flagDownFactor:       "FEEDPIPE_SCHED_DOWN_FACTOR",
	flagEWMAAlpha:        "FEEDPIPE_SCHED_EWMA_ALPHA",
	flagBlendLambda:      "FEEDPIPE_SCHED_BLEND_LAMBDA",
	flagBackoffBase:      "FEEDPIPE_SCHED_BACKOFF_BASE",
}

// schedCategory groups the scheduler's flags in --help.
const schedCategory = "Scheduler"

// number is the value of a scheduler flag that takes a number. A
// cli.Float64Flag given "abc" says only "parse error"; this says what it
// wants.
type number struct{ v float64 }

func (n *number) Set(s string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return errors.New("not a number")
	}
	n.v = f
	return nil
}

func (n *number) String() string {
	if n == nil {
		return ""
	}
	return strconv.FormatFloat(n.v, 'g', -1, 64)
}

// numberFlag is a scheduler flag that takes a number.
func numberFlag(name, usage, def string) *cli.GenericFlag {
	return &cli.GenericFlag{Name: name, Category: schedCategory, Value: &number{}, DefaultText: def, Usage: usage}
}

// SchedFlags are the scheduler's flags. Their defaults come from the
// environment, then from sched.Defaults.
func SchedFlags() []cli.Flag {
	d := sched.Defaults()
	env := func(flag string) string {
		for _, e := range sched.EnvNames() {
			if e[0] == flagEnv[flag] {
				if e[1] != "" {
					return " (env " + e[0] + ", or " + e[1] + ")"
				}
				return " (env " + e[0] + ")"
			}
		}
		return ""
	}
	cat := schedCategory
	// DefaultText, not the zero Value urfave/cli would print: the default
	// is decided after the environment, in SchedParams.
	return []cli.Flag{
		&cli.StringFlag{Name: flagPolicy, Category: cat, DefaultText: "adaptive", Usage: "scheduling policy: adaptive, seed or fixed:DURATION such as fixed:1h" + env(flagPolicy)},
		&cli.DurationFlag{Name: flagInitialInterval, Category: cat, DefaultText: d.Initial.String(), Usage: "interval of a feed without history" + env(flagInitialInterval) + ", seconds"},
		&cli.DurationFlag{Name: flagMinInterval, Category: cat, DefaultText: d.Min.String(), Usage: "shortest interval between fetches of a feed" + env(flagMinInterval) + ", seconds"},
		&cli.DurationFlag{Name: flagMaxInterval, Category: cat, DefaultText: d.Max.String(), Usage: "longest interval; also how often a feed disabled for errors is probed" + env(flagMaxInterval) + ", seconds"},
		numberFlag(flagJitter, "jitter ratio in [0, 0.5]: intervals are drawn from I·[1-j, 1+j]"+env(flagJitter), fmt.Sprintf("%g", d.Jitter)),
		numberFlag(flagBudget, "adaptive policy: requests per feed and day the whole store may spend"+env(flagBudget), "24, as fixed 1h"),
		&cli.IntFlag{Name: flagDisableThreshold, Category: cat, DefaultText: fmt.Sprint(d.DisableThreshold), Usage: "failures in a row that disable a feed; 0 never" + env(flagDisableThreshold)},
		&cli.BoolFlag{Name: flagProbeDisabled, Category: cat, DefaultText: "true", Usage: "probe a feed disabled for errors once per max interval and re-enable it when it answers; --probe-disabled=false keeps it disabled until feed-sub enable" + env(flagProbeDisabled)},
		&cli.DurationFlag{Name: flagBackoffCap, Category: cat, DefaultText: d.BackoffCap.String(), Usage: "longest backoff delay after failures" + env(flagBackoffCap) + ", seconds"},
		numberFlag(flagErrorBudget, "failures before a feed's circuit opens"+env(flagErrorBudget), fmt.Sprintf("%g", d.ErrorBudget)),
		numberFlag(flagErrorRefill, "failures the error budget gets back a day"+env(flagErrorRefill), fmt.Sprintf("%g", d.ErrorBudgetPerDay)),
		&cli.DurationFlag{Name: flagMaxRetryAfter, Category: cat, DefaultText: d.MaxRetryAfter.String(), Usage: "longest Retry-After honoured" + env(flagMaxRetryAfter) + ", seconds"},
		&cli.DurationFlag{Name: flagRateHalfLife, Category: cat, DefaultText: d.RateHalfLife.String(), Usage: "adaptive policy: half-life of the posting-rate estimate, at least 1h" + env(flagRateHalfLife) + ", seconds"},
		&cli.BoolFlag{Name: flagProfile, Category: cat, DefaultText: "true", Usage: "adaptive policy: poll more in the hours and weekdays a feed posts" + env(flagProfile)},
		// The seed policy's factors (docs/design.md#parameters).
		numberFlag(flagUpFactor, "b_up, 1 to 100: the seed policy's factor on the interval after a 304 or no new entries, and every policy's after a truncated body"+env(flagUpFactor), fmt.Sprintf("%g", d.Up)),
		numberFlag(flagDownFactor, "b_down, in (0, 1]: the seed policy's factor on the interval after new entries"+env(flagDownFactor), fmt.Sprintf("%g", d.Down)),
		numberFlag(flagEWMAAlpha, "weight of the newest gap between items in their EWMA (the seed policy's cadence, ewma_secs), in (0, 1]"+env(flagEWMAAlpha), fmt.Sprintf("%g", d.Alpha)),
		numberFlag(flagBlendLambda, "seed policy: weight of the EWMA in the blend with the interval, in (0, 1]"+env(flagBlendLambda), fmt.Sprintf("%g", d.Lambda)),
		numberFlag(flagBackoffBase, "the backoff's factor per failure, 1 to 100"+env(flagBackoffBase), fmt.Sprintf("%g", d.BackoffBase)),
	}
}

// HiddenSchedFlags are SchedFlags left out of --help, for the commands
// that only need the scheduler's parameters to be the same as feed-store's
// (feed-sub refetch and enable): they still take them.
func HiddenSchedFlags() []cli.Flag {
	flags := SchedFlags()
	for _, f := range flags {
		switch f := f.(type) {
		case *cli.StringFlag:
			f.Hidden = true
		case *cli.DurationFlag:
			f.Hidden = true
		case *cli.GenericFlag:
			f.Hidden = true
		case *cli.IntFlag:
			f.Hidden = true
		case *cli.BoolFlag:
			f.Hidden = true
		}
	}
	return flags
}

// SchedParams are the scheduler's parameters: sched.Defaults, changed by
// the environment, changed by the flags given. A bad value is a usage
// error.
func SchedParams(c *cli.Context) (sched.Params, error) {
	return schedParams(c, os.LookupEnv)
}

func schedParams(c *cli.Context, lookupEnv func(string) (string, bool)) (sched.Params, error) {
	// A flag given hides its variables: a bad value there is not an
	// error the flag leaves standing. A value from the configuration
	// file is given only when neither variable is set.
	vars := map[string][]string{}
	for _, e := range sched.EnvNames() {
		for flag, name := range flagEnv {
			if name == e[0] {
				vars[flag] = []string{e[0], e[1]}
			}
		}
	}
	isSet := func(flag string) bool { return given(c, flag, lookupEnv, vars[flag]...) }
	hidden := map[string]bool{}
	for flag, names := range vars {
		if isSet(flag) {
			for _, n := range names {
				hidden[n] = true
			}
		}
	}
	p, err := sched.ParamsFromEnv(func(name string) (string, bool) {
		if hidden[name] {
			return "", false
		}
		v, ok := lookupEnv(name)
		return inSeconds(name, v), ok
	})
	if err != nil {
		return sched.Params{}, Usage(err)
	}
	dur := func(name string, dst *time.Duration) error {
		if !isSet(name) {
			return nil
		}
		v := c.Duration(name)
		if v < time.Second {
			return Usagef("--%s %s: want at least 1s", name, v)
		}
		*dst = v
		return nil
	}
	if isSet(flagPolicy) {
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
	num := func(name string) float64 { return c.Generic(name).(*number).v }
	if isSet(flagJitter) {
		j := num(flagJitter)
		if !(j >= 0 && j <= 0.5) {
			return sched.Params{}, Usagef("--%s %g: want a ratio from 0 to 0.5", flagJitter, j)
		}
		p.Jitter = j
		if j == 0 {
			p.Jitter = -1 // none; 0 in Params means the default
		}
	}
	if isSet(flagBudget) {
		b := num(flagBudget)
		if !(b >= 0 && b <= 1e6) {
			return sched.Params{}, Usagef("--%s %g: want requests per feed and day, 0 for the default", flagBudget, b)
		}
		p.Budget = b
	}
	if isSet(flagDisableThreshold) {
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
	if isSet(flagProbeDisabled) {
		p.NoProbe = !c.Bool(flagProbeDisabled)
	}
	for _, f := range []struct {
		name string
		dst  *float64
	}{{flagErrorBudget, &p.ErrorBudget}, {flagErrorRefill, &p.ErrorBudgetPerDay}} {
		if !isSet(f.name) {
			continue
		}
		b := num(f.name)
		if !(b > 0 && b <= 1e6) {
			return sched.Params{}, Usagef("--%s %g: want a positive number of failures", f.name, b)
		}
		*f.dst = b
	}
	if isSet(flagProfile) {
		p.NoProfile = !c.Bool(flagProfile)
	}
	// The ranges ParamsFromEnv accepts; open: the low end is excluded.
	for _, f := range []struct {
		name   string
		dst    *float64
		lo, hi float64
		open   bool
	}{
		{flagUpFactor, &p.Up, 1, 100, false},
		{flagDownFactor, &p.Down, 0, 1, true},
		{flagEWMAAlpha, &p.Alpha, 0, 1, true},
		{flagBlendLambda, &p.Lambda, 0, 1, true},
		{flagBackoffBase, &p.BackoffBase, 1, 100, false},
	} {
		if !isSet(f.name) {
			continue
		}
		v := num(f.name)
		if v < f.lo || v > f.hi || (f.open && v == f.lo) {
			if f.open {
				return sched.Params{}, Usagef("--%s %g: want a number in (%g, %g]", f.name, v, f.lo, f.hi)
			}
			return sched.Params{}, Usagef("--%s %g: want a number from %g to %g", f.name, v, f.lo, f.hi)
		}
		*f.dst = v
	}
	if isSet(flagRateHalfLife) {
		h := c.Duration(flagRateHalfLife)
		if h < time.Hour {
			return sched.Params{}, Usagef("--%s %s: want at least 1h", flagRateHalfLife, h)
		}
		p.RateHalfLife = h
	}
	if p.Max < p.Min {
		return sched.Params{}, Usagef("the max interval %s is below the min interval %s", p.Max, p.Min)
	}
	return p, nil
}

// inSeconds is the value of the scheduler's variable name as
// sched.ParamsFromEnv reads it: a duration (90s, 1h) in a variable of
// seconds (..._SEC) becomes its whole seconds, so that every duration in
// the environment can be written either way.
func inSeconds(name, v string) string {
	if !strings.HasSuffix(name, "_SEC") {
		return v
	}
	if d, err := time.ParseDuration(strings.TrimSpace(v)); err == nil && d >= time.Second && d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10)
	}
	return v
}

// FixedInterval is feed-store's --interval, or else FEEDPIPE_INTERVAL or
// NEWSFED_POLL_INTERVAL: a fixed polling interval for every feed, 0 for
// the scheduler's policy. A bad value is a usage error.
func FixedInterval(c *cli.Context) (time.Duration, error) { return fixedInterval(c, os.LookupEnv) }

// fixedInterval is FixedInterval with the environment's lookup given.
// The variables are whole seconds, as every duration in the environment
// is; a Go duration such as 1h is taken too.
func fixedInterval(c *cli.Context, lookup func(string) (string, bool)) (time.Duration, error) {
	if given(c, "interval", lookup, "FEEDPIPE_INTERVAL", "NEWSFED_POLL_INTERVAL") {
		d := c.Duration("interval")
		if d != 0 && d < time.Second {
			return 0, Usagef("--interval %s: want at least 1s, or 0 for the scheduler's policy", d)
		}
		return d, nil
	}
	for _, name := range []string{"FEEDPIPE_INTERVAL", "NEWSFED_POLL_INTERVAL"} {
		v, ok := lookup(name)
		if !ok || strings.TrimSpace(v) == "" {
			continue
		}
		v = strings.TrimSpace(v)
		d, err := time.ParseDuration(v)
		if n, nerr := strconv.ParseInt(v, 10, 64); nerr == nil && n >= 0 && n <= math.MaxInt64/int64(time.Second) {
			d, err = time.Duration(n)*time.Second, nil
		}
		if err != nil || (d != 0 && d < time.Second) {
			return 0, Usagef("%s=%q: want whole seconds such as 3600 (or a duration such as 1h), 0 for the scheduler's policy", name, v)
		}
		return d, nil
	}
	return 0, nil
}
