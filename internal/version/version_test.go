package version

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	rev := debug.BuildSetting{Key: "vcs.revision", Value: "b395ed4c1a2b3c4d5e6f708192a3b4c5d6e7f809"}
	modified := debug.BuildSetting{Key: "vcs.modified", Value: "true"}
	clean := debug.BuildSetting{Key: "vcs.modified", Value: "false"}
	dep := func(v string, replaced bool) *debug.BuildInfo {
		m := &debug.Module{Path: ModulePath, Version: v}
		if replaced {
			m.Replace = &debug.Module{Path: "../..", Version: ""}
		}
		return &debug.BuildInfo{Main: debug.Module{Path: "example.com/app", Version: "(devel)"}, Deps: []*debug.Module{
			{Path: "github.com/cespare/xxhash/v2", Version: "v2.3.0"}, m,
		}}
	}
	main := func(v string, settings ...debug.BuildSetting) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: ModulePath, Version: v}, Settings: settings}
	}
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"go install cmd/shale@v0.3.0", main("v0.3.0"), "v0.3.0"},
		{"a program requiring v0.3.0", dep("v0.3.0", false), "v0.3.0"},
		{"a release candidate", dep("v0.4.0-rc.1", false), "v0.4.0-rc.1"},
		{"a program with a replace", dep("v0.3.0", true), Version + "-devel"},
		{"an untagged commit", dep("v0.3.1-0.20261206020000-b395ed4c1a2b", false), Version + "-devel"},
		{"an untagged commit, no tag before", dep("v0.0.0-20261206020000-b395ed4c1a2b", false), Version + "-devel"},
		{"a checkout with VCS stamping", main("(devel)", rev, clean), Version + "-devel+b395ed4c1a2b"},
		{"a modified checkout", main("v0.3.0+dirty", rev, modified), Version + "-devel+b395ed4c1a2b.dirty"},
		{"a checkout without VCS stamping", main("(devel)"), Version + "-devel"},
		{"go run, go test", main(""), Version + "-devel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fromBuildInfo(tc.bi); got != tc.want {
				t.Errorf("fromBuildInfo = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestString: a test binary is built from the checkout, so String reports
// Version as a development build.
func TestString(t *testing.T) {
	if got := String(); !strings.HasPrefix(got, Version+"-devel") {
		t.Errorf("String() = %q, want %q with a revision or none", got, Version+"-devel")
	}
}

func TestVersionIsARelease(t *testing.T) {
	if !isRelease(Version) {
		t.Errorf("Version %q is not a release version (vMAJOR.MINOR.PATCH)", Version)
	}
}
