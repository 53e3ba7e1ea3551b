package sim

import (
	"context"
	"testing"

	"github.com/feedpipe/feedpipe/internal/sched"
)

// BenchmarkSimulate is one policy on the 1,000-feed, 30-day workload.
func BenchmarkSimulate(b *testing.B) {
	w := Generate(GenConfig{Seed: 1, Feeds: 1000, Days: 30})
	pol, _ := ParsePolicy("adaptive")
	for b.Loop() {
		if _, err := Simulate(context.Background(), w, pol, sched.Defaults(), 0, 1, "", nil); err != nil {
			b.Fatal(err)
		}
	}
}
