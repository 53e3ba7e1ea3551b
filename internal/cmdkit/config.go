package cmdkit

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"
)

// The configuration file: every flag of every binary can be set in it,
// below the flags and the environment, above the defaults. urfave/cli's
// altsrc applies it; this file only says where it is and which of its
// tables a command reads.
//
// One file serves all the binaries:
//
//   - A key at the top level sets the flag of that name of every binary
//     that has one at its top (store, log-level, user-agent, policy, ...).
//   - A table named after a binary ([feed-fetch], [feed-store],
//     [feed-sub], ...) sets that binary's flags, over the top level.
//   - A table inside it named after a subcommand ([feed-store.prune],
//     [feed-sub.add]) sets that subcommand's flags. A subcommand's settings
//     that other binaries share (the store, logging, HTTP, the
//     scheduler's, the parser's limits) are also read from the binary's
//     table and the top level; its own (feed-sub add --label, feed-store
//     prune --raw-keep) only from its table, so that a key meant for one
//     command never changes another.
//
// Durations are strings ("90s", "1h") or whole seconds; lists are arrays
// or one string. A key that the binary's own table, or a subcommand's,
// has but no flag of it takes is an error: a typo there would otherwise
// pass unnoticed.
const (
	configFlag = "config"
	envConfig  = "FEEDPIPE_CONFIG"
	// metaFromFile is the key of App.Metadata holding the names of the
	// flags the configuration file set (FromFile).
	metaFromFile = "cmdkit.fromFile"
	metaConfig   = "cmdkit.config"
)

// Binaries, when set, builds the app of every feedpipe binary, by its name
// (internal/apps sets it): the top level of the configuration file may
// hold a binary's table and a flag that some binary has at its top (or
// shares with its subcommands), and nothing else, so that a typo there is
// an error as it is in a table. Without it (a binary outside
// internal/apps) the top level is not checked.
var Binaries func() map[string]*cli.App

// DefaultConfig is the configuration file read when --config does not name
// one: $XDG_CONFIG_HOME/feedpipe/config.toml, else
// ~/.config/feedpipe/config.toml. It need not exist.
func DefaultConfig() string {
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "feedpipe", "config.toml")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".config", "feedpipe", "config.toml")
	}
	return ""
}

// configure gives app a --config flag and makes it and every command read
// the configuration file after their flags are parsed.
func configure(app *cli.App) {
	if lookup(app.Flags, "--"+configFlag) == nil {
		app.Flags = append(app.Flags, &cli.StringFlag{Name: configFlag, EnvVars: []string{envConfig}, Usage: "the configuration file (TOML): a key per flag, flags and the environment win over it",
			DefaultText: "$XDG_CONFIG_HOME/feedpipe/config.toml, if it exists", TakesFile: true})
	}
	shared := sharedFlags()
	app.Flags = withSources(app.Flags)
	bin := app.Name
	app.Before = chain(func(c *cli.Context) error {
		return applyConfig(c, app.Flags, []string{bin}, nil)
	}, app.Before)
	for _, cmd := range app.Commands {
		cmd.Flags = withSources(cmd.Flags)
		cmd.Before = chain(func(c *cli.Context) error {
			return applyConfig(c, cmd.Flags, []string{bin, cmd.Name}, shared)
		}, cmd.Before)
	}
}

// chain runs first, then next (if any).
func chain(first, next cli.BeforeFunc) cli.BeforeFunc {
	if next == nil {
		return first
	}
	return func(c *cli.Context) error {
		if err := first(c); err != nil {
			return err
		}
		return next(c)
	}
}

// sharedFlags are the names of the flags that binaries share: a
// subcommand reads them from the top level and its binary's table too.
func sharedFlags() map[string]bool {
	names := map[string]bool{}
	for _, list := range [][]cli.Flag{CommonFlags(), HTTPFlags("", ""), SchedFlags(), ParserFlags(), {PublicURLFlag()}} {
		for _, f := range list {
			names[f.Names()[0]] = true
		}
	}
	// feed-sub add and set keep --allow-private with one feed: the switch
	// for every feed at the top level must not become a setting of each.
	delete(names, "allow-private")
	return names
}

// FromFile reports whether the configuration file gave flag name its
// value. A command that reads an environment variable of a flag itself
// (the scheduler's, FETCH_TIMEOUT_MS) lets the variable win over such a
// value, as altsrc lets the variables it knows of.
func FromFile(c *cli.Context, name string) bool {
	m, _ := c.App.Metadata[metaFromFile].(map[string]bool)
	return m[name]
}

// given reports whether flag name was given a value that wins over the
// environment variables envs: on the command line, or by the file when
// none of envs is set.
func given(c *cli.Context, name string, lookupEnv func(string) (string, bool), envs ...string) bool {
	if !c.IsSet(name) {
		return false
	}
	if !FromFile(c, name) {
		return true
	}
	for _, e := range envs {
		if v, ok := lookupEnv(e); ok && strings.TrimSpace(v) != "" {
			return false
		}
	}
	return true
}

// applyConfig applies the configuration file to flags, the flags of the
// command at path (the binary's section name, then the subcommand's).
// shared, for a subcommand, names the flags also read from the binary's
// table and the top level.
func applyConfig(c *cli.Context, flags []cli.Flag, path []string, shared map[string]bool) error {
	file, err := loadConfig(c)
	if err != nil || file == nil {
		return err
	}
	if len(path) == 1 {
		if err := checkTop(file); err != nil {
			return err
		}
	}
	values := map[any]any{}
	byName := map[string]cli.Flag{}
	for _, f := range flags {
		for _, n := range f.Names() {
			byName[n] = f
		}
	}
	// Each table on the path, outermost first: inner ones win.
	tables := []map[string]any{file.top}
	node := file.top
	for i, name := range path {
		t, ok := node[name].(map[string]any)
		if !ok {
			if _, there := node[name]; there {
				return Usagef("%s: %s is not a table", file.name, strings.Join(path[:i+1], "."))
			}
			break
		}
		tables = append(tables, t)
		node = t
	}
	own := len(path) // the table the command owns: its keys must be flags
	for depth, t := range tables {
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := t[k]
			f, ok := byName[k]
			if !ok {
				if _, isTable := v.(map[string]any); depth == own && !isTable {
					return Usagef("%s: [%s] %s: no such flag (see %s --help)", file.name, strings.Join(path, "."), k, commandName(c))
				}
				continue
			}
			if depth < own && shared != nil && !shared[f.Names()[0]] {
				continue // a subcommand's own flag: only from its own table
			}
			cv, err := coerce(f, v)
			if err != nil {
				where := strings.Join(path[:depth], ".")
				if where != "" {
					where = "[" + where + "] "
				}
				return Usagef("%s: %s%s: %v", file.name, where, k, err)
			}
			for _, n := range f.Names() {
				values[n] = cv
			}
		}
	}
	set := map[string]bool{}
	for _, f := range flags {
		set[f.Names()[0]] = c.IsSet(f.Names()[0])
	}
	if err := altsrc.ApplyInputSourceValues(c, altsrc.NewMapInputSource(file.name, values), flags); err != nil {
		return Usagef("%s: %v", file.name, err)
	}
	fromFile, _ := c.App.Metadata[metaFromFile].(map[string]bool)
	if fromFile == nil {
		fromFile = map[string]bool{}
		if c.App.Metadata == nil {
			c.App.Metadata = map[string]any{}
		}
		c.App.Metadata[metaFromFile] = fromFile
	}
	for name, was := range set {
		if !was && c.IsSet(name) {
			fromFile[name] = true
		}
	}
	return nil
}

// checkTop checks the top level of the configuration file against every
// binary's flags (Binaries): a table must be a binary's, a key a flag that
// a binary has at its top or shares with its subcommands.
func checkTop(file *configFile) error {
	if Binaries == nil {
		return nil
	}
	bins := Binaries()
	shared := sharedFlags()
	top := map[string]bool{configFlag: true}
	own := map[string]string{} // a subcommand's own flag -> its table
	for name, app := range bins {
		for _, f := range app.Flags {
			for _, n := range f.Names() {
				top[n] = true
			}
		}
		for _, cmd := range app.Commands {
			for _, f := range cmd.Flags {
				for _, n := range f.Names() {
					if shared[f.Names()[0]] {
						top[n] = true
					} else if own[n] == "" {
						own[n] = name + "." + cmd.Name
					}
				}
			}
		}
	}
	keys := make([]string, 0, len(file.top))
	for k := range file.top {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, isTable := file.top[k].(map[string]any); isTable {
			if _, ok := bins[k]; !ok {
				names := make([]string, 0, len(bins))
				for n := range bins {
					names = append(names, n)
				}
				sort.Strings(names)
				return Usagef("%s: [%s]: no feedpipe binary is named so (a table is one of %s)", file.name, k, strings.Join(names, ", "))
			}
			continue
		}
		switch {
		case top[k]:
		case own[k] != "":
			return Usagef("%s: %s: a key at the top level sets a flag of every binary, and %s is only feed-%s's: put it in [%s]",
				file.name, k, k, strings.Replace(strings.TrimPrefix(own[k], "feed-"), ".", " ", 1), own[k])
		default:
			return Usagef("%s: %s: no feedpipe binary has such a flag (a key at the top level sets the flag of that name of every binary that has it)", file.name, k)
		}
	}
	return nil
}

// commandName is the command c runs, as people type it.
func commandName(c *cli.Context) string {
	if c.Command != nil && c.Command.Name != "" && c.Command.Name != c.App.Name {
		return c.App.Name + " " + c.Command.Name
	}
	return c.App.Name
}

// configFile is the parsed configuration file.
type configFile struct {
	name string
	top  map[string]any
}

// loadConfig reads the configuration file --config names, or the default
// one if it exists; nil if there is none. It is read once per run.
func loadConfig(c *cli.Context) (*configFile, error) {
	if cf, ok := c.App.Metadata[metaConfig].(*configFile); ok {
		return cf, nil
	}
	name, explicit := c.String(configFlag), c.IsSet(configFlag)
	if !explicit {
		name = DefaultConfig()
	}
	if name == "" {
		return nil, nil
	}
	if _, err := os.Stat(name); err != nil && !explicit {
		return nil, nil // none, or none this user can see
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, Usagef("configuration file: %v", err)
	}
	top := map[string]any{}
	if _, err := toml.Decode(string(b), &top); err != nil {
		return nil, Usagef("configuration file %s: %v", name, err)
	}
	cf := &configFile{name: name, top: top}
	if c.App.Metadata == nil {
		c.App.Metadata = map[string]any{}
	}
	c.App.Metadata[metaConfig] = cf
	return cf, nil
}

// coerce turns v, as TOML gives it, into the type altsrc wants for f, or
// says what f wants.
func coerce(f cli.Flag, v any) (any, error) {
	switch unwrap(f).(type) {
	case *cli.StringFlag:
		if s, ok := v.(string); ok {
			return s, nil
		}
		return nil, errors.New("want a string")
	case *cli.BoolFlag:
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return nil, errors.New("want true or false")
	case *cli.IntFlag:
		if n, ok := v.(int64); ok && n >= math.MinInt32 && n <= math.MaxInt32 {
			return int(n), nil
		}
		return nil, errors.New("want a whole number")
	case *cli.Int64Flag:
		if n, ok := v.(int64); ok {
			return n, nil
		}
		return nil, errors.New("want a whole number")
	case *cli.Uint64Flag:
		if n, ok := v.(int64); ok && n >= 0 {
			return uint64(n), nil
		}
		return nil, errors.New("want a whole number, 0 or more")
	case *cli.Float64Flag:
		switch n := v.(type) {
		case int64:
			return float64(n), nil
		case float64:
			return n, nil
		}
		return nil, errors.New("want a number")
	case *cli.DurationFlag:
		switch d := v.(type) {
		case int64:
			return time.Duration(d) * time.Second, nil
		case string:
			if dur, err := parseDuration(d, false); err == nil {
				return dur, nil
			}
		}
		return nil, errors.New(`want a duration such as "90s" or "1h", or whole seconds`)
	case *cli.StringSliceFlag:
		switch l := v.(type) {
		case string:
			return []any{l}, nil
		case []any:
			for _, e := range l {
				if _, ok := e.(string); !ok {
					return nil, errors.New("want a list of strings")
				}
			}
			return l, nil
		}
		return nil, errors.New("want a string or a list of strings")
	case *cli.GenericFlag:
		switch x := v.(type) {
		case string:
			return text(x), nil
		case int64:
			return text(strconv.FormatInt(x, 10)), nil
		case float64:
			return text(strconv.FormatFloat(x, 'g', -1, 64)), nil
		case bool:
			return text(strconv.FormatBool(x)), nil
		}
		return nil, errors.New("want a string or a number")
	}
	return nil, fmt.Errorf("cannot be set in the file")
}

// text is a value from the file for a cli.GenericFlag, which altsrc wants
// as a cli.Generic: the flag's own Set reads it.
type text string

func (t text) String() string     { return string(t) }
func (t text) Set(s string) error { return nil }

// withSources wraps each flag in its altsrc kind, which the file can set.
// A duration flag also takes whole seconds from the environment
// (envDuration). Flags already wrapped are left as they are.
func withSources(flags []cli.Flag) []cli.Flag {
	out := slices.Clone(flags)
	for i, f := range out {
		switch f := f.(type) {
		case *cli.StringFlag:
			out[i] = altsrc.NewStringFlag(f)
		case *cli.BoolFlag:
			out[i] = altsrc.NewBoolFlag(f)
		case *cli.IntFlag:
			out[i] = altsrc.NewIntFlag(f)
		case *cli.Int64Flag:
			out[i] = altsrc.NewInt64Flag(f)
		case *cli.Uint64Flag:
			out[i] = altsrc.NewUint64Flag(f)
		case *cli.Float64Flag:
			out[i] = altsrc.NewFloat64Flag(f)
		case *cli.DurationFlag:
			out[i] = Duration(f)
		case *cli.StringSliceFlag:
			out[i] = altsrc.NewStringSliceFlag(f)
		case *cli.GenericFlag:
			out[i] = altsrc.NewGenericFlag(f)
		}
	}
	return out
}

// unwrap returns the urfave/cli flag inside an altsrc (or envDuration) one.
func unwrap(f cli.Flag) cli.Flag {
	switch f := f.(type) {
	case *altsrc.StringFlag:
		return f.StringFlag
	case *altsrc.BoolFlag:
		return f.BoolFlag
	case *altsrc.IntFlag:
		return f.IntFlag
	case *altsrc.Int64Flag:
		return f.Int64Flag
	case *altsrc.Uint64Flag:
		return f.Uint64Flag
	case *altsrc.Float64Flag:
		return f.Float64Flag
	case *envDuration:
		return f.DurationFlag.DurationFlag
	case *altsrc.DurationFlag:
		return f.DurationFlag
	case *altsrc.StringSliceFlag:
		return f.StringSliceFlag
	case *altsrc.GenericFlag:
		return f.GenericFlag
	}
	return f
}

// Duration makes f a flag whose environment variables take a Go duration
// (90s, 1h) or whole seconds (60), milliseconds for a name ending in _MS
// (FETCH_TIMEOUT_MS): urfave/cli alone reads only the first kind, and the
// older names (docs/design.md#configuration) take seconds.
func Duration(f *cli.DurationFlag) cli.Flag {
	return &envDuration{altsrc.NewDurationFlag(f)}
}

// envDuration is a duration flag that reads its environment variables
// itself (Duration).
type envDuration struct{ *altsrc.DurationFlag }

// Apply defines the flag without its variables, then sets it from the
// first of them that is set.
func (f *envDuration) Apply(set *flag.FlagSet) error {
	envs := f.EnvVars
	f.EnvVars = nil
	err := f.DurationFlag.Apply(set)
	f.EnvVars = envs
	if err != nil {
		return err
	}
	for _, name := range envs {
		v, ok := os.LookupEnv(name)
		if !ok || strings.TrimSpace(v) == "" {
			continue
		}
		d, err := parseDuration(v, strings.HasSuffix(name, "_MS"))
		if err != nil {
			unit := "whole seconds"
			if strings.HasSuffix(name, "_MS") {
				unit = "whole milliseconds"
			}
			return Usagef("%s=%q: want a duration such as 90s or 1h, or %s", name, v, unit)
		}
		for _, n := range f.Names() {
			if err := set.Set(n, d.String()); err != nil {
				return err
			}
		}
		f.HasBeenSet = true
		return nil
	}
	return nil
}

// parseDuration reads a Go duration (90s, 1h30m) or a whole number of
// seconds (of milliseconds when ms is set), as every duration in the
// environment and the configuration file may be written.
func parseDuration(s string, ms bool) (time.Duration, error) {
	s = strings.TrimSpace(s)
	unit := time.Second
	if ms {
		unit = time.Millisecond
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 || n > math.MaxInt64/int64(unit) {
			return 0, errors.New("out of range")
		}
		return time.Duration(n) * unit, nil
	}
	return time.ParseDuration(s)
}
