package serve

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/feedpipe/feedpipe/internal/bus"
	"github.com/feedpipe/feedpipe/internal/bus/redisconn"
	"github.com/feedpipe/feedpipe/internal/bus/redistest"
)

// busWorld is a world whose feed-serve shows a bus on a real redis-server:
// a stream "due" of two records, one taken by the group "workers" and not
// acknowledged, and the heartbeat of the worker w1.
func busWorld(t *testing.T) (*world, *redistest.Server) {
	t.Helper()
	srv := redistest.Start(t)
	conn, err := redisconn.Dial(srv.URL(), "t", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
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
	return newWorld(t, func(c *Config) { c.Bus = conn }), srv
}

// TestBusStatus: with a bus, its status is on /metrics, at GET /bus, on
// /web/bus and on the dashboard, as feed-bus status reads it; a Redis that
// does not answer is said so on each.
func TestBusStatus(t *testing.T) {
	w, srv := busWorld(t)
	got := gather(t, w.s.reg)
	for series, want := range map[string]float64{
		"feedpipe_bus_up":                                                     1,
		"feedpipe_bus_nodes{role=worker}":                                     1,
		"feedpipe_bus_stream_length{stream=due}":                              2,
		"feedpipe_bus_group_pending{group=workers,stream=due}":                1,
		"feedpipe_bus_group_lag{group=workers,stream=due}":                    1,
		"feedpipe_bus_consumer_pending{consumer=w1,group=workers,stream=due}": 1,
	} {
		if v, ok := got[series]; !ok || v != want {
			t.Errorf("%s = %v (%v), want %v", series, v, ok, want)
		}
	}
	if v := got["feedpipe_bus_node_last_seen_timestamp_seconds{node=w1,role=worker}"]; time.Since(time.Unix(int64(v), 0)) > time.Minute {
		t.Errorf("w1 last seen at %v", v)
	}
	if m := w.get("/metrics"); !strings.Contains(string(m.body), `feedpipe_bus_group_pending{group="workers",stream="due"} 1`) {
		t.Errorf("/metrics has no pending of due's workers:\n%s", m.body)
	}

	r := w.get("/bus")
	var st bus.Status
	if r.status != 200 || json.Unmarshal(r.body, &st) != nil || len(st.Streams) != 1 || st.Streams[0].Length != 2 ||
		st.Streams[0].Groups[0].Pending != 1 || st.Streams[0].Groups[0].Lag != 1 || len(st.Nodes) != 1 || st.Nodes[0].Name != "w1" {
		t.Errorf("GET /bus: %d %s", r.status, r.body)
	}
	rows := []string{"<td>w1</td><td>worker</td>", "<td>due</td><td>2</td><td>workers</td><td>1</td><td>1</td>"}
	for _, page := range []string{"/web/bus", "/web/dashboard"} {
		r := w.get(page)
		if r.status != 200 {
			t.Errorf("%s: %d %s", page, r.status, r.body)
		}
		for _, s := range append(rows, `href="/web/bus"`) {
			if !strings.Contains(string(r.body), s) {
				t.Errorf("%s lacks %q:\n%s", page, s, r.body)
			}
		}
	}
	if r := w.get("/"); !strings.Contains(string(r.body), `href="/web/bus"`) {
		t.Errorf("the menu has no Bus:\n%s", r.body)
	}

	srv.Kill()
	w.s.bus.Timeout = 300 * time.Millisecond
	if got := gather(t, w.s.reg); got["feedpipe_bus_up"] != 0 || len(filterPrefix(got, "feedpipe_bus_")) != 1 {
		t.Errorf("with Redis down: %v, want feedpipe_bus_up 0 alone", filterPrefix(got, "feedpipe_bus_"))
	}
	if p := w.get("/bus").problem(t, 503); !strings.Contains(p.Detail, "did not answer") {
		t.Errorf("GET /bus with Redis down: %+v", p)
	}
	if r := w.get("/web/bus"); r.status != 503 || !strings.Contains(string(r.body), "did not answer") {
		t.Errorf("/web/bus with Redis down: %d %s", r.status, r.body)
	}
	if r := w.get("/web/dashboard"); r.status != 200 || !strings.Contains(string(r.body), "did not answer") {
		t.Errorf("the dashboard with Redis down: %d %s", r.status, r.body)
	}
}

// TestNoBus: without a bus (feed-serve without --redis), there is no bus
// route, page, menu entry or series.
func TestNoBus(t *testing.T) {
	w := newWorld(t)
	for _, path := range []string{"/bus", "/web/bus"} {
		if r := w.get(path); r.status != 404 {
			t.Errorf("%s without a bus: %d, want 404", path, r.status)
		}
	}
	for _, path := range []string{"/", "/web/dashboard", "/metrics"} {
		if r := w.get(path); strings.Contains(string(r.body), "/web/bus") || strings.Contains(string(r.body), "feedpipe_bus_") {
			t.Errorf("%s without a bus shows one:\n%s", path, r.body)
		}
	}
}

// filterPrefix is the series of got whose name starts with prefix.
func filterPrefix(got map[string]float64, prefix string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range got {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out
}

// gather is the registry's gauges, named as name{label=value,...} with
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
