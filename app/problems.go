package app

import "strings"

// subsystem is a part of the app with problems of its own: its latest
// failure shows in the status line until its action next succeeds, whatever
// the other parts do meanwhile.
type subsystem int

const (
	subInstall  subsystem = iota // reading the install
	subDownload                  // download, pause/resume, upgrade
	subServer                    // start and stop server
	subWarm                      // overnight warming
	subLogin                     // launch at login
	subDesktop                   // clipboard, open folder
	subStore                     // the job store, found damaged at a start
)

type problemEntry struct {
	text  string // cut for the menu (shortError)
	whole string // all of it, for the headless line (wholeError)
	seq   int    // order of arrival: the newest is shown
}

// maxProblemLen is how much of an error the menu and a notification show:
// a menu entry wider than the screen is cut by the panel, not by us.
const maxProblemLen = 80

// wholeError is all of err on one line, as the headless line and doctor
// print it: the advice is at the end of a long error, so nothing is cut.
func wholeError(err error) string {
	return strings.Join(strings.Fields(UserText(err)), " ")
}

// shortError is the first line of err, cut at a word boundary to about
// maxProblemLen characters with an ellipsis. Errors from tools (xdg-open,
// the hub) can run to many lines; the whole text goes to the log.
func shortError(err error) string {
	s := strings.TrimSpace(UserText(err))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i]) + " …"
	}
	if len(s) <= maxProblemLen {
		return s
	}
	r := []rune(s)
	if len(r) <= maxProblemLen {
		return s
	}
	cut := string(r[:maxProblemLen-1])
	if i := strings.LastIndexByte(cut, ' '); i > maxProblemLen/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:") + "…"
}
