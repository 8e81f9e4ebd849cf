//go:build !darwin

package app

// Wayland first, then X11; xdg-open ships with xdg-utils.
var (
	copyCommands = [][]string{{"wl-copy"}, {"xclip", "-selection", "clipboard"}, {"xsel", "--clipboard", "--input"}}
	openCommands = [][]string{{"xdg-open"}}
)
