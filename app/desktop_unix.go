//go:build !darwin

package app

// Wayland first, then X11; xdg-open ships with xdg-utils.
func copyCommands() [][]string {
	return [][]string{{"wl-copy"}, {"xclip", "-selection", "clipboard"}, {"xsel", "--clipboard", "--input"}}
}

func openCommands() [][]string { return [][]string{{"xdg-open"}} }
