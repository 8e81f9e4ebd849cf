package app

import (
	"os"
	"path/filepath"
)

// logDir is ~/Library/Logs/Deltafin, where Console.app finds it; the data
// directory's logs/ when there is no home. Runs only on a Mac.
func logDir(cfg Config) string {
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, "Library", "Logs", "Deltafin")
	}
	return filepath.Join(cfg.DataDir, "logs")
}
