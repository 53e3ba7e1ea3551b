//go:build !race

package parse

// raceEnabled is set when the tests run under the race detector.
const raceEnabled = false
