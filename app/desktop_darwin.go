package app

// Runs only on a Mac.
var (
	copyCommands = [][]string{{"/usr/bin/pbcopy"}}
	openCommands = [][]string{{"/usr/bin/open"}}
)
