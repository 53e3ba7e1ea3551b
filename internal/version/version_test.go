package version

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersion: the version says what the build knows, never "(devel)":
// a module version from a tag, a stamp of scripts/install, the VCS
// settings of go build, or Release alone.
func TestVersion(t *testing.T) {
	rev := []debug.BuildSetting{{Key: "vcs.revision", Value: "e81ceb5d9f1e2b3c4d5e6f708192a3b4c5d6e7f8"}, {Key: "vcs.time", Value: "2026-11-20T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}
	for _, tc := range []struct {
		name        string
		bi          *debug.BuildInfo
		stamp       string
		short, long string
	}{
		{"go install of a tag", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}}, "", "1.2.3", "1.2.3 (go1.26.8)"},
		{"go build with VCS stamping", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: rev}, "",
			Release, Release + " (commit e81ceb5d9f1e, 2026-11-20T10:00:00Z, modified, go1.26.8)"},
		{"a pseudo-version", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261120100000-e81ceb5d9f1e+dirty"}, Settings: rev[:1]}, "",
			Release, Release + " (commit e81ceb5d9f1e, go1.26.8)"},
		{"go build -buildvcs=false", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "", Release, Release + " (go1.26.8)"},
		{"no build information", nil, "", Release, Release},
		{"install, no tags", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "3c78037-dirty", Release, Release + " (commit 3c78037, modified, go1.26.8)"},
		{"install at a tag", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "v1.2.0", "1.2.0", "1.2.0 (go1.26.8)"},
		{"install after a tag", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: rev}, "v1.2.0-3-ge81ceb5-dirty",
			"1.2.0-3-ge81ceb5-dirty", "1.2.0-3-ge81ceb5-dirty (2026-11-20T10:00:00Z, go1.26.8)"},
	} {
		if got := short(tc.bi, tc.stamp); got != tc.short {
			t.Errorf("%s: short = %q, want %q", tc.name, got, tc.short)
		}
		got := long(tc.bi, tc.stamp)
		if got != tc.long {
			t.Errorf("%s: long = %q, want %q", tc.name, got, tc.long)
		}
		if !strings.HasPrefix(got, tc.short) || strings.Contains(got, "devel") {
			t.Errorf("%s: %q does not begin with %q, or says devel", tc.name, got, tc.short)
		}
	}
	if !strings.HasPrefix(String(), Short()) || strings.Contains(String(), "devel") {
		t.Errorf("this build: String() = %q, Short() = %q", String(), Short())
	}
}
