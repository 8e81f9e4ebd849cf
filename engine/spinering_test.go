package engine

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSpineRingIsBitExact streams every spine layer of k3-tiny through the
// ring (direct reads, wrap-around across passes, a pass cancelled midway
// and the ring restarted) and requires the logits of a prompt and of
// decode steps to equal, bit for bit, those of the model held in RAM.
func TestSpineRingIsBitExact(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "testdata", "k3-tiny")
	ram, err := Open(t.Context(), dir, Options{NoSpec: true})
	require.NoError(t, err)
	defer ram.Close()
	for _, pinned := range []int{0, 3} {
		m, err := Open(t.Context(), dir, Options{NoSpec: true, Stream: &StreamOptions{Plan: &BudgetPlan{PinnedLayers: pinned}}})
		require.NoError(t, err)
		require.NotNil(t, m.spine)
		for _, sf := range m.spine.files {
			require.True(t, sf.Direct(), "spine shards are read with O_DIRECT on this filesystem")
		}

		// A pass cancelled after its second streamed layer leaves the
		// ring mid-cycle; the next pass must restart it at its first.
		ctx, cancel := context.WithCancel(t.Context())
		_, err = m.NewSession().forward(ctx, []int{5, 6, 7}, false, func(layer int, _ []float32) {
			if layer == pinned+1 {
				cancel()
			}
		})
		require.ErrorIs(t, err, context.Canceled)

		prompt := []int{3, 17, 42, 9, 1}
		a, b := ram.NewSession(), m.NewSession()
		ra, err := a.Forward(t.Context(), prompt, true)
		require.NoError(t, err)
		rb, err := b.Forward(t.Context(), prompt, true)
		require.NoError(t, err)
		require.Equal(t, ra, rb, "prompt logits, %d pinned layers", pinned)
		for step := range 4 {
			tok := argmax(ra[len(ra)-1])
			ra, err = a.Forward(t.Context(), []int{tok}, false)
			require.NoError(t, err)
			rb, err = b.Forward(t.Context(), []int{tok}, false)
			require.NoError(t, err)
			require.Equal(t, ra, rb, "step %d logits, %d pinned layers", step, pinned)
		}
		require.Positive(t, m.spine.bytes.Load())
		require.NoError(t, m.Close())
	}
}

// TestSpineRingInt8IsBitExact: with the int8 spine a slot is filled by the
// plain loader; streamed or in RAM, the logits are the same bits.
func TestSpineRingInt8IsBitExact(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "testdata", "k3-tiny")
	i8 := filepath.Join(t.TempDir(), "i8")
	require.NoError(t, ConvertSpineInt8(t.Context(), dir, i8, nil))
	ram, err := Open(t.Context(), dir, Options{NoSpec: true, SpineInt8: i8})
	require.NoError(t, err)
	defer ram.Close()
	m, err := Open(t.Context(), dir, Options{NoSpec: true, SpineInt8: i8, Stream: &StreamOptions{Plan: &BudgetPlan{PinnedLayers: 1}}})
	require.NoError(t, err)
	defer m.Close()
	require.False(t, m.spine.fast)
	prompt := []int{3, 17, 42, 9, 1}
	a, b := ram.NewSession(), m.NewSession()
	for step := range 4 {
		ra, err := a.Forward(t.Context(), prompt, true)
		require.NoError(t, err)
		rb, err := b.Forward(t.Context(), prompt, true)
		require.NoError(t, err)
		require.Equal(t, ra, rb, "pass %d", step)
		prompt = []int{argmax(ra[len(ra)-1])}
	}
}
