package app

// Runs only on a Mac.
func copyCommands() [][]string { return [][]string{{"/usr/bin/pbcopy"}} }

func openCommands() [][]string { return [][]string{{"/usr/bin/open"}} }
