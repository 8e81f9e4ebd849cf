package app

import (
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Tests of the Linux twins, both platforms' login item writers, the
// desktop helpers and the keep-awake holder.

func TestSysfsPower(t *testing.T) {
	for _, tc := range []struct {
		name     string
		supplies map[string]map[string]string
		ac       bool
	}{
		{"desktop without supplies", nil, true},
		{"mains online", map[string]map[string]string{
			"AC": {"type": "Mains", "online": "1"}, "BAT0": {"type": "Battery", "status": "Charging"}}, true},
		{"on battery", map[string]map[string]string{
			"AC": {"type": "Mains", "online": "0"}, "BAT0": {"type": "Battery", "status": "Discharging"}}, false},
		{"usb-c adapter", map[string]map[string]string{
			"ucsi-source-psy-USBC000:001": {"type": "USB", "online": "1"}, "BAT1": {"type": "Battery", "status": "Discharging"}}, true},
		{"full battery, no mains node", map[string]map[string]string{
			"BAT0": {"type": "Battery", "status": "Full"}}, true},
		{"mouse battery discharging", map[string]map[string]string{
			"hidpp_battery_0": {"type": "Battery", "scope": "Device", "status": "Discharging"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			writeSysfs(t, root, tc.supplies)
			ac, err := sysfsPower{root: root}.OnAC(t.Context())
			require.NoError(t, err)
			require.Equal(t, tc.ac, ac)
		})
	}
	t.Run("no power-supply class", func(t *testing.T) {
		ac, err := sysfsPower{root: filepath.Join(t.TempDir(), "absent")}.OnAC(t.Context())
		require.NoError(t, err)
		require.True(t, ac)
	})
}

// plistDict is enough of the plist format to read a flat dict back.
func plistDict(t *testing.T, b []byte) map[string]string {
	t.Helper()
	var doc struct {
		Dict struct {
			Items []struct {
				XMLName xml.Name
				Text    string `xml:",chardata"`
				Inner   []struct {
					Text string `xml:",chardata"`
				} `xml:"string"`
			} `xml:",any"`
		} `xml:"dict"`
	}
	require.NoError(t, xml.Unmarshal(b, &doc))
	out := map[string]string{}
	items := doc.Dict.Items
	require.Zero(t, len(items)%2, "keys and values pair up")
	for i := 0; i < len(items); i += 2 {
		require.Equal(t, "key", items[i].XMLName.Local)
		v := items[i+1]
		switch v.XMLName.Local {
		case "true", "false":
			out[items[i].Text] = v.XMLName.Local
		case "array":
			var parts []string
			for _, s := range v.Inner {
				parts = append(parts, s.Text)
			}
			out[items[i].Text] = strings.Join(parts, "\x00")
		default:
			out[items[i].Text] = v.Text
		}
	}
	return out
}

func TestLoginItems(t *testing.T) {
	const exe = `/Applications/Deltafin & Co.app/Contents/MacOS/Deltafin`
	t.Run("launch agent", func(t *testing.T) {
		home := t.TempDir()
		path, content := filepath.Join(home, "Library", "LaunchAgents", BundleID+".plist"), launchAgentPlist(BundleID, exe)
		li := fileLoginItem{path: path, content: content}
		on, err := li.Enabled()
		require.NoError(t, err)
		require.False(t, on)
		require.NoError(t, li.SetEnabled(true))
		on, err = li.Enabled()
		require.NoError(t, err)
		require.True(t, on)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		d := plistDict(t, b)
		require.Equal(t, BundleID, d["Label"])
		require.Equal(t, exe, d["ProgramArguments"])
		require.Equal(t, "true", d["RunAtLoad"])
		require.Equal(t, "Aqua", d["LimitLoadToSessionType"])
		require.NoError(t, li.SetEnabled(false))
		require.NoFileExists(t, path)
		require.NoError(t, li.SetEnabled(false), "switching off twice is fine")
	})
	t.Run("xdg autostart", func(t *testing.T) {
		config := t.TempDir()
		li := NewLoginItem(exe, "/home/nobody", config)
		require.NoError(t, li.SetEnabled(true))
		b, err := os.ReadFile(filepath.Join(config, "autostart", "deltafin.desktop"))
		require.NoError(t, err)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		require.Equal(t, "[Desktop Entry]", lines[0])
		require.Contains(t, lines, "Type=Application")
		require.Contains(t, lines, `Exec="/Applications/Deltafin & Co.app/Contents/MacOS/Deltafin"`)
		on, err := li.Enabled()
		require.NoError(t, err)
		require.True(t, on)
		require.NoError(t, li.SetEnabled(false))
		on, err = li.Enabled()
		require.NoError(t, err)
		require.False(t, on)
	})
	t.Run("unwritable", func(t *testing.T) {
		dir := t.TempDir()
		blocker := filepath.Join(dir, "autostart")
		require.NoError(t, os.WriteFile(blocker, nil, 0o644)) // a file where the directory goes
		err := NewLoginItem("/usr/bin/deltafin", dir, dir).SetEnabled(true)
		require.ErrorIs(t, err, ErrLoginItem)
	})
}

func TestCmdDesktop(t *testing.T) {
	dir := t.TempDir()
	clip := filepath.Join(dir, "clip")
	d := cmdDesktop{
		copy: [][]string{{"no-such-clipboard-tool"}, {"sh", "-c", `cat > "$0"`, clip}},
		open: [][]string{{"sh", "-c", `exit 3`}},
	}
	require.NoError(t, d.CopyText(t.Context(), "http://127.0.0.1:8000"))
	b, err := os.ReadFile(clip)
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:8000", string(b))
	err = d.Open(t.Context(), dir)
	require.ErrorIs(t, err, ErrDesktop)
	require.Contains(t, err.Error(), "exit status 3")
	// xclip's shape: it exits 0 and leaves a child that owns the selection
	// and still holds stderr. The copy worked, and is reported so.
	owner := cmdDesktop{copy: [][]string{{"sh", "-c", `cat > "$0"; sleep 5 >&2 &`, clip}}}
	require.NoError(t, owner.CopyText(t.Context(), "http://127.0.0.1:8000/v1"))
	b, err = os.ReadFile(clip)
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:8000/v1", string(b))
	err = cmdDesktop{copy: [][]string{{"no-such-a"}, {"no-such-b"}}}.CopyText(t.Context(), "x")
	require.ErrorIs(t, err, ErrDesktop)
	require.Contains(t, err.Error(), "none of no-such-a, no-such-b is installed")
}

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// A zombie (state Z) has exited.
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] != "Z"
}

// childPID finds this process's running child named comm in /proc.
func childPID(t *testing.T, comm string) int {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*/stat")
	require.NoError(t, err)
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		rest := strings.Fields(s[end+1:])
		if s[open+1:end] == comm && len(rest) > 1 && rest[0] != "Z" && rest[1] == strconv.Itoa(os.Getpid()) {
			pid, err := strconv.Atoi(strings.TrimSpace(s[:open]))
			require.NoError(t, err)
			return pid
		}
	}
	require.FailNow(t, "no child "+comm)
	return 0
}

func TestHoldProcess(t *testing.T) {
	release, err := holdProcess(t.Context(), []string{"sleep", "600"})
	require.NoError(t, err)
	pid := childPID(t, "sleep")
	require.True(t, alive(pid))
	release()
	release()
	require.False(t, alive(pid), "released holder still running")
	require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "released holder not reaped")

	_, err = holdProcess(t.Context(), []string{"/nonexistent/caffeinate"})
	require.ErrorIs(t, err, ErrNoKeepAwake)
}

func TestKeepAwakeArgv(t *testing.T) {
	argv, err := keepAwakeArgv("warming experts", 4242)
	if _, lerr := exec.LookPath("systemd-inhibit"); lerr != nil {
		require.ErrorIs(t, err, ErrNoKeepAwake)
		return
	}
	require.NoError(t, err)
	require.Equal(t, []string{"--what=idle:sleep", "--who=Deltafin", "--why=warming experts", "--mode=block",
		"tail", "--pid=4242", "-f", "/dev/null"}, argv[1:])
	// The holder ends by itself when the process it watches is gone.
	tailArgv := argv[len(argv)-4:]
	sleeper := exec.Command("sleep", "0.2")
	require.NoError(t, sleeper.Start())
	tailArgv[1] = "--pid=" + strconv.Itoa(sleeper.Process.Pid)
	watch := exec.Command(tailArgv[0], tailArgv[1:]...)
	require.NoError(t, watch.Start())
	require.NoError(t, sleeper.Wait())
	done := make(chan error, 1)
	go func() { done <- watch.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		watch.Process.Kill()
		require.FailNow(t, "tail --pid did not follow its process")
	}
}

func TestConfirmDialogs(t *testing.T) {
	t.Parallel()
	require.Equal(t, []string{"--question", "--title", "T", "--text", "X", "--ok-label", "Go", "--cancel-label", "Cancel", "--no-wrap"},
		confirmArgv([]string{"/usr/bin/zenity"}, "T", "X", "Go"))
	require.Equal(t, []string{"--title", "T", "--yes-label", "Go", "--no-label", "Cancel", "--yesno", "X"},
		confirmArgv([]string{"/usr/bin/kdialog"}, "T", "X", "Go"))
	_, err := cmdDesktop{confirm: [][]string{{"no-such-dialog"}}}.Confirm(t.Context(), "T", "X", "Go")
	require.ErrorIs(t, err, ErrNoDialog)
	for code, want := range map[string]bool{"0": true, "1": false} {
		ok, err := cmdDesktop{confirm: [][]string{{"sh", "-c", "exit " + code}}}.Confirm(t.Context(), "T", "X", "Go")
		require.NoError(t, err)
		require.Equal(t, want, ok)
	}
	_, err = cmdDesktop{confirm: [][]string{{"sh", "-c", "echo broken >&2; exit 5"}}}.Confirm(t.Context(), "T", "X", "Go")
	require.ErrorIs(t, err, ErrDesktop)
	require.ErrorContains(t, err, "broken")
}
