// Command measure runs a command and appends its peak RSS and CPU times to
// a file, so that scripts/bench-fetch can measure every stage of a pipeline
// without GNU time:
//
//	measure -o FILE -- CMD ARGS...
//
// CMD gets measure's stdin, stdout and stderr. When it exits, one line
//
//	CMD ARGS\tmax_rss_kb\tuser_s\tsys_s\twall_s\texit_status
//
// is appended to FILE (from the rusage of the child, in one write, so that
// the stages of one pipeline can share FILE), and measure exits with CMD's
// status: 128+N when CMD was killed by signal N. SIGINT, SIGTERM, SIGHUP
// and SIGQUIT are passed on to CMD.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("measure", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "append the measurements to this `file`")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: measure -o FILE -- CMD ARGS...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *out == "" || fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	argv := fs.Args()
	f, err := os.OpenFile(*out, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(stderr, "measure:", err)
		return 2
	}
	defer f.Close()

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	// Signals go to the child, which decides how to end; measure waits
	// for it so that the line is always written.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	begin := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "measure:", err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return 127
		}
		return 126
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err = cmd.Wait()
	close(done)
	wall := time.Since(begin)
	st := cmd.ProcessState
	if st == nil {
		fmt.Fprintln(stderr, "measure:", err)
		return 126
	}
	status := st.ExitCode()
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		status = 128 + int(ws.Signal())
	}
	var rssKB int64
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		rssKB = int64(ru.Maxrss)
		if runtime.GOOS == "darwin" { // bytes there, kilobytes on Linux
			rssKB /= 1024
		}
	}
	name := strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' {
			return ' '
		}
		return r
	}, strings.Join(argv, " "))
	line := fmt.Sprintf("%s\t%d\t%.3f\t%.3f\t%.3f\t%d\n", name, rssKB,
		st.UserTime().Seconds(), st.SystemTime().Seconds(), wall.Seconds(), status)
	if _, err := f.WriteString(line); err != nil {
		fmt.Fprintln(stderr, "measure:", err)
		if status == 0 {
			status = 2
		}
	}
	return status
}
