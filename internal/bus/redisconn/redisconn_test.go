package redisconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedpipe/feedpipe/internal/bus/redistest"
	"github.com/feedpipe/feedpipe/internal/testenv"
)

func TestUnavailable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{context.Canceled, false},
		{io.EOF, true},
		{fmt.Errorf("dial: %w", syscall.ECONNREFUSED), true},
		{&net.OpError{Op: "dial", Err: errors.New("x")}, true},
		{redis.ErrPoolTimeout, true},
		{redisError("LOADING Redis is loading the dataset in memory"), true},
		{redisError("OOM command not allowed when used memory > 'maxmemory'."), true},
		{redisError("BUSY Redis is busy running a script."), true},
		{redisError("BUSYGROUP Consumer Group name already exists"), false},
		{redisError("NOGROUP No such key"), false},
		{redisError("WRONGTYPE Operation against a key holding the wrong kind of value"), false},
		{redisError("ERR Error running script"), false},
	} {
		if got := Unavailable(tc.err); got != tc.want {
			t.Errorf("Unavailable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

type redisError string

func (e redisError) Error() string { return string(e) }
func (redisError) RedisError()     {}

func TestDialChecks(t *testing.T) {
	if _, err := Dial("redis://127.0.0.1:1/0", "a:b", nil, nil); err == nil {
		t.Error("a prefix with a colon was taken")
	}
	if _, err := Dial("http://x", "p", nil, nil); err == nil {
		t.Error("an http URL was taken")
	}
	c, err := Dial("redis://user:secret@127.0.0.1:1/0", "p", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if strings.Contains(c.Addr, "secret") {
		t.Errorf("Addr shows the password: %s", c.Addr)
	}
	if got := c.Key("due"); got != "{p}:due" {
		t.Errorf("Key(due) = %s", got)
	}
	if got := c.Key("node", "w1"); got != "{p}:node:w1" {
		t.Errorf("Key(node, w1) = %s", got)
	}
}

// TestDoWaitsOutARestart: a write tried while Redis is down is done once
// it is back, and the outage is said once, and the recovery once.
func TestDoWaitsOutARestart(t *testing.T) {
	srv := redistest.Start(t)
	var logs testenv.Buffer
	c, err := Dial(srv.URL(), "t", slog.New(slog.NewTextHandler(&logs, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	srv.Kill()
	restarted := make(chan struct{})
	go func() {
		time.Sleep(1500 * time.Millisecond)
		srv.Start()
		close(restarted)
	}()
	tries := 0
	err = c.Do(ctx, "setting x", func(ctx context.Context) error {
		tries++
		return c.Client.Set(ctx, c.Key("x"), "1", 0).Err()
	})
	<-restarted
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	if tries < 3 {
		t.Errorf("%d tries in 1.5 s of outage: it did not retry with backoff", tries)
	}
	if v, _ := c.Client.Get(ctx, c.Key("x")).Result(); v != "1" {
		t.Errorf("x = %q after the restart", v)
	}
	out := logs.String()
	if strings.Count(out, "redis is unavailable") != 1 || strings.Count(out, "redis is back") != 1 {
		t.Errorf("the outage should be said once and the recovery once:\n%s", out)
	}
	// A real error is not waited for.
	err = c.Do(ctx, "x", func(ctx context.Context) error { return c.Client.LPush(ctx, c.Key("x"), "1").Err() })
	if err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Errorf("a wrong type: %v", err)
	}
}
