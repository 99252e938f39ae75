// Package version holds build information stamped into the lvms binary with -ldflags.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// These are set at build time with -ldflags "-X ...". Defaults describe an unstamped build.
var (
	// Version is the release version of lvms.
	Version = "v0.0.0-dev"
	// GitCommit is the commit the binary was built from.
	GitCommit = ""
)

// Info is the build information of the running binary.
type Info struct {
	Version   string `json:"version"`
	GitCommit string `json:"gitCommit"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the build information, falling back to the VCS data Go embeds when the commit was not
// stamped with -ldflags.
func Get() Info {
	commit := GitCommit
	if commit == "" {
		commit = vcsRevision()
	}
	return Info{
		Version:   Version,
		GitCommit: commit,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
}

// String renders the information on one line.
func (i Info) String() string {
	return fmt.Sprintf("lvms %s (commit %s, %s, %s)", i.Version, i.GitCommit, i.GoVersion, i.Platform)
}

func vcsRevision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			return s.Value
		}
	}
	return "unknown"
}
