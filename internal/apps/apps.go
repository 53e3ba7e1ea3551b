// Package apps holds the command line of every feedpipe binary, each a
// function that builds its cli.App (one file per binary): cmd/feed-X runs
// one, and cmd/feedpipe is all of them in one binary, which scripts/install
// installs once and links under each name (it runs the command its name
// says, as busybox does).
package apps

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/cmdkit"
	"github.com/feedpipe/feedpipe/internal/version"
)

// table is every command of the feedpipe binary, by the name it is
// installed under: one line adds one (and its file here, as feedfetch.go).
var table = map[string]func() *cli.App{
	"feed-bus":    FeedBus,
	"feed-dedup":  FeedDedup,
	"feed-due":    FeedDue,
	"feed-fetch":  FeedFetch,
	"feed-media":  FeedMedia,
	"feed-parse":  FeedParse,
	"feed-read":   FeedRead,
	"feed-scrape": FeedScrape,
	"feed-serve":  FeedServe,
	"feed-stats":  FeedStats,
	"feed-store":  FeedStore,
	"feed-sub":    FeedSub,
}

// standaloneFlags are the flags of the feedpipe binaries built on their
// own, outside the table (cmd/feed-sim): the configuration file's top
// level may set a flag of any binary. One that joins the table leaves it.
var standaloneFlags = map[string][]string{
	"feed-sim": {"generate", "seed", "feeds", "days", "start", "plain", "no-floors", "policies", "budget", "budget-of",
		"targets", "json", "write-trace", "show", "by-kind"},
}

func init() {
	// The configuration file's top level is checked against every
	// binary's flags.
	cmdkit.Binaries = func() map[string]*cli.App {
		all := map[string]*cli.App{}
		for name, app := range table {
			all[name] = app()
		}
		for name, flags := range standaloneFlags {
			app := &cli.App{Name: name}
			for _, f := range flags {
				app.Flags = append(app.Flags, &cli.BoolFlag{Name: f})
			}
			all[name] = app
		}
		return all
	}
}

// Names are the commands of the feedpipe binary, sorted.
func Names() []string {
	var names []string
	for n := range table {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Main runs the command args names and returns its exit status: the one
// args[0] is named after (feed-fetch, a link to the feedpipe binary), else
// the one args[1] names (feedpipe feed-fetch --help). Alone, or with
// --help, it lists the commands; --version prints the version; --commands,
// for scripts/install, the commands' names, one a line. A command writes
// to stdout and stderr, or to the process's when they are nil.
func Main(args []string, stdout, stderr io.Writer) int {
	run := func(app *cli.App, args []string) int {
		app.Writer, app.ErrWriter = stdout, stderr
		return cmdkit.RunMain(app, args)
	}
	if app, ok := table[filepath.Base(args[0])]; ok {
		return run(app(), args)
	}
	if len(args) > 1 {
		if app, ok := table[args[1]]; ok {
			return run(app(), args[1:])
		}
	}
	if stdout == nil {
		stdout, stderr = os.Stdout, os.Stderr
	}
	switch {
	case len(args) == 1, args[1] == "--help", args[1] == "-h", args[1] == "help":
		fmt.Fprint(stdout, feedpipeUsage())
		return cmdkit.ExitOK
	case args[1] == "--version":
		fmt.Fprintf(stdout, "feedpipe version %s\n", version.String())
		return cmdkit.ExitOK
	case args[1] == "--commands":
		fmt.Fprintln(stdout, strings.Join(Names(), "\n"))
		return cmdkit.ExitOK
	}
	fmt.Fprintf(stderr, "feedpipe: error: unknown command %q: it is one of %s (feedpipe --help)\n", args[1], strings.Join(Names(), ", "))
	return cmdkit.ExitUsage
}

// feedpipeUsage is feedpipe --help.
func feedpipeUsage() string {
	var b strings.Builder
	b.WriteString(`feedpipe: every feedpipe command in one binary, run by the name it is
called by (a link named feed-fetch runs feed-fetch), or by its first
argument:

   feedpipe COMMAND [ARGS...]      such as: feedpipe feed-sub ls
   feedpipe --version

COMMANDS:
`)
	for _, n := range Names() {
		// Each command's usage, wrapped to 80 columns under itself.
		line := fmt.Sprintf("   %-12s", n)
		for _, w := range strings.Fields(table[n]().Usage) {
			if len(line)+1+len(w) > 80 {
				b.WriteString(line + "\n")
				line = strings.Repeat(" ", 15)
			}
			line += " " + w
		}
		b.WriteString(line + "\n")
	}
	fmt.Fprintf(&b, "\nEach has --help and a man page (man %s).\n", Names()[0])
	return b.String()
}

// Run is Main for the process: its arguments, stdout and stderr.
func Run() int { return Main(os.Args, nil, nil) }
