package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAppWithoutDesktopFailsFast: `deltafin` with no arguments on a
// machine without a session bus says why at once instead of waiting for a
// tray that never comes.
func TestAppWithoutDesktopFailsFast(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no bus at all", map[string]string{}, "DBUS_SESSION_BUS_ADDRESS is unset"},
		{"dead bus", map[string]string{"DBUS_SESSION_BUS_ADDRESS": "unix:path=" + filepath.Join(t.TempDir(), "gone")}, "session bus unix:path="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.env["DELTAFIN_HOME"] = t.TempDir()
			code, _, errOut := runArgs(t, tc.env)
			require.Equal(t, 1, code)
			require.Contains(t, errOut, "app: no menu bar")
			require.Contains(t, errOut, tc.want)
		})
	}
}
