// Package browsertest starts the headless Chromium that browser tests
// drive: found on PATH or the test skipped, saying how to get it; kept
// off every network but loopback.
package browsertest

import (
	"context"
	"os/exec"
	"testing"

	"github.com/chromedp/chromedp"
)

// Binary is the Chromium to run; without one the test is skipped, saying
// how to install it.
func Binary(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium: the browser tests are skipped (Debian: apt-get install chromium; ./scripts/test installs it when it can)")
	return ""
}

// Start starts the headless browser bin with a 1280x900 window that
// reaches nothing but 127.0.0.1 (an entry's images from elsewhere fail at
// once, as offline), and returns the context to drive it with; the test's
// end stops it.
func Start(t testing.TB, bin string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900), chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelA() })
	if err := chromedp.Do(ctx); err != nil { // the browser starts
		t.Fatal(err)
	}
	return ctx
}
