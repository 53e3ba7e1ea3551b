package serve

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/feedpipe/feedpipe/internal/bus"
	"github.com/feedpipe/feedpipe/internal/bus/redisconn"
	"github.com/feedpipe/feedpipe/internal/bus/redistest"
)

// TestBusStatus: the bus's status on /metrics and on its page, as feed-bus
// status reads it; a Redis that does not answer is said so.
func TestBusStatus(t *testing.T) {
	srv := redistest.Start(t)
	conn, err := redisconn.Dial(srv.URL(), "t", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := context.Background()
	run := func(cfg bus.Config) {
		t.Helper()
		cfg.Conn, cfg.Node = conn, "w1"
		if err := bus.Run(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	run(bus.Config{Command: bus.CmdPut, Stream: "due", In: strings.NewReader(`{"type":"x","v":1}` + "\n" + `{"type":"x","v":1}` + "\n")})
	run(bus.Config{Command: bus.CmdHeartbeat, Role: "worker"})
	if err := conn.Client.XGroupCreate(ctx, conn.Key("due"), "workers", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := conn.Client.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "workers", Consumer: "w1", Streams: []string{conn.Key("due"), ">"}, Count: 1, Block: -1}).Err(); err != nil {
		t.Fatal(err)
	}
	b := NewBusStatus(conn)
	reg := prometheus.NewRegistry()
	reg.MustRegister(b)
	got := gather(t, reg)
	for series, want := range map[string]float64{
		"feedpipe_bus_up":                                                     1,
		"feedpipe_bus_nodes{role=worker}":                                     1,
		"feedpipe_bus_stream_length{stream=due}":                              2,
		"feedpipe_bus_group_pending{group=workers,stream=due}":                1,
		"feedpipe_bus_group_lag{group=workers,stream=due}":                    1,
		"feedpipe_bus_consumer_pending{consumer=w1,group=workers,stream=due}": 1,
	} {
		if v, ok := got[series]; !ok || v != want {
			t.Errorf("%s = %v (%v), want %v\n%v", series, v, ok, want, got)
		}
	}
	if v := got["feedpipe_bus_node_last_seen_timestamp_seconds{node=w1,role=worker}"]; time.Since(time.Unix(int64(v), 0)) > time.Minute {
		t.Errorf("w1 last seen at %v", v)
	}

	rec := httptest.NewRecorder()
	b.ServeHTTP(rec, httptest.NewRequest("GET", "/bus?format=json", nil))
	var st bus.Status
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || len(st.Streams) != 1 || st.Streams[0].Groups[0].Pending != 1 {
		t.Errorf("JSON: %v %s", err, rec.Body)
	}
	rec = httptest.NewRecorder()
	b.ServeHTTP(rec, httptest.NewRequest("GET", "/bus", nil))
	for _, s := range []string{"<td>w1</td><td>worker</td>", "<td>due</td><td>2</td><td>workers</td><td>1</td><td>1</td>"} {
		if !strings.Contains(rec.Body.String(), s) {
			t.Errorf("page lacks %q:\n%s", s, rec.Body)
		}
	}

	srv.Kill()
	b.Timeout = 300 * time.Millisecond
	if got := gather(t, reg); len(got) != 1 || got["feedpipe_bus_up"] != 0 {
		t.Errorf("with Redis down: %v, want feedpipe_bus_up 0 alone", got)
	}
	rec = httptest.NewRecorder()
	b.ServeHTTP(rec, httptest.NewRequest("GET", "/bus", nil))
	if rec.Code != 503 || !strings.Contains(rec.Body.String(), "did not answer") {
		t.Errorf("with Redis down: %d %s", rec.Code, rec.Body)
	}
}

// gather is the registry's series, named as name{label=value,...} with
// the labels sorted.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			name := mf.GetName()
			if len(labels) > 0 {
				name += "{" + strings.Join(labels, ",") + "}"
			}
			out[name] = m.GetGauge().GetValue()
		}
	}
	return out
}
