// Package cmdkit holds what every feedpipe binary's main shares: the common
// flags, logging, signal handling, stdout and exit statuses.
package cmdkit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/pipe"
	"github.com/feedpipe/feedpipe/internal/progress"
	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Exit statuses of every binary (docs/design.md#conventions).
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
		&cli.StringFlag{Name: storeFlag, Usage: "store directory", EnvVars: []string{envStore}, Value: DefaultStore(), DefaultText: "$XDG_DATA_HOME/feedpipe, else ~/.local/share/feedpipe"},
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
	// ReadOnly: the store must exist. A command that only reads (feed-due,
	// feed-stats, feed-sub ls) says so and exits 2 when it does not,
	// rather than create an empty store that a mistyped --store would
	// pass for a real one.
	ReadOnly Access = iota
	// Writes: a store that does not exist is created, with a note.
	Writes
	// Changes: a command that changes what the store holds (feed-sub rm,
	// feed-read mark): the store must exist, as for ReadOnly, since there
	// is nothing to change in none, and be writable, as for Writes.
	Changes
	// ReadsInPipeline: a stage that only reads the store but runs in a
	// pipeline that writes it (feed-parse, feed-dedup): a store that does
	// not exist is created, as feed-store downstream will create it, so
	// that a replay into a fresh store (| feed-dedup --store new |
	// feed-store --store new) finds it whichever stage starts first.
	ReadsInPipeline
)

// OpenStore opens the store the flags name. A writer creates it if needed
// (and says so: a mistyped path should not pass for an empty store), and
// learns at once if it cannot be written; a reader needs it to exist.
func OpenStore(c *cli.Context, access Access) (*storedir.Store, error) {
	root := c.String(storeFlag)
	if access == ReadOnly || access == Changes {
		if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
			return nil, Usagef("no store at %s: --store (or FEEDPIPE_STORE) names none; feed-sub add creates one", root)
		}
	}
	st, err := storedir.Open(root)
	if err != nil {
		return nil, Usage(err)
	}
	if st.Created {
		fmt.Fprintf(c.App.ErrWriter, "%s: note: created a new, empty store at %s\n", c.App.Name, st.Root)
	}
	if c.App.Metadata == nil {
		c.App.Metadata = map[string]any{}
	}
	c.App.Metadata[metaStore] = st.Root
	if access == Writes || access == Changes {
		if err := st.CheckWritable(); err != nil {
			return nil, Usage(err)
		}
	}
	return st, nil
}

// OpenStoreIfExists opens the store the flags name for reading, or
// returns nil if there is none (feed-parse FILE, which reads files, not
// the store).
func OpenStoreIfExists(c *cli.Context) (*storedir.Store, error) {
	if _, err := os.Stat(c.String(storeFlag)); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return OpenStore(c, ReadOnly)
}

// Logger returns the binary's logger on stderr, as the flags ask.
func Logger(c *cli.Context) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.String(logLvlFlag))); err != nil {
		return nil, Usage(fmt.Errorf("--%s: %q is not one of debug, info, warn, error", logLvlFlag, c.String(logLvlFlag)))
	}
	opts := &slog.HandlerOptions{Level: level}
	var w io.Writer = c.App.ErrWriter
	if line := terminalLine(c); line != nil {
		w = line // each record clears the progress line first
	}
	var h slog.Handler
	switch c.String(logFmtFlag) {
	case "text":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, Usage(fmt.Errorf("--%s: %q is not text or json", logFmtFlag, c.String(logFmtFlag)))
	}
	return slog.New(h).With("component", c.App.Name), nil
}

// metaLine is the key of App.Metadata holding the status line of a run
// on a terminal (terminalLine).
const metaLine = "cmdkit.line"

// terminalLine is the run's status line when stderr is a terminal, else
// nil: the one Progress gives and the logs are written through, so that a
// log line never runs into the status.
func terminalLine(c *cli.Context) *progress.Line {
	if !IsTerminal(c.App.ErrWriter) {
		return nil
	}
	if l, ok := c.App.Metadata[metaLine].(*progress.Line); ok {
		return l
	}
	l := progress.New(c.App.ErrWriter)
	if c.App.Metadata == nil {
		c.App.Metadata = map[string]any{}
	}
	c.App.Metadata[metaLine] = l
	return l
}

// TerminalWidth is the width of the terminal w is, 0 when w is no
// terminal: the tables for people fit it.
func TerminalWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0
	}
	if width, _, err := term.GetSize(int(f.Fd())); err == nil && width > 0 {
		return width
	}
	return 120
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
func Main(app *cli.App) { os.Exit(RunMain(app, os.Args)) }

// RunMain is Main without the exit: it runs app with args, profiled when
// ProfileEnv asks for it, its garbage collector waiting for a floor
// (floorGC), and returns the exit status (the feedpipe binary runs the
// command its name says with it).
func RunMain(app *cli.App, args []string) int {
	defer floorGC()()
	stop := startProfile(app.Name)
	defer stop()
	return Run(app, args)
}

// Run runs app and returns its exit status, having reported any error on
// the app's ErrWriter as "name: error: message". SIGTERM, and SIGINT unless
// it is ignored (as it is for background jobs of a script), cancel the
// context: a stage then finishes what it holds and exits 143 (SIGTERM) or
// 130 (SIGINT), as a process the signal had killed would; a second signal
// kills it. Every flag can also be set in the configuration file
// (config.go), and every binary has --version.
func Run(app *cli.App, args []string) int {
	if app.ErrWriter == nil {
		app.ErrWriter = stderr()
	}
	if app.Writer == nil {
		app.Writer = os.Stdout
	}
	if app.Reader == nil {
		app.Reader = os.Stdin
	}
	if len(args) == 2 && strings.HasPrefix(args[1], generateFlag+"=") {
		if err := generate(app, strings.TrimPrefix(args[1], generateFlag+"=")); err != nil {
			fmt.Fprintf(app.ErrWriter, "%s: error: %s\n", app.Name, err)
			return ExitUsage
		}
		return ExitOK
	}
	prepare(app)
	ctx, signalled, stop := notifyContext()
	defer stop()
	args, err := interleave(app, args)
	if err == nil {
		err = envError(app.RunContext(ctx, args))
	}
	err = readOnlyError(app, err)
	code := status(err)
	if err != nil {
		fmt.Fprintf(app.ErrWriter, "%s: error: %s\n", app.Name, oneLine(err.Error()))
	}
	if s := signalled(); s != 0 {
		return 128 + int(s)
	}
	return code
}

// badEnv is how urfave/cli words an environment variable it cannot read.
var badEnv = regexp.MustCompile(`^could not parse "(.*)" as (\w+) value from environment variable "(\w+)" for flag ([\w-]+)`)

// envError makes urfave/cli's error for a bad environment variable a
// usage error in our words; other errors stay as they are.
func envError(err error) error {
	if err == nil {
		return nil
	}
	m := badEnv.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	want := map[string]string{"int": "a whole number", "int64": "a whole number", "uint64": "a whole number", "float64": "a number", "bool": "true or false"}[m[2]]
	if want == "" {
		want = "a " + m[2]
	}
	return Usagef("%s=%q: want %s (the variable of --%s)", m[3], m[1], want, m[4])
}

// metaStore is the key of App.Metadata holding the store's path, once
// opened.
const metaStore = "cmdkit.store"

// sqliteReadOnly is SQLite's SQLITE_READONLY, the primary result code of
// a write to a database that cannot be written (its file, its directory
// or its file system read-only).
const sqliteReadOnly = 8

// readOnlyError words a write that SQLite refused as every writer words a
// store it cannot write (storedir.CheckWritable), a usage error: a command
// that found out only when it wrote says what the others say first.
func readOnlyError(app *cli.App, err error) error {
	var coded interface{ Code() int }
	if err == nil || !errors.As(err, &coded) || coded.Code()&0xff != sqliteReadOnly {
		return err
	}
	root, _ := app.Metadata[metaStore].(string)
	return Usagef("cannot write to the store %s: SQLite may not write its catalog there (%v), which every command needs, one that only reads too (the catalog's WAL index)", root, coded)
}

// status is the exit status err calls for.
func status(err error) int {
	var ue usageError
	var ce cli.ExitCoder
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, pipe.ErrFailed):
		return ExitFailed
	case errors.As(err, &ue):
		return ExitUsage
	case errors.As(err, &ce):
		return ce.ExitCode()
	}
	return ExitFailed
}

// prepare sets up what every binary shares: exit statuses decided by Run,
// usage errors in our words, --version, --config and the configuration
// file for the app and each command.
func prepare(app *cli.App) {
	app.ExitErrHandler = func(*cli.Context, error) {} // statuses are decided by Run
	app.HideHelpCommand = true
	if app.Version == "" {
		app.Version = Version()
	}
	if len(app.Commands) > 0 && app.Action == nil {
		app.Action = func(c *cli.Context) error {
			if c.NArg() > 0 {
				return Usagef("unknown command %q (see %s --help)", c.Args().First(), app.Name)
			}
			cli.ShowAppHelp(c)
			return Usagef("no command given")
		}
	}
	configure(app)
	app.OnUsageError = usageHandler(app.Name, app.Flags)
	for _, cmd := range app.Commands {
		cmd.OnUsageError = usageHandler(app.Name+" "+cmd.Name, cmd.Flags)
	}
}

// notifyContext returns a context that SIGTERM, and SIGINT unless it is
// ignored, cancel; signalled tells which signal did (0: none). After the
// first signal the next one gets the default action: it kills.
func notifyContext() (ctx context.Context, signalled func() syscall.Signal, stop func()) {
	sigs := []os.Signal{syscall.SIGTERM}
	if !signal.Ignored(os.Interrupt) {
		sigs = append(sigs, os.Interrupt)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	var got atomic.Int32
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			got.Store(int32(s.(syscall.Signal)))
			signal.Stop(ch)
			cancel()
		case <-done:
		}
	}()
	return ctx, func() syscall.Signal { return syscall.Signal(got.Load()) }, func() {
		close(done)
		signal.Stop(ch)
		cancel()
	}
}

// stderr is the process's stderr for messages and logs, through a
// descriptor of its own: the Go runtime kills a program that writes to a
// closed pipe on descriptor 2 (feed-sub refetch X 2>&1 | true), which could
// stop it between a change and its save. On another descriptor such a
// write fails with EPIPE, and the program goes on without its messages.
func stderr() *os.File {
	fd, err := unix.FcntlInt(os.Stderr.Fd(), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return os.Stderr
	}
	return os.NewFile(uintptr(fd), "/dev/stderr")
}

var (
	unknownFlag = regexp.MustCompile(`^flag provided but not defined: -+(.+)$`)
	badValue    = regexp.MustCompile(`^invalid value "(.*)" for flag -+([^:]+): (.*)$`)
	// The flag package words a bad --name=value of a boolean flag so.
	badBool = regexp.MustCompile(`^invalid boolean value "(.*)" for -+([^:]+): (.*)$`)
	noValue = regexp.MustCompile(`^flag needs an argument: -+(.+)$`)
)

// usageHandler turns the flag package's messages into one line that says
// what was wrong and where to look.
func usageHandler(command string, flags []cli.Flag) cli.OnUsageErrorFunc {
	return func(_ *cli.Context, err error, _ bool) error {
		msg := err.Error()
		if m := unknownFlag.FindStringSubmatch(msg); m != nil {
			return Usagef("unknown flag --%s (see %s --help)", m[1], command)
		}
		if m := noValue.FindStringSubmatch(msg); m != nil {
			return Usagef("--%s needs a value", m[1])
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
				switch unwrap(f).(type) {
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
func Setup(c *cli.Context, access Access) (*slog.Logger, *storedir.Store, error) {
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

// SetupCatalog is Setup with the store's catalog opened; the caller
// closes it.
func SetupCatalog(c *cli.Context, access Access) (*slog.Logger, *catalog.Catalog, error) {
	log, st, err := Setup(c, access)
	if err != nil {
		return nil, nil, err
	}
	cat, err := catalog.Open(c.Context, st, log)
	return log, cat, err
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
