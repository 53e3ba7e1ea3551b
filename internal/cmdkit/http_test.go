package cmdkit

import (
	"bytes"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/version"
)

// TestHTTPSettings: the shared HTTP flags of feed-fetch and feed-scrape,
// FETCH_TIMEOUT_MS under --timeout, and a usage error for each bad value.
func TestHTTPSettings(t *testing.T) {
	for _, tc := range []struct {
		name, args, envMS string
		timeout           time.Duration
		err               string
	}{
		{"defaults", "", "", 10 * time.Second, ""},
		{"--timeout", "--timeout 3s", "", 3 * time.Second, ""},
		{"FETCH_TIMEOUT_MS", "", "2500", 2500 * time.Millisecond, ""},
		{"--timeout wins over FETCH_TIMEOUT_MS", "--timeout 3s", "2500", 3 * time.Second, ""},
		{"FETCH_TIMEOUT_MS as a duration", "", "4s", 4 * time.Second, ""},
		{"bad FETCH_TIMEOUT_MS", "", "soon", 0, `FETCH_TIMEOUT_MS="soon": want a duration such as 90s or 1h, or whole milliseconds`},
		{"zero timeout", "--timeout 0s", "", 0, "--timeout 0s: it must be more than 0"},
		{"zero body cap", "--max-body-bytes 0", "", 0, "--max-body-bytes 0: it must be more than 0"},
		{"no request to a host", "--host-concurrency 0", "", 0, "--host-concurrency 0: at least 1 request to a host must be allowed"},
		{"negative rate", "--host-rps -1", "", 0, "--host-rps -1: it cannot be negative (0 means no limit)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("FETCH_TIMEOUT_MS", tc.envMS)
			var (
				got    time.Duration
				gotErr error
			)
			app := &cli.App{Name: "feed-test", Flags: HTTPFlags("cap", "UA"), Action: func(c *cli.Context) error {
				opts, limiter, err := HTTPSettings(c)
				if err == nil && limiter == nil {
					t.Error("no limiter")
				}
				got, gotErr = opts.Timeout, err
				return nil
			}}
			var stderr bytes.Buffer
			app.ErrWriter, app.Writer = &stderr, &bytes.Buffer{}
			if status := Run(app, append([]string{"feed-test"}, strings.Fields(tc.args)...)); status != ExitOK {
				// A variable that is no duration stops the run before
				// the action.
				gotErr = errors.New(strings.TrimSuffix(strings.TrimPrefix(stderr.String(), "feed-test: error: "), "\n"))
			}
			switch {
			case tc.err != "" && (gotErr == nil || gotErr.Error() != tc.err):
				t.Errorf("error %v, want %q", gotErr, tc.err)
			case tc.err == "" && (gotErr != nil || got != tc.timeout):
				t.Errorf("timeout %s, error %v; want %s", got, gotErr, tc.timeout)
			}
		})
	}

	// The defaults, as --help shows them and as the client and the
	// limiter get them.
	t.Run("defaults as --help gives them", func(t *testing.T) {
		for _, k := range []string{"FETCH_TIMEOUT_MS", "FEEDPIPE_FETCH_TIMEOUT", "FEEDPIPE_HOST_CONCURRENCY", "HOST_MAX_CONCURRENCY",
			"FEEDPIPE_HOST_RPS", "HOST_RPS", "FEEDPIPE_MAX_BODY_BYTES", "MAX_BODY_BYTES", "FEEDPIPE_USER_AGENT", "FEEDPIPE_ALLOW_PRIVATE"} {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
		var help bytes.Buffer
		app := &cli.App{Name: "feed-test", Flags: HTTPFlags("cap", "UA"), Writer: &help, Action: func(c *cli.Context) error {
			opts, limiter, err := HTTPSettings(c)
			if err != nil {
				t.Fatal(err)
			}
			ua := "feedpipe/" + version.Short() + " (+https://github.com/feedpipe/feedpipe)"
			if opts.UserAgent != ua || opts.Timeout != 10*time.Second || opts.MaxBodyBytes != 10<<20 || opts.AllowPrivate {
				t.Errorf("options %+v, want User-Agent %q, timeout 10s, 10 MiB, no private addresses", opts, ua)
			}
			// One request in flight to a host, and the next a second
			// after the last began.
			release, _, ok := limiter.TryAcquire("http://a.example:80")
			if !ok {
				t.Fatal("no first request to a host")
			}
			if _, wait, ok := limiter.TryAcquire("http://a.example:80"); ok || wait != 0 {
				t.Errorf("a second request in flight to one host: ok %v, wait %s", ok, wait)
			}
			release()
			if _, wait, ok := limiter.TryAcquire("http://a.example:80"); ok || wait <= 900*time.Millisecond || wait > time.Second {
				t.Errorf("the next request to the host: ok %v, wait %s; want a second after the last", ok, wait)
			}
			return nil
		}}
		for _, args := range [][]string{{"feed-test"}, {"feed-test", "--help"}} {
			if err := app.Run(args); err != nil {
				t.Fatal(err)
			}
		}
		for _, want := range []string{
			`--host-concurrency value +requests in flight to one host \(scheme, host and port\) \(default: 1\)`,
			`--host-rps value +requests a second to one host; 0 for no limit \(default: 1\)`,
			`--timeout value +per request: .* \(default: 10s\)`,
			`--max-body-bytes value +cap \(default: 10485760\)`,
			`--user-agent value +UA \(default: "feedpipe/` + regexp.QuoteMeta(version.Short()) + ` \(\+https://github.com/feedpipe/feedpipe\)"\)`,
			`--allow-private +allow loopback, .* \(default: false\)`,
		} {
			if !regexp.MustCompile(want).Match(help.Bytes()) {
				t.Errorf("--help lacks %s:\n%s", want, help.String())
			}
		}
	})
}

// TestHTTPSettingsRedis: --redis (FEEDPIPE_REDIS) keeps the per-host
// limits in Redis, shared by the workers; without it they are the
// process's; a bad prefix is a usage error.
func TestHTTPSettingsRedis(t *testing.T) {
	for _, tc := range []struct {
		args, env string
		shared    bool
		err       string
	}{
		{"", "", false, ""},
		{"--redis redis://127.0.0.1:1/0", "", true, ""},
		{"", "redis://127.0.0.1:1/0", true, ""},
		{"--redis redis://127.0.0.1:1/0 --bus-prefix a:b", "", false, `redis: prefix "a:b": it must be 1 to 64 letters, digits, '.', '_' or '-'`},
	} {
		t.Setenv("FEEDPIPE_REDIS", tc.env)
		var (
			shared bool
			gotErr error
		)
		app := &cli.App{Name: "feed-test", Flags: append(HTTPFlags("cap", "UA"), CommonFlags()...), Action: func(c *cli.Context) error {
			_, limiter, err := HTTPSettings(c)
			if err == nil {
				shared = limiter.Shared()
			}
			gotErr = err
			return nil
		}}
		app.ErrWriter, app.Writer = &bytes.Buffer{}, &bytes.Buffer{}
		Run(app, append([]string{"feed-test"}, strings.Fields(tc.args)...))
		switch {
		case tc.err != "" && (gotErr == nil || gotErr.Error() != tc.err):
			t.Errorf("%q: error %v, want %q", tc.args, gotErr, tc.err)
		case tc.err == "" && (gotErr != nil || shared != tc.shared):
			t.Errorf("%q FEEDPIPE_REDIS=%q: shared %v, %v; want %v", tc.args, tc.env, shared, gotErr, tc.shared)
		}
	}
}
