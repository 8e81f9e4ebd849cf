package app

import (
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
