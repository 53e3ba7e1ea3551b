package sched

import (
	"time"

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
