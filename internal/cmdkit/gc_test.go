package cmdkit

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// gcSettings reads the collector's GOGC (-1: off) and memory limit.
func gcSettings() (percent int64, limit int64) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64()), int64(s[1].Value.Uint64())
}

// waitSettings waits for the collector to have these settings.
func waitSettings(t *testing.T, percent, limit int64, why string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		p, l := gcSettings()
		if p == percent && l == limit {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: GOGC %d, limit %d; want %d, %d", why, p, l, percent, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestFloorGC: below the floor only the memory limit starts a collection;
// once twice the live heap passes the floor, Go's settings come back; a
// command's own settings win over the floor's; the end of a run gives
// Go's settings back; a second floor inside the first changes nothing;
// and GOGC in the environment keeps Go's own rules from the start.
func TestFloorGC(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOGC or GOMEMLIMIT is set in this test's environment: floorGC leaves the collector alone then")
	}
	percent0, limit0 := gcSettings()
	defer func() {
		debug.SetGCPercent(int(percent0))
		debug.SetMemoryLimit(limit0)
	}()

	t.Run("outgrown", func(t *testing.T) {
		stop := floorGC()
		defer stop()
		waitSettings(t, -1, heapFloor, "under the floor")
		floorGC()() // nested: a no-op, which must not end the first
		waitSettings(t, -1, heapFloor, "after a nested floor")
		live := make([][]byte, 0, 48)
		for range 48 { // 48 MiB live: twice that is past the floor
			live = append(live, make([]byte, 1<<20))
		}
		runtime.GC()
		waitSettings(t, percent0, limit0, "48 MiB live")
		runtime.KeepAlive(live)
	})
	t.Run("run ends", func(t *testing.T) {
		stop := floorGC()
		waitSettings(t, -1, heapFloor, "under the floor")
		stop()
		waitSettings(t, percent0, limit0, "after the run")
	})
	t.Run("the command's own settings", func(t *testing.T) {
		stop := floorGC()
		debug.SetGCPercent(400) // as feed-parse's tuneGC does
		live := make([][]byte, 0, 48)
		for range 48 {
			live = append(live, make([]byte, 1<<20))
		}
		runtime.GC()
		time.Sleep(3 * heapCheckEvery)
		stop()
		waitSettings(t, 400, heapFloor, "a command's own GOGC")
		runtime.KeepAlive(live)
		debug.SetGCPercent(int(percent0))
		debug.SetMemoryLimit(limit0)
	})
	t.Run("GOGC set", func(t *testing.T) {
		t.Setenv("GOGC", "150")
		stop := floorGC()
		waitSettings(t, percent0, limit0, "with GOGC set")
		stop()
	})
}
