package due

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/internal/stats"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Explain writes to w, for people, what the scheduler knows and decided
// about the subscription ref (id, id prefix or URL): its state, the inputs
// of the last decision, and that decision in words. A feed never fetched
// gets the decision the scheduler makes for a new feed.
func Explain(cfg Config, ref string, w io.Writer) error {
	ctx := context.Background()
	cat, done, err := catalog.Use(ctx, cfg.Catalog, cfg.Store, cfg.Log)
	if err != nil {
		return err
	}
	defer done()
	subs, err := cat.Subscriptions(ctx)
	if err != nil {
		return err
	}
	i, err := catalog.FindSubscription(subs, ref)
	if err != nil {
		return err
	}
	sub := subs[i]
	fs, _, err := cat.State(ctx, sub.FeedID)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Feed %s\n  %s\n", sub.FeedID, sub.URL)
	if name := cmp.Or(sub.Name, fs.Title); name != "" {
		fmt.Fprintf(&b, "  %s\n", name)
	}
	// As feed-sub ls, feed-stats and the metrics say it.
	fmt.Fprintf(&b, "Status: %s.\n", stats.StatusOf(sub, fs, cfg.Now).Text)
	if sub.Disabled {
		b.WriteString("Disabled by hand (feed-sub disable): feed-due skips it; feed-sub enable puts it back.\n")
	}
	paused := pausedByHand(sub, cfg.Now)
	if paused {
		// The decision below was made at the last fetch; the pause came
		// after it and holds whatever it says.
		fmt.Fprintf(&b, "Paused by hand until %s (feed-sub pause): feed-due skips it until then, whatever the decision below says; feed-sub resume lifts the pause.\n", sub.PausedUntil)
	}
	if ov := overridesText(sub); ov != "" {
		fmt.Fprintf(&b, "Overrides: %s.\n", ov)
	}

	var d sched.Decision
	switch {
	case fs.Decision != nil:
		d = *fs.Decision
	default:
		// Never decided: what the scheduler says of a new feed.
		st := sched.State{}
		if fs.Sched != nil {
			st = *fs.Sched
		}
		_, d = sched.Next(st, sched.Outcome{Kind: sched.NeverFetched}, cfg.Sched, sched.OverridesOf(sub), cfg.Now, nil)
	}
	b.WriteString("\nDecision:\n")
	// Counted from now, as the state's next fetch below: one countdown.
	for _, line := range strings.Split(d.ExplainAt(cfg.Now), "\n") {
		b.WriteString("  " + line + "\n")
	}
	now := cfg.Now
	b.WriteString("\nState:\n")
	if fs.LastFetchAt.IsZero() {
		b.WriteString("  never fetched\n")
	} else {
		fmt.Fprintf(&b, "  last fetch      %s (%s ago), HTTP %d\n", fs.LastFetchAt, ago(now, fs.LastFetchAt.Time), fs.LastStatus)
		if !fs.LastSuccessAt.IsZero() {
			fmt.Fprintf(&b, "  last success    %s\n", fs.LastSuccessAt)
		}
		if fs.LastError != nil {
			fmt.Fprintf(&b, "  last error      %s/%s: %s\n", fs.LastError.Class, fs.LastError.Code, fs.LastError.Message)
		}
	}
	if st := fs.Sched; st != nil {
		fmt.Fprintf(&b, "  state           %s (reason %s)\n", st.Lifecycle, st.Reason)
		switch {
		case paused:
			fmt.Fprintf(&b, "  next fetch      %s (in %s), when the pause ends\n", sub.PausedUntil, sched.DurationText(sub.PausedUntil.Sub(now)))
		case st.NextAt.IsZero():
			b.WriteString("  next fetch      never (disabled, not probed)\n")
		case st.Due(now):
			fmt.Fprintf(&b, "  next fetch      %s: due now, %s overdue\n", st.NextAt, sched.DurationText(st.Overdue(now)))
		default:
			fmt.Fprintf(&b, "  next fetch      %s (in %s)\n", st.NextAt, sched.DurationText(st.NextAt.Sub(now)))
		}
		fmt.Fprintf(&b, "  interval        %s\n", st.Interval())
		fmt.Fprintf(&b, "  failures        %d in a row, backoff step %d, error budget used %.2g\n", st.Failures, st.Step, st.ErrorsSpent)
		if st.DisabledReason != "" {
			fmt.Fprintf(&b, "  disabled        %s, since %s\n", st.DisabledReason, st.DisabledAt)
		}
		if st.RateN == 0 && st.RateT == 0 {
			// Only the prior, which says nothing of this feed.
			b.WriteString("  posting rate    not known yet: the feed has not answered\n")
		} else {
			// As of the last fetch, as the decision on it read it: one
			// feed, one rate. (It drifts between fetches, but nothing
			// reads it then.)
			fmt.Fprintf(&b, "  posting rate    %s at the last fetch (%d publication times kept, EWMA gap %s)\n",
				sched.RateText(st.RatePerDay(cfg.Sched, st.FetchedAt.Time)), len(st.Pub), (time.Duration(st.EWMASec) * time.Second).Round(time.Second))
		}
		b.WriteString("  posting pattern " + patternText(st.Pattern(cfg.Sched)) + "\n")
		if h := st.Hints; h.TTLMinutes > 0 || len(h.SkipHours) > 0 || len(h.SkipDays) > 0 {
			fmt.Fprintf(&b, "  hints           ttl %dm, skipHours %v, skipDays %v\n", h.TTLMinutes, h.SkipHours, h.SkipDays)
		}
	}
	in := d.Inputs
	b.WriteString("\nInputs of the decision:\n")
	fmt.Fprintf(&b, "  policy %s, outcome %s, HTTP %d, not modified %t, new entries %d, items %d\n",
		in.Policy, in.Outcome, in.HTTPStatus, in.NotModified, in.NewEntries, in.Items)
	fmt.Fprintf(&b, "  interval %ds -> %ds, clamps [%ds, %ds], EWMA %.0fs\n", in.IntervalBeforeSec, in.IntervalAfterSec, in.MinSec, in.MaxSec, in.EWMASecs)
	if in.RatePerDay > 0 || in.Scale > 0 {
		fmt.Fprintf(&b, "  rate %s, scale %.3g, base %ds, profile factor %.3g\n", sched.RateText(in.RatePerDay), in.Scale, in.BaseSec, in.ProfileFactor)
	}
	if in.PatternGain > 0 {
		fmt.Fprintf(&b, "  pattern gain %.3g, hours %q UTC, days %q from %02d:00 UTC, poll weight %.3g\n", in.PatternGain, in.PatternHours, in.PatternDays, in.DayStart, in.PollWeight)
	}
	fmt.Fprintf(&b, "  floors: ttl %ds, max-age %ds, Retry-After %ds; jitter %ds; backoff step %d (%ds); error budget %.3g of %.3g\n",
		in.TTLSec, in.MaxAgeSec, in.RetryAfterSecs, in.JitterSec, in.BackoffStep, in.BackoffSec, in.ErrorBudget, in.ErrorBudgetSize)
	if err := cfg.explainPush(ctx, cat, sub, fs, &b); err != nil { // push.go
		return err
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// patternText says what a feed's posting pattern is, as its state has it
// now (the decision says what it was when made, and what it did).
func patternText(pt sched.Pattern) string {
	switch {
	case !pt.Known:
		return "not known yet: too few items"
	case !pt.Clear:
		return fmt.Sprintf("none clear (polls placed by it would give ×%.2g of the delay of evenly spaced polls): polls spread evenly, nudged by the hour-of-week profile", pt.Gain)
	}
	s := "posts mostly at " + pt.Hours + " UTC"
	if pt.Days != "" && pt.Days != "Sun-Sat" {
		s += ", " + pt.Days
		if pt.DayStart != 0 {
			s += fmt.Sprintf(" (its days start at %02d:00 UTC)", pt.DayStart)
		}
	}
	return s + fmt.Sprintf("; clear: polls follow it, for ×%.2g of the delay of evenly spaced polls", pt.Gain)
}

func overridesText(s ndjson.Subscription) string {
	var parts []string
	if s.IntervalSec > 0 {
		parts = append(parts, fmt.Sprintf("every %s", time.Duration(s.IntervalSec)*time.Second))
	}
	if s.Cron != "" {
		parts = append(parts, fmt.Sprintf("cron %q", s.Cron))
	}
	if s.MinIntervalSec > 0 {
		parts = append(parts, fmt.Sprintf("min %s", time.Duration(s.MinIntervalSec)*time.Second))
	}
	if s.MaxIntervalSec > 0 {
		parts = append(parts, fmt.Sprintf("max %s", time.Duration(s.MaxIntervalSec)*time.Second))
	}
	if !s.PausedUntil.IsZero() {
		parts = append(parts, fmt.Sprintf("paused until %s", s.PausedUntil))
	}
	return strings.Join(parts, ", ")
}

func ago(now, t time.Time) time.Duration { return now.Sub(t).Round(time.Second) }
