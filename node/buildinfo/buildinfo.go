// Package buildinfo says which build of agora is running: its version,
// the commit it was built from, when, and with which Go. make build
// stamps all three with the linker (-X, the Makefile's LDFLAGS); a plain
// `go build` in a checkout falls back to the toolchain's own VCS stamp
// (absent under -buildvcs=false).
package buildinfo

import (
	goruntime "runtime"
	"runtime/debug"
	"strings"
)

// Version is the release this build is, set with -ldflags "-X
// github.com/agora-sched/agora/node/buildinfo.Version=v1.2.3"; "dev"
// for a build that was not stamped.
var Version = "dev"

// Commit and BuildTime are set by the linker like Version: the commit
// built from and when the build ran (RFC 3339).
var Commit, BuildTime string

// Info is one build's identity.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`     // "unknown" outside a checkout (go build -buildvcs=false, go run of a file)
	BuildTime string `json:"build_time"` // when it was built (RFC 3339); the commit's time when only the toolchain stamped it; "" when unknown
	Modified  bool   `json:"modified"`   // built from a work tree with uncommitted changes
	GoVersion string `json:"go_version"`
}

// Get reads this build's Info.
func Get() Info {
	in := Info{Version: Version, Commit: "unknown", GoVersion: goruntime.Version()}
	if Commit != "" {
		in.Commit, in.BuildTime = Commit, BuildTime
		in.Commit, in.Modified = strings.CutSuffix(Commit, "+modified")
		return in
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return in
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Commit = s.Value
		case "vcs.time":
			in.BuildTime = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

// String is the one line `agora version` prints.
func (in Info) String() string {
	commit := in.Commit
	if in.Modified {
		commit += "+modified"
	}
	s := "agora " + in.Version + " commit " + commit
	if in.BuildTime != "" {
		s += " built " + in.BuildTime
	}
	return s + " " + in.GoVersion
}
