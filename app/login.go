package app

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// BundleID is the app's identity on macOS: the Info.plist
// CFBundleIdentifier and the LaunchAgent's label.
const BundleID = "com.deltafin.Deltafin"

// ErrLoginItem wraps failures to read or change the login item.
var ErrLoginItem = errors.New("app: launch at login")

// NewLoginItem returns this platform's "Launch at login" switch for the
// executable exe: a LaunchAgent plist on macOS, an XDG autostart .desktop
// file on Linux. home is the user's home directory and configHome
// $XDG_CONFIG_HOME.
func NewLoginItem(exe, home, configHome string) LoginItem {
	path, content := loginItemFile(exe, home, configHome)
	return fileLoginItem{path: path, content: content}
}

// fileLoginItem is a login item that is one file: present means on. Both
// platforms' writers are here so both are tested on Linux by path.
type fileLoginItem struct {
	path    string
	content []byte
}

func (f fileLoginItem) Enabled() (bool, error) {
	_, err := os.Stat(f.path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("%w: %v", ErrLoginItem, err)
}

func (f fileLoginItem) SetEnabled(on bool) error {
	if on {
		if err := writeFileAtomic(f.path, f.content, 0o644); err != nil {
			return fmt.Errorf("%w: %v", ErrLoginItem, err)
		}
		return nil
	}
	if err := os.Remove(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %v", ErrLoginItem, err)
	}
	return nil
}

// launchAgentPlist is a per-user LaunchAgent that starts exe at login in
// the GUI session, the legacy route that works on every macOS version
// (SMAppService needs cgo and macOS 13).
func launchAgentPlist(label, exe string) []byte {
	var b bytes.Buffer
	b.WriteString(xml.Header)
	b.WriteString(`<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">` + "\n")
	b.WriteString("<plist version=\"1.0\">\n<dict>\n")
	kv := func(k, v string) {
		fmt.Fprintf(&b, "\t<key>%s</key>\n\t<string>%s</string>\n", k, xmlEscape(v))
	}
	kv("Label", label)
	b.WriteString("\t<key>ProgramArguments</key>\n\t<array>\n")
	fmt.Fprintf(&b, "\t\t<string>%s</string>\n", xmlEscape(exe))
	b.WriteString("\t</array>\n\t<key>RunAtLoad</key>\n\t<true/>\n")
	kv("LimitLoadToSessionType", "Aqua")
	kv("ProcessType", "Interactive")
	b.WriteString("</dict>\n</plist>\n")
	return b.Bytes()
}

func xmlEscape(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// autostartDesktop is an XDG autostart entry (freedesktop Desktop Entry
// spec): Exec arguments with spaces or specials are quoted.
func autostartDesktop(exe string) []byte {
	return []byte("[Desktop Entry]\nType=Application\nName=Deltafin\n" +
		"Comment=Kimi K3 on this machine, from the menu bar\n" +
		"Exec=" + desktopQuote(exe) + "\nTerminal=false\nX-GNOME-Autostart-enabled=true\n")
}

func desktopQuote(arg string) string {
	if !strings.ContainsAny(arg, " \t\n\"'\\><~|&;$*?#()`%=") {
		return arg
	}
	r := strings.NewReplacer(`\`, `\\\\`, `"`, `\\"`, "`", "\\\\`", `$`, `\\$`, `%`, `%%`)
	return `"` + r.Replace(arg) + `"`
}
