// Package cmdkit holds what every feedpipe binary's main shares: the common
// flags, logging, signal handling, stdout and exit statuses.
package cmdkit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/storage"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Exit statuses of every binary (DESIGN.md §5).
const (
	ExitOK      = 0
	ExitFailed  = 1 // some records or feeds failed, each reported
	ExitUsage   = 2 // bad flags or arguments, or setup impossible
	storeFlag   = "store"
	logFmtFlag  = "log-format"
	logLvlFlag  = "log-level"
	envStore    = "FEEDPIPE_STORE"
	envLogFmt   = "FEEDPIPE_LOG_FORMAT"
	envLogLevel = "FEEDPIPE_LOG_LEVEL"
)

// CommonFlags are the flags every binary has.
func CommonFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: storeFlag, Usage: "store directory", EnvVars: []string{envStore}, Value: DefaultStore()},
		&cli.StringFlag{Name: logFmtFlag, Usage: "log format on stderr: text or json", EnvVars: []string{envLogFmt}, Value: "text"},
		&cli.StringFlag{Name: logLvlFlag, Usage: "least severe log level shown: debug, info, warn or error", EnvVars: []string{envLogLevel}, Value: "info"},
	}
}

// DefaultStore is where the store lives when neither --store nor
// FEEDPIPE_STORE says: $XDG_DATA_HOME/feedpipe, else ~/.local/share/feedpipe.
func DefaultStore() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "feedpipe")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "feedpipe")
	}
	return "feedpipe-store"
}

// Access says whether a binary only reads the store or also writes it.
type Access int

const (
	ReadOnly Access = iota
	Writes
)

// OpenStore opens the store the flags name, creating it if needed (and
// saying so: a mistyped path should not pass for an empty store). A writer
// learns at once if the store cannot be written.
func OpenStore(c *cli.Context, access Access) (*storage.Store, error) {
	st, err := storage.Open(c.String(storeFlag))
	if err != nil {
		return nil, Usage(err)
	}
	if st.Created {
		fmt.Fprintf(c.App.ErrWriter, "%s: note: created a new, empty store at %s\n", c.App.Name, st.Root)
	}
	if access == Writes {
		if err := st.CheckWritable(); err != nil {
			return nil, Usage(err)
		}
	}
	return st, nil
}

// Logger returns the binary's logger on stderr, as the flags ask.
func Logger(c *cli.Context) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.String(logLvlFlag))); err != nil {
		return nil, Usage(fmt.Errorf("--%s: %q is not one of debug, info, warn, error", logLvlFlag, c.String(logLvlFlag)))
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch c.String(logFmtFlag) {
	case "text":
		h = slog.NewTextHandler(c.App.ErrWriter, opts)
	case "json":
		h = slog.NewJSONHandler(c.App.ErrWriter, opts)
	default:
		return nil, Usage(fmt.Errorf("--%s: %q is not text or json", logFmtFlag, c.String(logFmtFlag)))
	}
	return slog.New(h).With("component", c.App.Name), nil
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Output returns the record writer for w: buffered, flushed after every
// record when a person is watching.
func Output(w io.Writer) *ndjson.Writer {
	out := ndjson.NewWriter(w)
	out.SetAutoFlush(IsTerminal(w))
	return out
}

type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// Usage marks err as a usage or setup error: exit status 2.
func Usage(err error) error { return usageError{err} }

// Usagef is Usage with a formatted message.
func Usagef(format string, args ...any) error { return Usage(fmt.Errorf(format, args...)) }

// Main runs app with the process's arguments and exits with its status,
// profiling the run when ProfileEnv asks for it.
func Main(app *cli.App) {
	stop := startProfile(app.Name)
	code := Run(app, os.Args)
	stop()
	os.Exit(code)
}

// Run runs app and returns its exit status, having reported any error on
// the app's ErrWriter as "name: error: message". SIGTERM, and SIGINT unless
// it is ignored (as it is for background jobs of a script), cancel the
// context: a stage then finishes what it holds and exits; a second signal
// kills it.
func Run(app *cli.App, args []string) int {
	if app.ErrWriter == nil {
		app.ErrWriter = os.Stderr
	}
	if app.Writer == nil {
		app.Writer = os.Stdout
	}
	if app.Reader == nil {
		app.Reader = os.Stdin
	}
	app.ExitErrHandler = func(*cli.Context, error) {} // statuses are decided below
	app.HideHelpCommand = true
	app.OnUsageError = usageHandler(app.Name, app.Flags)
	if len(app.Commands) > 0 && app.Action == nil {
		app.Action = func(c *cli.Context) error {
			if c.NArg() > 0 {
				return Usagef("unknown command %q (see %s --help)", c.Args().First(), app.Name)
			}
			cli.ShowAppHelp(c)
			return Usagef("no command given")
		}
	}
	for _, cmd := range app.Commands {
		cmd.OnUsageError = usageHandler(app.Name+" "+cmd.Name, cmd.Flags)
	}
	sigs := []os.Signal{syscall.SIGTERM}
	if !signal.Ignored(os.Interrupt) {
		sigs = append(sigs, os.Interrupt)
	}
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // the next signal gets the default action
	}()
	err := app.RunContext(ctx, interleave(app, args))
	if err == nil {
		return ExitOK
	}
	fmt.Fprintf(app.ErrWriter, "%s: error: %s\n", app.Name, oneLine(err.Error()))
	var ue usageError
	var ce cli.ExitCoder
	switch {
	case errors.Is(err, pipe.ErrFailed):
		return ExitFailed
	case errors.As(err, &ue):
		return ExitUsage
	case errors.As(err, &ce):
		return ce.ExitCode()
	}
	return ExitFailed
}

var (
	unknownFlag = regexp.MustCompile(`^flag provided but not defined: -+(.+)$`)
	badValue    = regexp.MustCompile(`^invalid value "(.*)" for flag -+([^:]+): (.*)$`)
	// The flag package words a bad --name=value of a boolean flag so.
	badBool = regexp.MustCompile(`^invalid boolean value "(.*)" for -+([^:]+): (.*)$`)
)

// usageHandler turns the flag package's messages into one line that says
// what was wrong and where to look.
func usageHandler(command string, flags []cli.Flag) cli.OnUsageErrorFunc {
	return func(_ *cli.Context, err error, _ bool) error {
		msg := err.Error()
		if m := unknownFlag.FindStringSubmatch(msg); m != nil {
			return Usagef("unknown flag --%s (see %s --help)", m[1], command)
		}
		if m := badBool.FindStringSubmatch(msg); m != nil {
			return Usagef("--%s=%q: not true or false", m[2], m[1])
		}
		if m := badValue.FindStringSubmatch(msg); m != nil {
			what := m[3]
			for _, f := range flags {
				if !slices.Contains(f.Names(), m[2]) {
					continue
				}
				switch f.(type) {
				case *cli.DurationFlag:
					what = "not a duration such as 90s, 30m or 2h"
				case *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag, *cli.Uint64Flag:
					what = "not a whole number"
				case *cli.BoolFlag:
					what = "not true or false"
				}
			}
			return Usagef("--%s %q: %s", m[2], m[1], what)
		}
		return Usage(err)
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Setup returns the logger and the opened store, as every stage needs.
func Setup(c *cli.Context, access Access) (*slog.Logger, *storage.Store, error) {
	log, err := Logger(c)
	if err != nil {
		return nil, nil, err
	}
	st, err := OpenStore(c, access)
	if err != nil {
		return nil, nil, err
	}
	return log, st, nil
}

// UsageIf marks err as a usage error when it matches one of targets.
func UsageIf(err error, targets ...error) error {
	for _, t := range targets {
		if errors.Is(err, t) {
			return Usage(err)
		}
	}
	return err
}
