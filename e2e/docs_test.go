package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// binaries are the feed-* binaries the tests built.
func binaries(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(binDir, "feed-*"))
	if err != nil || len(paths) < 9 {
		t.Fatalf("binaries in %s: %v %v", binDir, paths, err)
	}
	var names []string
	for _, p := range paths {
		names = append(names, filepath.Base(p))
	}
	return names
}

// helpPages are the --help texts of a binary and of each of its commands,
// by command line.
func helpPages(t *testing.T, bin string) map[string]string {
	t.Helper()
	out, err := exec.Command(bin, "--help").Output()
	if err != nil {
		t.Fatalf("%s --help: %v", bin, err)
	}
	pages := map[string]string{bin: string(out)}
	if _, cmds, ok := strings.Cut(string(out), "COMMANDS:\n"); ok {
		for _, line := range strings.Split(cmds, "\n") {
			if line == "" || !strings.HasPrefix(line, "   ") {
				break
			}
			name := strings.TrimRight(strings.Fields(line)[0], ",")
			sub, err := exec.Command(bin, name, "--help").Output()
			if err != nil {
				t.Fatalf("%s %s --help: %v", bin, name, err)
			}
			pages[bin+" "+name] = string(sub)
		}
	}
	return pages
}

var (
	docsOnce sync.Once
	docsDir  string
	docsErr  error
)

// generatedDocs runs tools/gendoc over the test's binaries, once, as
// scripts/install does, and returns the share directory it wrote.
func generatedDocs(t *testing.T) string {
	t.Helper()
	docsOnce.Do(func() {
		docsDir, docsErr = os.MkdirTemp("", "feedpipe-docs-")
		if docsErr != nil {
			return
		}
		cmd := exec.Command("go", "run", "./tools/gendoc", "-bin", binDir, "-loop", "scripts/feed-loop", "-ndjson", "pkg/ndjson/doc.go", "-out", docsDir)
		cmd.Dir = repoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			docsErr = err
			t.Logf("%s", out)
		}
	})
	if docsErr != nil {
		t.Fatal(docsErr)
	}
	return docsDir
}

var helpFlag = regexp.MustCompile(`(?m)^\s+(--[a-z0-9][a-z0-9-]*)`)

// TestManPagesHaveEveryFlag: each binary's man page, and feed-loop's,
// documents every flag its --help (and each command's) lists, and groff
// reads it without a warning.
func TestManPagesHaveEveryFlag(t *testing.T) {
	sourcesRead(t)
	share := generatedDocs(t)
	pages := map[string]map[string]string{}
	for _, bin := range binaries(t) {
		pages[bin] = helpPages(t, bin)
	}
	loopHelp, err := exec.Command(filepath.Join(repoRoot(t), "scripts", "feed-loop"), "--help").Output()
	if err != nil {
		t.Fatal(err)
	}
	pages["feed-loop"] = map[string]string{"feed-loop": string(loopHelp)}
	for bin, helps := range pages {
		man, err := os.ReadFile(filepath.Join(share, "man", "man1", bin+".1"))
		if err != nil {
			t.Errorf("%s: %v", bin, err)
			continue
		}
		n := 0
		for cmd, help := range helps {
			for _, m := range helpFlag.FindAllStringSubmatch(help, -1) {
				n++
				if !bytes.Contains(man, []byte(strings.ReplaceAll(m[1], "-", `\-`))) {
					t.Errorf("%s: %s is in %s --help, not in the man page", bin, m[1], cmd)
				}
			}
		}
		if n < 3 {
			t.Errorf("%s: only %d flags found in --help", bin, n)
		}
		if _, err := exec.LookPath("groff"); err == nil {
			cmd := exec.Command("groff", "-man", "-ww", "-z", filepath.Join(share, "man", "man1", bin+".1"))
			if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
				t.Errorf("groff on %s.1: %v\n%s", bin, err, out)
			}
		} else {
			t.Log("groff is not installed: the man pages are not rendered")
		}
	}
}

// TestNDJSONManPage: feedpipe-ndjson(5) is pkg/ndjson/doc.go's package
// comment: each of its headings is a section, its field tables are kept.
func TestNDJSONManPage(t *testing.T) {
	sourcesRead(t)
	man, err := os.ReadFile(filepath.Join(generatedDocs(t), "man", "man5", "feedpipe-ndjson.5"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "pkg", "ndjson", "doc.go"))
	if err != nil {
		t.Fatal(err)
	}
	headings := regexp.MustCompile(`(?m)^// # (.+)$`).FindAllSubmatch(doc, -1)
	if len(headings) < 8 {
		t.Fatalf("doc.go has %d headings", len(headings))
	}
	for _, h := range headings {
		want := ".SH " + strings.ReplaceAll(strings.ToUpper(string(h[1])), "-", `\-`)
		if !bytes.Contains(man, []byte(want)) {
			t.Errorf("the man page lacks %q", want)
		}
	}
	for _, field := range regexp.MustCompile(`(?m)^//\t([a-z_]+) {2,}\S`).FindAllSubmatch(doc, -1) {
		if !bytes.Contains(man, field[1]) {
			t.Errorf("the man page lacks the field %s", field[1])
		}
	}
	if out, err := exec.Command("groff", "-man", "-ww", "-z", filepath.Join(generatedDocs(t), "man", "man5", "feedpipe-ndjson.5")).CombinedOutput(); err != nil || len(out) > 0 {
		if _, lerr := exec.LookPath("groff"); lerr == nil {
			t.Errorf("groff on feedpipe-ndjson.5: %v\n%s", err, out)
		}
	}
}

// TestHelpListsEachVariableOnce: no --help names an environment variable
// twice, and feed-sub refetch --help shows an example rather than the
// scheduler's flags.
func TestHelpListsEachVariableOnce(t *testing.T) {
	sourcesRead(t)
	envVar := regexp.MustCompile(`\b(?:FEEDPIPE|NEWSFED)_[A-Z0-9_]*[A-Z0-9]\b|\b(?:FETCH_TIMEOUT_MS|MAX_BODY_BYTES|MAX_XML_DEPTH|SCHED_[A-Z_]+|HOST_MAX_CONCURRENCY|HOST_RPS)\b`)
	for _, bin := range binaries(t) {
		for cmd, help := range helpPages(t, bin) {
			seen := map[string]int{}
			for _, v := range envVar.FindAllString(help, -1) {
				seen[v]++
			}
			var twice []string
			for v, n := range seen {
				if n > 1 {
					twice = append(twice, v)
				}
			}
			sort.Strings(twice)
			if len(twice) > 0 {
				t.Errorf("%s --help names %v more than once", cmd, twice)
			}
		}
	}
	for _, cmd := range []string{"refetch", "enable"} {
		help, err := exec.Command("feed-sub", cmd, "--help").Output()
		if err != nil || strings.Contains(string(help), "--policy") || !strings.Contains(string(help), "feed-sub "+cmd+" https://example.org/feed.xml") {
			t.Errorf("feed-sub %s --help: %v\n%s", cmd, err, help)
		}
	}
}

// TestCompletions: the bash completion of each binary completes its
// commands and flags; the zsh and fish ones are valid scripts of their
// shells (when those are installed).
func TestCompletions(t *testing.T) {
	sourcesRead(t)
	share := generatedDocs(t)
	for _, tc := range []struct {
		words string // the command line, the word completed last
		want  string
	}{
		{"feed-sub ad", "add"},
		{"feed-sub add --la", "--label"},
		{"feed-sub --sto", "--store"},
		{"feed-fetch --time", "--timeout"},
		{"feed-fetch --vers", "--version"},
		{"feed-store prune --raw", "--raw-keep --raw-keep-per-feed"},
		{"feed-loop --on", "--on-event --once"},
		{"feed-loop --vers", "--version"},
	} {
		words := strings.Fields(tc.words)
		script := `source "$1"; COMP_WORDS=(` + tc.words + `); COMP_CWORD=` + strconv.Itoa(len(words)-1) + `; _` + strings.ReplaceAll(words[0], "-", "_") + `; echo "${COMPREPLY[*]}"`
		out, err := exec.Command("bash", "-c", script, "bash", filepath.Join(share, "bash-completion", "completions", words[0])).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != tc.want {
			t.Errorf("bash completion of %q: %q (%v), want %q", tc.words, out, err, tc.want)
		}
	}
	for _, shell := range []struct{ name, dir, file string }{
		{"zsh", "zsh/site-functions", "_%s"},
		{"fish", "fish/vendor_completions.d", "%s.fish"},
	} {
		t.Run(shell.name, func(t *testing.T) {
			if _, err := exec.LookPath(shell.name); err != nil {
				t.Skipf("%s is not installed (apt-get install %s): its completions are not checked", shell.name, shell.name)
			}
			for _, bin := range append(binaries(t), "feed-loop") {
				file := filepath.Join(share, shell.dir, strings.Replace(shell.file, "%s", bin, 1))
				if out, err := exec.Command(shell.name, "-n", file).CombinedOutput(); err != nil {
					t.Errorf("%s -n %s: %v\n%s", shell.name, file, err, out)
				}
			}
			if shell.name == "fish" {
				script := "source " + filepath.Join(share, shell.dir, "feed-sub.fish") + `; complete -C "feed-sub ad"; complete -C "feed-sub add --lab"`
				if out, err := exec.Command("fish", "-c", script).CombinedOutput(); err != nil || !regexp.MustCompile(`(?m)^add\t.*\n--label\t`).Match(out) {
					t.Errorf("fish completion: %v\n%s", err, out)
				}
			}
		})
	}
}

// TestInstall runs scripts/install into a temporary PREFIX, then the
// installed binaries and feed-loop with nothing but bash and flock on PATH:
// no checkout, no Go, no coreutils.
func TestInstall(t *testing.T) {
	sourcesRead(t)
	if testing.Short() {
		t.Skip("-short: not building an install")
	}
	// A relative PREFIX is taken from where install is run (it was taken
	// from the checkout).
	cwd := t.TempDir()
	prefix := filepath.Join(cwd, "prefix")
	install := exec.Command(filepath.Join(repoRoot(t), "scripts", "install"), "prefix")
	install.Dir = cwd
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("scripts/install: %v\n%s", err, out)
	}
	// One binary, each command a link to it: the install is under 100 MB
	// (twelve binaries of 20 MB each were 247 MB).
	if target, err := os.Readlink(filepath.Join(prefix, "bin", "feed-fetch")); err != nil || target != "feedpipe" {
		t.Errorf("bin/feed-fetch: a link to %q (%v), want one to feedpipe", target, err)
	}
	var size int64
	filepath.WalkDir(prefix, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				size += fi.Size()
			}
		}
		return err
	})
	if size > 100<<20 {
		t.Errorf("the install is %d MB, want under 100", size>>20)
	}
	for _, f := range []string{"bin/feed-loop", "bin/feed-sub", "share/man/man1/feed-loop.1", "share/man/man1/feed-store.1", "share/man/man5/feedpipe-ndjson.5",
		"share/bash-completion/completions/feed-sub", "share/zsh/site-functions/_feed-sub", "share/fish/vendor_completions.d/feed-sub.fish"} {
		if _, err := os.Stat(filepath.Join(prefix, f)); err != nil {
			t.Error(err)
		}
	}
	// The version is the checkout's, stamped by install (go build alone,
	// with -buildvcs=false in GOFLAGS, said "(devel)").
	if rev, err := exec.Command("git", "-C", repoRoot(t), "rev-parse", "--short=7", "HEAD").Output(); err == nil {
		v, err := exec.Command(filepath.Join(prefix, "bin", "feed-serve"), "--version").Output()
		if err != nil || !strings.Contains(string(v), strings.TrimSpace(string(rev))) {
			t.Errorf("feed-serve --version: %q %v; want the commit %s", v, err, rev)
		}
	}
	unit, err := os.ReadFile(filepath.Join(prefix, "lib", "systemd", "system", "feedpipe.service"))
	if err != nil || !strings.Contains(string(unit), "\nExecStart="+prefix+"/bin/feed-loop --interval 60\n") {
		t.Errorf("the unit: %v\n%s", err, unit)
	}

	// PATH has bash and flock only.
	tools := t.TempDir()
	for _, name := range []string{"bash", "flock"} {
		path, err := exec.LookPath(name)
		if err != nil {
			t.Fatal(err)
		}
		os.Symlink(path, filepath.Join(tools, name))
	}
	e := newLoopEnv(t, "a.xml")
	env := append(append([]string(nil), e.env...), "PATH="+tools)
	for _, args := range [][]string{{"feed-fetch", "--version"}, {"feed-loop", "--help"}, {"feed-loop", "--once"}} {
		cmd := exec.Command(filepath.Join(prefix, "bin", args[0]), args[1:]...)
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		select {
		case err = <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("%v hangs", args)
		}
		switch {
		case err != nil:
			t.Errorf("%v with PATH=bash,flock: %v\n%s", args, err, stderr.String())
		case args[1] == "--version" && (!strings.HasPrefix(stdout.String(), "feed-fetch version ") || strings.Contains(stdout.String(), "devel")):
			t.Errorf("--version: %q", stdout.String())
		case args[1] == "--once" && !strings.Contains(stderr.String(), "cycle 1: feeds=1 not_modified=0 same_body=0 errors=0 new=1"):
			t.Errorf("the installed loop:\n%s", stderr.String())
		}
	}
}

// TestREADMESystemdUnit: the unit the README shows is the one
// scripts/install installs (contrib/systemd), for PREFIX /usr/local.
func TestREADMESystemdUnit(t *testing.T) {
	sourcesRead(t)
	unit, err := os.ReadFile(filepath.Join(repoRoot(t), "contrib", "systemd", "feedpipe.service"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.ReplaceAll(string(unit), "@BINDIR@", "/usr/local/bin")
	blocks := codeBlocks(t, "ini")
	if len(blocks) != 1 || blocks[0] != want {
		t.Errorf("README's ini block is not contrib/systemd/feedpipe.service for /usr/local:\n%q\nwant\n%q", blocks, want)
	}
	if out, err := exec.Command("systemd-analyze", "--version").CombinedOutput(); err == nil && len(out) > 0 {
		file := filepath.Join(t.TempDir(), "feedpipe.service")
		os.WriteFile(file, []byte(strings.ReplaceAll(string(unit), "@BINDIR@", "/bin")), 0o644)
		// verify checks the syntax; the feedpipe user and the binary
		// need not exist here.
		out, _ := exec.Command("systemd-analyze", "verify", file).CombinedOutput()
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "feedpipe.service") && (strings.Contains(line, "Unknown") || strings.Contains(line, "Failed to parse") || strings.Contains(line, "Invalid")) {
				t.Errorf("systemd-analyze verify: %s", line)
			}
		}
	}
}

// TestREADMEConfig: the configuration file the README shows loads in
// every binary (no key unknown where it stands, every value of its kind),
// and takes effect.
func TestREADMEConfig(t *testing.T) {
	sourcesRead(t)
	blocks := codeBlocks(t, "toml")
	if len(blocks) != 1 {
		t.Fatalf("README has %d toml blocks, want the one example", len(blocks))
	}
	dir := t.TempDir()
	config := filepath.Join(dir, "config.toml")
	os.WriteFile(config, []byte(blocks[0]), 0o644)
	store := filepath.Join(dir, "store")
	env := append(os.Environ(), "FEEDPIPE_CONFIG="+config, "FEEDPIPE_STORE=", "HOME="+dir,
		"FEEDPIPE_METRICS_FILE="+filepath.Join(dir, "feedpipe.prom")) // the variable wins over the file's path
	for _, args := range [][]string{
		{"feed-fetch", "--store", store}, // first: it makes the store
		{"feed-due", "--store", store},
		{"feed-parse", "--store", store},
		{"feed-scrape", "--store", store},
		{"feed-dedup", "--store", store},
		{"feed-store", "--store", store},
		{"feed-stats", "--store", store},
		{"feed-sub", "ls", "--store", store},
		{"feed-store", "prune", "--dry-run", "--store", store},
		{"feed-sim", "--generate", "--feeds", "5", "--days", "1"},
	} {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env, cmd.Stdin = env, strings.NewReader("")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Errorf("%v with the README's config: %v\n%s", args, err, stderr.String())
		}
		// log-level = "warn": the info lines of a run with nothing to
		// do are gone.
		if args[0] == "feed-fetch" && strings.Contains(stderr.String(), "fetch done") {
			t.Errorf("the config's log level did not take: %s", stderr.String())
		}
	}
}

// TestDocsFitAndNameWhatIsInstalled: every man page, as man shows it on
// a terminal of 80 columns, fits it (descriptions were kept as written,
// and ran past it); no --help names a file of the checkout (pkg/ndjson,
// docs/, README) rather than what an install has (feedpipe-ndjson(5),
// share/doc/feedpipe). feed-sim, built on its own by another hand, is
// left out of the second.
func TestDocsFitAndNameWhatIsInstalled(t *testing.T) {
	sourcesRead(t)
	share := generatedDocs(t)
	if _, err := exec.LookPath("man"); err != nil {
		t.Log("man is not installed: the pages are not rendered")
	} else {
		pages, _ := filepath.Glob(filepath.Join(share, "man", "man*", "*"))
		if len(pages) < 10 {
			t.Fatalf("man pages: %v", pages)
		}
		for _, page := range pages {
			cmd := exec.Command("man", "-l", page)
			cmd.Env = append(os.Environ(), "MANWIDTH=80", "MANPAGER=cat", "PAGER=cat", "LC_ALL=C.UTF-8")
			out, err := cmd.Output()
			if err != nil {
				t.Errorf("man -l %s: %v", page, err)
				continue
			}
			for _, l := range strings.Split(string(out), "\n") {
				if n := len([]rune(l)); n > 80 {
					t.Errorf("%s: a line of %d columns: %q", filepath.Base(page), n, l)
				}
			}
		}
	}
	checkout := regexp.MustCompile(`pkg/ndjson|\bdocs/[a-z]|\binternal/[a-z]|\btestdata/|\bREADME\b`)
	for _, bin := range binaries(t) {
		if bin == "feed-sim" {
			continue
		}
		for cmd, help := range helpPages(t, bin) {
			if m := checkout.FindString(help); m != "" {
				t.Errorf("%s --help names %q, a file of the checkout", cmd, m)
			}
		}
	}
}
