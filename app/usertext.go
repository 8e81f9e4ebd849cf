package app

import "regexp"

// pkgPrefix matches a Go package's name where an error wrapped on the way
// up put it: at the start of the text or after another part's ": ".
var pkgPrefix = regexp.MustCompile(`(^|: )(app|bench|checkpoint|cli|downloader|drives|engine|kernels|safetensors|server|store|sysinfo|tokenizer|web|xet): `)

// UserText is an error's text as a person reads it: without the Go package
// names the packages prefix their errors with for the log ("app: open
// model: engine: …" reads "open model: …"). Every message shown to a user
// (the command line's last line, the menu, notifications) goes through it.
func UserText(err error) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	for {
		t := pkgPrefix.ReplaceAllString(s, "$1")
		if t == s {
			return s
		}
		s = t
	}
}
