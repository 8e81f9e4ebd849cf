package app

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/experts"
	"github.com/deltafin/deltafin/internal/sysinfo"
)

// TestMemWatchShrinksTheCacheWhenMemoryFalls: a real streamed k3-tiny under
// a fake memory reader. Plenty free: nothing changes; available memory
// drops below the plan's headroom: the expert cache gives the shortfall
// back (logged); it drops further: the cache empties and the log says what
// to do; memory comes back: the cache grows again, never past its plan.
func TestMemWatchShrinksTheCacheWhenMemoryFalls(t *testing.T) {
	cfg := Config{DataDir: t.TempDir(), RAMGB: 0.064}
	m, err := OpenModel(t.Context(), cfg, ModelRef{Dir: filepath.Join("..", "testdata", "k3-tiny")})
	require.NoError(t, err)
	defer m.Close()
	p := m.Plan()
	require.Positive(t, p.CacheExperts)
	var avail int64
	var logs bytes.Buffer
	w := newMemWatch(m.Model, func() (sysinfo.Memory, error) {
		return sysinfo.Memory{Total: 64 << 30, Available: uint64(avail)}, nil
	}, slog.New(slog.NewTextHandler(&logs, nil)))
	floor := experts.Headroom(0) // --ram-gb keeps no headroom of its own

	avail = 8 << 30
	require.Equal(t, p.CacheBytes, w.check(), "plenty free: the plan stands")
	require.Empty(t, logs.String())

	short := 3 * p.SlotBytes
	avail = floor - short
	got := w.check()
	require.LessOrEqual(t, got, p.CacheBytes-short, "the shortfall is given back")
	require.Greater(t, got, p.CacheBytes-short-p.SlotBytes, "and no more than whole experts need")
	require.Contains(t, logs.String(), "the expert cache shrinks")

	avail = floor - p.CacheBytes - 1
	require.Zero(t, w.check())
	require.Zero(t, w.check())
	require.Contains(t, logs.String(), "close other programs, or restart Deltafin")
	require.Equal(t, 1, bytes.Count(logs.Bytes(), []byte("already empty")), "said once")

	avail = 2*floor + p.CacheBytes/2
	require.Equal(t, p.CacheBytes/2/p.SlotBytes*p.SlotBytes, w.check(), "memory back: the cache grows by what is free above twice the headroom")
	avail = 64 << 30
	require.Equal(t, p.CacheBytes, w.check(), "never past the plan")
}
