package cmdkit

import (
	"os"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/httpx"
	"github.com/feedpipe/feedpipe/internal/progress"
)

// HTTPFlags are the flags of the shared HTTP client and its per-host
// limiter, for the stages that fetch (feed-fetch, feed-scrape): the same
// names, environment and defaults in both. bodyUsage and userAgentUsage say
// what the cap and the User-Agent mean to the stage.
func HTTPFlags(bodyUsage, userAgentUsage string) []cli.Flag {
	return append([]cli.Flag{
		&cli.IntFlag{Name: "host-concurrency", Usage: "requests in flight to one host (scheme, host and port)", Value: httpx.DefaultHostConcurrency, EnvVars: []string{"FEEDPIPE_HOST_CONCURRENCY", "HOST_MAX_CONCURRENCY"}},
		&cli.Float64Flag{Name: "host-rps", Usage: "requests a second to one host; 0 for no limit", Value: httpx.DefaultHostRPS, EnvVars: []string{"FEEDPIPE_HOST_RPS", "HOST_RPS"}},
		Duration(&cli.DurationFlag{Name: "timeout", Usage: "per request: connect, TLS and headers, then any stall of the body", Value: httpx.DefaultTimeout, EnvVars: []string{"FEEDPIPE_FETCH_TIMEOUT", "FETCH_TIMEOUT_MS"}}),
		&cli.Int64Flag{Name: "max-body-bytes", Usage: bodyUsage, Value: httpx.DefaultMaxBodyBytes, EnvVars: []string{"FEEDPIPE_MAX_BODY_BYTES", "MAX_BODY_BYTES"}},
		&cli.StringFlag{Name: "user-agent", Usage: userAgentUsage, Value: httpx.DefaultUserAgent, EnvVars: []string{"FEEDPIPE_USER_AGENT"}},
		&cli.BoolFlag{Name: "allow-private", Usage: "allow loopback, private and link-local addresses (tests, intranets; set the variable to 1)", EnvVars: []string{"FEEDPIPE_ALLOW_PRIVATE"}},
	}, RedisFlags("keep the per-host limits in this Redis (redis://HOST:PORT/DB), shared by every process that uses it: the workers of a bus (bus.md in share/doc/feedpipe); default: in this process")...)
}

// AllowPrivateEnv reports whether FEEDPIPE_ALLOW_PRIVATE lets every feed
// reach private addresses (tests and the demo set it): for a command whose
// --allow-private is a setting of one feed, not the switch.
func AllowPrivateEnv() bool {
	v, err := strconv.ParseBool(os.Getenv("FEEDPIPE_ALLOW_PRIVATE"))
	return err == nil && v
}

// HTTPSettings reads and checks the HTTPFlags: the client's options (the
// stage adds its own) and the per-host limiter.
func HTTPSettings(c *cli.Context) (httpx.Options, *httpx.Limiter, error) {
	timeout := c.Duration("timeout")
	switch {
	case timeout <= 0:
		return httpx.Options{}, nil, Usagef("--timeout %s: it must be more than 0", timeout)
	case c.Int64("max-body-bytes") < 1:
		return httpx.Options{}, nil, Usagef("--max-body-bytes %d: it must be more than 0", c.Int64("max-body-bytes"))
	case c.Int("host-concurrency") < 1:
		return httpx.Options{}, nil, Usagef("--host-concurrency %d: at least 1 request to a host must be allowed", c.Int("host-concurrency"))
	case c.Float64("host-rps") < 0:
		return httpx.Options{}, nil, Usagef("--host-rps %g: it cannot be negative (0 means no limit)", c.Float64("host-rps"))
	}
	opts := httpx.Options{
		UserAgent:    c.String("user-agent"),
		AllowPrivate: c.Bool("allow-private"),
		Timeout:      timeout,
		MaxBodyBytes: c.Int64("max-body-bytes"),
	}
	if c.String(redisFlag) == "" {
		return opts, httpx.NewLimiter(c.Int("host-concurrency"), c.Float64("host-rps"), nil), nil
	}
	log, err := Logger(c)
	if err != nil {
		return httpx.Options{}, nil, err
	}
	conn, err := RedisConn(c, log)
	if err != nil {
		return httpx.Options{}, nil, err
	}
	return opts, httpx.NewRedisLimiter(conn, c.Int("host-concurrency"), c.Float64("host-rps"), nil), nil
}

// Progress is a status line on stderr when it is a terminal, else nil.
func Progress(c *cli.Context) *progress.Line {
	return terminalLine(c) // the logs' writer too
}
