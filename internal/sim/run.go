// Package sim is the scheduler simulator: it replays posting histories
// through internal/sched with a simulated clock and simulated servers, and
// measures what each polling policy costs and how late it finds items.
package sim

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/feedpipe/feedpipe/internal/sched"
)

// DefaultPolicies are the policies simulated when none are named.
var DefaultPolicies = []string{"seed", "adaptive", "fixed:15m", "fixed:1h", "oracle"}

// TargetPolicies are the policies the adaptive policy's targets compare
// (CheckTargets).
var TargetPolicies = []string{"seed", "fixed:15m", "fixed:1h", "adaptive@fixed:1h", "adaptive@0.4*fixed:15m", "oracle@fixed:1h"}

// Config is one run of the simulator. A nil writer discards.
type Config struct {
	Out io.Writer // the table, or NDJSON results
	Err io.Writer // --show output

	Trace    io.Reader  // the trace to replay, unless Generate is set
	Generate *GenConfig // make a workload instead
	// WriteTrace, when set, gets the workload as a trace and nothing is
	// simulated.
	WriteTrace io.Writer

	Policies []string // default DefaultPolicies; ignored with Targets
	// Budget, in requests per feed and day, or BudgetOf, a policy whose
	// spend is the budget, applies to adaptive and oracle named without
	// one of their own ("adaptive@..."). Neither: as fixed 1h, 24.
	Budget   float64
	BudgetOf string

	Seed    uint64 // seeds the schedulers' jitter
	JSON    bool   // NDJSON, one record per policy, instead of the table
	Targets bool   // simulate TargetPolicies and check the targets (CheckTargets)
	Show    string // a feed id whose every decision is written to Err
	ByKind  bool   // the table also breaks results down by feed kind

	Params sched.Params // the scheduler's parameters (the policy is set per run)
}

// ErrTargets is returned when a target is not met.
var ErrTargets = errors.New("sim: targets not met")

// ErrUsage wraps errors in what the caller asked for (a feed to show, the
// policy of a budget, the size of a generated workload), as opposed to
// errors of the trace (ErrTrace) or of the run.
var ErrUsage = errors.New("sim")

// Run simulates the configured policies on the workload and writes the
// results.
func Run(ctx context.Context, cfg Config) (err error) {
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	out := bufio.NewWriter(cfg.Out)
	defer func() {
		if ferr := out.Flush(); err == nil && ferr != nil {
			err = fmt.Errorf("sim: write: %w", ferr)
		}
	}()
	cfg.Out = out
	if cfg.Err == nil {
		cfg.Err = io.Discard
	}
	// What the caller asked for is checked before a trace is read or a
	// workload generated, which can take a while.
	if cfg.BudgetOf != "" {
		if err := CheckBudgetOf(cfg.BudgetOf); err != nil {
			return err
		}
	}
	var w *Workload
	if cfg.Generate != nil {
		if err := cfg.Generate.Check(); err != nil {
			return fmt.Errorf("%w: %v", ErrUsage, err)
		}
		w = Generate(*cfg.Generate)
	} else {
		if cfg.Trace == nil {
			return errors.New("sim: no trace and no --generate")
		}
		var err error
		if w, err = Load(cfg.Trace); err != nil {
			return err
		}
	}
	if cfg.WriteTrace != nil {
		return w.Write(cfg.WriteTrace)
	}
	if cfg.Show != "" && !slices.ContainsFunc(w.Feeds, func(f *Feed) bool { return f.ID == cfg.Show }) {
		return fmt.Errorf("%w: --show %q: no feed with that id in the workload", ErrUsage, cfg.Show)
	}
	names := cfg.Policies
	if cfg.Targets {
		names = TargetPolicies
	} else if len(names) == 0 {
		names = DefaultPolicies
	}
	results, err := SimulateAll(ctx, w, names, cfg)
	if err != nil {
		return err
	}
	if cfg.JSON {
		enc := json.NewEncoder(cfg.Out)
		for _, r := range results {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
	} else {
		WriteTable(cfg.Out, w, results)
		if cfg.ByKind {
			WriteKinds(cfg.Out, results)
		}
	}
	if cfg.Targets {
		checks := CheckTargets(results)
		if !cfg.JSON {
			fmt.Fprintln(cfg.Out)
			WriteChecks(cfg.Out, checks)
		}
		for _, c := range checks {
			if !c.OK {
				return ErrTargets
			}
		}
	}
	return nil
}

// CheckBudgetOf rejects a --budget-of that names no policy without a
// budget of its own.
func CheckBudgetOf(name string) error {
	if _, err := ParsePolicy(name); err != nil || strings.Contains(name, "@") {
		return fmt.Errorf("%w: --budget-of %q: want a policy without a budget, such as fixed:1h", ErrUsage, name)
	}
	return nil
}

// SimulateAll simulates the named policies, those without a budget that
// depends on another first (in parallel), and returns their results in the
// order named.
func SimulateAll(ctx context.Context, w *Workload, names []string, cfg Config) ([]Result, error) {
	// Load and Generate keep to these; a workload made otherwise might not.
	if err := checkPeriod(w.Start, w.End); err != nil {
		return nil, fmt.Errorf("sim: the period lasts %v", err)
	}
	var pols []Policy
	seen := map[string]bool{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		p, err := ParsePolicy(n)
		if err != nil {
			return nil, err
		}
		if p.budgeted() && p.Budget == 0 && p.Of == "" {
			p.Budget, p.Of = cfg.Budget, cfg.BudgetOf
			if p.Of != "" {
				if err := CheckBudgetOf(p.Of); err != nil {
					return nil, err
				}
			}
		}
		pols = append(pols, p)
	}
	// Policies a budget refers to run first, shown or not.
	byName := map[string]*Result{}
	var first, second []Policy
	for _, p := range pols {
		if p.Of == "" {
			first = append(first, p)
		} else {
			second = append(second, p)
		}
	}
	for _, p := range second {
		if !seen[p.Of] {
			seen[p.Of] = true
			dep, _ := ParsePolicy(p.Of)
			first = append(first, dep)
		}
	}
	show := cfg.lockedErr()
	run := func(batch []Policy, budget func(Policy) float64) error {
		out := make([]Result, len(batch))
		errs := make([]error, len(batch))
		var wg sync.WaitGroup
		sem := make(chan struct{}, runtime.GOMAXPROCS(0))
		for i, p := range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				out[i], errs[i] = Simulate(ctx, w, p, cfg.Params, budget(p), cfg.Seed, cfg.Show, show)
			}()
		}
		wg.Wait()
		for i := range batch {
			if errs[i] != nil {
				return errs[i]
			}
			byName[batch[i].Name] = &out[i]
		}
		return nil
	}
	if err := run(first, func(p Policy) float64 { return p.Budget }); err != nil {
		return nil, err
	}
	if err := run(second, func(p Policy) float64 { return p.Factor * byName[p.Of].RequestsPerFeedDay }); err != nil {
		return nil, err
	}
	results := make([]Result, len(pols))
	for i, p := range pols {
		results[i] = *byName[p.Name]
	}
	return results, nil
}

// lockedErr is Err made safe for the concurrent runs, or nil without Show.
func (cfg Config) lockedErr() io.Writer {
	if cfg.Show == "" {
		return nil
	}
	return &lockedWriter{w: cfg.Err}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// WriteTable writes results as a table.
func WriteTable(out io.Writer, w *Workload, results []Result) {
	fmt.Fprintf(out, "%d feeds, %.0f days from %s; delays in minutes, item-weighted\n\n",
		len(w.Feeds), w.Days(), w.Start.Format("2006-01-02"))
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tbudget\treq/feed-day\tKB/feed-day\titems\tmean\tp50\tp95\tp99\tmissed\tunseen\tviolations\t")
	for _, r := range results {
		budget := "-"
		if r.Budget > 0 {
			budget = fmt.Sprintf("%.1f", r.Budget)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.0f\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.2f%%\t%d\t%d\t\n",
			r.Policy, budget, r.RequestsPerFeedDay, r.BytesPerFeedDay/1000, r.Items,
			r.DelayMean, r.DelayP50, r.DelayP95, r.DelayP99, 100*r.MissedFraction, r.Unseen, r.Violations)
	}
	tw.Flush()
}

// WriteKinds writes each result's breakdown by feed kind.
func WriteKinds(out io.Writer, results []Result) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\nkind\tpolicy\tfeeds\titems\treq/feed-day\tmean\tp50\tp95\tmissed\t")
	if len(results) == 0 {
		return
	}
	for k := range results[0].ByKind {
		for _, r := range results {
			if k >= len(r.ByKind) {
				continue
			}
			kr := r.ByKind[k]
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t\n",
				kr.Kind, r.Policy, kr.Feeds, kr.Items, kr.RequestsPerFeedDay, kr.DelayMean, kr.DelayP50, kr.DelayP95, kr.Missed)
		}
	}
	tw.Flush()
}

// Check is one target and whether a run met it.
type Check struct {
	Target string  `json:"target"`
	Got    float64 `json:"got"`
	Limit  float64 `json:"limit"`
	OK     bool    `json:"ok"`
}

// CheckTargets evaluates the adaptive policy's targets on results that include
// TargetPolicies. A target whose policies are missing is left out.
func CheckTargets(results []Result) []Check {
	by := map[string]Result{}
	for _, r := range results {
		by[r.Policy] = r
	}
	var out []Check
	le := func(target string, got, limit float64) {
		out = append(out, Check{Target: target, Got: got, Limit: limit, OK: got <= limit})
	}
	f1, ok1 := by["fixed:1h"]
	f15, ok15 := by["fixed:15m"]
	a, okA := by["adaptive@fixed:1h"]
	b, okB := by["adaptive@0.4*fixed:15m"]
	o, okO := by["oracle@fixed:1h"]
	if ok1 && okA {
		// Equal budget: the scale is set for the budget, and what a run
		// spends lands within a percent of it.
		le("adaptive@fixed:1h requests/feed-day <= 1.01 x fixed:1h's", a.RequestsPerFeedDay, 1.01*f1.RequestsPerFeedDay)
		le("adaptive@fixed:1h p50 <= 0.5 x fixed:1h p50 (min)", a.DelayP50, 0.5*f1.DelayP50)
		le("adaptive@fixed:1h mean <= 0.6 x fixed:1h mean (min)", a.DelayMean, 0.6*f1.DelayMean)
		le("adaptive@fixed:1h p95 <= fixed:1h p95 (min)", a.DelayP95, f1.DelayP95)
	}
	if ok15 && okB {
		le("adaptive@0.4*fixed:15m requests <= 1.01 x 0.4 x fixed:15m's", b.RequestsPerFeedDay, 1.01*0.4*f15.RequestsPerFeedDay)
		le("adaptive@0.4*fixed:15m p50 <= fixed:15m p50 (min)", b.DelayP50, f15.DelayP50)
	}
	if ok1 && okO {
		le("oracle@fixed:1h requests/feed-day <= 1.01 x fixed:1h's", o.RequestsPerFeedDay, 1.01*f1.RequestsPerFeedDay)
	}
	if okA && okO {
		le("adaptive@fixed:1h mean <= 1.3 x oracle@fixed:1h mean (min)", a.DelayMean, 1.3*o.DelayMean)
	}
	if ok15 {
		if okA {
			le("adaptive@fixed:1h missed fraction <= fixed:15m's", a.MissedFraction, f15.MissedFraction)
		}
		if okB {
			le("adaptive@0.4*fixed:15m missed fraction <= fixed:15m's", b.MissedFraction, f15.MissedFraction)
		}
	}
	for _, r := range results {
		le(r.Policy+" politeness violations = 0", float64(r.Violations), 0)
	}
	return out
}

// WriteChecks writes the target checks, one per line.
func WriteChecks(out io.Writer, checks []Check) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	for _, c := range checks {
		mark := "ok"
		if !c.OK {
			mark = "NOT MET"
		}
		fmt.Fprintf(tw, "%s\t%.4g\tlimit %.4g\t%s\n", c.Target, c.Got, c.Limit, mark)
	}
	tw.Flush()
}
