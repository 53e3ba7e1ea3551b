package sched

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// OverridesOf is the scheduler's view of a subscription's own settings
// (feed-sub): its polling interval, clamps, cron and pause.
func OverridesOf(s ndjson.Subscription) Overrides {
	return Overrides{
		Interval:    time.Duration(s.IntervalSec) * time.Second,
		Min:         time.Duration(s.MinIntervalSec) * time.Second,
		Max:         time.Duration(s.MaxIntervalSec) * time.Second,
		Cron:        s.Cron,
		PausedUntil: s.PausedUntil.Time,
	}
}

// CheckCron checks a cron expression before feed-sub saves it: ParseCron
// must read it, and it may not fire more often than MinPollingInterval,
// the shortest interval an override polls at (a polling_interval is
// clamped to it). Next would hold such a cron to the min interval anyway;
// refusing it keeps the saved schedule saying what the feed gets.
func CheckCron(expr string) error {
	expr = strings.TrimSpace(expr)
	// robfig/cron reads any "@every D" below a second, negative and zero
	// too, as every second: D is checked as written.
	if rest, ok := strings.CutPrefix(expr, "@every "); ok {
		if every, err := time.ParseDuration(strings.TrimSpace(rest)); err == nil {
			switch {
			case every <= 0:
				return fmt.Errorf("%w %q: the interval must be positive", ErrBadCron, expr)
			case every < MinPollingInterval:
				return fmt.Errorf("%w %q: it fires every %s; a feed is polled at most every %s", ErrBadCron, expr, every, MinPollingInterval)
			}
		}
	}
	sch, err := ParseCron(expr)
	if err != nil {
		return err
	}
	if gap := shortestCronGap(sch); gap < MinPollingInterval {
		return fmt.Errorf("%w %q: it fires as often as every %s; a feed is polled at most every %s", ErrBadCron, expr, gap, MinPollingInterval)
	}
	return nil
}

// How far shortestCronGap looks: a five-field expression shows its
// shortest gaps within a day, or between two days it fires on; a year of
// fire times, or this many, covers every day of the week and month.
const (
	cronGapHorizon  = 366 * 24 * time.Hour
	cronGapMaxFires = 20000
)

// shortestCronGap is the shortest time between two consecutive fire times
// of sch in its first year from 2026 (or its first cronGapMaxFires fire
// times); it stops early at one below MinPollingInterval.
func shortestCronGap(sch cron.Schedule) time.Duration {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	shortest := time.Duration(math.MaxInt64)
	prev := sch.Next(start)
	for n := 0; n < cronGapMaxFires && !prev.IsZero() && prev.Sub(start) < cronGapHorizon; n++ {
		next := sch.Next(prev)
		if next.IsZero() {
			break
		}
		shortest = min(shortest, next.Sub(prev))
		if shortest < MinPollingInterval {
			break
		}
		prev = next
	}
	return shortest
}
