package flock

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTry(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "lock")
	open := func() *os.File {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		require.NoError(t, err)
		return f
	}
	a, b := open(), open()
	defer b.Close()
	require.NoError(t, Try(a))
	require.ErrorIs(t, Try(b), ErrHeld, "a second open file of the same path is refused")
	require.NoError(t, a.Close())
	require.NoError(t, Try(b), "and takes it once the first is closed")
}
