package cmdkit

import (
	"log/slog"

	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/bus/redisconn"
)

// The flags of the Redis a bus runs on (docs/bus.md): feed-bus's, and
// feed-fetch's and feed-scrape's for per-host limits kept there.
const (
	redisFlag     = "redis"
	busPrefixName = "bus-prefix"
	envRedis      = "FEEDPIPE_REDIS"
	envBusPrefix  = "FEEDPIPE_BUS_PREFIX"
)

func busPrefixFlag() cli.Flag {
	return &cli.StringFlag{Name: busPrefixName, Usage: "the deployment's name, which prefixes its Redis keys ({PREFIX}:due, ...): several deployments can share one Redis", Value: redisconn.DefaultPrefix, EnvVars: []string{envBusPrefix}}
}

// BusFlags are feed-bus's flags of its Redis: --redis, with a default,
// and --bus-prefix.
func BusFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: redisFlag, Usage: "the Redis of the bus: redis://[USER:PASSWORD@]HOST:PORT/DB, rediss:// for TLS, unix:///PATH; a Redis Cluster as redis://HOST:PORT?addr=HOST2:PORT2&addr=...", Value: redisconn.DefaultURL, EnvVars: []string{envRedis}},
		busPrefixFlag(),
	}
}

// RedisFlags are the flags of a Redis a binary may use, by default none:
// --redis (usage says what for) and --bus-prefix. feed-fetch and
// feed-scrape keep their per-host limits there; feed-serve can show the
// bus's status.
func RedisFlags(usage string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: redisFlag, Usage: usage, EnvVars: []string{envRedis}},
		busPrefixFlag(),
	}
}

// RedisConnIfSet is RedisConn, or nil when --redis is not set.
func RedisConnIfSet(c *cli.Context, log *slog.Logger) (*redisconn.Conn, error) {
	if c.String(redisFlag) == "" {
		return nil, nil
	}
	return RedisConn(c, log)
}

// RedisConn is the connection to the Redis the flags name.
func RedisConn(c *cli.Context, log *slog.Logger) (*redisconn.Conn, error) {
	conn, err := redisconn.Dial(c.String(redisFlag), c.String(busPrefixName), log, nil)
	if err != nil {
		return nil, Usage(err)
	}
	return conn, nil
}
