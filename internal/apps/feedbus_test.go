package apps

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/feedpipe/feedpipe/internal/bus"
	"github.com/feedpipe/feedpipe/internal/bus/redistest"
	"github.com/feedpipe/feedpipe/internal/cmdkit"
)

// runBus runs feed-bus with args and stdin, and returns its status, stdout
// and stderr.
func runBus(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	a := FeedBus()
	a.Writer, a.ErrWriter, a.Reader = &stdout, &stderr, strings.NewReader(stdin)
	status := cmdkit.Run(a, append([]string{"feed-bus"}, args...))
	return status, stdout.String(), stderr.String()
}

// TestBusCommandLine: put, take and status as a person types them, and a
// usage error (status 2) for each bad argument, before Redis is asked.
func TestBusCommandLine(t *testing.T) {
	for _, k := range []string{"FEEDPIPE_REDIS", "FEEDPIPE_BUS_PREFIX", "FEEDPIPE_BUS_NODE", "FEEDPIPE_BUS_CONSUMER", "FEEDPIPE_STORE"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"put"}, "put takes one STREAM, got 0 arguments"},
		{[]string{"put", "a:b"}, `stream "a:b": a name is 1 to 64 letters`},
		{[]string{"take", "due"}, "take needs --group"},
		{[]string{"take", "due", "--group", "{x}"}, `--group "{x}"`},
		{[]string{"take", "due", "--group", "w", "--upstream", "due"}, `--upstream "due": want STREAM:GROUP`},
		{[]string{"take", "due", "--group", "w", "--idle", "0s"}, "--idle 0"},
		{[]string{"take", "due", "--group", "w", "--from", "1"}, `--from "1"`},
		{[]string{"take", "due", "--group", "w", "--takeover", "10ms"}, "--takeover 10ms: at least 1s"},
		{[]string{"put", "due", "--maxlen", "0"}, "--maxlen 0"},
		{[]string{"put", "due", "--bus-prefix", "a:b"}, `prefix "a:b"`},
		{[]string{"status", "--node", "a b"}, `--node "a b"`},
		{[]string{"heartbeat", "--set", "role=x"}, `--set "role=x"`},
	} {
		status, _, stderr := runBus(t, "", tc.args...)
		if status != cmdkit.ExitUsage || !strings.Contains(stderr, tc.err) {
			t.Errorf("feed-bus %s: status %d, stderr %q; want 2 and %q", strings.Join(tc.args, " "), status, stderr, tc.err)
		}
	}

	srv := redistest.Start(t)
	t.Setenv("FEEDPIPE_REDIS", srv.URL())
	t.Setenv("FEEDPIPE_BUS_NODE", "w1")
	if status, _, stderr := runBus(t, `{"type":"x","v":1}`+"\n"+"not json\n", "put", "s"); status != cmdkit.ExitFailed || !strings.Contains(stderr, "line=2") {
		t.Errorf("put with a bad line: status %d, stderr %q; want 1 and the line reported", status, stderr)
	}
	status, stdout, stderr := runBus(t, "", "take", "s", "--group", "g", "--no-ack", "--idle", "200ms")
	if status != 0 || stdout != `{"type":"x","v":1}`+"\n" {
		t.Errorf("take: status %d, stdout %q, stderr %q", status, stdout, stderr)
	}
	if status, _, stderr := runBus(t, "", "heartbeat", "--role", "worker", "--set", "cycle=3"); status != 0 {
		t.Errorf("heartbeat: %d %s", status, stderr)
	}
	status, stdout, stderr = runBus(t, "", "status", "--json")
	var st bus.Status
	if status != 0 || json.Unmarshal([]byte(stdout), &st) != nil || len(st.Streams) != 1 || st.Streams[0].Name != "s" ||
		len(st.Nodes) != 1 || st.Nodes[0].Role != "worker" || st.Nodes[0].Fields["cycle"] != "3" {
		t.Errorf("status --json: %d %s %s", status, stdout, stderr)
	}
	status, stdout, _ = runBus(t, "", "status")
	if status != 0 || !strings.Contains(stdout, "w1") || !strings.Contains(stdout, "cycle=3") || !strings.Contains(stdout, "s       1") {
		t.Errorf("status:\n%s", stdout)
	}
	srv.Kill()
	if status, _, stderr := runBus(t, "", "status", "--wait", "1s"); status != cmdkit.ExitFailed || !strings.Contains(stderr, "redis is unavailable") {
		t.Errorf("status with Redis down: %d %q; want 1, said", status, stderr)
	}
}
