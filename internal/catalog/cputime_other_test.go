//go:build !unix

package catalog

// cpuTime is 0 where getrusage is not: no cpu-ns/op.
func cpuTime() int64 { return 0 }
