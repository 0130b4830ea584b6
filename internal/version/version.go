// Package version says which release of shale a binary holds.
//
// Version is the release this source tree is, or becomes when it is tagged:
// it is raised when a release is tagged, together with CHANGELOG.md, and the
// nested modules (bench, contrib/shaleprom, drivers/etcd) require it. String
// tells a binary built from that tag (through the module proxy, where the
// go command records the module's version) from one built from a checkout.
package version

import (
	"regexp"
	"runtime/debug"
)

// Version is the shale release of this source tree. Between two releases it
// names the next one: a build from a checkout reports it with "-devel".
const Version = "v0.3.0"

// ModulePath is the main module's path, the one whose version String
// reports.
const ModulePath = "github.com/shaledb/shale"

// String returns the shale version of the running binary.
//
// When the binary was built from a tagged version of the module (a program
// that requires github.com/shaledb/shale v0.3.0, or "go install
// github.com/shaledb/shale/cmd/shale@v0.3.0"), it is that version, as the
// go command recorded it in the build info. Otherwise (a build in a
// checkout, a replaced module, a pseudo-version of an untagged commit) it is
// Version followed by "-devel" and, when the go command stamped one, the
// VCS revision as build metadata, with ".dirty" for a tree with
// uncommitted changes: "v0.3.0-devel+b395ed4c1a2b.dirty".
func String() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Version + "-devel"
	}
	return fromBuildInfo(bi)
}

// fromBuildInfo is String for the build information bi.
func fromBuildInfo(bi *debug.BuildInfo) string {
	if v := moduleVersion(bi); isRelease(v) {
		return v
	}
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	v := Version + "-devel"
	if rev != "" {
		v += "+" + rev[:min(len(rev), 12)]
		if dirty {
			v += ".dirty"
		}
	}
	return v
}

// moduleVersion returns the version of ModulePath that bi records, "" when
// it records none or the module was replaced (a replace makes the version a
// name for other source).
func moduleVersion(bi *debug.BuildInfo) string {
	if bi.Main.Path == ModulePath {
		if bi.Main.Replace != nil {
			return ""
		}
		return bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == ModulePath {
			if d.Replace != nil {
				return ""
			}
			return d.Version
		}
	}
	return ""
}

// releaseRE matches a semantic version with an optional pre-release
// ("v0.3.0", "v1.2.3-rc.1"), without build metadata ("+dirty", which the go
// command appends to a version stamped from a modified checkout).
var releaseRE = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

// pseudoRE matches the end of a pseudo-version, the go command's name for
// an untagged commit ("v0.0.0-20261206020000-b395ed4c1a2b",
// "v0.3.1-0.20261206020000-b395ed4c1a2b").
var pseudoRE = regexp.MustCompile(`[-.][0-9]{14}-[0-9a-f]{12}$`)

// isRelease reports whether v is the version of a tag: a semantic version
// that is not a pseudo-version and carries no build metadata. "(devel)" and
// "" are not.
func isRelease(v string) bool {
	return releaseRE.MatchString(v) && !pseudoRE.MatchString(v)
}
