package app

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLockDataDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l, err := LockDataDir(dir)
	require.NoError(t, err)
	_, err = LockDataDir(dir)
	require.ErrorIs(t, err, ErrRunning)
	require.Regexp(t, `^app: Deltafin is already running \(pid \d+\)$`, err.Error())
	require.NoError(t, l.SetURL("http://127.0.0.1:8001"))
	_, err = LockDataDir(dir)
	require.Regexp(t, `^app: Deltafin is already running \(pid \d+, http://127\.0\.0\.1:8001\)$`, err.Error())
	require.NoError(t, l.Close())
	l, err = LockDataDir(dir) // released: taken again
	require.NoError(t, err)
	require.NoError(t, l.Close())
}

func TestPasteableAddr(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"0.0.0.0:8000": "127.0.0.1:8000", "[::]:8001": "127.0.0.1:8001", "127.0.0.1:8002": "127.0.0.1:8002", "192.168.1.5:80": "192.168.1.5:80"} {
		a, err := net.ResolveTCPAddr("tcp", in)
		require.NoError(t, err)
		require.Equal(t, want, PasteableAddr(a), in)
	}
}
