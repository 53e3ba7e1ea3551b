package apps

import (
	"context"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/bus"
	"github.com/feedpipe/feedpipe/internal/cmdkit"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// FeedBus is feed-bus, which carries the pipeline's records between
// machines over Redis Streams: put appends stdin to a stream, take writes
// a consumer group's share of one to stdout.
func FeedBus() *cli.App {
	return &cli.App{
		Name:  "feed-bus",
		Usage: "a pipe between machines: NDJSON records to and from Redis Streams",
		UsageText: `coordinator:  feed-due | feed-bus put due
                 feed-bus take parsed --group store --store-fetches --upstream due:workers --window 0 --count 512 | feed-dedup | feed-store | feed-media | feed-bus put events --events-log
   worker:       feed-bus wait due --group workers && feed-bus take due --group workers | feed-fetch | feed-parse | feed-scrape | feed-bus put parsed
   any reader:   feed-bus take events --group mine --no-ack | jq -r .title
   feed-bus status`,
		Description: `A pipe between two stages becomes a Redis stream between two machines, and
nothing else changes: "put STREAM" appends each record of stdin to the
stream, "take STREAM --group G" writes the records the consumer group G
hands this consumer on stdout, each with a "bus" member naming its stream
entry. The stream's next put acknowledges an entry in the same Redis
transaction that appends what answers it (for a due record, the fetch
record feed-fetch made of it), so that a consumer killed at any moment
loses nothing: another consumer takes over its records once they have
been idle past --takeover. bus.md in share/doc/feedpipe has the roles,
the streams and what each failure leads to; "man 5 feedpipe-ndjson" the bus and bus_ack
records. Keys are {PREFIX}:STREAM, under one hash tag for Redis Cluster.
A Redis that is down, restarting or full is waited for, with backoff,
said once; nothing is lost meanwhile.`,
		Flags: append(append(cmdkit.BusFlags(),
			&cli.StringFlag{Name: "node", Usage: "this machine's name in heartbeats, and a take's consumer name unless --consumer", EnvVars: []string{"FEEDPIPE_BUS_NODE"}, DefaultText: "the host name"},
			&cli.StringFlag{Name: "role", Usage: "what this node is, shown by status: coordinator, worker, ...", EnvVars: []string{"FEEDPIPE_BUS_ROLE"}},
		), cmdkit.CommonFlags()...),
		Commands: []*cli.Command{busPutCommand(), busTakeCommand(), busWaitCommand(), busStatusCommand(), busHeartbeatCommand()},
	}
}

func busPutCommand() *cli.Command {
	return &cli.Command{
		Name:      "put",
		Usage:     "append each record of stdin to STREAM",
		ArgsUsage: "STREAM",
		Description: `Appends the records of stdin to STREAM, a feed's entries together with the
record that closes them, in one transaction that also acknowledges the
entries they answer: the bus member of a record taken by feed-bus take,
the due.bus of a fetch record, the ids of a bus_ack. Records someone else
handed on already (it took them over) are not appended twice. A due record
naming a run (feed_id and scheduled_at) is appended once: the same run is
not put again within --run-timeout, nor while it waits in the stream. A
fetch record whose payload is in --store (a worker's scratch store) goes
with that payload and feed-fetch's line of it, and with the pages its
entries came from. With --events-log, the events put are the store's
events log, from where the last put left it, rather than those on stdin
(the same lines, feed-store writes the log first): none is lost or put
twice whatever is killed. After appending, what every consumer group
acknowledged is trimmed, and the stream is kept to about --maxlen records;
what that drops unacknowledged is reported.`,
		Flags: []cli.Flag{
			&cli.Int64Flag{Name: "maxlen", Usage: "keep the stream to about this many records (MAXLEN ~); -1: no limit", Value: bus.DefaultMaxLen, EnvVars: []string{"FEEDPIPE_BUS_MAXLEN"}},
			&cli.DurationFlag{Name: "run-timeout", Usage: "a due record's run is not put again for this long once taken", Value: bus.DefaultRunTimeout, EnvVars: []string{"FEEDPIPE_BUS_RUN_TIMEOUT"}},
			&cli.BoolFlag{Name: "events-log", Usage: "put the store's events log (events/), not stdin's events: the coordinator's put events"},
		},
		Action: func(c *cli.Context) error {
			cfg, err := busConfig(c, bus.CmdPut, true)
			if err != nil {
				return err
			}
			if c.Bool("events-log") {
				if cfg.Store, err = cmdkit.OpenStore(c, cmdkit.ReadOnly); err != nil {
					return err
				}
			} else if cfg.Store, err = cmdkit.OpenStoreIfExists(c); err != nil {
				return err
			}
			cfg.Put = bus.PutOptions{MaxLen: c.Int64("maxlen"), RunTimeout: c.Duration("run-timeout"), EventsLog: c.Bool("events-log")}
			if cfg.Put.MaxLen == 0 || cfg.Put.MaxLen < -1 {
				return cmdkit.Usagef("--maxlen %d: it must be a number of records, or -1 for no limit", cfg.Put.MaxLen)
			}
			return bus.Run(c.Context, cfg)
		},
	}
}

func busTakeCommand() *cli.Command {
	return &cli.Command{
		Name:      "take",
		Usage:     "write a consumer group's share of STREAM to stdout",
		ArgsUsage: "STREAM",
		Description: `Writes the records of STREAM that the consumer group --group hands this
consumer, each with a bus member (a due record's in its struct), and
keeps them its own until they are acknowledged: first those it held when
its last take ended, then those other consumers left idle past
--takeover (they died), then new ones. At most --window records are in
hand at once, so that several workers share the work. It ends when no
record came for --idle (but not before the first, unless --wait; nor
while --upstream's group still has records to hand on), after --for, or
on a signal; it closes stdout and stays until its records are handed on
(at most --takeover). With --store-fetches (the coordinator), each fetch
record's payload is checked against its body_sha256 and its key and
written to --store with feed-fetch's record, as feed-fetch would have,
and a bus_ack follows each batch of complete groups for put to
acknowledge once feed-store has passed it on. A record it cannot hand out
(not JSON, a bad field or key, a payload not matching its sha256, one
delivered over --max-deliveries times) is refused with a line on stderr
and moved to the stream "dead"; the others go on, and it exits 1.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "group", Usage: "the consumer group (required)"},
			&cli.StringFlag{Name: "consumer", Usage: "this consumer's name in the group", EnvVars: []string{"FEEDPIPE_BUS_CONSUMER"}, DefaultText: "--node"},
			&cli.IntFlag{Name: "window", Usage: "records in hand at most, taken and not handed on, so that workers share the work; 0: no limit (the coordinator's take)", Value: bus.DefaultWindow, EnvVars: []string{"FEEDPIPE_BUS_WINDOW"}},
			&cli.IntFlag{Name: "count", Usage: "records read at a time", Value: bus.DefaultCount},
			&cli.DurationFlag{Name: "wait", Usage: "end if no first record came in this long; 0: wait as long as it takes"},
			&cli.DurationFlag{Name: "idle", Usage: "end once no record came for this long; -1s: never (follow the stream)", Value: bus.DefaultIdle, EnvVars: []string{"FEEDPIPE_BUS_IDLE"}},
			&cli.DurationFlag{Name: "for", Usage: "end after this long in all; 0: no limit"},
			&cli.StringFlag{Name: "upstream", Usage: "STREAM:GROUP: do not end while that group has records of that stream to hand on (the coordinator: due:workers)"},
			&cli.DurationFlag{Name: "takeover", Usage: "take over another consumer's records once idle this long (it died)", Value: bus.DefaultTakeover, EnvVars: []string{"FEEDPIPE_BUS_TAKEOVER"}},
			&cli.IntFlag{Name: "max-deliveries", Usage: "move a record delivered more often than this, never handed on, to the dead stream", Value: bus.DefaultMaxDeliveries},
			&cli.BoolFlag{Name: "store-fetches", Usage: "the coordinator: check and write fetch records' payloads to --store, and acknowledge by bus_ack records"},
			&cli.BoolFlag{Name: "no-ack", Usage: "take without acknowledgement (XREADGROUP NOACK): a reader that hands nothing on"},
			&cli.StringFlag{Name: "from", Usage: `where a new group starts: "0", every record the stream has, or "$", those put from now on`, Value: "0"},
			&cli.Int64Flag{Name: "max-body-bytes", Usage: "with --store-fetches: refuse a payload larger than this, decoded", Value: bus.DefaultMaxBodyBytes},
			&cli.IntFlag{Name: "max-record-bytes", Usage: "refuse a record longer than this", Value: ndjson.MaxLineBytes},
		},
		Action: func(c *cli.Context) error {
			cfg, err := busConfig(c, bus.CmdTake, true)
			if err != nil {
				return err
			}
			o := bus.TakeOptions{Group: c.String("group"), Consumer: c.String("consumer"), Window: c.Int("window"), Count: c.Int("count"),
				Wait: c.Duration("wait"), Idle: c.Duration("idle"), For: c.Duration("for"), Takeover: c.Duration("takeover"),
				MaxDeliveries: c.Int("max-deliveries"), StoreFetches: c.Bool("store-fetches"), NoAck: c.Bool("no-ack"),
				From: c.String("from"), MaxBodyBytes: c.Int64("max-body-bytes"), MaxRecordBytes: c.Int("max-record-bytes")}
			if err := checkGroupOptions("take", o); err != nil {
				return err
			}
			switch {
			case o.Window < 0 || o.Count < 1 || o.MaxDeliveries < 1:
				return cmdkit.Usagef("--window, --count and --max-deliveries must be positive (--window 0: no limit)")
			case o.Idle == 0:
				return cmdkit.Usagef("--idle 0: give a duration, or -1s to follow the stream")
			case o.StoreFetches && o.NoAck:
				return cmdkit.Usagef("--store-fetches and --no-ack: the coordinator acknowledges what it stored")
			}
			if up := c.String("upstream"); up != "" {
				s, g, ok := strings.Cut(up, ":")
				if !ok || !ndjson.IsBusName(s) || !ndjson.IsBusName(g) {
					return cmdkit.Usagef("--upstream %q: want STREAM:GROUP, such as due:workers", up)
				}
				o.UpstreamStream, o.UpstreamGroup = s, g
			}
			if o.StoreFetches {
				if cfg.Store, err = cmdkit.OpenStore(c, cmdkit.Writes); err != nil {
					return err
				}
			}
			cfg.Take = o
			if cl, ok := c.App.Writer.(io.Closer); ok {
				cfg.CloseOut = cl.Close
			}
			return bus.Run(c.Context, cfg)
		},
	}
}

func busWaitCommand() *cli.Command {
	return &cli.Command{
		Name:      "wait",
		Usage:     "wait until a consumer group has records for this consumer to take",
		ArgsUsage: "STREAM",
		Description: `Exits 0 once "feed-bus take STREAM --group G" would have a record to hand
this consumer: one it held when its last take ended, one not yet read, or
another consumer's idle past --takeover. A worker waits so before it
starts its stages (feed-loop --role worker), rather than starting them to
wait: one process asking Redis every few seconds, not five. Another
worker may take the record first; the take then waits as it would have.
A signal ends it with 130 or 143. It keeps the heartbeat of the take it
stands in for.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "group", Usage: "the consumer group (required)"},
			&cli.StringFlag{Name: "consumer", Usage: "this consumer's name in the group", EnvVars: []string{"FEEDPIPE_BUS_CONSUMER"}, DefaultText: "--node"},
			&cli.DurationFlag{Name: "takeover", Usage: "another consumer's records idle this long count (it died)", Value: bus.DefaultTakeover, EnvVars: []string{"FEEDPIPE_BUS_TAKEOVER"}},
			&cli.StringFlag{Name: "from", Usage: `where the take makes a new group start: "0" or "$"`, Value: "0"},
		},
		Action: func(c *cli.Context) error {
			cfg, err := busConfig(c, bus.CmdWait, true)
			if err != nil {
				return err
			}
			o := bus.TakeOptions{Group: c.String("group"), Consumer: c.String("consumer"), Takeover: c.Duration("takeover"), From: c.String("from")}
			if err := checkGroupOptions("wait", o); err != nil {
				return err
			}
			cfg.Take = o
			return bus.Run(c.Context, cfg)
		},
	}
}

// checkGroupOptions checks the options take and wait share: the group
// and consumer names, the takeover time and where a new group starts.
func checkGroupOptions(cmd string, o bus.TakeOptions) error {
	switch {
	case o.Group == "":
		return cmdkit.Usagef("%s needs --group: the consumer group to %s as", cmd, cmd)
	case !ndjson.IsBusName(o.Group):
		return cmdkit.Usagef("--group %q: a name is 1 to 64 letters, digits, '.', '_' or '-'", o.Group)
	case o.Consumer != "" && !ndjson.IsBusName(o.Consumer):
		return cmdkit.Usagef("--consumer %q: a name is 1 to 64 letters, digits, '.', '_' or '-'", o.Consumer)
	case o.Takeover < time.Second:
		return cmdkit.Usagef("--takeover %s: at least 1s", o.Takeover)
	case o.From != "0" && o.From != "$":
		return cmdkit.Usagef(`--from %q: "0" or "$"`, o.From)
	}
	return nil
}

func busStatusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "list the nodes, the streams, and each consumer group's pending records and lag",
		Description: `Prints the nodes whose heartbeat is alive (their role, when they were last
seen, what each of their feed-bus processes does), then each stream: its
length, and for each consumer group the records taken and not yet
acknowledged (PENDING), those not yet taken (LAG), and its consumers.
--json prints the same as one JSON object. feed-serve's /metrics show the
same figures.`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "one JSON object instead of the tables"},
			&cli.DurationFlag{Name: "wait", Usage: "how long to wait for a Redis that does not answer before failing", Value: 10 * time.Second},
		},
		Action: func(c *cli.Context) error {
			cfg, err := busConfig(c, bus.CmdStatus, false)
			if err != nil {
				return err
			}
			cfg.Status.JSON = c.Bool("json")
			// A status is for now: a Redis that does not answer within
			// --wait is an error.
			ctx, cancel := context.WithTimeout(c.Context, c.Duration("wait"))
			defer cancel()
			return bus.Run(ctx, cfg)
		},
	}
}

func busHeartbeatCommand() *cli.Command {
	return &cli.Command{
		Name:  "heartbeat",
		Usage: "write this node's heartbeat once (feed-loop does, after each cycle)",
		Description: `Writes the node's heartbeat (--node, --role), which lives --ttl, with the
--set fields status shows beside it.`,
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "ttl", Usage: "how long the heartbeat lives", Value: bus.DefaultHeartbeatTTL},
			&cli.StringSliceFlag{Name: "set", Usage: "NAME=VALUE to show with the heartbeat (repeatable)"},
		},
		Action: func(c *cli.Context) error {
			cfg, err := busConfig(c, bus.CmdHeartbeat, false)
			if err != nil {
				return err
			}
			cfg.Heartbeat = bus.HeartbeatOptions{TTL: c.Duration("ttl"), Fields: map[string]string{}}
			for _, kv := range c.StringSlice("set") {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" || k == "role" || k == "seen" || strings.HasPrefix(k, "doing ") {
					return cmdkit.Usagef("--set %q: want NAME=VALUE (not role, seen or doing ...)", kv)
				}
				cfg.Heartbeat.Fields[k] = v
			}
			ctx, cancel := context.WithTimeout(c.Context, 10*time.Second)
			defer cancel()
			return bus.Run(ctx, cfg)
		},
	}
}

// busStream is the command's one argument, a stream's name.
func busStream(c *cli.Context) (string, error) {
	if c.NArg() != 1 {
		return "", cmdkit.Usagef("%s takes one STREAM, got %d arguments", c.Command.Name, c.NArg())
	}
	s := c.Args().First()
	if !ndjson.IsBusName(s) {
		return "", cmdkit.Usagef("stream %q: a name is 1 to 64 letters, digits, '.', '_' or '-'", s)
	}
	return s, nil
}

// busConfig is the Config every command of feed-bus shares; a command
// that takes a stream reads its name first.
func busConfig(c *cli.Context, cmd string, takesStream bool) (bus.Config, error) {
	var stream string
	if takesStream {
		var err error
		if stream, err = busStream(c); err != nil {
			return bus.Config{}, err
		}
	}
	log, err := cmdkit.Logger(c)
	if err != nil {
		return bus.Config{}, err
	}
	conn, err := cmdkit.RedisConn(c, log)
	if err != nil {
		return bus.Config{}, err
	}
	node := c.String("node")
	if node != "" && !ndjson.IsBusName(node) {
		return bus.Config{}, cmdkit.Usagef("--node %q: a name is 1 to 64 letters, digits, '.', '_' or '-'", node)
	}
	return bus.Config{In: c.App.Reader, Out: c.App.Writer, Log: log, Conn: conn, Node: node, Role: c.String("role"),
		Version: cmdkit.Version(), Command: cmd, Stream: stream}, nil
}
