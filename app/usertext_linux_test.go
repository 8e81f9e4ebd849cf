package app

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/internal/usertext"
)

// lineWriter ends ctx once a whole line has been written.
type lineWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	cancel context.CancelFunc
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if bytes.IndexByte(w.buf.Bytes(), '\n') >= 0 {
		w.cancel()
	}
	return len(p), nil
}

// TestHeadlessLineSaysItAll: without a menu bar and without its API the
// headless line gives both reasons whole, advice included, on one line,
// with no ellipsis and no Go package prefix; the menu's status line is the
// short form of the same problem.
func TestHeadlessLineSaysItAll(t *testing.T) {
	cfg := testConfig(t)
	a := startApp(t, cfg, Deps{})
	advice := "free some memory or pass --ram-gb with less, then start Deltafin again (deltafin doctor shows the RAM it sees)"
	a.problem(subServer, "Server failed to start", errors.New("app: open model: engine: the plan needs 412.0 GB of RAM for the spine and the working set but 31.2 GB are available:\n"+advice))
	require.True(t, strings.HasSuffix(a.State().Problem, "…"), "the menu shows it cut: %q", a.State().Problem)
	why := errors.New("app: " + ErrNoTray.Error() + ": DBUS_SESSION_BUS_ADDRESS is unset and $XDG_RUNTIME_DIR/bus is missing; the menu bar needs a desktop session (use `deltafin serve` on a headless machine)")
	ctx, cancel := context.WithCancel(t.Context())
	w := &lineWriter{cancel: cancel}
	require.NoError(t, a.runHeadless(ctx, why, w))
	line := w.buf.String()
	require.Equal(t, 1, strings.Count(line, "\n"), line)
	require.Contains(t, line, "(use `deltafin serve` on a headless machine)")
	require.Contains(t, line, advice+")")
	require.Contains(t, line, "the plan needs 412.0 GB of RAM")
	require.NotContains(t, line, "…")
	require.False(t, usertext.Prefixed(line), line)
	for _, p := range []string{"app: ", "engine: "} {
		require.NotContains(t, line, p)
	}
}

// TestDoctorDesktopSaysItAll: deltafin doctor's menu-bar line, where no
// session bus is found, is the whole advice without a package prefix.
func TestDoctorDesktopSaysItAll(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.SessionBus, cfg.RuntimeDir = "", t.TempDir()
	got := DescribeDesktop(t.Context(), cfg)
	require.True(t, strings.HasSuffix(got, "the menu bar needs a desktop session (use `deltafin serve` on a headless machine)"), got)
	require.NotContains(t, got, "…")
	require.False(t, usertext.Prefixed(got), got)
}
