package sched

import (
	"math"
	"testing"
	"time"
)

// workday is a clear pattern: items from 09:00 to 17:00 UTC every day at
// 8 times the rate of the other hours, polls weighted by sqrt(λ) as
// pattern() weighs a clear one.
func workday() *pattern {
	pt := &pattern{ok: true, clear: true}
	for h := range 24 {
		pt.fh[h] = 0.25
		if h >= 9 && h < 17 {
			pt.fh[h] = 2
		}
	}
	for d := range 7 {
		pt.fd[d] = 1
	}
	weigh(pt.fh[:], pt.gh[:], false)
	weigh(pt.fd[:], pt.gd[:], false)
	return pt
}

// The last poll of a working day comes as its hours end, not in the
// first quiet hour: the day's last items would wait through the night.
// From 16:35, sqrt(λ) alone would poll at 17:42.
func TestPlaceAtEdge(t *testing.T) {
	pt := workday()
	at := time.Date(2026, 6, 1, 16, 35, 0, 0, time.UTC).Unix()
	base := 2400 * math.Sqrt2 // 40 minutes in the busy hours
	if g := integrate(at, base, 86400, pt); math.Abs(g-4046) > 1 {
		t.Fatalf("sqrt(λ) gap %.0f s, want 4046", g)
	}
	if g := place(at, base, 300, 86400, pt); math.Abs(g-1500) > 1e-6 {
		t.Errorf("placed gap %.0f s, want 1500 (17:00)", g)
	}
}

// A flat pattern keeps sqrt(λ)'s even spacing, and every gap stays within
// the clamps.
func TestPlaceFlatAndClamped(t *testing.T) {
	flat := &pattern{ok: true, clear: true}
	for h := range 24 {
		flat.fh[h], flat.gh[h] = 1, 1
	}
	for d := range 7 {
		flat.fd[d], flat.gd[d] = 1, 1
	}
	at := time.Date(2026, 6, 1, 10, 7, 0, 0, time.UTC).Unix()
	if g := place(at, 1800, 300, 86400, flat); math.Abs(g-1800) > 1 {
		t.Errorf("flat: gap %.0f s, want 1800", g)
	}
	pt := workday()
	for m := 0; m < 7*24*60; m += 37 {
		at := time.Date(2026, 6, 1, 0, m, 0, 0, time.UTC).Unix()
		for _, c := range []struct{ base, lo, hi float64 }{{600, 300, 86400}, {7200, 3600, 86400}, {40000, 300, 43200}, {300, 300, 600}} {
			if g := place(at, c.base, c.lo, c.hi, pt); g < c.lo || g > c.hi || math.IsNaN(g) {
				t.Fatalf("at %s, base %.0f: gap %.0f s outside [%.0f, %.0f]", time.Unix(at, 0).UTC(), c.base, g, c.lo, c.hi)
			}
		}
	}
}

// Placed polls make items wait less than sqrt(λ)'s, over a week of them,
// and about as many.
func TestPlaceWaitsLess(t *testing.T) {
	pt := workday()
	week := func(gap func(int64) float64) (wait float64, n int) {
		from := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC).Unix()
		for t := float64(from); t < float64(from+7*86400); n++ {
			next := t + gap(int64(t))
			// ∫ λ(x)(next − x) dx over (t, next], hour by hour.
			for x := t; x < next; {
				e := math.Min((math.Floor(x/3600)+1)*3600, next)
				l := pt.fh[hourOf(int64(x))]
				wait += l * ((next-x)*(next-x) - (next-e)*(next-e)) / 2
				x = e
			}
			t = next
		}
		return wait, n
	}
	base := 2400 * math.Sqrt2
	ws, ns := week(func(t int64) float64 { return integrate(t, base, 86400, pt) })
	wp, np := week(func(t int64) float64 { return place(t, base, 300, 86400, pt) })
	if wp >= ws || math.Abs(float64(np-ns)) > 0.05*float64(ns) {
		t.Errorf("placed: wait %.0f with %d polls; sqrt(λ): %.0f with %d", wp, np, ws, ns)
	}
}
