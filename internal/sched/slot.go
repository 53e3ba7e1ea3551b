package sched

import (
	"slices"
	"time"
)

// Daily slots.
//
// Many feeds are written by a job that runs once a day at a fixed time: a
// digest, a comic, a newsletter, a daily build. Their items are no Poisson
// stream, and a poll right after the job has run finds each one within
// minutes for one request a day, where the rate rule would poll them many
// times a day and still find them about half an interval late.

const (
	// RunWindow is how many runs of items a State keeps (State.Runs).
	RunWindow = 8
	// runGap is the gap between two publication times under which they
	// count as one run of the publisher's job, seconds.
	runGap = 30 * 60
	// slotTolerance is how far apart, in time of day, runs may end and
	// still make one daily slot, seconds.
	slotTolerance = 30 * 60
	// slotMinRuns is how many runs, on as many days, make a slot.
	slotMinRuns = 3
	// slotRunMax is the longest a run of a slot may last, seconds: a job
	// writes its items at once.
	slotRunMax = 30 * 60
	// slotMargin is how long after the latest time of day a run ended the
	// slot's poll comes, at least, seconds: a run a little later than all
	// before it is still found by it.
	slotMargin = 2 * 60
	// slotLate is how long after the slot's poll the rate rule keeps
	// polling a feed whose run was not there yet, seconds: a run late by
	// up to that is found as any item is, and then the next day's slot
	// is polled.
	slotLate = 6 * 3600
	// secsPerDayInt is secsPerDay as an integer.
	secsPerDayInt = 86400
)

// Run is one run of a publisher's job, as State.Runs keeps it: the first
// and the last publication time (Unix seconds) of items published less
// than runGap apart, and how many there were.
type Run [3]int64

func (r Run) first() int64 { return r[0] }
func (r Run) last() int64  { return r[1] }
func (r Run) items() int64 { return r[2] }

// addRuns returns runs with the dated publication times pubs (ascending)
// added: a time within runGap after the last run's end extends it, a later
// one starts a run, an earlier one is history counted already. At most
// RunWindow runs are kept.
func addRuns(runs []Run, pubs []int64) []Run {
	out := slices.Clone(runs)
	for _, t := range pubs {
		switch n := len(out) - 1; {
		case n >= 0 && t <= out[n].last():
		case n >= 0 && t-out[n].last() < runGap:
			out[n][1], out[n][2] = t, min(out[n][2]+1, 1<<30)
		default:
			out = append(out, Run{t, t, 1})
		}
	}
	if len(out) > RunWindow {
		out = out[len(out)-RunWindow:]
	}
	return out
}

// backdated reports whether a dated item (dated, ascending) is older than
// the previous fetch, which answered without it: the item appeared after
// its date. A date without a time (midnight), or a copy a cache served
// late, says nothing of when a feed's items appear, and a slot found in
// such dates would be polled before them; the feed's runs start over.
// (A previous fetch that failed, or got a Retry-After, saw no document.)
func (r *run) backdated(dated []int64, prev time.Time) bool {
	return len(dated) > 0 && !prev.IsZero() && r.st.LastError == "" && dated[0] < prev.Unix()-backdateSlack
}

// backdateSlack is how much older than the previous fetch an item may be
// dated before it counts as backdated, seconds: clocks disagree a little.
const backdateSlack = 60

// dailySlot looks for a daily slot in the feed's runs: at least
// slotMinRuns of them, each on its own day, each short (slotRunMax) and
// with fewer items than the feed's window shows (one poll must find them
// all), all ending within slotTolerance of one time of day. It returns
// the latest time of day a run ended at (seconds after midnight UTC) and
// the spread of those times. A feed that posts all day long makes one run
// a day that ends at about the same hour too; its runs are long.
func dailySlot(runs []Run, window int) (tod, spread int64, ok bool) {
	if len(runs) < slotMinRuns {
		return 0, 0, false
	}
	ref := floorMod(runs[0].last(), secsPerDayInt)
	var lo, hi int64 // offsets from ref, wrapped to ±12h
	for i, r := range runs {
		if r.last()-r.first() > slotRunMax || (window > 0 && r.items() >= int64(window)) {
			return 0, 0, false
		}
		if i > 0 && floorDiv(r.last(), secsPerDayInt) == floorDiv(runs[i-1].last(), secsPerDayInt) {
			return 0, 0, false // two runs in a day
		}
		off := floorMod(r.last()-ref+secsPerDayInt/2, secsPerDayInt) - secsPerDayInt/2
		lo, hi = min(lo, off), max(hi, off)
		if hi-lo > slotTolerance {
			return 0, 0, false
		}
	}
	return floorMod(ref+hi, secsPerDayInt), hi - lo, true
}

// runsSound reports whether runs are as addRuns makes them.
func runsSound(runs []Run) bool {
	if len(runs) > RunWindow {
		return false
	}
	for i, r := range runs {
		if r.first() <= minUnix || r.last() >= maxUnix || r.first() > r.last() || r.items() < 1 || r.items() > 1<<30 ||
			(i > 0 && r.first() <= runs[i-1].last()) {
			return false
		}
	}
	return true
}

// slotPoll is the time of day of a slot's poll.
func slotPoll(tod, spread int64) int64 {
	return floorMod(tod+max(slotMargin, spread/2), secsPerDayInt)
}

// nextSlot returns the first time after t (Unix seconds) that is the
// slot's poll time.
func nextSlot(t, tod, spread int64) int64 {
	next := floorDiv(t, secsPerDayInt)*secsPerDayInt + slotPoll(tod, spread)
	if next <= t {
		next += secsPerDayInt
	}
	return next
}
