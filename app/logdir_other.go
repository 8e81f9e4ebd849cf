//go:build !darwin

package app

import "path/filepath"

// logDir is the data directory's logs/: one folder holds everything
// Deltafin writes.
func logDir(cfg Config) string { return filepath.Join(cfg.DataDir, "logs") }
