package sched

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/sched")

const goldenDir = "../../testdata/sched"

// golden is one file of testdata/sched: a feed's history as a sequence of
// outcomes, each decided in turn from the state the last one left. Or, with
// Scale set, a set of rates and a budget for Scale.
type golden struct {
	About string `json:"about"`
	// Env sets parameters as feed-store reads them (ParamsFromEnv).
	Env map[string]string `json:"env"`
	// Scale is Params.Scale for the adaptive policy (0: DefaultScale).
	Scale     float64        `json:"scale"`
	Overrides goldenOverride `json:"overrides"`
	// Seed seeds the jitter; 0 means no jitter.
	Seed  uint64 `json:"seed"`
	State *State `json:"state"`
	Steps []struct {
		Now     time.Time `json:"now"` // default: the outcome's at
		Outcome Outcome   `json:"outcome"`
		// Until repeats the step: the outcome comes again at each next_at
		// the decisions give (its at and now), until this time.
		Until time.Time `json:"until"`
	} `json:"steps"`
	// A Scale case: rates (items a day) and a budget (requests a day).
	Rates  []float64 `json:"rates"`
	Budget float64   `json:"budget"`
}

type goldenOverride struct {
	Interval    string    `json:"interval"`
	Min         string    `json:"min"`
	Max         string    `json:"max"`
	Cron        string    `json:"cron"`
	PausedUntil time.Time `json:"paused_until"`
}

func (g goldenOverride) overrides(t *testing.T) Overrides {
	dur := func(s string) time.Duration {
		if s == "" {
			return 0
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	return Overrides{Interval: dur(g.Interval), Min: dur(g.Min), Max: dur(g.Max), Cron: g.Cron, PausedUntil: g.PausedUntil}
}

// TestGolden runs every testdata/sched/*.json and compares what it decides
// with the .golden file beside it (go test -update rewrites them; review
// their diffs like code).
func TestGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden inputs in %s: %v", goldenDir, err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var g golden
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&g); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			got := runGolden(t, g)
			want := filepath.Join(goldenDir, name+".golden")
			if *update {
				if err := os.WriteFile(want, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			exp, err := os.ReadFile(want)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if !bytes.Equal(got, exp) {
				t.Errorf("decisions differ from %s (go test -update rewrites it):\n%s", want, diff(string(exp), string(got)))
			}
		})
	}
}

func runGolden(t *testing.T, g golden) []byte {
	t.Helper()
	p, err := ParamsFromEnv(func(k string) (string, bool) { v, ok := g.Env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	p.Scale = g.Scale
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n", g.About)
	if g.Rates != nil {
		s := Scale(g.Rates, g.Budget, p)
		fmt.Fprintf(&b, "scale %.1f for a budget of %g requests a day\n", s, g.Budget)
		var total float64
		for _, r := range g.Rates {
			iv := p.Max.Seconds()
			if r > 0 {
				iv = min(max(s/math.Sqrt(r), p.Min.Seconds()), p.Max.Seconds())
			}
			total += 86400 / iv
			fmt.Fprintf(&b, "rate %g a day: every %s, %.1f requests a day\n", r, fmtDur(time.Duration(iv*float64(time.Second))), 86400/iv)
		}
		fmt.Fprintf(&b, "total %.1f requests a day\n", total)
		return b.Bytes()
	}
	ov := g.Overrides.overrides(t)
	var rnd *rand.Rand
	if g.Seed != 0 {
		rnd = rand.New(rand.NewPCG(g.Seed, 0))
	}
	var st State
	if g.State != nil {
		st = *g.State
	}
	n := 0
	for _, step := range g.Steps {
		now := step.Now
		if now.IsZero() {
			now = step.Outcome.At
		}
		o := step.Outcome
		for {
			var d Decision
			st, d = Next(st, o, p, ov, now, rnd)
			n++
			writeStep(&b, t, n, now, o, d)
			if d.NextAt.IsZero() || !d.NextAt.Before(step.Until) {
				break
			}
			now, o.At = d.NextAt.Time, d.NextAt.Time
		}
	}
	js, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "\nstate %s\n", js)
	return b.Bytes()
}

// writeStep writes the decision d of step i, on outcome o at now.
func writeStep(b *bytes.Buffer, t *testing.T, i int, now time.Time, o Outcome, d Decision) {
	t.Helper()
	what := string(o.Kind)
	switch {
	case o.Kind == Nudged || o.Kind == NeverFetched:
	case o.ErrorClass != "" || o.Status >= 400:
		what = fmt.Sprintf("fetch %d %s/%s", o.Status, o.ErrorClass, o.ErrorCode)
	case o.NotModified:
		what = "fetch 304"
	default:
		what = fmt.Sprintf("fetch %d, %d new", o.Status, max(o.NewEntries, len(o.Published)))
	}
	fmt.Fprintf(b, "\n## %d. %s: %s\n", i, fmtTime(now), what)
	fmt.Fprintf(b, "%s %s until %s; state %s; interval %ds -> %ds\n", d.Kind, d.Reason, d.NextAt, d.State,
		d.Inputs.IntervalBeforeSec, d.Inputs.IntervalAfterSec)
	b.WriteString(d.Explain() + "\n")
	js, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	b.Write(js)
	b.WriteByte('\n')
}

// diff shows the first lines where two texts differ.
func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("line %d\nwant: %s\ngot:  %s", i+1, a, b)
		}
	}
	return ""
}
