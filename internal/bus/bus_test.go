package bus

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/bus/redisconn"
	"github.com/feedpipe/feedpipe/internal/bus/redistest"
	"github.com/feedpipe/feedpipe/internal/testenv"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// fixture is a Redis for a test, and a connection to it.
type fixture struct {
	t    *testing.T
	srv  *redistest.Server
	conn *redisconn.Conn
	logs *testenv.Buffer
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	srv := redistest.Start(t)
	logs := &testenv.Buffer{}
	conn, err := redisconn.Dial(srv.URL(), "t", slog.New(slog.NewTextHandler(logs, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &fixture{t: t, srv: srv, conn: conn, logs: logs}
}

// config is a Config of the fixture for a command.
func (f *fixture) config(cmd, stream string) Config {
	return Config{Conn: f.conn, Log: slog.New(slog.NewTextHandler(f.logs, nil)), Node: "n1", Command: cmd, Stream: stream}
}

// put runs a put of in to stream.
func (f *fixture) put(stream, in string, o PutOptions) error {
	cfg := f.config(CmdPut, stream)
	cfg.In, cfg.Put = strings.NewReader(in), o
	return Run(context.Background(), cfg)
}

// take runs a take and returns what it wrote. Its linger is bounded by
// o.Takeover.
func (f *fixture) take(stream string, o TakeOptions) (string, error) {
	var out bytes.Buffer
	cfg := f.config(CmdTake, stream)
	cfg.Out, cfg.Take = &out, o
	err := Run(context.Background(), cfg)
	return out.String(), err
}

// pipeline runs take | fn | put, as processes in a pipe would.
func (f *fixture) pipeline(from string, o TakeOptions, fn func(io.Reader, io.Writer), to string) error {
	tr, tw := io.Pipe()
	pr, pw := io.Pipe()
	cfg := f.config(CmdTake, from)
	cfg.Out, cfg.Take, cfg.CloseOut = tw, o, tw.Close
	errs := make(chan error, 2)
	go func() { errs <- Run(context.Background(), cfg) }()
	go func() { fn(tr, pw); pw.Close() }()
	pc := f.config(CmdPut, to)
	pc.In = pr
	perr := Run(context.Background(), pc)
	if err := <-errs; err != nil {
		return err
	}
	return perr
}

func cat(r io.Reader, w io.Writer) { io.Copy(w, r) }

func (f *fixture) xlen(stream string) int64 {
	n, err := f.conn.Client.XLen(context.Background(), f.conn.Key(stream)).Result()
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

// records reads the records of a stream, in order.
func (f *fixture) records(stream string) []string {
	msgs, err := f.conn.Client.XRange(context.Background(), f.conn.Key(stream), "-", "+").Result()
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		out = append(out, m.Values["record"].(string))
	}
	return out
}

func (f *fixture) group(stream, group string) GroupStatus {
	st, err := ReadStatus(context.Background(), f.conn, time.Now())
	if err != nil {
		f.t.Fatal(err)
	}
	for _, s := range st.Streams {
		for _, g := range s.Groups {
			if s.Name == stream && g.Name == group {
				return g
			}
		}
	}
	f.t.Fatalf("no group %s of %s in %+v", group, stream, st)
	return GroupStatus{}
}

const (
	rec1 = `{"type":"x","v":1,"n":1}`
	rec2 = `{"type":"x","v":1,"n":2}`
	rec3 = `{"type":"x","v":1,"n":3}`
)

// TestPutTakeHandOn: records go through take | stage | put from one
// stream to the next; each is acknowledged in the step that appends it,
// the bus member take added does not follow it, and status says so.
func TestPutTakeHandOn(t *testing.T) {
	f := newFixture(t)
	if err := f.put("a", rec1+"\n"+rec2+"\n"+rec3+"\n", PutOptions{}); err != nil {
		t.Fatal(err)
	}
	var seen []string
	err := f.pipeline("a", TakeOptions{Group: "g", Idle: 300 * time.Millisecond, Takeover: 2 * time.Second}, func(r io.Reader, w io.Writer) {
		b, _ := io.ReadAll(r)
		seen = strings.Split(strings.TrimSpace(string(b)), "\n")
		w.Write(b)
	}, "b")
	if err != nil {
		t.Fatalf("%v\n%s", err, f.logs)
	}
	if len(seen) != 3 || !strings.HasSuffix(seen[0], `,"bus":{"stream":"a","group":"g","id":"`+strings.Split(seen[0], `"id":"`)[1]) {
		t.Errorf("take wrote %q", seen)
	}
	if got := f.records("b"); strings.Join(got, "\n") != rec1+"\n"+rec2+"\n"+rec3 {
		t.Errorf("b holds %q", got)
	}
	if g := f.group("a", "g"); g.Pending != 0 || g.Lag != 0 {
		t.Errorf("group g of a: %+v, want nothing pending or unread", g)
	}
	if n := f.xlen("a"); n != 0 {
		t.Errorf("a keeps %d records every group acknowledged", n)
	}
	out := FormatStatus(mustStatus(t, f))
	for _, want := range []string{"NODE", "n1", "take a (g)", "put b", "STREAM", "\nb ", "g "} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
}

func mustStatus(t *testing.T, f *fixture) Status {
	st, err := ReadStatus(context.Background(), f.conn, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestTakeover: a consumer that died with records in hand (taken, never
// handed on) has them taken over by another once idle past the takeover
// time; when the dead one's stage comes back to life and hands them on
// after all, nothing is appended twice.
func TestTakeover(t *testing.T) {
	f := newFixture(t)
	if err := f.put("a", rec1+"\n"+rec2+"\n", PutOptions{}); err != nil {
		t.Fatal(err)
	}
	// c1 takes both and hands nothing on (its stages died): it lingers
	// its takeover time, then leaves them.
	late, err := f.take("a", TakeOptions{Group: "g", Consumer: "c1", Idle: 200 * time.Millisecond, Takeover: time.Second, Linger: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.logs.String(), "ending with records not handed on") {
		t.Errorf("c1 did not say it left records:\n%s", f.logs)
	}
	start := time.Now()
	err = f.pipeline("a", TakeOptions{Group: "g", Consumer: "c2", Idle: 2 * time.Second, Takeover: time.Second}, cat, "b")
	if err != nil {
		t.Fatal(err)
	}
	if got := f.records("b"); len(got) != 2 {
		t.Fatalf("c2 handed on %d records, want c1's 2\n%s", len(got), f.logs)
	}
	if !strings.Contains(f.logs.String(), "taking over records another consumer left idle") || time.Since(start) > 5*time.Second {
		t.Errorf("no takeover said, or it took %v:\n%s", time.Since(start), f.logs)
	}
	// c1's stages hand on their records now, late.
	if err := f.put("b", late, PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := f.records("b"); len(got) != 2 {
		t.Errorf("b holds %d records after the late hand-on, want 2 (not twice)", len(got))
	}
	if !strings.Contains(f.logs.String(), "these records were handed on already") {
		t.Errorf("the late put did not say why it appended nothing:\n%s", f.logs)
	}
}

// TestLostAnswer: a read whose answer is lost with the connection (Redis
// killed as it answered) has made its record the consumer's without the
// take receiving it; the take reads it again from the consumer's own
// records and hands it on in the same take, in order, once.
func TestLostAnswer(t *testing.T) {
	f := newFixture(t)
	if err := f.put("a", rec1+"\n"+rec2+"\n"+rec3+"\n", PutOptions{}); err != nil {
		t.Fatal(err)
	}
	reads := 0
	loseAnswer = func() bool { reads++; return reads == 2 } // rec2's
	defer func() { loseAnswer = nil }()
	err := f.pipeline("a", TakeOptions{Group: "g", Consumer: "c1", Count: 1, Idle: 300 * time.Millisecond, Takeover: 2 * time.Second, Linger: time.Second}, cat, "b")
	if err != nil {
		t.Fatalf("%v\n%s", err, f.logs)
	}
	if got := f.records("b"); strings.Join(got, "\n") != rec1+"\n"+rec2+"\n"+rec3 {
		t.Errorf("b holds %q, want the three records once each, in order\n%s", got, f.logs)
	}
	if g := f.group("a", "g"); g.Pending != 0 {
		t.Errorf("group g of a: %+v, want nothing pending", g)
	}
	if !strings.Contains(f.logs.String(), "redis is unavailable") {
		t.Errorf("the lost answer was not a failure of the read:\n%s", f.logs)
	}
}

func due(feed string, at time.Time) string {
	b, err := ndjson.Marshal(ndjson.Due{Header: ndjson.Head(ndjson.TypeDue), FeedID: feed, URL: "http://example.org/" + feed[:4], Labels: []string{}, ScheduledAt: ndjson.At(at)})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestRunPutOnce: a run (feed, scheduled_at) is put on the bus once while
// it waits there and for the run timeout after it was handed on; a later
// run of the feed is put at once.
func TestRunPutOnce(t *testing.T) {
	f := newFixture(t)
	const feed = "6ba7b811-9dad-51d1-80b4-00c04fd430c8"
	s0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	o := PutOptions{RunTimeout: 400 * time.Millisecond}
	for range 2 {
		if err := f.put("due", due(feed, s0), o); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.xlen("due"); n != 1 {
		t.Fatalf("the run was put %d times", n)
	}
	// Waiting in the stream, it is not put again even past the timeout.
	time.Sleep(500 * time.Millisecond)
	if err := f.put("due", due(feed, s0), o); err != nil {
		t.Fatal(err)
	}
	if n := f.xlen("due"); n != 1 {
		t.Fatalf("a run still waiting was put again: %d records", n)
	}
	// A worker hands it on (its fetch record answers it).
	err := f.pipeline("due", TakeOptions{Group: "w", Idle: 200 * time.Millisecond, Takeover: time.Second}, func(r io.Reader, w io.Writer) {
		rd := ndjson.NewReader(r)
		for {
			l, err := rd.Next()
			if err != nil {
				return
			}
			var d ndjson.Due
			if l.Decode(&d) != nil || d.Bus == nil {
				t.Errorf("take wrote a due record without its bus member: %s", l.Raw)
				return
			}
			b, _ := ndjson.Marshal(ndjson.Fetch{Header: ndjson.Head(ndjson.TypeFetch), FetchID: "01937a4e-8e35-7c6b-9f3e-5f8d5e2f6a01", Due: d})
			w.Write(b)
		}
	}, "parsed")
	if err != nil {
		t.Fatal(err)
	}
	if g := f.group("due", "w"); g.Pending != 0 {
		t.Fatalf("the due record was not acknowledged by its fetch record: %+v", g)
	}
	if err := f.put("due", due(feed, s0), o); err != nil {
		t.Fatal(err)
	}
	if n := f.records("due"); len(n) != 0 {
		t.Errorf("the run was put again within its timeout: %q", n)
	}
	// Past the timeout, a run still due (its fetch was never stored) is
	// put again.
	time.Sleep(500 * time.Millisecond)
	if err := f.put("due", due(feed, s0), o); err != nil {
		t.Fatal(err)
	}
	if n := f.records("due"); len(n) != 1 {
		t.Errorf("a run handed on and still due past the timeout: %d records, want it put again", len(n))
	}
	// A later run of the feed is put at once.
	if err := f.put("due", due(feed, s0.Add(time.Hour)), o); err != nil {
		t.Fatal(err)
	}
	if n := f.records("due"); len(n) != 2 {
		t.Errorf("the next run was not put: %q", n)
	}
}

// TestTrim: what every group acknowledged goes at once; past --maxlen the
// oldest go even unread, and put says how many a group lost.
func TestTrim(t *testing.T) {
	f := newFixture(t)
	if err := f.conn.Client.XGroupCreateMkStream(context.Background(), f.conn.Key("a"), "slow", "0").Err(); err != nil {
		t.Fatal(err)
	}
	var in strings.Builder
	for range 500 {
		in.WriteString(rec1 + "\n")
	}
	if err := f.put("a", in.String(), PutOptions{MaxLen: 100}); err != nil {
		t.Fatal(err)
	}
	n := f.xlen("a")
	if n < 100 || n > 300 {
		t.Errorf("a holds %d records, want about 100", n)
	}
	logs := f.logs.String()
	if !strings.Contains(logs, "records were dropped before group slow had them acknowledged, and are lost") {
		t.Errorf("the loss was not reported:\n%s", logs)
	}
	// A stream without groups keeps what it has up to --maxlen.
	if err := f.put("b", rec1+"\n"+rec2+"\n", PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := f.xlen("b"); n != 2 {
		t.Errorf("b, with no group, holds %d records, want 2", n)
	}
}

// TestRedisRestart: Redis killed and started again while records flow
// from one stream to the next: take and put wait for it, say so once,
// and every record arrives once.
func TestRedisRestart(t *testing.T) {
	f := newFixture(t)
	var in strings.Builder
	const n = 300
	for i := range n {
		fmt.Fprintf(&in, `{"type":"x","v":1,"n":%d}`+"\n", i)
	}
	if err := f.put("a", in.String(), PutOptions{}); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	err := f.pipeline("a", TakeOptions{Group: "g", Count: 20, Window: 60, Idle: time.Second, Takeover: 5 * time.Second}, func(r io.Reader, w io.Writer) {
		rd := bufio.NewReader(r)
		for i := 0; ; i++ {
			line, err := rd.ReadBytes('\n')
			if err != nil {
				return
			}
			w.Write(line)
			if i == n/3 {
				once.Do(func() {
					f.srv.Kill()
					go func() {
						time.Sleep(1500 * time.Millisecond)
						f.srv.Start()
					}()
				})
			}
			time.Sleep(2 * time.Millisecond)
		}
	}, "b")
	if err != nil {
		t.Fatalf("%v\n%s", err, f.logs)
	}
	got := f.records("b")
	seen := map[string]int{}
	for _, r := range got {
		seen[r]++
	}
	if len(got) != n || len(seen) != n {
		t.Errorf("b holds %d records, %d different, want each of %d once", len(got), len(seen), n)
	}
	if g := f.group("a", "g"); g.Pending != 0 || g.Lag != 0 {
		t.Errorf("a/g: %+v, want everything handed on", g)
	}
	logs := f.logs.String()
	if !strings.Contains(logs, "redis is unavailable") || !strings.Contains(logs, "redis is back") {
		t.Errorf("the outage was not said:\n%s", logs)
	}
}

// TestRedisFull: a Redis at its maxmemory (noeviction) refuses a put's
// appends whole; the put waits, says so once, and goes on once there is
// room, every record appended once.
func TestRedisFull(t *testing.T) {
	f := newFixture(t)
	if err := f.conn.Client.ConfigSet(context.Background(), "maxmemory", "3mb").Err(); err != nil {
		t.Fatal(err)
	}
	var in strings.Builder
	const n = 600
	for i := range n {
		fmt.Fprintf(&in, `{"type":"x","v":1,"n":%d,"pad":"%s"}`+"\n", i, strings.Repeat("p", 10000))
	}
	done := make(chan error, 1)
	go func() { done <- f.put("a", in.String(), PutOptions{}) }()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(f.logs.String(), "OOM") {
		if time.Now().After(deadline) {
			t.Fatalf("the put never met a full Redis:\n%s", f.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("the put ended with Redis full: %v", err)
	case <-time.After(time.Second):
	}
	if err := f.conn.Client.ConfigSet(context.Background(), "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := f.xlen("a"); got != n {
		t.Errorf("a holds %d records, want %d", got, n)
	}
	// Each outage said once, then its end: Redis near its limit may take
	// one write between two refusals, which makes two outages.
	var said []string
	for _, line := range strings.Split(f.logs.String(), "\n") {
		switch {
		case strings.Contains(line, "redis is unavailable"):
			said = append(said, "down")
		case strings.Contains(line, "redis is back"):
			said = append(said, "back")
		}
	}
	alternate := len(said) >= 2 && len(said)%2 == 0
	for i := 0; alternate && i < len(said); i += 2 {
		alternate = said[i] == "down" && said[i+1] == "back"
	}
	if !alternate {
		t.Errorf("each outage should be said once, and its end (said: %v):\n%s", said, f.logs)
	}
}

// TestCluster: under a Redis Cluster of three masters, a deployment's
// keys are in one slot (its hash tag), so that its transactions over two
// streams run: records go from one stream to the next, acknowledged as
// they are handed on, and status reads them.
func TestCluster(t *testing.T) {
	c := redistest.StartCluster(t)
	logs := &testenv.Buffer{}
	conn, err := redisconn.Dial(c.URL(), "t", slog.New(slog.NewTextHandler(logs, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	f := &fixture{t: t, conn: conn, logs: logs}
	if err := f.put("a", rec1+"\n"+rec2+"\n"+rec3+"\n", PutOptions{}); err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	err = f.pipeline("a", TakeOptions{Group: "g", Idle: 300 * time.Millisecond, Takeover: 2 * time.Second}, cat, "b")
	if err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	if got := f.records("b"); strings.Join(got, "\n") != rec1+"\n"+rec2+"\n"+rec3 {
		t.Errorf("b holds %q", got)
	}
	if g := f.group("a", "g"); g.Pending != 0 {
		t.Errorf("a/g: %+v", g)
	}
}

func TestStreamIDAfter(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"1-0", "", true},
		{"2-0", "1-0", true},
		{"1-0", "2-0", false},
		{"10-0", "9-5", true},
		{"9-5", "10-0", false},
		{"5-10", "5-9", true},
		{"5-9", "5-10", false},
		{"5-9", "5-9", false},
		{"1700000000000-0", "999999999999-99", true},
	} {
		if got := streamIDAfter(c.a, c.b); got != c.want {
			t.Errorf("streamIDAfter(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
