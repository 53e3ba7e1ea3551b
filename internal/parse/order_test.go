package parse

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestOrdered runs jobs of random sizes and durations on a few workers
// with a tiny byte budget: the output keeps the submission order, and
// nothing deadlocks.
func TestOrdered(t *testing.T) {
	for _, workers := range []int{1, 2, 5} {
		t.Run(fmt.Sprint(workers), func(t *testing.T) {
			var got []string
			o := startOrdered(workers, func(j *job) error {
				got = append(got, string(j.out))
				return nil
			})
			o.mu.Lock()
			o.budget = 100
			o.mu.Unlock()
			r := rand.New(rand.NewPCG(1, uint64(workers)))
			var want []string
			for i := range 300 {
				out := fmt.Sprintf("%d:%s", i, strings.Repeat("x", r.IntN(300)))
				want = append(want, out)
				j := &job{out: []byte(out)}
				if r.IntN(4) > 0 { // a quarter pass through
					sleep := time.Duration(r.IntN(200)) * time.Microsecond
					j.out = nil
					j.run = func() { time.Sleep(sleep); j.out = []byte(out) }
				}
				if err := o.submit(j); err != nil {
					t.Fatal(err)
				}
			}
			done := make(chan error, 1)
			go func() { done <- o.close() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("deadlock")
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("output out of order")
			}
			if o.pending != 0 {
				t.Errorf("%d bytes still counted as pending", o.pending)
			}
		})
	}
}
