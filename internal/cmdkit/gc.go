package cmdkit

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// heapFloor is the memory a command grows to before its garbage
// collector first runs. Go's default (GOGC=100) collects whenever the
// heap doubles from a 4 MB start: a feed-store run of 2,000 304s, whose
// live heap is 11 to 17 MB, collected 8 times, each keeping the other
// core busy marking, a fifth of its CPU; feed-dedup's cold run collected
// 16 times. Up to this floor the heap is simply left to grow.
const heapFloor = 64 << 20

// heapCheckEvery is how often floorGC looks at the live heap.
const heapCheckEvery = 100 * time.Millisecond

// floorActive is set while a floorGC holds the collector's settings, so
// that a command run again in the same process (tests) does not take
// the floor's settings for Go's.
var floorActive atomic.Bool

// floorGC makes the garbage collector wait until the runtime's memory
// reaches heapFloor (a memory limit, GOGC off), then collect as Go's
// default does once that default would let the heap grow further: when
// twice the live heap, with the memory that is not heap (stacks, the
// runtime's own), passes the floor, or when the limit has made the
// collector throttle itself. GOGC or GOMEMLIMIT in the environment keep
// Go's own rules, and a command that sets its own (feed-parse) keeps
// them. The function it returns stops the watch and gives Go's settings
// back.
func floorGC() (stop func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" || !floorActive.CompareAndSwap(false, true) {
		return func() {}
	}
	gcPercent := debug.SetGCPercent(-1)
	limit := debug.SetMemoryLimit(heapFloor)
	var once sync.Once
	restore := func() {
		once.Do(func() {
			if floorHeld() {
				debug.SetGCPercent(gcPercent)
				debug.SetMemoryLimit(limit)
			}
			floorActive.Store(false)
		})
	}
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(heapCheckEvery)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			switch {
			case !floorHeld():
				return // the command set its own
			case floorOutgrown():
				restore()
				return
			}
		}
	}()
	return func() {
		close(done)
		restore()
	}
}

// floorHeld reports whether the collector still has floorGC's settings.
func floorHeld() bool {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	// GOGC off reads as the largest uint64.
	return s[0].Value.Uint64() == ^uint64(0) && s[1].Value.Uint64() == heapFloor
}

// floorOutgrown reports whether Go's default would now give the heap more
// room than the floor does.
func floorOutgrown() bool {
	s := []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/gc/limiter/last-enabled:gc-cycle"},
	}
	metrics.Read(s)
	for _, v := range s {
		if v.Value.Kind() != metrics.KindUint64 {
			return true // a runtime without these: Go's default
		}
	}
	live := s[0].Value.Uint64() // 0 before the first collection
	notHeap := s[1].Value.Uint64() - s[2].Value.Uint64() - s[3].Value.Uint64() - s[4].Value.Uint64() - s[5].Value.Uint64()
	return 2*live+notHeap > heapFloor || s[6].Value.Uint64() > 0
}
