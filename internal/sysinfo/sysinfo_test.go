package sysinfo

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReadMemory(t *testing.T) {
	m, err := ReadMemory()
	require.NoError(t, err)
	require.Positive(t, m.Total)
	require.LessOrEqual(t, m.Available, m.Total)
}

func TestFreeDisk(t *testing.T) {
	n, err := FreeDisk(t.TempDir())
	require.NoError(t, err)
	require.Positive(t, n)
	_, err = FreeDisk("/does/not/exist")
	require.ErrorContains(t, err, "/does/not/exist")
}

func TestCPUFeatures(t *testing.T) {
	if runtime.GOARCH == "arm64" {
		require.Contains(t, CPUFeatures(), "NEON")
	}
}
