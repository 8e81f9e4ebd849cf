//go:build !linux && !darwin

package app

import "path/filepath"

func loginItemFile(exe, _, configHome string) (string, []byte) {
	return filepath.Join(configHome, "autostart", "deltafin.desktop"), autostartDesktop(exe)
}
