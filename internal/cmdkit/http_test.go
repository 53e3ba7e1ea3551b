package cmdkit

import (
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
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
		{"bad FETCH_TIMEOUT_MS", "", "soon", 0, `FETCH_TIMEOUT_MS="soon" is not a positive number of milliseconds`},
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
			if err := app.Run(append([]string{"feed-test"}, strings.Fields(tc.args)...)); err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.err != "" && (gotErr == nil || gotErr.Error() != tc.err):
				t.Errorf("error %v, want %q", gotErr, tc.err)
			case tc.err == "" && (gotErr != nil || got != tc.timeout):
				t.Errorf("timeout %s, error %v; want %s", got, gotErr, tc.timeout)
			}
		})
	}
}
