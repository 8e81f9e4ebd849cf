package engine

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestModelStats opens k3-tiny with every layer streamed and no expert
// cache: a decode counts spine and expert bytes.
func TestModelStats(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "testdata", "k3-tiny")
	inRAM, err := Open(t.Context(), dir, Options{})
	require.NoError(t, err)
	require.Zero(t, inRAM.Stats(), "a model in RAM reads nothing after Open")
	require.NoError(t, inRAM.Close())

	m, err := Open(t.Context(), dir, Options{Stream: &StreamOptions{Plan: &BudgetPlan{}}})
	require.NoError(t, err)
	defer m.Close()
	info := m.Info()
	require.Positive(t, info.SpineBytes)
	_, err = m.NewSession().Forward(t.Context(), []int{1, 2, 3}, false)
	require.NoError(t, err)
	st := m.Stats()
	require.Positive(t, st.SpineBytes, "every layer streamed")
	require.Positive(t, st.ExpertBytes)
	require.Positive(t, st.Demanded())
	require.Equal(t, st.ExpertBytes+st.SpineBytes, st.DiskBytes())

	require.NoError(t, m.Close())
}
