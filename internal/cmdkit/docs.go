package cmdkit

import (
	"fmt"
	"go/doc/comment"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/urfave/cli/v2"
)

// generateFlag, as a binary's only argument (--generate-docs=man), makes
// it write its man page or a shell's completion script, from the same
// definitions as its --help, instead of running: tools/gendoc and
// scripts/install use it. It is not a flag of urfave/cli's, so that no
// other argument can reach it.
const generateFlag = "--generate-docs"

// generate writes what kind asks for to app.Writer: "man" (the man page,
// section 1), "bash", "zsh" or "fish" (a completion script).
func generate(app *cli.App, kind string) error {
	prepare(app)
	var s string
	switch kind {
	case "man":
		s = ManPage(app)
	default:
		var ok bool
		if s, ok = Completion(app, kind); !ok {
			return Usagef("%s=%s: want man, bash, zsh or fish", generateFlag, kind)
		}
	}
	_, err := io.WriteString(app.Writer, s)
	return err
}

// Completion is app's completion script for shell (bash, zsh or fish),
// from its commands and flags; ok is false for another shell.
func Completion(app *cli.App, shell string) (script string, ok bool) {
	switch shell {
	case "bash":
		return bashCompletion(app), true
	case "zsh":
		return zshCompletion(app), true
	case "fish":
		return fishCompletion(app), true
	}
	return "", false
}

// Roff escapes s for a line of roff text: backslashes, hyphens (so that
// --flags copy as typed), characters beyond ASCII (as \[uXXXX], which every
// formatter reads whatever its input encoding) and a leading dot or quote,
// which would make a line a request.
func Roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	var b strings.Builder
	for _, r := range s {
		if r > 0x7e {
			fmt.Fprintf(&b, `\[u%04X]`, r)
		} else {
			b.WriteRune(r)
		}
	}
	s = b.String()
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			lines[i] = `\&` + l
		}
	}
	return strings.Join(lines, "\n")
}

// manWidth is the widest a line of text kept as written may be: man
// indents it by 7 columns, and the page must fit 80.
const manWidth = 80 - 7

// preformatted is text kept as it is written, line by line, a line wider
// than manWidth broken at a space (wrapCode).
func preformatted(b *strings.Builder, text string) {
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		lines = append(lines, wrapCode(l, manWidth)...)
	}
	b.WriteString(".nf\n" + Roff(strings.Join(lines, "\n")) + "\n.fi\n")
}

// described writes a description: its paragraphs (blank lines apart) of
// prose filled by man to the page's width, and those with an indented
// line (examples, columns) kept as written.
func described(b *strings.Builder, text string) {
	for i, para := range strings.Split(strings.TrimSpace(text), "\n\n") {
		if i > 0 {
			b.WriteString(".PP\n")
		}
		indented := false
		for _, l := range strings.Split(para, "\n") {
			indented = indented || strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t")
		}
		if indented {
			preformatted(b, para)
			continue
		}
		b.WriteString(Roff(strings.Join(strings.Fields(para), " ")) + "\n")
	}
}

// codeColumn finds where a line's last column begins: after a run of two
// spaces or more ("url    string  the feed's URL"), before width.
var codeColumn = regexp.MustCompile(`\S {2,}(\S)`)

// wrapCode breaks a line of code or of a table wider than width at its
// last spaces that fit, each further line indented to the line's last
// column (or its own indent and four more).
func wrapCode(line string, width int) []string {
	if utf8.RuneCountInString(line) <= width {
		return []string{line}
	}
	hang := len(line) - len(strings.TrimLeft(line, " ")) + 4
	for _, m := range codeColumn.FindAllStringSubmatchIndex(line, -1) {
		if m[2] < width-10 {
			hang = m[2]
		}
	}
	var out []string
	for utf8.RuneCountInString(line) > width {
		// At a space, else after a comma (JSON written without spaces).
		cut := strings.LastIndex(line[:width], " ")
		if cut <= hang {
			if cut = strings.LastIndex(line[:width], ","); cut > 0 {
				cut++
			}
		}
		if cut <= hang || strings.TrimSpace(line[:cut]) == "" {
			break // nowhere to break: kept whole
		}
		out = append(out, strings.TrimRight(line[:cut], " "))
		line = strings.Repeat(" ", hang) + strings.TrimLeft(line[cut:], " ")
	}
	return append(out, line)
}

// flagLines are the flags' entries, as --help prints them: the flag and
// its value, then the usage, default and environment.
func flagLines(b *strings.Builder, flags []cli.Flag) {
	var cats []string
	byCat := map[string][]cli.Flag{}
	for _, f := range flags {
		if v, ok := f.(cli.VisibleFlag); ok && !v.IsVisible() {
			continue
		}
		cat := ""
		if c, ok := f.(cli.CategorizableFlag); ok {
			cat = c.GetCategory()
		}
		if _, ok := byCat[cat]; !ok {
			cats = append(cats, cat)
		}
		byCat[cat] = append(byCat[cat], f)
	}
	sort.Strings(cats) // "" first
	for _, cat := range cats {
		if cat != "" {
			fmt.Fprintf(b, ".PP\n%s options:\n", Roff(cat))
		}
		fl := byCat[cat]
		sort.Slice(fl, func(i, j int) bool { return fl[i].Names()[0] < fl[j].Names()[0] })
		for _, f := range fl {
			head, usage, _ := strings.Cut(f.String(), "\t")
			fmt.Fprintf(b, ".TP\n.B %s\n%s\n", Roff(head), Roff(usage))
		}
	}
}

// ManPage is app's man page (section 1), from the definitions its --help
// shows: the usage, the description, every visible flag with its
// default and environment variables, and each command with its own.
func ManPage(app *cli.App) string {
	var b strings.Builder
	name := app.Name
	fmt.Fprintf(&b, ".TH %s 1 \"\" \"feedpipe %s\" \"feedpipe manual\"\n", strings.ToUpper(name), Roff(app.Version))
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n", Roff(name), Roff(app.Usage))
	b.WriteString(".SH SYNOPSIS\n")
	usage := app.UsageText
	if usage == "" {
		usage = name + " [options]"
	}
	preformatted(&b, usage)
	if app.Description != "" {
		b.WriteString(".SH DESCRIPTION\n")
		described(&b, app.Description)
	}
	b.WriteString(".SH OPTIONS\n")
	flagLines(&b, app.Flags)
	b.WriteString(".TP\n.B \\-\\-help, \\-h\nshow help\n")
	if app.Version != "" {
		b.WriteString(".TP\n.B \\-\\-version\nprint the version and exit\n")
	}
	var cmds []*cli.Command
	for _, c := range app.Commands {
		if !c.Hidden {
			cmds = append(cmds, c)
		}
	}
	if len(cmds) > 0 {
		b.WriteString(".SH COMMANDS\n")
		for _, c := range cmds {
			fmt.Fprintf(&b, ".SS %s\n", Roff(strings.TrimSpace(name+" "+c.Name+" [options] "+c.ArgsUsage)))
			fmt.Fprintf(&b, "%s\n", Roff(c.Usage))
			if c.UsageText != "" {
				b.WriteString(".PP\n")
				preformatted(&b, c.UsageText)
			}
			if c.Description != "" {
				b.WriteString(".PP\n")
				described(&b, c.Description)
			}
			flagLines(&b, c.Flags)
		}
	}
	b.WriteString(`.SH FILES
.TP
.I $XDG_CONFIG_HOME/feedpipe/config.toml
the configuration file (\-\-config): a key per flag; the top level for every binary, a table per binary ([feed\-fetch], [feed\-store], ...) and per subcommand ([feed\-store.prune]); flags and the environment win over it
.TP
.I $XDG_DATA_HOME/feedpipe
the store (\-\-store), unless FEEDPIPE_STORE names another
.TP
.I PREFIX/share/doc/feedpipe
README.md and the documents the help names (scheduler.md, serve.md, store.md, parse.md, read.md, design.md, bus.md), where scripts/install put feedpipe (PREFIX /usr/local: /usr/local/share/doc/feedpipe)
.SH EXIT STATUS
0 when everything went well; 1 when some records or feeds failed, each reported on stderr; 2 for usage errors and a store that cannot be opened; 130 or 143 when SIGINT or SIGTERM stopped it early (it finished what it held first).
.SH SEE ALSO
`)
	see := []string{"feed-sub(1)", "feed-due(1)", "feed-fetch(1)", "feed-parse(1)", "feed-scrape(1)", "feed-dedup(1)", "feed-store(1)", "feed-stats(1)", "feed-read(1)", "feed-serve(1)", "feed-bus(1)", "feed-sim(1)", "feed-loop(1)", "feedpipe-ndjson(5)"}
	see = slices.DeleteFunc(see, func(s string) bool { return s == name+"(1)" })
	b.WriteString(Roff(strings.Join(see, ", ")) + "\n")
	return b.String()
}

// ManFromDoc renders a Go doc comment (pkg/ndjson's package comment, for
// feedpipe-ndjson(5)) as a man page: its headings become sections, its
// code blocks stay as written.
func ManFromDoc(name string, section int, summary, doc string) string {
	var b strings.Builder
	fmt.Fprintf(&b, ".TH %s %d \"\" \"feedpipe\" \"feedpipe manual\"\n", strings.ToUpper(name), section)
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n.SH DESCRIPTION\n", Roff(name), Roff(summary))
	var p comment.Parser
	d := p.Parse(doc)
	for _, blk := range d.Content {
		switch blk := blk.(type) {
		case *comment.Heading:
			fmt.Fprintf(&b, ".SH %s\n", Roff(strings.ToUpper(inlineText(blk.Text))))
		case *comment.Paragraph:
			fmt.Fprintf(&b, ".PP\n%s\n", Roff(inlineText(blk.Text)))
		case *comment.Code:
			b.WriteString(".PP\n")
			preformatted(&b, blk.Text)
		case *comment.List:
			for _, it := range blk.Items {
				mark := "\\(bu"
				if it.Number != "" {
					mark = it.Number + "."
				}
				fmt.Fprintf(&b, ".IP %s 4\n", mark)
				for i, c := range it.Content {
					if p, ok := c.(*comment.Paragraph); ok {
						if i > 0 {
							b.WriteString(".IP\n")
						}
						b.WriteString(Roff(inlineText(p.Text)) + "\n")
					}
				}
			}
		}
	}
	return b.String()
}

// inlineText is the plain text of a doc comment's inline elements.
func inlineText(text []comment.Text) string {
	var b strings.Builder
	for _, t := range text {
		switch t := t.(type) {
		case comment.Plain:
			b.WriteString(string(t))
		case comment.Italic:
			b.WriteString(string(t))
		case *comment.Link:
			b.WriteString(inlineText(t.Text))
		case *comment.DocLink:
			b.WriteString(inlineText(t.Text))
		}
	}
	return b.String()
}

// completionFlags are the names of the visible flags, each as --name, and
// whether each takes a value.
func completionFlags(flags []cli.Flag) (names []string, usage map[string]string, takesValue map[string]bool) {
	usage, takesValue = map[string]string{}, map[string]bool{}
	for _, f := range flags {
		if v, ok := f.(cli.VisibleFlag); ok && !v.IsVisible() {
			continue
		}
		d, _ := f.(cli.DocGenerationFlag)
		for _, n := range f.Names() {
			if len(n) == 1 || slices.Contains(names, "--"+n) {
				continue // a short name, or one given twice (feed-loop's --version, read from its help, and the app's)
			}
			name := "--" + n
			names = append(names, name)
			if d != nil {
				usage[name], takesValue[name] = d.GetUsage(), d.TakesValue()
			}
		}
	}
	sort.Strings(names)
	return names, usage, takesValue
}

func visibleCommands(app *cli.App) []*cli.Command {
	var cmds []*cli.Command
	for _, c := range app.Commands {
		if !c.Hidden {
			cmds = append(cmds, c)
		}
	}
	return cmds
}

// funcName is a shell function name for the binary.
func funcName(app *cli.App) string { return "_" + strings.ReplaceAll(app.Name, "-", "_") }

// bashCompletion is a bash completion script for app: its commands, and
// the flags of the command being typed.
func bashCompletion(app *cli.App) string {
	var b strings.Builder
	fn := funcName(app)
	global, _, gval := completionFlags(append(app.Flags, cli.HelpFlag, cli.VersionFlag))
	fmt.Fprintf(&b, "# bash completion for %s (generated: %s %s=bash)\n", app.Name, app.Name, generateFlag)
	fmt.Fprintf(&b, "%s() {\n\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} cmd= i words\n", fn)
	cmds := visibleCommands(app)
	valued := map[string]bool{}
	for n, v := range gval {
		valued[n] = valued[n] || v
	}
	if len(cmds) > 0 {
		var names []string
		for _, c := range cmds {
			names = append(names, c.Names()...)
		}
		fmt.Fprintf(&b, "\tfor ((i = 1; i < COMP_CWORD; i++)); do\n\t\tcase ${COMP_WORDS[i]} in\n\t\t%s) cmd=${COMP_WORDS[i]}; break ;;\n\t\tesac\n\tdone\n", strings.Join(names, " | "))
	}
	b.WriteString("\tcase $cmd in\n")
	for _, c := range cmds {
		names, _, val := completionFlags(c.Flags)
		for n, v := range val {
			valued[n] = valued[n] || v
		}
		fmt.Fprintf(&b, "\t%s) words=%q ;;\n", strings.Join(c.Names(), " | "), strings.Join(append(names, "--help"), " "))
	}
	var cmdNames []string
	for _, c := range cmds {
		cmdNames = append(cmdNames, c.Name)
	}
	fmt.Fprintf(&b, "\t*) words=%q ;;\n\tesac\n", strings.Join(append(global, cmdNames...), " "))
	var vals []string
	for n, v := range valued {
		if v {
			vals = append(vals, n)
		}
	}
	sort.Strings(vals)
	if len(vals) > 0 {
		// After a flag that takes a value: files, as for any argument.
		fmt.Fprintf(&b, "\tcase $prev in\n\t%s) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n\tesac\n", strings.Join(vals, " | "))
	}
	b.WriteString("\tif [[ $cur == -* ]]; then\n\t\tCOMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n")
	if len(cmds) > 0 {
		b.WriteString("\telif [[ -z $cmd ]]; then\n\t\tCOMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n")
	}
	b.WriteString("\telse\n\t\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n\tfi\n}\n")
	fmt.Fprintf(&b, "complete -o filenames -F %s %s\n", fn, app.Name)
	return b.String()
}

// zshQuote quotes s for a single-quoted zsh word.
func zshQuote(s string) string { return strings.ReplaceAll(s, "'", `'\''`) }

// zshSpecs are the _arguments specs of flags: --name[usage] and, for one
// that takes a value, a value completed as a file.
func zshSpecs(flags []cli.Flag) []string {
	names, usage, val := completionFlags(flags)
	var specs []string
	for _, n := range names {
		u := strings.NewReplacer("[", "(", "]", ")", ":", " ", "\n", " ").Replace(usage[n])
		if len(u) > 100 {
			u = u[:97] + "..."
		}
		spec := n + "[" + u + "]"
		if val[n] {
			spec += ":value:_files"
		}
		specs = append(specs, "'"+zshQuote(spec)+"'")
	}
	return specs
}

// zshCompletion is a zsh completion function for app (a #compdef file,
// _NAME in a directory of $fpath).
func zshCompletion(app *cli.App) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#compdef %s\n# zsh completion for %s (generated: %s %s=zsh)\n\n", app.Name, app.Name, app.Name, generateFlag)
	cmds := visibleCommands(app)
	global := zshSpecs(append(app.Flags, cli.HelpFlag, cli.VersionFlag))
	if len(cmds) == 0 {
		fmt.Fprintf(&b, "_arguments -s \\\n\t%s \\\n\t'*:file:_files'\n", strings.Join(global, " \\\n\t"))
		return b.String()
	}
	fmt.Fprintf(&b, "local -a commands\ncommands=(\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "\t'%s'\n", zshQuote(c.Name+":"+strings.ReplaceAll(c.Usage, ":", " ")))
	}
	b.WriteString(")\n\nlocal curcontext=$curcontext state line\ntypeset -A opt_args\n")
	fmt.Fprintf(&b, "_arguments -C \\\n\t%s \\\n\t'1:command:->command' \\\n\t'*::argument:->argument'\n", strings.Join(global, " \\\n\t"))
	b.WriteString("case $state in\ncommand) _describe -t commands command commands ;;\nargument)\n\tcase $words[1] in\n")
	for _, c := range cmds {
		specs := append(zshSpecs(c.Flags), "'--help[show help]'", "'*:file:_files'")
		fmt.Fprintf(&b, "\t%s) _arguments -s \\\n\t\t%s ;;\n", strings.Join(c.Names(), "|"), strings.Join(specs, " \\\n\t\t"))
	}
	b.WriteString("\tesac ;;\nesac\n")
	return b.String()
}

// fishCompletion is a fish completion script for app.
func fishCompletion(app *cli.App) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# fish completion for %s (generated: %s %s=fish)\n", app.Name, app.Name, generateFlag)
	fishQuote := func(s string) string {
		return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`, "\n", " ").Replace(s) + "'"
	}
	flags := func(cond string, fl []cli.Flag) {
		names, usage, val := completionFlags(fl)
		for _, n := range names {
			req := ""
			if val[n] {
				req = " -r -F"
			}
			fmt.Fprintf(&b, "complete -c %s%s -l %s%s -d %s\n", app.Name, cond, strings.TrimPrefix(n, "--"), req, fishQuote(usage[n]))
		}
	}
	cmds := visibleCommands(app)
	if len(cmds) == 0 {
		flags("", append(app.Flags, cli.HelpFlag, cli.VersionFlag))
		return b.String()
	}
	fmt.Fprintf(&b, "complete -c %s -f\n", app.Name)
	flags(" -n '__fish_use_subcommand'", append(app.Flags, cli.HelpFlag, cli.VersionFlag))
	for _, c := range cmds {
		fmt.Fprintf(&b, "complete -c %s -n '__fish_use_subcommand' -a %s -d %s\n", app.Name, c.Name, fishQuote(c.Usage))
		flags(" -n '__fish_seen_subcommand_from "+strings.Join(c.Names(), " ")+"'", append(c.Flags, cli.HelpFlag))
		fmt.Fprintf(&b, "complete -c %s -n '__fish_seen_subcommand_from %s' -F\n", app.Name, strings.Join(c.Names(), " "))
	}
	return b.String()
}
