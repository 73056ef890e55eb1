package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Set with -ldflags "-X github.com/salvor-dev/salvor/internal/buildinfo.version=..."
// (and commit, date) by the Makefile.
var version, commit, date string

// Info describes a build.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	BuildDate string `json:"buildDate"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns this binary's build information. What -ldflags did not set
// comes from the module and VCS information the Go toolchain embeds; a
// build from a modified tree says so in its commit.
func Get() Info {
	i := Info{Version: version, Commit: commit, BuildDate: date, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if i.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			i.Version = bi.Main.Version
		}
		modified := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if i.Commit == "" {
					i.Commit = s.Value
				}
			case "vcs.time":
				if i.BuildDate == "" {
					i.BuildDate = s.Value
				}
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if modified && commit == "" && i.Commit != "" {
			i.Commit += "-dirty"
		}
	}
	for _, f := range []*string{&i.Version, &i.Commit, &i.BuildDate} {
		if *f == "" {
			*f = "unknown"
		}
	}
	if i.Version == "unknown" {
		i.Version = "devel"
	}
	return i
}
