package bus

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/feedpipe/feedpipe/internal/bus/redisconn"
)

// Heartbeats: every feed-bus process refreshes its node's heartbeat every
// HeartbeatEvery while it runs, and the heartbeat lives DefaultHeartbeatTTL
// unless refreshed (feed-loop writes one per cycle that outlives its
// pause).
const (
	HeartbeatEvery      = 5 * time.Second
	DefaultHeartbeatTTL = 30 * time.Second
)

// HeartbeatOptions are feed-bus heartbeat's.
type HeartbeatOptions struct {
	TTL    time.Duration     // how long it lives; DefaultHeartbeatTTL
	Fields map[string]string // more to show (feed-loop: the last cycle)
}

// StatusOptions are feed-bus status's.
type StatusOptions struct {
	JSON bool // one JSON object instead of the tables
}

// Status is what the bus looks like: the nodes whose heartbeat is alive,
// and each stream with its consumer groups.
type Status struct {
	Redis   string         `json:"redis"`
	Prefix  string         `json:"prefix"`
	At      time.Time      `json:"at"`
	Nodes   []NodeStatus   `json:"nodes"`
	Streams []StreamStatus `json:"streams"`
}

// NodeStatus is one node's heartbeat.
type NodeStatus struct {
	Name string    `json:"name"`
	Role string    `json:"role"`
	Seen time.Time `json:"seen"` // its last heartbeat
	// Doing is when each of its processes last said it was at work, by
	// what it does ("take due (workers)", "put parsed").
	Doing map[string]time.Time `json:"doing"`
	// Fields are what else it said (feed-loop: its last cycle).
	Fields map[string]string `json:"fields"`
}

// StreamStatus is one stream.
type StreamStatus struct {
	Name    string        `json:"name"`
	Length  int64         `json:"length"`
	FirstID string        `json:"first_id"`
	LastID  string        `json:"last_id"`
	Groups  []GroupStatus `json:"groups"`
}

// GroupStatus is one consumer group of a stream: Pending records taken and
// not yet acknowledged, Lag records not yet taken (-1 when Redis cannot
// tell, after entries were deleted under it).
type GroupStatus struct {
	Name          string           `json:"name"`
	Pending       int64            `json:"pending"`
	Lag           int64            `json:"lag"`
	LastDelivered string           `json:"last_delivered_id"`
	Consumers     []ConsumerStatus `json:"consumers"`
}

// ConsumerStatus is one consumer of a group: its records pending and how
// long since it last read or claimed.
type ConsumerStatus struct {
	Name    string        `json:"name"`
	Pending int64         `json:"pending"`
	Idle    time.Duration `json:"idle_ns"`
}

// Keys of the deployment's own bookkeeping, beside its streams.
func nodesKey(c *redisconn.Conn) string          { return c.Key("meta", "nodes") }
func streamsKey(c *redisconn.Conn) string        { return c.Key("meta", "streams") }
func nodeKey(c *redisconn.Conn, n string) string { return c.Key("node", n) }

// ReadStatus reads the bus's status at now: what feed-bus status prints
// and feed-serve's metrics show.
func ReadStatus(ctx context.Context, c *redisconn.Conn, now time.Time) (Status, error) {
	st := Status{Redis: c.Addr, Prefix: c.Prefix, At: now.UTC(), Nodes: []NodeStatus{}, Streams: []StreamStatus{}}
	rdb := c.Client
	names, err := rdb.ZRange(ctx, nodesKey(c), 0, -1).Result()
	if err != nil {
		return st, err
	}
	for _, n := range names {
		h, err := rdb.HGetAll(ctx, nodeKey(c, n)).Result()
		if err != nil {
			return st, err
		}
		if len(h) == 0 { // its heartbeat ran out
			rdb.ZRem(ctx, nodesKey(c), n)
			continue
		}
		ns := NodeStatus{Name: n, Role: h["role"], Doing: map[string]time.Time{}, Fields: map[string]string{}}
		for k, v := range h {
			switch {
			case k == "role":
			case k == "seen":
				ns.Seen = unixMS(v)
			case strings.HasPrefix(k, "doing "):
				ns.Doing[strings.TrimPrefix(k, "doing ")] = unixMS(v)
			default:
				ns.Fields[k] = v
			}
		}
		st.Nodes = append(st.Nodes, ns)
	}
	streams, err := rdb.SMembers(ctx, streamsKey(c)).Result()
	if err != nil {
		return st, err
	}
	slices.Sort(streams)
	for _, name := range streams {
		s, ok, err := readStream(ctx, rdb, c.Key(name), name)
		if err != nil {
			return st, err
		}
		if ok {
			st.Streams = append(st.Streams, s)
		}
	}
	return st, nil
}

func unixMS(v string) time.Time {
	ms, _ := strconv.ParseInt(v, 10, 64)
	return time.UnixMilli(ms).UTC()
}

func readStream(ctx context.Context, rdb redis.UniversalClient, key, name string) (StreamStatus, bool, error) {
	s := StreamStatus{Name: name, Groups: []GroupStatus{}}
	info, err := rdb.XInfoStream(ctx, key).Result()
	if err != nil {
		if strings.Contains(err.Error(), "no such key") {
			return s, false, nil
		}
		return s, false, err
	}
	s.Length, s.FirstID, s.LastID = info.Length, info.FirstEntry.ID, info.LastEntry.ID
	groups, err := rdb.XInfoGroups(ctx, key).Result()
	if err != nil {
		return s, false, err
	}
	for _, g := range groups {
		gs := GroupStatus{Name: g.Name, Pending: g.Pending, Lag: g.Lag, LastDelivered: g.LastDeliveredID, Consumers: []ConsumerStatus{}}
		consumers, err := rdb.XInfoConsumers(ctx, key, g.Name).Result()
		if err != nil {
			return s, false, err
		}
		for _, cs := range consumers {
			gs.Consumers = append(gs.Consumers, ConsumerStatus{Name: cs.Name, Pending: cs.Pending, Idle: cs.Idle})
		}
		s.Groups = append(s.Groups, gs)
	}
	return s, true, nil
}

// status prints the status.
func (b *bus) status(ctx context.Context) error {
	var st Status
	err := b.conn.Do(ctx, "reading the status", func(ctx context.Context) error {
		var err error
		st, err = ReadStatus(ctx, b.conn, b.cfg.Clock.Now())
		return err
	})
	if err != nil {
		return fmt.Errorf("bus: status: %w", err)
	}
	if b.cfg.Status.JSON {
		line, err := json.Marshal(st)
		if err != nil {
			return err
		}
		_, err = b.cfg.Out.Write(append(line, '\n'))
		return err
	}
	_, err = io.WriteString(b.cfg.Out, FormatStatus(st))
	return err
}

// FormatStatus is the status as feed-bus status prints it: the nodes, then
// the streams with their groups.
func FormatStatus(st Status) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "redis %s, prefix %s, at %s\n\n", st.Redis, st.Prefix, st.At.Format(time.RFC3339))
	tw := tabwriter.NewWriter(&sb, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tROLE\tSEEN\tDOING")
	if len(st.Nodes) == 0 {
		fmt.Fprintln(tw, "(none)\t\t\t")
	}
	for _, n := range st.Nodes {
		var doing []string
		for what, at := range n.Doing {
			doing = append(doing, fmt.Sprintf("%s %s ago", what, ago(st.At, at)))
		}
		slices.Sort(doing)
		for k, v := range n.Fields {
			doing = append(doing, k+"="+v)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s ago\t%s\n", n.Name, cmp.Or(n.Role, "-"), ago(st.At, n.Seen), strings.Join(doing, "; "))
	}
	tw.Flush()
	sb.WriteString("\n")
	tw = tabwriter.NewWriter(&sb, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STREAM\tLENGTH\tGROUP\tPENDING\tLAG\tCONSUMERS (PENDING, IDLE)")
	if len(st.Streams) == 0 {
		fmt.Fprintln(tw, "(none)\t\t\t\t\t")
	}
	for _, s := range st.Streams {
		if len(s.Groups) == 0 {
			fmt.Fprintf(tw, "%s\t%d\t-\t\t\t\n", s.Name, s.Length)
		}
		for i, g := range s.Groups {
			name, length := s.Name, strconv.FormatInt(s.Length, 10)
			if i > 0 {
				name, length = "", ""
			}
			lag := strconv.FormatInt(g.Lag, 10)
			if g.Lag < 0 {
				lag = "?"
			}
			var cs []string
			for _, c := range g.Consumers {
				cs = append(cs, fmt.Sprintf("%s (%d, %s)", c.Name, c.Pending, c.Idle.Round(time.Second)))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", name, length, g.Name, g.Pending, lag, strings.Join(cs, ", "))
		}
	}
	tw.Flush()
	return sb.String()
}

func ago(now, t time.Time) string {
	d := now.Sub(t)
	if d < 0 {
		d = 0
	}
	return d.Round(time.Second).String()
}

// heartbeat refreshes this node's heartbeat: its role, now, and that its
// process does what (ttl: how long it lives unless refreshed). Best
// effort: the work never waits for it.
func (b *bus) heartbeat(ctx context.Context, what string, ttl time.Duration, fields map[string]string) error {
	now := b.cfg.Clock.Now()
	ms := strconv.FormatInt(now.UnixMilli(), 10)
	vals := []any{"seen", ms, "pid", strconv.Itoa(os.Getpid()), "version", b.cfg.Version}
	if b.cfg.Role != "" {
		vals = append(vals, "role", b.cfg.Role)
	}
	if what != "" {
		vals = append(vals, "doing "+what, ms)
	}
	for k, v := range fields {
		vals = append(vals, k, v)
	}
	key := nodeKey(b.conn, b.cfg.Node)
	_, err := b.conn.Client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, vals...)
		p.PExpire(ctx, key, ttl)
		p.ZAdd(ctx, nodesKey(b.conn), redis.Z{Score: float64(now.UnixMilli()), Member: b.cfg.Node})
		return nil
	})
	return err
}

// beat keeps this process's heartbeat until ctx ends.
func (b *bus) beat(ctx context.Context, what string) {
	for {
		b.heartbeat(ctx, what, DefaultHeartbeatTTL, nil)
		select {
		case <-ctx.Done():
			return
		case <-b.cfg.Clock.After(HeartbeatEvery):
		}
	}
}

// heartbeatOnce is feed-bus heartbeat: one heartbeat, for feed-loop.
func (b *bus) heartbeatOnce(ctx context.Context) error {
	ttl := b.cfg.Heartbeat.TTL
	if ttl <= 0 {
		ttl = DefaultHeartbeatTTL
	}
	return b.conn.Do(ctx, "writing the heartbeat", func(ctx context.Context) error {
		return b.heartbeat(ctx, "", ttl, b.cfg.Heartbeat.Fields)
	})
}

// register adds a stream to the deployment's list, which status reads.
func (b *bus) register(ctx context.Context, stream string) error {
	return b.conn.Do(ctx, "registering the stream "+stream, func(ctx context.Context) error {
		return b.conn.Client.SAdd(ctx, streamsKey(b.conn), stream).Err()
	})
}
