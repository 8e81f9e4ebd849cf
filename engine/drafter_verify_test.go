package engine

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/kernels"
)

// TestDrafterKeepsTheTokens: k3-tiny drafting with the tiny EAGLE-3.1
// drafter (random weights) gives exactly the target's tokens alone, greedy
// and seeded sampling, with stop tokens and over a second turn, on every
// CPU backend; the drafter's guesses do reach the verify passes.
func TestDrafterKeepsTheTokens(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "testdata", "k3-tiny")
	eachCPUBackend(t, func(t *testing.T, be kernels.Backend) {
		d, err := openEagle3(t.Context(), tinyDrafterDir, k3TinyDrafter(be))
		require.NoError(t, err)
		plain, err := Open(t.Context(), dir, Options{Backend: be, NoSpec: true})
		require.NoError(t, err)
		defer plain.Close()
		drafted, err := Open(t.Context(), dir, Options{Backend: be, NoSpec: true, Draft: Draft{src: d}})
		require.NoError(t, err)
		defer drafted.Close()
		require.Equal(t, "eagle3", Draft{src: d}.Name())

		rng := rand.New(rand.NewPCG(32, 1))
		var prompts [][]int
		for range 2 {
			p := make([]int, 2+rng.IntN(20))
			for i := range p {
				p[i] = rng.IntN(768)
			}
			prompts = append(prompts, p)
		}
		var all SpecStats
		for i, prompt := range prompts {
			for _, sm := range []Sampling{{}, {Temperature: 1, TopP: 0.95, Seed: uint64(40 + i)}} {
				run := func(m *Model) ([]int, SpecStats) {
					s := m.NewSession()
					var toks []int
					_, err := s.Generate(t.Context(), prompt, GenerateOptions{MaxNew: 24, Sampling: sm}, collect(&toks))
					require.NoError(t, err)
					// A second turn, ending at a stop token if one comes.
					_, err = s.Generate(t.Context(), prompt[:2], GenerateOptions{MaxNew: 8, Sampling: sm, StopTokens: []int{770, toks[len(toks)/2]}}, collect(&toks))
					require.NoError(t, err)
					return toks, s.SpecStats()
				}
				want, _ := run(plain)
				got, st := run(drafted)
				require.Equal(t, want, got, "prompt %d, sampling %+v", i, sm)
				all.Drafted += st.Drafted
				all.Accepted += st.Accepted
				all.Passes += st.Passes
			}
		}
		require.Positive(t, all.Drafted, "the drafter's guesses were verified")
		t.Logf("%s: %d drafted, %d accepted over %d verify passes", be.Name(), all.Drafted, all.Accepted, all.Passes)
	})
}
