package app

import "path/filepath"

// loginItemFile is ~/Library/LaunchAgents/<BundleID>.plist; launchd reads
// it at the next login. Runs only on a Mac; the writer is tested on Linux.
func loginItemFile(exe, home, _ string) (string, []byte) {
	return filepath.Join(home, "Library", "LaunchAgents", BundleID+".plist"), launchAgentPlist(BundleID, exe)
}
