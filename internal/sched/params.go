package sched

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// PolicyKind names a polling policy.
type PolicyKind string

// The policies. Adaptive is the default.
const (
	PolicyAdaptive PolicyKind = "adaptive" // rate estimate, intervals ∝ 1/sqrt(rate) under a global scale
	PolicySeed     PolicyKind = "seed"     // the classic rule: b_up, b_down, EWMA blend (docs/scheduler.md §3)
	PolicyFixed    PolicyKind = "fixed"    // one interval for every feed (fixed:DURATION)
)

// Policy is a parsed policy name: "adaptive", "seed" or "fixed:DURATION".
type Policy struct {
	Kind  PolicyKind
	Every time.Duration // fixed only
	name  string        // String's answer, kept by ParsePolicy: Next is called millions of times in a simulation
}

// String returns the policy as ParsePolicy reads it.
func (p Policy) String() string {
	if p.name != "" {
		return p.name
	}
	switch p.Kind {
	case PolicyFixed:
		return "fixed:" + fmtDur(p.Every)
	case "":
		return string(PolicyAdaptive)
	}
	return string(p.Kind)
}

// ErrBadPolicy is returned by ParsePolicy for a name it does not know.
var ErrBadPolicy = errors.New("sched: unknown policy")

// ParsePolicy reads "adaptive", "seed" or "fixed:DURATION" (fixed:15m,
// fixed:1h30m); "" is adaptive.
func ParsePolicy(s string) (Policy, error) {
	s = strings.TrimSpace(strings.ToLower(s))
	switch s {
	case "", string(PolicyAdaptive):
		return Policy{Kind: PolicyAdaptive}, nil
	case string(PolicySeed):
		return Policy{Kind: PolicySeed}, nil
	}
	if rest, ok := strings.CutPrefix(s, "fixed:"); ok {
		d, err := time.ParseDuration(rest)
		if err != nil || d < time.Second {
			return Policy{}, fmt.Errorf("%w %q: fixed needs a duration of at least 1s, such as fixed:15m", ErrBadPolicy, s)
		}
		p := Policy{Kind: PolicyFixed, Every: d}
		p.name = p.String()
		return p, nil
	}
	return Policy{}, fmt.Errorf("%w %q: want adaptive, seed or fixed:DURATION", ErrBadPolicy, s)
}

// Params are the scheduler's global parameters. Defaults returns the
// values of docs/scheduler.md §5; a zero field is read as its default,
// so Params{} is usable.
type Params struct {
	Policy Policy

	Initial time.Duration // I0: the interval of a feed without history (15m)
	Min     time.Duration // shortest interval (300s; SCHED_MIN_INTERVAL_SEC)
	Max     time.Duration // longest interval (86400s; SCHED_MAX_INTERVAL_SEC)

	Up     float64 // b_up: ×interval on 304 or no new entries (1.25)
	Down   float64 // b_down: ×interval on new entries (0.75)
	Alpha  float64 // EWMA weight of the newest inter-arrival time (0.3)
	Lambda float64 // weight of the EWMA target in the blend (0.5)
	// Jitter is j: the interval is drawn from I·[1-j, 1+j] (0.15). A
	// negative value means no jitter (zero means the default).
	Jitter float64

	BackoffBase float64       // ×delay per consecutive failure (2.0)
	BackoffCap  time.Duration // longest backoff delay (3600s)

	// DisableThreshold: consecutive failures that disable a feed (10;
	// NEWSFED_DISABLE_THRESHOLD). Negative: never disable for failures.
	DisableThreshold int
	// NoProbe keeps a feed disabled for errors disabled until it is enabled
	// by hand. By default such a feed is still fetched once per Max and
	// re-enabled when it answers.
	NoProbe bool

	// ErrorBudget is how many failures a feed may spend before its circuit
	// opens (5), refilled at ErrorBudgetPerDay (5) tokens a day.
	ErrorBudget       float64
	ErrorBudgetPerDay float64

	// MaxRetryAfter bounds how long a Retry-After is honoured (7 days), so
	// that a broken header cannot lose a feed for years.
	MaxRetryAfter time.Duration

	// Scale is the adaptive policy's global factor s: a feed posting r
	// items a day is polled every s/sqrt(r) seconds. The caller computes
	// it from all feeds with Scale or ScaleFor; 0 means DefaultScale.
	Scale float64
	// Budget is the request budget in requests per feed and day that the
	// caller's Scale should meet (0: as many as a fixed 1h interval, 24).
	// Next reads it only for the adaptive tail rule (tailInterval).
	Budget float64

	RateHalfLife    time.Duration // half-life of the posting-rate estimate (7 days)
	BurstHalfLife   time.Duration // half-life of the short-term rate that catches bursts (12h)
	ProfileHalfLife time.Duration // half-life of the hour/day profile (28 days)
	NoProfile       bool          // adaptive: ignore the hour/day profile
}

// DefaultScale is the adaptive scale used when Params.Scale is 0: a feed
// posting 4 times a day is polled hourly.
const DefaultScale = 7200.0

// Defaults returns the default parameters, with the adaptive policy.
func Defaults() Params {
	return Params{
		Policy:            Policy{Kind: PolicyAdaptive},
		Initial:           15 * time.Minute,
		Min:               300 * time.Second,
		Max:               86400 * time.Second,
		Up:                1.25,
		Down:              0.75,
		Alpha:             0.3,
		Lambda:            0.5,
		Jitter:            0.15,
		BackoffBase:       2.0,
		BackoffCap:        3600 * time.Second,
		DisableThreshold:  10,
		ErrorBudget:       5,
		ErrorBudgetPerDay: 5,
		MaxRetryAfter:     7 * 24 * time.Hour,
		RateHalfLife:      7 * 24 * time.Hour,
		BurstHalfLife:     12 * time.Hour,
		ProfileHalfLife:   28 * 24 * time.Hour,
	}
}

// withDefaults fills zero and unusable fields with their defaults, so that
// Next never divides by zero or loops on a hand-made Params.
func (p Params) withDefaults() Params {
	d := Defaults()
	if p.Policy.Kind == "" || (p.Policy.Kind == PolicyFixed && p.Policy.Every <= 0) {
		p.Policy = d.Policy
	}
	dur := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	num := func(v *float64, def float64) {
		if *v <= 0 || math.IsNaN(*v) || math.IsInf(*v, 0) {
			*v = def
		}
	}
	dur(&p.Initial, d.Initial)
	dur(&p.Min, d.Min)
	dur(&p.Max, d.Max)
	if p.Max < p.Min {
		p.Max = p.Min
	}
	num(&p.Up, d.Up)
	num(&p.Down, d.Down)
	num(&p.Alpha, d.Alpha)
	p.Alpha = min(p.Alpha, 1)
	if p.Lambda < 0 || p.Lambda > 1 || math.IsNaN(p.Lambda) {
		p.Lambda = d.Lambda
	}
	if p.Lambda == 0 {
		p.Lambda = d.Lambda
	}
	switch {
	case math.IsNaN(p.Jitter) || p.Jitter < 0:
		p.Jitter = -1 // none; kept negative so that withDefaults is idempotent
	case p.Jitter == 0:
		p.Jitter = d.Jitter
	}
	p.Jitter = min(p.Jitter, 0.5)
	num(&p.BackoffBase, d.BackoffBase)
	p.BackoffBase = max(p.BackoffBase, 1)
	dur(&p.BackoffCap, d.BackoffCap)
	if p.DisableThreshold == 0 {
		p.DisableThreshold = d.DisableThreshold
	}
	num(&p.ErrorBudget, d.ErrorBudget)
	num(&p.ErrorBudgetPerDay, d.ErrorBudgetPerDay)
	dur(&p.MaxRetryAfter, d.MaxRetryAfter)
	if p.Scale < 0 || math.IsNaN(p.Scale) || math.IsInf(p.Scale, 0) {
		p.Scale = 0
	}
	dur(&p.RateHalfLife, d.RateHalfLife)
	dur(&p.BurstHalfLife, d.BurstHalfLife)
	dur(&p.ProfileHalfLife, d.ProfileHalfLife)
	return p
}

// scale is the adaptive scale in force.
func (p Params) scale() float64 {
	if p.Scale > 0 {
		return p.Scale
	}
	return DefaultScale
}

// BudgetPerFeedDay is the request budget Scale should meet, per feed and
// day: Params.Budget, or what a fixed 1h interval spends.
func (p Params) BudgetPerFeedDay() float64 {
	if p.Budget > 0 {
		return p.Budget
	}
	return 24
}

// Env names ParamsFromEnv reads. The older names (SCHED_*, NEWSFED_*) are
// aliases of the FEEDPIPE_SCHED_* ones; when both are set the FEEDPIPE name
// wins.
var envNames = []struct {
	name, alias, what string
}{
	{"FEEDPIPE_SCHED_POLICY", "", "policy: adaptive, seed or fixed:DURATION"},
	{"FEEDPIPE_SCHED_INITIAL_INTERVAL_SEC", "", "interval of a feed without history, seconds"},
	{"FEEDPIPE_SCHED_MIN_INTERVAL_SEC", "SCHED_MIN_INTERVAL_SEC", "shortest interval, seconds"},
	{"FEEDPIPE_SCHED_MAX_INTERVAL_SEC", "SCHED_MAX_INTERVAL_SEC", "longest interval, seconds"},
	{"FEEDPIPE_SCHED_JITTER_RATIO", "SCHED_JITTER_RATIO", "jitter ratio j in [0, 0.5]"},
	{"FEEDPIPE_SCHED_UP_FACTOR", "", "b_up, at least 1"},
	{"FEEDPIPE_SCHED_DOWN_FACTOR", "", "b_down, in (0, 1]"},
	{"FEEDPIPE_SCHED_EWMA_ALPHA", "", "EWMA alpha in (0, 1]"},
	{"FEEDPIPE_SCHED_BLEND_LAMBDA", "", "blend lambda in (0, 1]"},
	{"FEEDPIPE_SCHED_BACKOFF_BASE", "", "backoff base, at least 1"},
	{"FEEDPIPE_SCHED_BACKOFF_CAP_SEC", "", "backoff cap, seconds"},
	{"FEEDPIPE_SCHED_DISABLE_THRESHOLD", "NEWSFED_DISABLE_THRESHOLD", "consecutive failures that disable a feed; 0 never"},
	{"FEEDPIPE_SCHED_PROBE_DISABLED", "", "probe feeds disabled for errors once per max interval: true or false"},
	{"FEEDPIPE_SCHED_ERROR_BUDGET", "", "failures before the circuit opens"},
	{"FEEDPIPE_SCHED_ERROR_BUDGET_PER_DAY", "", "error budget refill per day"},
	{"FEEDPIPE_SCHED_MAX_RETRY_AFTER_SEC", "", "longest Retry-After honoured, seconds"},
	{"FEEDPIPE_SCHED_BUDGET", "", "adaptive: requests per feed and day (0: as fixed 1h)"},
	{"FEEDPIPE_SCHED_RATE_HALF_LIFE_SEC", "", "adaptive: half-life of the rate estimate, seconds"},
	{"FEEDPIPE_SCHED_PROFILE", "", "adaptive: use the hour/day profile: true or false"},
}

// EnvNames lists the environment variables ParamsFromEnv reads, with their
// aliases and a short description, for --help texts and docs.
func EnvNames() [][3]string {
	out := make([][3]string, len(envNames))
	for i, e := range envNames {
		out[i] = [3]string{e.name, e.alias, e.what}
	}
	return out
}

// ParamsFromEnv returns Defaults changed by the environment variables that
// lookup finds (os.LookupEnv in a binary, a map in tests). A bad value is an
// error naming the variable and what it wants, on one line.
func ParamsFromEnv(lookup func(string) (string, bool)) (Params, error) {
	p := Defaults()
	get := func(name, alias string) (string, string, bool) {
		if v, ok := lookup(name); ok && strings.TrimSpace(v) != "" {
			return name, strings.TrimSpace(v), true
		}
		if alias != "" {
			if v, ok := lookup(alias); ok && strings.TrimSpace(v) != "" {
				return alias, strings.TrimSpace(v), true
			}
		}
		return "", "", false
	}
	bad := func(name, v, want string) error {
		return fmt.Errorf("sched: %s=%q: %s", name, v, want)
	}
	for _, e := range envNames {
		name, v, ok := get(e.name, e.alias)
		if !ok {
			continue
		}
		secs := func(dst *time.Duration, lo int64) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < lo || n > 365*86400 {
				return bad(name, v, fmt.Sprintf("want a whole number of seconds from %d to %d", lo, 365*86400))
			}
			*dst = time.Duration(n) * time.Second
			return nil
		}
		ratio := func(dst *float64, lo, hi float64, loOpen bool) error {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(f) || f < lo || f > hi || (loOpen && f == lo) {
				open := "["
				if loOpen {
					open = "("
				}
				return bad(name, v, fmt.Sprintf("want a number in %s%g, %g]", open, lo, hi))
			}
			*dst = f
			return nil
		}
		boolean := func(dst *bool) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return bad(name, v, "want true or false")
			}
			*dst = b
			return nil
		}
		var err error
		switch e.name {
		case "FEEDPIPE_SCHED_POLICY":
			p.Policy, err = ParsePolicy(v)
			if err != nil {
				err = bad(name, v, "want adaptive, seed or fixed:DURATION such as fixed:15m")
			}
		case "FEEDPIPE_SCHED_INITIAL_INTERVAL_SEC":
			err = secs(&p.Initial, 1)
		case "FEEDPIPE_SCHED_MIN_INTERVAL_SEC":
			err = secs(&p.Min, 1)
		case "FEEDPIPE_SCHED_MAX_INTERVAL_SEC":
			err = secs(&p.Max, 1)
		case "FEEDPIPE_SCHED_JITTER_RATIO":
			err = ratio(&p.Jitter, 0, 0.5, false)
			if err == nil && p.Jitter == 0 {
				p.Jitter = -1 // explicit zero: no jitter (0 in Params means default)
			}
		case "FEEDPIPE_SCHED_UP_FACTOR":
			err = ratio(&p.Up, 1, 100, false)
		case "FEEDPIPE_SCHED_DOWN_FACTOR":
			err = ratio(&p.Down, 0, 1, true)
		case "FEEDPIPE_SCHED_EWMA_ALPHA":
			err = ratio(&p.Alpha, 0, 1, true)
		case "FEEDPIPE_SCHED_BLEND_LAMBDA":
			err = ratio(&p.Lambda, 0, 1, true)
		case "FEEDPIPE_SCHED_BACKOFF_BASE":
			err = ratio(&p.BackoffBase, 1, 100, false)
		case "FEEDPIPE_SCHED_BACKOFF_CAP_SEC":
			err = secs(&p.BackoffCap, 1)
		case "FEEDPIPE_SCHED_DISABLE_THRESHOLD":
			n, perr := strconv.Atoi(v)
			if perr != nil || n < 0 || n > 1000000 {
				err = bad(name, v, "want a whole number of failures, 0 for never")
			} else if n == 0 {
				p.DisableThreshold = -1
			} else {
				p.DisableThreshold = n
			}
		case "FEEDPIPE_SCHED_PROBE_DISABLED":
			var probe bool
			err = boolean(&probe)
			p.NoProbe = !probe
		case "FEEDPIPE_SCHED_ERROR_BUDGET":
			err = ratio(&p.ErrorBudget, 0, 1e6, true)
		case "FEEDPIPE_SCHED_ERROR_BUDGET_PER_DAY":
			err = ratio(&p.ErrorBudgetPerDay, 0, 1e6, true)
		case "FEEDPIPE_SCHED_MAX_RETRY_AFTER_SEC":
			err = secs(&p.MaxRetryAfter, 1)
		case "FEEDPIPE_SCHED_BUDGET":
			err = ratio(&p.Budget, 0, 1e6, false)
		case "FEEDPIPE_SCHED_RATE_HALF_LIFE_SEC":
			err = secs(&p.RateHalfLife, 3600)
		case "FEEDPIPE_SCHED_PROFILE":
			var on bool
			err = boolean(&on)
			p.NoProfile = !on
		}
		if err != nil {
			return Params{}, err
		}
	}
	if p.Max < p.Min {
		return Params{}, fmt.Errorf("sched: max interval %s is below min interval %s", fmtDur(p.Max), fmtDur(p.Min))
	}
	return p, nil
}
