// Package version holds the build's version, stamped by the linker:
// -X github.com/deltakeeper/deltakeeper/internal/version.Version=v0.1.0
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the release version; "dev" for local builds.
var Version = "dev"

// EngineInfo is what commits record in commitInfo.engineInfo, e.g. "deltakeeper/v0.1.0".
func EngineInfo() string { return "deltakeeper/" + Version }

// String describes the build for `deltakeeper version`.
func String() string {
	commit := "unknown"
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				commit = s.Value
			}
		}
	}
	return fmt.Sprintf("deltakeeper %s (commit %s, %s, %s/%s)", Version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
