// Package version is feedpipe's version: the one every binary's --version
// prints, feed-serve's /healthz reports and the User-Agent carries.
package version

import (
	"regexp"
	"runtime/debug"
	"strings"
)

// Release is the version of the source, for a build that knows none more
// precise: no tag in its module version and none stamped by scripts/install.
const Release = "0.1.0"

// stamp is what scripts/install sets at link time, the output of
// `git describe --tags --always --dirty` (a tag such as v1.2.0, a tag and
// the commits since, v1.2.0-3-g3c78037, or a bare commit, 3c78037, each
// with -dirty for a tree with changes):
//
//	go build -ldflags "-X github.com/feedpipe/feedpipe/internal/version.stamp=$(git describe --tags --always --dirty)"
//
// A build by go build or go install alone leaves it empty: the build
// information (a module version, the VCS settings) says what it can.
var stamp string

// Short is the version number: a module version from a tag (go install
// ...@v1.2.0), else a tag stamped by scripts/install, else Release. It is
// what the User-Agent carries (feedpipe/0.1.0).
func Short() string {
	bi, _ := debug.ReadBuildInfo()
	return short(bi, stamp)
}

// String is Short with what else the build knows, in parentheses: the
// commit, its time, whether the tree had changes, the Go version; such as
// "0.1.0 (commit 3c78037a1b2c, 2026-11-28T10:00:00Z, modified, go1.26.8)".
// --version prints it and /healthz reports it.
func String() string {
	bi, _ := debug.ReadBuildInfo()
	return long(bi, stamp)
}

var (
	// tagged is a module version from a tag (v1.2.3, v1.2.3-rc.1), not
	// a pseudo-version (v0.0.0-20261120100000-e81ceb5d9f1e), which names
	// a commit rather than a release.
	tagged = regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
	pseudo = regexp.MustCompile(`\d{14}-[0-9a-f]{12}`)
	// described is git describe's output for a tag, and for the commits
	// after it.
	described = regexp.MustCompile(`^v?\d+\.\d+\.\d+`)
	// commitOnly is git describe --always in a repository without tags.
	commitOnly = regexp.MustCompile(`^([0-9a-f]{7,40})(-dirty)?$`)
)

func short(bi *debug.BuildInfo, stamp string) string {
	if bi != nil && tagged.MatchString(bi.Main.Version) && !pseudo.MatchString(bi.Main.Version) {
		return strings.TrimPrefix(bi.Main.Version, "v")
	}
	if described.MatchString(stamp) {
		return strings.TrimPrefix(stamp, "v")
	}
	return Release
}

func long(bi *debug.BuildInfo, stamp string) string {
	v := short(bi, stamp)
	setting := map[string]string{}
	goVersion := ""
	if bi != nil {
		for _, s := range bi.Settings {
			setting[s.Key] = s.Value
		}
		goVersion = bi.GoVersion
	}
	rev, modified := setting["vcs.revision"], setting["vcs.modified"] == "true"
	if m := commitOnly.FindStringSubmatch(stamp); m != nil && rev == "" {
		rev, modified = m[1], m[2] != ""
	}
	var details []string
	if rev != "" && !strings.Contains(v, "g"+rev[:min(7, len(rev))]) {
		details = append(details, "commit "+shortRev(rev))
	}
	if t := setting["vcs.time"]; t != "" {
		details = append(details, t)
	}
	if modified && !strings.HasSuffix(v, "-dirty") {
		details = append(details, "modified")
	}
	if goVersion != "" {
		details = append(details, goVersion)
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
