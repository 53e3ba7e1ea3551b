package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/feedpipe/feedpipe/internal/bus"
	"github.com/feedpipe/feedpipe/internal/bus/redisconn"
)

// BusStatus shows a Redis bus's status (docs/bus.md) as feed-bus status
// does: on /metrics, through Collect (a prometheus.Collector), as JSON at
// GET /bus, and on the web page (/web/bus, and a panel of the dashboard).
// Each scrape or request reads the status afresh, within Timeout; a Redis
// that does not answer is feedpipe_bus_up 0, a 503 and a page that says
// so. The server has one only when Config.Bus is set (feed-serve --redis).
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

// getBus is GET /bus: the status as JSON (bus.Status), read afresh; 503
// when the bus's Redis does not answer.
func (s *Server) getBus(w http.ResponseWriter, r *http.Request) {
	st, err := s.bus.read(r.Context())
	if err != nil {
		problem(w, r, http.StatusServiceUnavailable, "the bus does not answer", fmt.Sprintf(busNoRedisFormat, err))
		return
	}
	body, err := json.Marshal(st)
	if err != nil {
		problem(w, r, http.StatusInternalServerError, "the bus's status", err.Error())
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	send(w, r, http.StatusOK, "application/json", append(body, '\n'), time.Time{})
}

// busView is the bus on a page: its status, or why it could not be read.
type busView struct {
	Status bus.Status
	Err    string
}

// busView reads the status for a page.
func (s *Server) busView(ctx context.Context) *busView {
	st, err := s.bus.read(ctx)
	if err != nil {
		return &busView{Err: fmt.Sprintf(busNoRedisFormat, err)}
	}
	return &busView{Status: st}
}

// webBus is GET /web/bus: the nodes, the streams and their groups, as
// feed-bus status prints them; 503 when the bus's Redis does not answer.
func (s *Server) webBus(w http.ResponseWriter, r *http.Request) {
	v := s.busView(r.Context())
	status := http.StatusOK
	if v.Err != "" {
		status = http.StatusServiceUnavailable
	}
	s.render(w, r, status, "bus", pageData{Title: "Bus", Nav: "bus", Data: v})
}
