package app

import (
	"fmt"
	"strings"
)

// Runs only on a Mac.
func copyCommands() [][]string { return [][]string{{"/usr/bin/pbcopy"}} }

func openCommands() [][]string { return [][]string{{"/usr/bin/open"}} }

// confirmCommands: AppleScript's dialog, through osascript.
func confirmCommands() [][]string { return [][]string{{"/usr/bin/osascript"}} }

// confirmArgv asks through `display dialog`; osascript exits 1 when the
// user cancels. Runs only on a Mac.
func confirmArgv(argv []string, title, text, ok string) []string {
	script := fmt.Sprintf(`display dialog %s with title %s buttons {"Cancel", %s} default button %s cancel button "Cancel"`,
		appleQuote(text), appleQuote(title), appleQuote(ok), appleQuote(ok))
	return append(argv[1:], "-e", script)
}

// appleQuote is s as an AppleScript string literal.
func appleQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
