package sched

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Overrides are one feed's own settings, from its subscription (feed-sub).
type Overrides struct {
	// Interval is a fixed polling_interval (feed-sub set --interval), clamped to
	// [5m, 24h] and to Min/Max; it replaces the policy's cadence.
	Interval time.Duration `json:"interval,omitempty"`
	// Min and Max narrow the global clamps for this feed; they never
	// widen them.
	Min time.Duration `json:"min,omitempty"`
	Max time.Duration `json:"max,omitempty"`
	// Cron is a cron expression (five fields, or @hourly, @daily, @every
	// 2h, ...) in UTC: the feed is fetched at its fire times, the first
	// one that keeps the publisher's floors, the min interval and the skip
	// windows. It wins over Interval.
	Cron string `json:"cron,omitempty"`
	// PausedUntil pauses the feed until then.
	PausedUntil time.Time `json:"paused_until,omitzero"`
}

// Bounds of a fixed polling_interval.
const (
	MinPollingInterval = 5 * time.Minute
	MaxPollingInterval = 24 * time.Hour
)

// ErrBadCron is returned by ParseCron for an expression it cannot use.
var ErrBadCron = errors.New("bad cron expression")

// ParseCron checks a cron expression as Next will read it: five fields
// (minute hour day-of-month month day-of-week) or a descriptor (@hourly,
// @daily, @weekly, @every 90m, ...), always in UTC. feed-sub should call it
// before saving one.
func ParseCron(expr string) (cron.Schedule, error) {
	expr = strings.TrimSpace(expr)
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		// Loading a zone reads the system's zone files: the scheduler stays
		// free of I/O, and the same expression means the same times on
		// every machine.
		return nil, fmt.Errorf("%w %q: time zones are not supported; cron times are UTC", ErrBadCron, expr)
	}
	var (
		s   cron.Schedule
		err error
	)
	func() {
		defer func() {
			if r := recover(); r != nil { // a library bug must not take feed-store down
				err = fmt.Errorf("%v", r)
			}
		}()
		s, err = cron.ParseStandard(expr)
	}()
	if err != nil {
		// The library ends some messages with the fields it split, as a
		// Go slice: the expression is quoted already.
		msg := err.Error()
		if i := strings.LastIndex(msg, ": ["); i >= 0 && strings.HasSuffix(msg, "]") {
			msg = msg[:i] + " (minute hour day-of-month month day-of-week, in UTC)"
		}
		return nil, fmt.Errorf("%w %q: %s", ErrBadCron, expr, msg)
	}
	if s.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return nil, fmt.Errorf("%w %q: it never fires", ErrBadCron, expr)
	}
	return s, nil
}

var dayNames = map[string]time.Weekday{}

func init() {
	for d := time.Sunday; d <= time.Saturday; d++ {
		n := strings.ToLower(d.String())
		dayNames[n] = d
		dayNames[n[:3]] = d
	}
	dayNames["tues"], dayNames["thur"], dayNames["thurs"] = time.Tuesday, time.Thursday, time.Thursday
}

// hourMask is a bit per skipped GMT hour. RSS 2.0 numbers hours 0-23, but
// feeds in the wild also write 24 for midnight.
func hourMask(hours []int) uint32 {
	var m uint32
	for _, h := range hours {
		if h == 24 {
			h = 0
		}
		if h >= 0 && h < 24 {
			m |= 1 << h
		}
	}
	return m
}

// dayMask is a bit per skipped weekday (Sunday = bit 0). Names are matched
// without case, in full or abbreviated.
func dayMask(days []string) uint8 {
	var m uint8
	for _, d := range days {
		if wd, ok := dayNames[strings.ToLower(strings.TrimSpace(d))]; ok {
			m |= 1 << wd
		}
	}
	return m
}

const allHours = 1<<24 - 1
const allDays = 1<<7 - 1

// skip is a feed's quiet windows.
type skip struct {
	hours uint32
	days  uint8
}

// empty reports whether there is no window.
func (s skip) empty() bool { return s.hours == 0 && s.days == 0 }

// total reports whether the windows cover every hour of the week. A
// publisher that asks never to be fetched has made a mistake; the windows
// are then ignored (and the decision says so) rather than losing the feed.
func (s skip) total() bool { return s.hours == allHours || s.days == allDays }

// in reports whether t falls in a window.
func (s skip) in(t time.Time) bool {
	u := t.UTC()
	return s.hours&(1<<u.Hour()) != 0 || s.days&(1<<u.Weekday()) != 0
}

// out returns the first instant at or after t outside the windows (the
// start of an allowed hour), and whether it moved t. It needs !total().
func (s skip) out(t time.Time) (time.Time, bool) {
	if !s.in(t) {
		return t, false
	}
	u := t.UTC().Truncate(time.Hour)
	for range 8 * 24 {
		u = u.Add(time.Hour)
		if !s.in(u) {
			return u, true
		}
	}
	return t, false // unreachable unless total
}

// InSkipWindow reports whether t falls in the quiet windows the hints
// declare, as Next reads them: false when they cover every hour, since Next
// then ignores them. The simulator counts politeness violations with it.
func InSkipWindow(h Hints, t time.Time) bool {
	s := skip{hourMask(h.SkipHours), dayMask(h.SkipDays)}
	return !s.total() && s.in(t)
}
