package app

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is Deltafin's release; packaging/Info.plist's
// CFBundleShortVersionString says the same (a test checks).
const Version = "0.1.0"

// VersionLine is what `deltafin --version` prints: the release, the commit
// it was built from (with "+dirty" for uncommitted changes) and the Go
// toolchain and platform.
func VersionLine() string {
	commit := "unknown commit"
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, dirty string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "+dirty"
				}
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" {
			commit = "commit " + rev + dirty
		}
	}
	return fmt.Sprintf("deltafin %s (%s, %s %s/%s)", Version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
