package app

import "strconv"

// keepAwakeArgv holds a "prevent idle system sleep" assertion with
// caffeinate, which exits by itself when pid does (-w). App Nap is kept off
// by NSAppSleepDisabled in Info.plist. Runs only on a Mac.
func keepAwakeArgv(reason string, pid int) ([]string, error) {
	return []string{"/usr/bin/caffeinate", "-i", "-w", strconv.Itoa(pid)}, nil
}
