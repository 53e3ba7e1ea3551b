package cmdkit

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: what is written to tty is read from
// pty.
func openPTY(t *testing.T) (pty, tty *os.File) {
	t.Helper()
	pty, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(pty.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(pty.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("ptsname: %v", err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open the terminal: %v", err)
	}
	return pty, tty
}

// TestLogsClearTheProgressLine: on a terminal, a log line written while
// the progress line shows (feed-fetch's "fetching 3 of 10") clears it
// first, rather than run into it, and the status comes back after it.
func TestLogsClearTheProgressLine(t *testing.T) {
	pty, tty := openPTY(t)
	defer pty.Close()
	read := make(chan string)
	go func() {
		var b bytes.Buffer
		io.Copy(&b, pty) // until the terminal is closed (EIO)
		read <- b.String()
	}()
	app := &cli.App{Name: "feed-test", Flags: CommonFlags(), Action: func(c *cli.Context) error {
		log, err := Logger(c)
		if err != nil {
			return err
		}
		line := Progress(c)
		line.Show("fetching: 3 of 10")
		log.Warn("fetch failed", "url", "https://example.org/feed.xml")
		line.Done()
		return nil
	}}
	app.ErrWriter, app.Writer = tty, &bytes.Buffer{}
	if status := Run(app, []string{"feed-test"}); status != 0 {
		t.Fatalf("status %d", status)
	}
	tty.Close()
	out := <-read
	if !strings.Contains(out, "fetching: 3 of 10\r\x1b[Ktime=") {
		t.Errorf("the log line runs into the status, not cleared first:\n%q", out)
	}
	if !strings.Contains(out, "\nfetching: 3 of 10") {
		t.Errorf("the status is not shown again after the log line:\n%q", out)
	}
}
