package sched

import (
	"math/rand/v2"
	"testing"
	"time"
)

// benchFeed is a long-lived feed's state, after two months of its posts
// (in the UTC hours in(t)), and the outcome of its next fetch: 3 new items.
func benchFeed(b *testing.B, in func(time.Time) bool) (State, Outcome) {
	p := Defaults()
	pubs := posts(rand.New(rand.NewPCG(9, 9)), 12, in, t0.Add(-60*24*time.Hour), t0.Add(24*time.Hour))
	st, _ := follow(p, pubs, 50, t0.Add(-30*24*time.Hour), t0)
	at := st.NextAt.Time
	out := Outcome{At: at, Status: 200, Items: 50, Parsed: true, NewEntries: 3,
		Published: []time.Time{at.Add(-50 * time.Minute), at.Add(-20 * time.Minute), at.Add(-time.Minute)}}
	if got := st.Pattern(p).Clear; got != (in != nil && !isAlways(in)) {
		b.Fatalf("clear pattern %v", got)
	}
	return st, out
}

func isAlways(in func(time.Time) bool) bool {
	for h := range 168 {
		if !in(t0.Add(time.Duration(h) * time.Hour)) {
			return false
		}
	}
	return true
}

// BenchmarkNext is one decision after a fetch of a long-lived feed with
// jitter, as feed-store makes it once per fetched feed: with a clear
// pattern (working hours on weekdays) and without one.
func BenchmarkNext(b *testing.B) {
	for _, bb := range []struct {
		name string
		in   func(time.Time) bool
	}{
		{"pattern", hoursUTC(8, 18, weekdays...)},
		{"constant", always},
	} {
		b.Run(bb.name, func(b *testing.B) {
			st, out := benchFeed(b, bb.in)
			p := Defaults()
			rnd := rand.New(rand.NewPCG(1, 2))
			b.ReportAllocs()
			for b.Loop() {
				Next(st, out, p, Overrides{}, out.At, rnd)
			}
		})
	}
}
