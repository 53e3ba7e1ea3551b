package cmdkit

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
)

// ProfileEnv names a directory each binary writes a CPU profile of its run
// into, as NAME.pprof, and a heap profile at its end, as NAME.heap.pprof:
// benchmarks use it to show where a stage's time and memory go inside a
// real pipeline.
const ProfileEnv = "FEEDPIPE_CPUPROFILE"

// startProfile starts the CPU profile ProfileEnv asks for, if any; the
// function it returns ends it. A profile that cannot be written is
// reported and the run goes on without it.
func startProfile(name string) (stop func()) {
	dir := os.Getenv(ProfileEnv)
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, name+".pprof"))
	if err == nil {
		if err = pprof.StartCPUProfile(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: warning: %s: no CPU profile: %v\n", name, ProfileEnv, err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		if h, err := os.Create(filepath.Join(dir, name+".heap.pprof")); err == nil {
			pprof.Lookup("heap").WriteTo(h, 0)
			h.Close()
		}
	}
}
