package cmdkit

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// interleave moves flags that follow positional arguments in front of
// them, so that `feed-sub add URL --label news` works as people type it:
// urfave/cli stops reading flags at the first positional argument. A
// command (or subcommand) named by the first positional argument is kept in
// place, and "--" still ends the flags. A flag that takes a value but is
// given none (it is last, or followed by "--" or by another of the
// command's flags) is a usage error: the flag package would take the next
// argument, "--" among them, for its value.
func interleave(app *cli.App, args []string) ([]string, error) {
	if len(args) < 2 {
		return args, nil
	}
	out := []string{args[0]}
	rest := args[1:]
	flags := app.Flags
	// Flags before the subcommand belong to the app; after it, to the
	// subcommand (feed-sub add), or its own (feed-serve user add).
	commands := app.Commands
	for found := true; found; {
		found = false
		for i, a := range rest {
			if strings.HasPrefix(a, "-") {
				continue
			}
			if i > 0 && !isBoolFlag(flags, rest[i-1]) && !strings.Contains(rest[i-1], "=") && strings.HasPrefix(rest[i-1], "-") {
				continue // the value of a flag
			}
			if cmd := findCommand(commands, a); cmd != nil {
				if err := checkValues(rest[:i], flags, app.Flags); err != nil {
					return nil, err
				}
				out = append(out, rest[:i+1]...)
				rest = rest[i+1:]
				flags, commands, found = cmd.Flags, cmd.Subcommands, true
			}
			break
		}
	}
	var front, positional []string
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--":
			positional = append(positional, rest[i+1:]...)
			i = len(rest)
		case a != "-" && strings.HasPrefix(a, "-"):
			// A flag of the app given after its subcommand (feed-sub ls
			// --store X) goes back in front of the subcommand.
			global := len(out) > 1 && lookup(flags, a) == nil && lookup(app.Flags, a) != nil
			fl := flags
			if global {
				fl = app.Flags
			}
			taken := []string{a}
			if !strings.Contains(a, "=") && !isBoolFlag(fl, a) {
				if i+1 == len(rest) || rest[i+1] == "--" || flagLike(rest[i+1]) {
					return nil, missingValue(a, i+1 < len(rest) && rest[i+1] != "--")
				}
				i++
				taken = append(taken, rest[i])
			}
			if global {
				out = slices.Insert(out, 1, taken...)
			} else {
				front = append(front, taken...)
			}
		default:
			positional = append(positional, a)
		}
	}
	out = append(out, front...)
	if len(positional) > 0 {
		out = append(out, "--")
		out = append(out, positional...)
	}
	return out, nil
}

// flagLike reports whether arg reads as a flag rather than a value: --x,
// or -x with a letter (-1, a negative number, and -, stdin, are values).
// A flag that takes a value is not given one that reads so: --store
// --label is a forgotten value, not a store named --label.
func flagLike(arg string) bool {
	return strings.HasPrefix(arg, "--") || len(arg) > 1 && arg[0] == '-' && ('a' <= arg[1] && arg[1] <= 'z' || 'A' <= arg[1] && arg[1] <= 'Z')
}

// checkValues checks that each flag of args (those before a subcommand)
// that takes a value, in flags or global, is followed by one.
func checkValues(args []string, flags, global []cli.Flag) error {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-" || !strings.HasPrefix(a, "-") || strings.Contains(a, "=") || isBoolFlag(flags, a) && isBoolFlag(global, a) {
			continue
		}
		if i+1 == len(args) || args[i+1] == "--" || flagLike(args[i+1]) {
			return missingValue(a, i+1 < len(args) && args[i+1] != "--")
		}
		i++ // its value
	}
	return nil
}

// missingValue is the usage error of a flag given without its value;
// flagNext says another flag followed it.
func missingValue(arg string, flagNext bool) error {
	name := "--" + strings.TrimLeft(arg, "-")
	if flagNext {
		return Usagef("%s needs a value (one that starts with -, such as -x, is written %s=-x)", name, name)
	}
	return Usagef("%s needs a value", name)
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// lookup returns the flag that arg names, or nil.
func lookup(flags []cli.Flag, arg string) cli.Flag {
	name := strings.TrimLeft(arg, "-")
	if i := strings.IndexByte(name, '='); i >= 0 {
		name = name[:i]
	}
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}

// isBoolFlag reports whether arg names a flag that takes no value. Unknown
// flags (--help among them) are taken as booleans, which leaves their
// neighbours in place for urfave/cli to report.
func isBoolFlag(flags []cli.Flag, arg string) bool {
	f := lookup(flags, arg)
	if f == nil {
		return true
	}
	v, ok := f.(cli.DocGenerationFlag)
	return !ok || !v.TakesValue()
}
