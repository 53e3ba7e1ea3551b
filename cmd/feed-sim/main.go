// Command feed-sim replays posting histories through the scheduler and
// compares polling policies.
package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/cmdkit"
	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/internal/sim"
)

func main() {
	cmdkit.Main(app())
}

// generatorFlags shape a generated workload: with a trace they would be
// silently ignored.
var generatorFlags = []string{"feeds", "days", "start", "plain", "no-floors", "mix"}

func app() *cli.App {
	var env strings.Builder
	for _, e := range sched.EnvNames() {
		alias := ""
		if e[1] != "" {
			alias = " (or " + e[1] + ")"
		}
		fmt.Fprintf(&env, "   %s%s: %s\n", e[0], alias, e[2])
	}
	return &cli.App{
		Name:  "feed-sim",
		Usage: "replay posting traces through the scheduler and compare polling policies",
		UsageText: `feed-sim [--policies P,...] [--budget N | --budget-of POLICY] [--json] TRACE
   feed-sim --generate [--seed N --feeds N --days N] [--targets]
   feed-sim --generate --seed 1 --feeds 100 --write-trace FILE`,
		Description: `Simulates polling each feed of a trace (or of a generated workload) with
the real scheduler (internal/sched), a simulated clock and simulated
servers, for each policy, and prints per policy: requests per feed-day,
kilobytes per feed-day, the items of the period, the discovery delay of
found items (mean, p50, p95, p99, minutes, item-weighted), the share of
items missed (pushed out of the feed's window before any poll), items
never seen, and politeness violations (polls inside ttl, max-age,
Retry-After or a skip window). --json writes one NDJSON record per policy
instead. It reads no store and uses no network.

Policies: seed, adaptive, fixed:DURATION, oracle (knows each feed's true
rate, 1/sqrt allocation: the yardstick), oracle-timed (knows each feed's
true rate by hour of the week, λ(t), and polls with a density sqrt(λ(t))
at the same budget) and oracle-opt (the same polls, moved without jitter
to where they make the items least late: the best placement with
perfect knowledge). adaptive and the oracles spend a request
budget: --budget N requests per feed-day, --budget-of POLICY (that
policy's spend in this run), or per policy after @: adaptive@24,
adaptive@fixed:1h, adaptive@0.4*fixed:15m. Default: as fixed 1h, 24.
--targets runs ` + strings.Join(sim.TargetPolicies, ",") + `
and checks the adaptive policy's targets: at fixed 1h's request budget it
spends within 1% of it, with a p50 delay at most 0.5x fixed 1h's, a mean
at most 0.6x and a p95 no worse; its mean at most 1.3x the oracle's; its
missed share at most fixed 15m's; at 0.4x fixed 15m's budget, a p50 no
worse than fixed 15m's; no poll a publisher's hint forbids. It exits 1 if
one is not met.

` + sim.TraceFormat + `

The scheduler's parameters come from the environment, as in feed-store:
` + env.String() + `
Example:
   feed-sim --generate --seed 1 --feeds 1000 --days 30 --targets
   feed-sim --budget-of fixed:1h testdata/sim/wsqs-rss-archive.ndjson`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "generate", Usage: "simulate a generated workload instead of a TRACE"},
			&cli.Uint64Flag{Name: "seed", Usage: "seed of the generator and of the schedulers' jitter", Value: 1},
			&cli.IntFlag{Name: "feeds", Usage: fmt.Sprintf("with --generate: number of feeds (at most %d, and feeds × (days + 60) at most %d)", sim.MaxFeeds, sim.MaxFeedDays), Value: 1000},
			&cli.IntFlag{Name: "days", Usage: fmt.Sprintf("with --generate: days measured (after 60 days of history; at most %d)", sim.MaxDays), Value: 30},
			&cli.StringFlag{Name: "start", Usage: "with --generate: start of the measured period, RFC 3339", Value: "2026-06-01T00:00:00Z"},
			&cli.BoolFlag{Name: "plain", Usage: "with --generate: no ttl, max-age or outages, so that every delay is the policy's"},
			&cli.BoolFlag{Name: "no-floors", Usage: "with --generate: no ttl or max-age (outages and skip windows stay)"},
			&cli.StringFlag{Name: "mix", Usage: "with --generate: the kinds of feeds, " + strings.Join(sim.MixNames, ", ") + " (docs/scheduler.md §8)", Value: "classic"},
			&cli.StringFlag{Name: "policies", Usage: "comma-separated policies", Value: strings.Join(sim.DefaultPolicies, ",")},
			&cli.Float64Flag{Name: "budget", Usage: "request budget of adaptive and oracle, requests per feed-day"},
			&cli.StringFlag{Name: "budget-of", Usage: "give adaptive and oracle the budget this policy spends"},
			&cli.BoolFlag{Name: "targets", Usage: "simulate the issue's target policies and check the targets"},
			&cli.BoolFlag{Name: "json", Usage: "NDJSON, one record per policy, instead of the table"},
			&cli.StringFlag{Name: "write-trace", Usage: "write the workload as a trace to this file (- for stdout) and stop"},
			&cli.StringFlag{Name: "show", Usage: "write every decision for this feed id to stderr"},
			&cli.BoolFlag{Name: "by-kind", Usage: "also break the table down by feed kind (the generator's, or a trace's \"kind\") and the groups plain, ttl, ttl>=2h, outage and no_dates"},
		},
		Action: func(c *cli.Context) error {
			params, err := sched.ParamsFromEnv(os.LookupEnv)
			if err != nil {
				return cmdkit.Usage(err)
			}
			cfg := sim.Config{
				Out: c.App.Writer, Err: c.App.ErrWriter, Params: params,
				Seed: c.Uint64("seed"), JSON: c.Bool("json"), Targets: c.Bool("targets"), Show: c.String("show"), ByKind: c.Bool("by-kind"),
				Budget: c.Float64("budget"), BudgetOf: c.String("budget-of"),
			}
			if c.IsSet("budget") && c.IsSet("budget-of") {
				return cmdkit.Usagef("--budget and --budget-of exclude each other")
			}
			if c.IsSet("budget") && !(cfg.Budget > 0) {
				return cmdkit.Usagef("--budget %v: want requests per feed-day above 0", cfg.Budget)
			}
			for _, p := range strings.Split(c.String("policies"), ",") {
				if p = strings.TrimSpace(p); p != "" {
					if _, err := sim.ParsePolicy(p); err != nil {
						return cmdkit.Usage(err)
					}
					cfg.Policies = append(cfg.Policies, p)
				}
			}
			if c.Bool("generate") {
				if c.NArg() > 0 {
					return cmdkit.Usagef("--generate takes no TRACE argument")
				}
				start, err := time.Parse(time.RFC3339, c.String("start"))
				if err != nil {
					return cmdkit.Usagef("--start %q is not an RFC 3339 time such as 2026-06-01T00:00:00Z", c.String("start"))
				}
				if c.Int("feeds") < 1 || c.Int("days") < 1 {
					return cmdkit.Usagef("--feeds and --days must be at least 1")
				}
				cfg.Generate = &sim.GenConfig{Seed: c.Uint64("seed"), Feeds: c.Int("feeds"), Days: c.Int("days"), Start: start, Plain: c.Bool("plain"), NoFloors: c.Bool("no-floors"), Mix: c.String("mix")}
			} else {
				for _, name := range generatorFlags {
					if c.IsSet(name) {
						return cmdkit.Usagef("--%s only applies with --generate", name)
					}
				}
				switch c.NArg() {
				case 0:
					return cmdkit.Usagef("no TRACE given (or --generate); see feed-sim --help")
				case 1:
				default:
					return cmdkit.Usagef("one TRACE at a time")
				}
				if name := c.Args().First(); name == "-" {
					cfg.Trace = c.App.Reader
				} else {
					f, err := os.Open(name)
					if err != nil {
						return cmdkit.Usage(err)
					}
					defer f.Close()
					cfg.Trace = f
				}
			}
			if name := c.String("write-trace"); name != "" {
				if name == "-" {
					cfg.WriteTrace = c.App.Writer
				} else {
					f, err := os.Create(name)
					if err != nil {
						return cmdkit.Usage(err)
					}
					defer f.Close()
					cfg.WriteTrace = f
					err = sim.Run(c.Context, cfg)
					if cerr := f.Close(); err == nil && cerr != nil {
						err = cerr
					}
					return err
				}
			}
			return cmdkit.UsageIf(sim.Run(c.Context, cfg), sim.ErrTrace, sim.ErrUsage)
		},
	}
}
