package app

import "path/filepath"

// loginItemFile is $XDG_CONFIG_HOME/autostart/deltafin.desktop.
func loginItemFile(exe, _, configHome string) (string, []byte) {
	return filepath.Join(configHome, "autostart", "deltafin.desktop"), autostartDesktop(exe)
}
