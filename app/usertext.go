package app

import "github.com/deltafin/deltafin/internal/usertext"

// UserText is an error's text as a person reads it: without the Go package
// names the packages prefix their errors with for the log ("app: open
// model: engine: …" reads "open model: …"). Every message shown to a user
// (the command line's last line, the menu, notifications) goes through it.
func UserText(err error) string { return usertext.Of(err) }
