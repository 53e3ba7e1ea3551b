package clock

import (
	"testing"
	"time"
)

func TestFakeFiresInOrderOnlyWhenAdvanced(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	f := NewFake(t0)
	late, early := f.After(2*time.Second), f.After(time.Second)
	select {
	case <-early:
		t.Fatal("fired before Advance")
	default:
	}
	f.Advance(time.Second)
	if got := <-early; !got.Equal(t0.Add(time.Second)) {
		t.Fatalf("early fired at %v", got)
	}
	select {
	case <-late:
		t.Fatal("late fired too early")
	default:
	}
	f.Advance(5 * time.Second)
	<-late
	if f.Waiters() != 0 || !f.Now().Equal(t0.Add(6*time.Second)) {
		t.Fatalf("waiters %d, now %v", f.Waiters(), f.Now())
	}
	select {
	case <-f.After(0):
	default:
		t.Fatal("After(0) did not fire at once")
	}
}

func TestBlockUntil(t *testing.T) {
	f := NewFake(time.Time{})
	done := make(chan struct{})
	go func() {
		<-f.After(time.Minute)
		close(done)
	}()
	f.BlockUntil(1)
	f.Advance(time.Minute)
	<-done
}
