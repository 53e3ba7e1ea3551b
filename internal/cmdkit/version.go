package cmdkit

import (
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"
)

func init() {
	// --version alone: -v is left free, and the text says what it does.
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version and exit"}
}

// Version is the binary's version, from the build information the Go
// toolchain records: the module's version (a tag, or a pseudo-version of
// the commit), then the commit, its time and whether the tree had changes,
// and the Go version.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build information)"
	}
	return versionOf(bi)
}

// versionOf is Version for the build information bi.
func versionOf(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	setting := map[string]string{}
	for _, s := range bi.Settings {
		setting[s.Key] = s.Value
	}
	var details []string
	if rev := setting["vcs.revision"]; rev != "" && !strings.Contains(v, shortRev(rev)) {
		details = append(details, "commit "+shortRev(rev))
	}
	if t := setting["vcs.time"]; t != "" {
		details = append(details, t)
	}
	if setting["vcs.modified"] == "true" && !strings.HasSuffix(v, "+dirty") {
		details = append(details, "modified")
	}
	if bi.GoVersion != "" {
		details = append(details, bi.GoVersion)
	}
	if len(details) == 0 {
		return v
	}
	return v + " (" + strings.Join(details, ", ") + ")"
}

// shortRev is a commit hash cut to the 12 digits pseudo-versions carry.
func shortRev(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
