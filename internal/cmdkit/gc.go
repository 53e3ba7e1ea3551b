package cmdkit

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// heapFloor is the heap a command grows to before its garbage collector
// first runs. Go's default (GOGC=100) collects whenever the heap doubles
// from a 4 MB start: a feed-store run of 2,000 304s, whose live heap is
// 11 to 17 MB, collected 8 times, each keeping the other core busy
// marking, a fifth of its CPU; feed-dedup's cold run collected 16 times.
// Up to this floor the heap is simply left to grow.
const heapFloor = 64 << 20

// heapCheckEvery is how often floorGC looks at the live heap.
const heapCheckEvery = 100 * time.Millisecond

// floorGC makes the garbage collector wait until the heap reaches
// heapFloor, then collect as Go's default does once the live heap is
// more than half of it: the heap's goal is the larger of the floor and
// twice the live heap. GOGC or GOMEMLIMIT in the environment keep Go's
// own rules. The function it returns stops the watch.
func floorGC() (stop func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	// Below the floor, the memory limit alone starts a collection.
	gcPercent := debug.SetGCPercent(-1)
	limit := debug.SetMemoryLimit(heapFloor)
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(heapCheckEvery)
		defer tick.Stop()
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			metrics.Read(live)
			if live[0].Value.Kind() == metrics.KindUint64 && live[0].Value.Uint64() > heapFloor/2 {
				// Twice the live heap is past the floor: Go's default
				// from now on (the limit, kept, would collect ever more
				// often as the live heap neared it).
				debug.SetGCPercent(gcPercent)
				debug.SetMemoryLimit(limit)
				return
			}
		}
	}()
	return func() { close(done) }
}
