package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/sched"
)

var day0 = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

func load(t *testing.T, trace string) *Workload {
	t.Helper()
	w, err := Load(strings.NewReader(trace))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func simulate(t *testing.T, w *Workload, policy string, budget float64) Result {
	t.Helper()
	pol, err := ParsePolicy(policy)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Simulate(context.Background(), w, pol, sched.Defaults(), budget, 1, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A feed polled every 15 minutes (jitter makes it 15 ± 2¼) finds a post
// 7.5 minutes late on average; one whose window holds fewer items than
// appear between two polls loses the rest.
func TestSimulatorBasics(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"type":"period","start":"2026-06-01T00:00:00Z","end":"2026-06-11T00:00:00Z"}` + "\n")
	b.WriteString(`{"type":"feed","feed_id":"steady","etag":true,"bytes":5000}` + "\n")
	b.WriteString(`{"type":"feed","feed_id":"small","window":2,"etag":true}` + "\n")
	for i := range 240 { // one post every hour at :07
		at := day0.Add(time.Duration(i)*time.Hour + 7*time.Minute).Format(time.RFC3339)
		b.WriteString(`{"type":"post","feed_id":"steady","at":"` + at + `"}` + "\n")
	}
	for i := range 10 { // 5 posts at once each day: a window of 2 keeps 2
		at := day0.Add(time.Duration(i)*24*time.Hour + 12*time.Hour).Format(time.RFC3339)
		for range 5 {
			b.WriteString(`{"type":"post","feed_id":"small","at":"` + at + `"}` + "\n")
		}
	}
	w := load(t, b.String())
	r := simulate(t, w, "fixed:15m", 0)
	if r.Items != 290 || r.Missed != 30 || r.Found != 260 || r.Unseen != 0 {
		t.Errorf("items %d missed %d found %d unseen %d; want 290 30 260 0", r.Items, r.Missed, r.Found, r.Unseen)
	}
	if math.Abs(r.RequestsPerFeedDay-96) > 3 {
		t.Errorf("requests per feed-day %.1f, want about 96", r.RequestsPerFeedDay)
	}
	if r.DelayMean < 5 || r.DelayMean > 10 || r.DelayP99 > 17.3 {
		t.Errorf("delays mean %.1f p99 %.1f; want about 7.5 and at most 17.25", r.DelayMean, r.DelayP99)
	}
	if r.Violations != 0 {
		t.Errorf("%d violations", r.Violations)
	}
	// Both feeds have ETags: most answers are 304s.
	if want := float64(r.Requests) * 2500; float64(r.Bytes) > want {
		t.Errorf("bytes %d: 304s should make it well under %.0f", r.Bytes, want)
	}
}

// Delays as computed by hand: without jitter, fixed:20m polls at :00, :20
// and :40; a post each hour at h:20 minus (h mod 20) minutes is found
// (h mod 20) minutes late. Over 240 hours each delay of 0-19 minutes comes
// 12 times: sorted, delay v holds places 12v to 12v+11, so (interpolating
// between places, as quantile does) p50 is halfway between places 119 (9)
// and 120 (10), p95 at place 227.05 is 18 + 0.05, p99 at place 236.61 is 19.
func TestDelayPercentiles(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"type":"period","start":"2026-06-01T00:00:00Z","end":"2026-06-11T00:00:00Z"}` + "\n")
	for h := range 240 {
		at := day0.Add(time.Duration(h)*time.Hour + time.Duration(20-h%20)*time.Minute).Format(time.RFC3339)
		b.WriteString(`{"type":"post","feed_id":"a","at":"` + at + `"}` + "\n")
	}
	w := load(t, b.String())
	p := sched.Defaults()
	p.Jitter = -1
	pol, _ := ParsePolicy("fixed:20m")
	r, err := Simulate(context.Background(), w, pol, p, 0, 1, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9 }
	if r.Found != 240 || r.Requests != 720 || !near(r.DelayMean, 9.5) || !near(r.DelayP50, 9.5) || !near(r.DelayP95, 18.05) || !near(r.DelayP99, 19) {
		t.Errorf("found %d, requests %d, delay mean %g p50 %g p95 %g p99 %g; want 240, 720, 9.5, 9.5, 18.05, 19",
			r.Found, r.Requests, r.DelayMean, r.DelayP50, r.DelayP95, r.DelayP99)
	}
}

// Outages: Retry-After is never violated, a 404 disables the feed and a
// probe brings it back, and the items posted meanwhile are found late, not
// lost.
func TestSimulatorOutages(t *testing.T) {
	trace := `{"type":"period","start":"2026-06-01T00:00:00Z","end":"2026-06-08T00:00:00Z"}
{"type":"feed","feed_id":"a","window":50}
{"type":"outage","feed_id":"a","from":"2026-06-02T00:00:00Z","to":"2026-06-02T03:00:00Z","status":429,"retry_after_sec":1800}
{"type":"outage","feed_id":"a","from":"2026-06-03T00:00:00Z","to":"2026-06-04T12:00:00Z","status":404}
{"type":"outage","feed_id":"a","from":"2026-06-05T00:00:00Z","to":"2026-06-05T06:00:00Z","status":503,"retry_after_at":"2026-06-05T06:00:00Z"}
`
	for h := range 7 * 24 {
		trace += `{"type":"post","feed_id":"a","at":"` + day0.Add(time.Duration(h)*time.Hour+30*time.Minute).Format(time.RFC3339) + `"}` + "\n"
	}
	w := load(t, trace)
	for _, pol := range []string{"seed", "adaptive", "fixed:15m", "oracle"} {
		r := simulate(t, w, pol, 0)
		if r.Violations != 0 || r.Disabled != 1 || r.Reenabled != 1 || r.Missed != 0 || r.Unseen != 0 {
			t.Errorf("%s: violations %d disabled %d reenabled %d missed %d unseen %d", pol, r.Violations, r.Disabled, r.Reenabled, r.Missed, r.Unseen)
		}
	}
}

// Skip windows and floors are kept by every policy; the simulator would
// count a poll inside them.
func TestSimulatorPoliteness(t *testing.T) {
	w := Generate(GenConfig{Seed: 5, Feeds: 60, Days: 5})
	for _, f := range w.Feeds {
		f.SkipHours = []int{22, 23, 0, 1, 2}
		f.SkipDays = []string{"Sunday"}
		f.TTLMinutes = 45
		f.MaxAgeSec = 1200
	}
	for _, pol := range []string{"seed", "adaptive", "fixed:15m", "oracle"} {
		if r := simulate(t, w, pol, 0); r.Violations != 0 {
			t.Errorf("%s: %+v", pol, r)
		}
	}
}

// The adaptive policy spends its budget, and beats fixed 1h at the same
// spend on a workload where only the policy sets the delay.
func TestAdaptiveBudgetAndGain(t *testing.T) {
	w := Generate(GenConfig{Seed: 3, Feeds: 150, Days: 10, Plain: true})
	cfg := Config{Seed: 1, Params: sched.Defaults()}
	res, err := SimulateAll(context.Background(), w, []string{"fixed:1h", "adaptive@fixed:1h", "oracle@fixed:1h", "adaptive@12"}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	f1, a, o, small := res[0], res[1], res[2], res[3]
	if math.Abs(a.RequestsPerFeedDay-f1.RequestsPerFeedDay)/f1.RequestsPerFeedDay > 0.03 {
		t.Errorf("adaptive spent %.2f requests per feed-day on a budget of %.2f", a.RequestsPerFeedDay, f1.RequestsPerFeedDay)
	}
	if math.Abs(small.RequestsPerFeedDay-12)/12 > 0.05 {
		t.Errorf("adaptive@12 spent %.2f", small.RequestsPerFeedDay)
	}
	// The oracle spends its budget, fixed 1h's spend, within 2%.
	if o.Budget != f1.RequestsPerFeedDay || math.Abs(o.RequestsPerFeedDay-o.Budget)/o.Budget > 0.02 {
		t.Errorf("oracle spent %.2f requests per feed-day on a budget of %.2f (fixed:1h spent %.2f)", o.RequestsPerFeedDay, o.Budget, f1.RequestsPerFeedDay)
	}
	if a.DelayP50 > 0.5*f1.DelayP50 || a.DelayMean > 0.75*f1.DelayMean || a.DelayMean > 1.3*o.DelayMean {
		t.Errorf("adaptive p50 %.1f mean %.1f; fixed:1h p50 %.1f mean %.1f; oracle mean %.1f", a.DelayP50, a.DelayMean, f1.DelayP50, f1.DelayMean, o.DelayMean)
	}
}

// The same seed gives the same results; the generator gives each feed its
// own stream, so more feeds do not change the first ones.
func TestDeterminism(t *testing.T) {
	a, b := Generate(GenConfig{Seed: 9, Feeds: 20, Days: 3}), Generate(GenConfig{Seed: 9, Feeds: 40, Days: 3})
	var wa, wb bytes.Buffer
	a.Write(&wa)
	b.Feeds = b.Feeds[:20]
	b.Write(&wb)
	if wa.String() != wb.String() {
		t.Error("the first 20 feeds differ between 20 and 40 feeds")
	}
	var out1, out2 bytes.Buffer
	cfg := Config{Generate: &GenConfig{Seed: 2, Feeds: 30, Days: 3}, JSON: true, Seed: 4, Params: sched.Defaults()}
	cfg.Out = &out1
	if err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	cfg.Out = &out2
	if err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if out1.String() != out2.String() {
		t.Errorf("two runs differ:\n%s\n%s", out1.String(), out2.String())
	}
	if n := strings.Count(out1.String(), "\n"); n != len(DefaultPolicies) {
		t.Errorf("%d records, want one per policy", n)
	}
	var r Result
	if err := json.Unmarshal([]byte(strings.SplitN(out1.String(), "\n", 2)[0]), &r); err != nil || r.Policy != "seed" {
		t.Errorf("first record %+v: %v", r, err)
	}
}

func TestLoad(t *testing.T) {
	w := load(t, `{"type":"post","feed_id":"x","at":"2026-06-01T10:00:00Z"}
{"type":"comment","text":"ignored"}

{"type":"post","feed_id":"x","at":"2026-06-01T08:00:00Z","extra":1}`)
	if len(w.Feeds) != 1 || w.Feeds[0].Window != 20 || len(w.Feeds[0].Posts) != 2 || w.Feeds[0].Posts[0] > w.Feeds[0].Posts[1] {
		t.Errorf("%+v", w.Feeds[0])
	}
	if !w.Start.Equal(day0.Add(8*time.Hour)) || !w.End.Equal(day0.Add(34*time.Hour)) {
		t.Errorf("default period %s to %s", w.Start, w.End)
	}
	for _, bad := range []string{
		``,
		`not json`,
		`{"type":"post","at":"2026-06-01T10:00:00Z"}`,
		`{"type":"post","feed_id":"x"}`,
		`{"type":"period","start":"2026-06-02T00:00:00Z","end":"2026-06-01T00:00:00Z"}`,
		`{"type":"outage","feed_id":"x","from":"2026-06-01T00:00:00Z","to":"2026-06-02T00:00:00Z","status":42}`,
		`{"type":"feed","feed_id":"x"}`,
	} {
		if _, err := Load(strings.NewReader(bad)); !errors.Is(err, ErrTrace) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestParsePolicy(t *testing.T) {
	for in, want := range map[string]Policy{
		"seed":                   {Name: "seed", Base: "seed", Factor: 1},
		"adaptive@24":            {Name: "adaptive@24", Base: "adaptive", Budget: 24, Factor: 1},
		"oracle@fixed:1h":        {Name: "oracle@fixed:1h", Base: "oracle", Of: "fixed:1h", Factor: 1},
		"adaptive@0.4*fixed:15m": {Name: "adaptive@0.4*fixed:15m", Base: "adaptive", Of: "fixed:15m", Factor: 0.4},
		"oracle-timed":           {Name: "oracle-timed", Base: "oracle-timed", Factor: 1},
		"oracle-timed@12":        {Name: "oracle-timed@12", Base: "oracle-timed", Budget: 12, Factor: 1},
		"oracle-opt@fixed:1h":    {Name: "oracle-opt@fixed:1h", Base: "oracle-opt", Of: "fixed:1h", Factor: 1},
	} {
		got, err := ParsePolicy(in)
		if err != nil || got != want {
			t.Errorf("%q: %+v %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "sometimes", "seed@24", "adaptive@0", "adaptive@-1", "adaptive@x*fixed:1h", "adaptive@adaptive@1", "fixed:1h@fixed:15m", "oracle-timed@0", "timed"} {
		if _, err := ParsePolicy(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestCheckTargets(t *testing.T) {
	res := []Result{
		{Policy: "fixed:15m", RequestsPerFeedDay: 96, DelayP50: 7.5, MissedFraction: 0.01},
		{Policy: "fixed:1h", RequestsPerFeedDay: 24, DelayP50: 30, DelayMean: 30, DelayP95: 57},
		{Policy: "adaptive@fixed:1h", RequestsPerFeedDay: 24, DelayP50: 10, DelayMean: 17, DelayP95: 50, MissedFraction: 0.005},
		{Policy: "adaptive@0.4*fixed:15m", RequestsPerFeedDay: 38, DelayP50: 7, MissedFraction: 0.02},
		{Policy: "oracle@fixed:1h", RequestsPerFeedDay: 24, DelayMean: 15, Violations: 1},
	}
	bad := map[string]bool{}
	for _, c := range CheckTargets(res) {
		if !c.OK {
			bad[c.Target] = true
		}
	}
	if len(bad) != 2 || !bad["adaptive@0.4*fixed:15m missed fraction <= fixed:15m's"] || !bad["oracle@fixed:1h politeness violations = 0"] {
		t.Errorf("failed checks %v", bad)
	}
}

func TestConvert(t *testing.T) {
	items := `{"source_id": "a", "published": "2026-06-01T10:00:00Z", "link": "x"}
{"source_id": "a", "published": "2026-06-05T10:00:00Z"}
{"source_id": "b", "published": "2026-06-03T10:00:00Z"}`
	commits := `{"committed_at": "2026-06-02T00:00:00+00:00", "items_per_source": {"a": 1}}
{"committed_at": "2026-06-10T07:00:00+00:00", "items_per_source": {"a": 2, "b": 1}}`
	w, err := ConvertWSQS(strings.NewReader(items), strings.NewReader(commits))
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Feeds) != 2 || w.Feeds[0].Window != 1 || w.Feeds[1].Window != 1 || !w.Start.Equal(day0.Add(3*24*time.Hour)) || !w.End.Equal(day0.Add(9*24*time.Hour)) {
		t.Errorf("%+v %+v %s %s", w.Feeds[0], w.Feeds[1], w.Start, w.End)
	}
	snaps := `{"file": "p/x/a.xml", "utc": "2010-01-01T10:00:00Z"}
{"file": "p/x/a.xml", "utc": "2010-01-01T12:00:00Z"}
{"file": "p/y/a.atom", "utc": "2010-01-01T10:00:00Z"}
{"file": "p/y/a.atom", "utc": "2010-01-01T12:00:00Z"}
{"file": "q/one.xml", "utc": "2010-01-01T12:00:00Z"}
{"file": "q/one.xml", "utc": ""}`
	w, err = ConvertSnapshots(strings.NewReader(snaps), day0, 1)
	if err != nil {
		t.Fatal(err)
	}
	// The duplicate and the snapshot without two dates are left out; the
	// one 2h gap, plus a mean gap (2h) between cycles, repeats up to the
	// end.
	if len(w.Feeds) != 1 || w.Feeds[0].ID != "p/a" {
		t.Fatalf("%d feeds: %+v", len(w.Feeds), w.Feeds)
	}
	p := w.Feeds[0].Posts
	if last := p[len(p)-1]; last != day0.Unix()-1 || p[len(p)-2] != last-7200 || p[len(p)-3] != last-4*3600 {
		t.Errorf("posts %v", p[len(p)-3:])
	}
}

// The politeness counters count: polls made on purpose inside a ttl, a
// max-age, a Retry-After and a skip window, straight through poll's
// accounting, each raise their own counter and no other, and the polite
// polls around them raise none. Every other test asserts zero, which a
// counter that never counts would also pass.
func TestViolationsCounted(t *testing.T) {
	start, end := day0, day0.Add(7*24*time.Hour)
	at := func(h, m int) time.Time { return day0.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }
	type poll struct {
		at   time.Time
		rude bool // this poll is a violation of the case's kind
	}
	for _, tc := range []struct {
		name  string
		feed  Feed
		kind  string // ttl, max_age, retry_after, skip
		polls []poll
	}{
		// ttl 60m, declared by the first answer: 11:00 keeps it, 11:30
		// does not.
		{"ttl", Feed{TTLMinutes: 60}, "ttl", []poll{{at(10, 0), false}, {at(11, 0), false}, {at(11, 30), true}}},
		// max-age 600s on every answer: 10:10 keeps it, 10:15 does not.
		{"max_age", Feed{MaxAgeSec: 600}, "max_age", []poll{{at(10, 0), false}, {at(10, 10), false}, {at(10, 15), true}}},
		// 429 with Retry-After 1800s at 10:00: 10:20 is inside it, 10:30
		// at its end.
		{"retry_after", Feed{Outages: []Outage{{From: at(10, 0), To: at(10, 1), Status: 429, RetryAfterSec: 1800}}}, "retry_after",
			[]poll{{at(9, 0), false}, {at(10, 0), false}, {at(10, 20), true}, {at(10, 30), false}}},
		// 503 with a Retry-After date of 12:00.
		{"retry_after_date", Feed{Outages: []Outage{{From: at(10, 0), To: at(10, 1), Status: 503, RetryAfterAt: at(12, 0)}}}, "retry_after",
			[]poll{{at(10, 0), false}, {at(11, 0), true}, {at(12, 0), false}}},
		// skipHours 3 (known from the first answer): 03:30 is in it, 04:00 not.
		{"skip_hours", Feed{SkipHours: []int{3}}, "skip", []poll{{at(2, 0), false}, {at(3, 30), true}, {at(4, 0), false}}},
		// skipDays Tuesday (day0 is a Monday): Tuesday 06:00 is in it.
		{"skip_days", Feed{SkipDays: []string{"Tuesday"}}, "skip", []poll{{at(20, 0), false}, {at(30, 0), true}, {at(48, 0), false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.feed
			f.ID, f.Window, f.Bytes = tc.name, 20, 1000
			f.Posts = []int64{day0.Add(-time.Hour).Unix()}
			fr := &feedRun{f: &f, servedEnd: -1}
			var res Result
			var delays []float64
			rude := 0
			for _, pl := range tc.polls {
				fr.poll(pl.at, sched.Defaults(), &res, start, end, &delays)
				if pl.rude {
					rude++
				}
				got := map[string]int{"ttl": res.ViolationsTTL, "max_age": res.ViolationsMaxAge,
					"retry_after": res.ViolationsRetryAfter, "skip": res.ViolationsSkip}
				for k, n := range got {
					want := 0
					if k == tc.kind {
						want = rude
					}
					if n != want {
						t.Fatalf("after the poll at %s: %d %s violations, want %d (%v)", pl.at.Format("Mon 15:04"), n, k, want, got)
					}
				}
			}
			if rude == 0 {
				t.Fatal("no impolite poll in the case")
			}
		})
	}
}

// The generator makes what its comment and docs/scheduler.md §8 promise: at
// 1,000 feeds, every kind of feed, every kind of outage, and the hints;
// --plain the same feeds without floors or outages, --no-floors without
// floors.
func TestGenerateKinds(t *testing.T) {
	w := Generate(GenConfig{Seed: 1, Feeds: 1000, Days: 30})
	kinds := map[string]int{}
	outages := map[string]int{}
	hints := map[string]int{}
	for _, f := range w.Feeds {
		kinds[f.Kind]++
		for _, o := range f.Outages {
			var k string
			switch {
			case o.Status == 503 && o.RetryAfterSec > 0:
				k = "503 Retry-After seconds"
			case o.Status == 503 && !o.RetryAfterAt.IsZero():
				k = "503 Retry-After date"
			case o.Status == 503:
				k = "503"
			case o.Status == 500:
				k = "500"
			case o.Status == 429 && o.RetryAfterSec > 0:
				k = "429 Retry-After seconds"
			case o.Status == 404:
				k = "404"
			case o.Status == 502 && o.FailRatio > 0 && o.FailRatio < 1:
				k = "502 flapping"
			case o.Status == 410 && !o.To.Before(w.End):
				k = "410 for good"
			default:
				t.Errorf("%s: an outage of no known kind: %+v", f.ID, o)
			}
			outages[k]++
		}
		for h, ok := range map[string]bool{"ttl": f.TTLMinutes > 0, "max-age": f.MaxAgeSec > 0, "skipHours": len(f.SkipHours) > 0,
			"skipDays": len(f.SkipDays) > 0, "etag": f.ETag, "no dates": f.NoDates} {
			if ok {
				hints[h]++
			}
		}
	}
	for _, k := range []string{"regular", "bursty", "dormant", "dead", "batch", "sparse"} {
		if kinds[k] == 0 {
			t.Errorf("no %s feed: %v", k, kinds)
		}
	}
	if len(kinds) != 6 {
		t.Errorf("kinds %v, want the six", kinds)
	}
	for _, k := range []string{"503 Retry-After seconds", "503 Retry-After date", "503", "500", "429 Retry-After seconds", "404", "502 flapping", "410 for good"} {
		if outages[k] == 0 {
			t.Errorf("no %s outage: %v", k, outages)
		}
	}
	for _, h := range []string{"ttl", "max-age", "skipHours", "skipDays", "etag", "no dates"} {
		if hints[h] == 0 {
			t.Errorf("no feed with %s: %v", h, hints)
		}
	}
	t.Logf("kinds %v\noutages %v\nhints %v", kinds, outages, hints)
	// --plain leaves out the floors and the outages, and only them.
	for i, f := range Generate(GenConfig{Seed: 1, Feeds: 1000, Days: 30, Plain: true}).Feeds {
		if f.TTLMinutes != 0 || f.MaxAgeSec != 0 || len(f.Outages) != 0 || f.Kind != w.Feeds[i].Kind {
			t.Fatalf("plain %s: %+v", f.ID, f)
		}
	}
	for i, f := range Generate(GenConfig{Seed: 1, Feeds: 1000, Days: 30, NoFloors: true}).Feeds {
		g := w.Feeds[i]
		if f.TTLMinutes != 0 || f.MaxAgeSec != 0 || len(f.Outages) != len(g.Outages) || f.Kind != g.Kind || len(f.SkipHours) != len(g.SkipHours) {
			t.Fatalf("no floors %s: %+v", f.ID, f)
		}
	}
}
