//go:build !linux

package app

import "context"

// checkDesktop: macOS always has a window server for a logged-in user.
func checkDesktop(context.Context, Config) (string, error) { return "", nil }

func desktopReady(Config) string { return "the macOS menu bar" }
