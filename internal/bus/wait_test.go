package bus

import (
	"context"
	"testing"
	"time"
)

// waitFor runs a wait of consumer on stream a in the background; the
// channel gets its result.
func (f *fixture) waitFor(consumer string, takeover time.Duration) (<-chan error, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	cfg := f.config(CmdWait, "a")
	cfg.Take = TakeOptions{Group: "g", Consumer: consumer, Takeover: takeover}
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg) }()
	return done, cancel
}

// TestWait: wait returns once the group has a record for the consumer (a
// new one; its own left unacknowledged; another's idle past the takeover
// time), and not while the others' records are theirs.
func TestWait(t *testing.T) {
	f := newFixture(t)
	quiet := func(done <-chan error, what string) {
		t.Helper()
		select {
		case err := <-done:
			t.Fatalf("wait returned (%v) %s", err, what)
		case <-time.After(300 * time.Millisecond):
		}
	}
	ready := func(done <-chan error, what string) {
		t.Helper()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("wait %s: %v", what, err)
			}
		case <-time.After(10 * time.Second): // generous: go test runs packages side by side on a loaded machine
			t.Fatalf("wait did not return %s", what)
		}
	}
	// No stream yet, then a first record.
	done, cancel := f.waitFor("c1", time.Minute)
	defer cancel()
	quiet(done, "before any record")
	if err := f.put("a", rec1+"\n", PutOptions{}); err != nil {
		t.Fatal(err)
	}
	ready(done, "once a record came")
	// c1 takes it and dies holding it: c1 has work at once, c2 only once
	// it has been idle past the takeover time.
	if _, err := f.take("a", TakeOptions{Group: "g", Consumer: "c1", Idle: 200 * time.Millisecond, Takeover: time.Second, Linger: time.Second}); err != nil {
		t.Fatal(err)
	}
	done, _ = f.waitFor("c1", time.Minute)
	ready(done, "for the consumer's own record")
	done, cancel2 := f.waitFor("c2", time.Minute)
	defer cancel2()
	quiet(done, "while another consumer's record is not idle past the takeover")
	done, _ = f.waitFor("c2", 500*time.Millisecond)
	ready(done, "for another's record idle past the takeover")
	// A signal ends it.
	done, cancel3 := f.waitFor("c3", time.Minute)
	cancel3()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("wait did not end on its context")
	}
	// It keeps the heartbeat of the take it stands in for.
	if n, _ := f.conn.Client.HExists(context.Background(), nodeKey(f.conn, "n1"), "doing take a (g)").Result(); !n {
		t.Error("no heartbeat of take a (g)")
	}
}
