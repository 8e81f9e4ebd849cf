package usertext

import "regexp"

// pkgPrefix matches a Go package's name where an error wrapped on the way
// up put it: at the start of the text or after another part's ": ".
var pkgPrefix = regexp.MustCompile(`(^|: )(app|bench|chat|checkpoint|cli|downloader|drives|engine|experts|kernels|safetensors|server|store|sysinfo|tokenizer|web|xet|hubtest|atomicfile|directio|flock): `)

// Of is err's text as a person reads it ("app: open model: engine: …"
// reads "open model: …"); "" for nil.
func Of(err error) string {
	if err == nil {
		return ""
	}
	return Strip(err.Error())
}

// Strip takes the package prefixes out of a message.
func Strip(s string) string {
	for {
		t := pkgPrefix.ReplaceAllString(s, "$1")
		if t == s {
			return s
		}
		s = t
	}
}

// Prefixed reports whether s still shows a Go package prefix, for tests
// that check what users see.
func Prefixed(s string) bool { return pkgPrefix.MatchString(s) }
