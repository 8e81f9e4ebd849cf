package sysinfo

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseMeminfo(t *testing.T) {
	m, err := parseMeminfo([]byte("MemTotal:       24576000 kB\nMemFree: 1 kB\nMemAvailable:   20000000 kB\n"))
	require.NoError(t, err)
	require.Equal(t, uint64(24576000)<<10, m.Total)
	require.Equal(t, uint64(20000000)<<10, m.Available)
	_, err = parseMeminfo([]byte("garbage\n"))
	require.Error(t, err)
}
