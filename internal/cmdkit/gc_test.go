package cmdkit

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// gcSettings reads the collector's GOGC and memory limit.
func gcSettings() (percent int64, limit int64) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64()), int64(s[1].Value.Uint64())
}

// TestFloorGC: below the floor only the memory limit starts a collection;
// once the live heap passes half the floor, Go's defaults come back; and
// GOGC in the environment keeps Go's own rules from the start.
func TestFloorGC(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOGC or GOMEMLIMIT is set in this test's environment: floorGC leaves the collector alone then")
	}
	percent0, limit0 := gcSettings()
	defer func() {
		debug.SetGCPercent(int(percent0))
		debug.SetMemoryLimit(limit0)
	}()

	stop := floorGC()
	if p, l := gcSettings(); p != -1 || l != heapFloor {
		t.Fatalf("under the floor: GOGC %d, limit %d; want off (-1) and %d", p, l, heapFloor)
	}
	live := make([][]byte, 0, 48)
	for range 48 { // 48 MiB live, past half the floor
		live = append(live, make([]byte, 1<<20))
	}
	runtime.GC()
	deadline := time.Now().Add(5 * time.Second)
	for {
		p, l := gcSettings()
		if p == percent0 && l == limit0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("48 MiB live: GOGC %d, limit %d; want Go's defaults back (%d, %d)", p, l, percent0, limit0)
		}
		time.Sleep(10 * time.Millisecond)
	}
	runtime.KeepAlive(live)
	stop()

	t.Setenv("GOGC", "150")
	floorGC()()
	if p, l := gcSettings(); p != percent0 || l != limit0 {
		t.Errorf("with GOGC set: GOGC %d, limit %d; want them untouched (%d, %d)", p, l, percent0, limit0)
	}
}
