package serve

import (
	"context"
	"encoding/json"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedpipe/feedpipe/internal/bus"
	"github.com/feedpipe/feedpipe/internal/bus/redisconn"
)

// BusStatus shows a Redis bus's status (docs/bus.md) as feed-bus status
// does: on /metrics, through Collect (a prometheus.Collector), and on a
// page of its own, through ServeHTTP (HTML, or JSON when asked for with
// ?format=json or Accept: application/json). Each scrape or request reads
// the status afresh, within Timeout; a Redis that does not answer is
// feedpipe_bus_up 0 and a page that says so.
type BusStatus struct {
	Conn    *redisconn.Conn
	Now     func() time.Time // default time.Now
	Timeout time.Duration    // default 2 s
}

// NewBusStatus returns the BusStatus of the bus on conn.
func NewBusStatus(conn *redisconn.Conn) *BusStatus {
	return &BusStatus{Conn: conn, Now: time.Now, Timeout: 2 * time.Second}
}

var (
	busUp            = prometheus.NewDesc("feedpipe_bus_up", "1 when the bus's Redis answered the status read, else 0.", nil, nil)
	busNodes         = prometheus.NewDesc("feedpipe_bus_nodes", "Nodes whose heartbeat is alive, by role.", []string{"role"}, nil)
	busNodeSeen      = prometheus.NewDesc("feedpipe_bus_node_last_seen_timestamp_seconds", "A node's last heartbeat.", []string{"node", "role"}, nil)
	busStreamLength  = prometheus.NewDesc("feedpipe_bus_stream_length", "Records a stream holds.", []string{"stream"}, nil)
	busGroupPending  = prometheus.NewDesc("feedpipe_bus_group_pending", "Records a consumer group took and has not acknowledged.", []string{"stream", "group"}, nil)
	busGroupLag      = prometheus.NewDesc("feedpipe_bus_group_lag", "Records a consumer group has not taken yet (absent when Redis cannot tell).", []string{"stream", "group"}, nil)
	busConsumerPend  = prometheus.NewDesc("feedpipe_bus_consumer_pending", "Records a consumer holds unacknowledged.", []string{"stream", "group", "consumer"}, nil)
	busConsumerIdle  = prometheus.NewDesc("feedpipe_bus_consumer_idle_seconds", "Time since a consumer last read or claimed.", []string{"stream", "group", "consumer"}, nil)
	busDescs         = []*prometheus.Desc{busUp, busNodes, busNodeSeen, busStreamLength, busGroupPending, busGroupLag, busConsumerPend, busConsumerIdle}
	busPageTemplate  = template.Must(template.New("bus").Funcs(template.FuncMap{"ago": busAgo}).Parse(busPageHTML))
	busNoRedisFormat = "the bus's Redis did not answer: %v"
)

// read reads the status within the timeout.
func (b *BusStatus) read(ctx context.Context) (bus.Status, error) {
	now := time.Now
	if b.Now != nil {
		now = b.Now
	}
	timeout := b.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return bus.ReadStatus(ctx, b.Conn, now())
}

// Describe is prometheus.Collector's.
func (b *BusStatus) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range busDescs {
		ch <- d
	}
}

// Collect is prometheus.Collector's.
func (b *BusStatus) Collect(ch chan<- prometheus.Metric) {
	st, err := b.read(context.Background())
	if err != nil {
		ch <- prometheus.MustNewConstMetric(busUp, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(busUp, prometheus.GaugeValue, 1)
	roles := map[string]int{}
	for _, n := range st.Nodes {
		roles[n.Role]++
		ch <- prometheus.MustNewConstMetric(busNodeSeen, prometheus.GaugeValue, float64(n.Seen.UnixMilli())/1000, n.Name, n.Role)
	}
	for role, n := range roles {
		ch <- prometheus.MustNewConstMetric(busNodes, prometheus.GaugeValue, float64(n), role)
	}
	for _, s := range st.Streams {
		ch <- prometheus.MustNewConstMetric(busStreamLength, prometheus.GaugeValue, float64(s.Length), s.Name)
		for _, g := range s.Groups {
			ch <- prometheus.MustNewConstMetric(busGroupPending, prometheus.GaugeValue, float64(g.Pending), s.Name, g.Name)
			if g.Lag >= 0 {
				ch <- prometheus.MustNewConstMetric(busGroupLag, prometheus.GaugeValue, float64(g.Lag), s.Name, g.Name)
			}
			for _, c := range g.Consumers {
				ch <- prometheus.MustNewConstMetric(busConsumerPend, prometheus.GaugeValue, float64(c.Pending), s.Name, g.Name, c.Name)
				ch <- prometheus.MustNewConstMetric(busConsumerIdle, prometheus.GaugeValue, c.Idle.Seconds(), s.Name, g.Name, c.Name)
			}
		}
	}
}

// ServeHTTP serves the status: a page of its own, or JSON (bus.Status).
func (b *BusStatus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	st, err := b.read(r.Context())
	asJSON := r.URL.Query().Get("format") == "json" || strings.Contains(r.Header.Get("Accept"), "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if asJSON {
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			json.NewEncoder(w).Encode(map[string]string{"error": strings.ReplaceAll(busNoRedisFormat, "%v", err.Error())})
			return
		}
		json.NewEncoder(w).Encode(st)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	busPageTemplate.Execute(w, struct {
		Status bus.Status
		Err    error
	}{st, err})
}

func busAgo(now, t time.Time) string {
	d := now.Sub(t)
	if d < 0 {
		d = 0
	}
	return d.Round(time.Second).String()
}

// busPageHTML is the page: the nodes, then the streams and their groups,
// as feed-bus status prints them.
const busPageHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>feedpipe: the bus</title></head>
<body>
<h1>The bus</h1>
{{if .Err}}<p role="alert">The bus's Redis did not answer: {{.Err}}</p>{{else}}
<p>Redis {{.Status.Redis}}, prefix {{.Status.Prefix}}, at {{.Status.At.Format "2006-01-02T15:04:05Z07:00"}}.</p>
<h2>Nodes</h2>
<table><thead><tr><th>Node</th><th>Role</th><th>Seen</th><th>Doing</th></tr></thead><tbody>
{{range .Status.Nodes}}<tr><td>{{.Name}}</td><td>{{.Role}}</td><td>{{ago $.Status.At .Seen}} ago</td><td>{{range $what, $at := .Doing}}{{$what}} ({{ago $.Status.At $at}} ago) {{end}}{{range $k, $v := .Fields}}{{$k}}={{$v}} {{end}}</td></tr>
{{else}}<tr><td colspan="4">No node's heartbeat is alive.</td></tr>{{end}}
</tbody></table>
<h2>Streams</h2>
<table><thead><tr><th>Stream</th><th>Length</th><th>Group</th><th>Pending</th><th>Lag</th><th>Consumers (pending, idle)</th></tr></thead><tbody>
{{range .Status.Streams}}{{$s := .}}{{range .Groups}}<tr><td>{{$s.Name}}</td><td>{{$s.Length}}</td><td>{{.Name}}</td><td>{{.Pending}}</td><td>{{if lt .Lag 0}}?{{else}}{{.Lag}}{{end}}</td><td>{{range .Consumers}}{{.Name}} ({{.Pending}}, {{.Idle}}) {{end}}</td></tr>
{{else}}<tr><td>{{$s.Name}}</td><td>{{$s.Length}}</td><td colspan="4">no consumer group</td></tr>{{end}}
{{else}}<tr><td colspan="6">No stream.</td></tr>{{end}}
</tbody></table>{{end}}
</body></html>
`
