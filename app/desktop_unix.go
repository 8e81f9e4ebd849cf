//go:build !darwin

package app

import "path/filepath"

// Wayland first, then X11; xdg-open ships with xdg-utils.
func copyCommands() [][]string {
	return [][]string{{"wl-copy"}, {"xclip", "-selection", "clipboard"}, {"xsel", "--clipboard", "--input"}}
}

func openCommands() [][]string { return [][]string{{"xdg-open"}} }

// confirmCommands are the dialog tools of GNOME (zenity) and KDE (kdialog).
func confirmCommands() [][]string { return [][]string{{"zenity"}, {"kdialog"}} }

// confirmArgv is argv's arguments for a yes/no question.
func confirmArgv(argv []string, title, text, ok string) []string {
	args := argv[1:]
	if filepath.Base(argv[0]) == "kdialog" {
		return append(args, "--title", title, "--yes-label", ok, "--no-label", "Cancel", "--yesno", text)
	}
	return append(args, "--question", "--title", title, "--text", text, "--ok-label", ok, "--cancel-label", "Cancel", "--no-wrap")
}
