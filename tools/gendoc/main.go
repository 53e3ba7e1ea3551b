// Command gendoc writes feedpipe's man pages and shell completions from
// the definitions they document, so that they cannot drift from --help:
//
//	gendoc -bin DIR -loop scripts/feed-loop -ndjson pkg/ndjson/doc.go -out PREFIX/share
//
// Each feed-* binary in DIR renders its own man page and completions
// (--generate-docs=man|bash|zsh|fish, from its urfave/cli definitions);
// feed-loop's come from its --help; feedpipe-ndjson(5) is the package
// comment of pkg/ndjson/doc.go. Under -out they go where man and the
// shells look:
//
//	man/man1/NAME.1  man/man5/feedpipe-ndjson.5
//	bash-completion/completions/NAME  zsh/site-functions/_NAME
//	fish/vendor_completions.d/NAME.fish
//
// scripts/install runs it; e2e/docs_test.go checks what it writes.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/feedpipe/feedpipe/internal/cmdkit"
)

func main() {
	bin := flag.String("bin", "", "the directory of the feed-* binaries")
	loop := flag.String("loop", "scripts/feed-loop", "feed-loop")
	ndjsonDoc := flag.String("ndjson", "pkg/ndjson/doc.go", "the record format's doc comment")
	out := flag.String("out", "", "the share directory to write into, such as /usr/local/share")
	flag.Parse()
	if *bin == "" || *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: gendoc -bin DIR [-loop FILE] [-ndjson FILE] -out DIR")
		os.Exit(2)
	}
	if err := run(*bin, *loop, *ndjsonDoc, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gendoc:", err)
		os.Exit(1)
	}
}

// kinds are what a binary renders, and where each goes under -out.
var kinds = []struct{ kind, dir, name string }{
	{"man", "man/man1", "%s.1"},
	{"bash", "bash-completion/completions", "%s"},
	{"zsh", "zsh/site-functions", "_%s"},
	{"fish", "fish/vendor_completions.d", "%s.fish"},
}

func run(bin, loop, ndjsonDoc, out string) error {
	names, err := filepath.Glob(filepath.Join(bin, "feed-*"))
	if err != nil {
		return err
	}
	wrote := 0
	for _, path := range names {
		name := filepath.Base(path)
		if name == "feed-loop" {
			continue
		}
		// Each runs as the command its name says: a link to the feedpipe
		// binary too.
		for _, k := range kinds {
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(path, "--generate-docs="+k.kind)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("%s --generate-docs=%s: %v %s", name, k.kind, err, stderr.String())
			}
			if err := write(out, k.dir, fmt.Sprintf(k.name, name), stdout.String()); err != nil {
				return err
			}
		}
		wrote++
	}
	if wrote == 0 {
		return fmt.Errorf("no feed-* binaries in %s", bin)
	}
	app, err := loopApp(loop)
	if err != nil {
		return err
	}
	for _, k := range kinds {
		s := ""
		if k.kind == "man" {
			s = cmdkit.ManPage(app)
		} else {
			s, _ = cmdkit.Completion(app, k.kind)
		}
		if err := write(out, k.dir, fmt.Sprintf(k.name, "feed-loop"), s); err != nil {
			return err
		}
	}
	doc, err := packageDoc(ndjsonDoc)
	if err != nil {
		return err
	}
	return write(out, "man/man5", "feedpipe-ndjson.5", cmdkit.ManFromDoc("feedpipe-ndjson", 5, "the records feedpipe's binaries read and write, one JSON object per line", doc))
}

func write(out, dir, name, s string) error {
	if err := os.MkdirAll(filepath.Join(out, dir), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, dir, name), []byte(s), 0o644)
}

// packageDoc is the package comment of a Go file.
func packageDoc(file string) (string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		return "", err
	}
	if f.Doc == nil {
		return "", fmt.Errorf("%s has no package comment", file)
	}
	return f.Doc.Text(), nil
}

// A flag line of feed-loop --help: "  --name VALUE   usage", or
// "  -h, --help   usage"; usage goes on in lines indented further.
var loopFlag = regexp.MustCompile(`^  (?:-\w, )?--([a-z][a-z-]*)(?: ([A-Z]+))?\s+(.*)$`)

// loopApp is feed-loop's --help read back as an app's definitions: its
// usage lines, its flags, and the rest as the description.
func loopApp(loop string) (*cli.App, error) {
	help, err := exec.Command(loop, "--help").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --help: %v", loop, err)
	}
	lines := strings.Split(strings.TrimRight(string(help), "\n"), "\n")
	app := &cli.App{Name: "feed-loop", Usage: "run the feedpipe pipeline every minute, or once", HideVersion: true}
	var usage, desc []string
	i := 0
	for ; i < len(lines) && lines[i] != ""; i++ {
		usage = append(usage, strings.TrimPrefix(strings.TrimSpace(lines[i]), "usage: "))
	}
	app.UsageText = strings.Join(usage, "\n   ")
	var cur *cli.StringFlag
	var curBool *cli.BoolFlag
	for ; i < len(lines); i++ {
		l := lines[i]
		if m := loopFlag.FindStringSubmatch(l); m != nil {
			cur, curBool = nil, nil
			if m[1] == "help" {
				continue
			}
			if m[2] != "" {
				cur = &cli.StringFlag{Name: m[1], Usage: m[3]}
				app.Flags = append(app.Flags, cur)
			} else {
				curBool = &cli.BoolFlag{Name: m[1], Usage: m[3], DisableDefaultText: true}
				app.Flags = append(app.Flags, curBool)
			}
			continue
		}
		if strings.HasPrefix(l, "      ") && (cur != nil || curBool != nil) {
			if cur != nil {
				cur.Usage += " " + strings.TrimSpace(l)
			} else {
				curBool.Usage += " " + strings.TrimSpace(l)
			}
			continue
		}
		cur, curBool = nil, nil
		desc = append(desc, l)
	}
	app.Description = strings.TrimSpace(strings.Join(desc, "\n"))
	if len(app.Flags) == 0 {
		return nil, fmt.Errorf("%s --help lists no flags", loop)
	}
	return app, nil
}
