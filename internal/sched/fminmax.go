package sched

import "math"

// fmax and fmin are math.Max and math.Min, written so that the compiler
// inlines them: on amd64 those are assembly, a call each, and the budget
// scale (ScaleFor) evaluates them millions of times at every feed-store
// start. They return what math.Max and math.Min return for every pair of
// arguments, infinities, NaNs and signed zeros included (TestMinMaxAsMath),
// so nothing the scheduler computes changes by a bit. A strict comparison
// decides everything but equal arguments and NaNs, which are left to the
// special cases of math's own definition.

func fmax(x, y float64) float64 {
	switch {
	case x > y:
		return x
	case y > x:
		return y
	}
	return maxSpecial(x, y)
}

func fmin(x, y float64) float64 {
	switch {
	case x < y:
		return x
	case y < x:
		return y
	}
	return minSpecial(x, y)
}

// maxSpecial is math.Max of two equal numbers, or with a NaN.
func maxSpecial(x, y float64) float64 {
	switch {
	case math.IsInf(x, 1) || math.IsInf(y, 1):
		return math.Inf(1)
	case math.IsNaN(x) || math.IsNaN(y):
		return math.NaN()
	case x == 0 && math.Signbit(x):
		return y // max(-0, ±0) is the other
	}
	return x
}

// minSpecial is math.Min of two equal numbers, or with a NaN.
func minSpecial(x, y float64) float64 {
	switch {
	case math.IsInf(x, -1) || math.IsInf(y, -1):
		return math.Inf(-1)
	case math.IsNaN(x) || math.IsNaN(y):
		return math.NaN()
	case x == 0 && !math.Signbit(x):
		return y // min(+0, ±0) is the other
	}
	return x
}
