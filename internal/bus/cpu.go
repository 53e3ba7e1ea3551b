package bus

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used (user and system), for
// the line each command logs at its end: what the bus costs, without a
// wrapper that would hold its output open (scripts/bench-bus).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
