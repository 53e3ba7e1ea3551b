package apps

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/feedpipe/feedpipe/internal/cmdkit"
	"github.com/feedpipe/feedpipe/internal/version"
)

// TestHelpDefaults: --help gives each flag's default as docs/design.md sets
// it, with the environment that would change it cleared.
func TestHelpDefaults(t *testing.T) {
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "FEEDPIPE_") || strings.HasPrefix(k, "NEWSFED_") || strings.HasPrefix(k, "HOST_") ||
			k == "FETCH_TIMEOUT_MS" || k == "MAX_BODY_BYTES" {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	var stdout, stderr bytes.Buffer
	a := FeedFetch()
	a.Writer, a.ErrWriter, a.Reader = &stdout, &stderr, strings.NewReader("")
	if status := cmdkit.Run(a, []string{"feed-fetch", "--help"}); status != 0 {
		t.Fatalf("status %d; stderr:\n%s", status, stderr.String())
	}
	for flag, def := range map[string]string{
		"concurrency":        "5",
		"total-timeout":      "1m0s",
		"timeout":            "10s",
		"max-redirects":      "5",
		"redirect-threshold": "3",
		"host-concurrency":   "1",
		"host-rps":           "1",
		"max-body-bytes":     "10485760", // 10 MiB
		"user-agent":         `"feedpipe/` + version.Short() + ` (+https://github.com/feedpipe/feedpipe)"`,
		"allow-private":      "false",
	} {
		re := regexp.MustCompile(`(?m)^ +--` + flag + `( value)? .*\(default: ` + regexp.QuoteMeta(def) + `\)`)
		if !re.Match(stdout.Bytes()) {
			t.Errorf("--%s: no default %s in --help:\n%s", flag, def, stdout.String())
		}
	}
}
