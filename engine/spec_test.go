package engine

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDraft(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		hist []int
		want int
		ok   bool
	}{
		{"empty", nil, 0, false},
		{"no repeat", []int{1, 2, 3, 4}, 0, false},
		{"bigram repeats", []int{1, 2, 3, 9, 1, 2}, 3, true},
		{"single token repeat is not enough", []int{5, 6, 7, 5}, 0, false},
		{"latest occurrence wins", []int{1, 2, 3, 1, 2, 4, 1, 2}, 4, true},
		{"longest suffix wins", []int{7, 1, 2, 5, 8, 1, 2, 6, 7, 1, 2}, 5, true},
		{"a run", []int{4, 4, 4}, 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := draft(tc.hist)
			require.Equal(t, tc.ok, ok)
			if ok {
				require.Equal(t, tc.want, got)
			}
		})
	}
}

// TestSpeculationKeepsTheTokens decodes many prompts with and without
// speculation on both fixtures: the tokens and every logits row must be
// bit-identical, and on repetitive prompts guesses must be accepted.
func TestSpeculationKeepsTheTokens(t *testing.T) {
	t.Parallel()
	for _, fx := range []struct{ name, dir string }{
		{"k3-tiny", filepath.Join("..", "testdata", "k3-tiny")},
		{"kimi-linear-tiny", filepath.Join("..", "testdata", "kimi-linear-tiny", "hf")},
	} {
		t.Run(fx.name, func(t *testing.T) {
			plain, err := Open(t.Context(), fx.dir, Options{NoSpec: true})
			require.NoError(t, err)
			defer plain.Close()
			spec, err := Open(t.Context(), fx.dir, Options{})
			require.NoError(t, err)
			defer spec.Close()
			V := plain.Info().VocabSize
			rng := rand.New(rand.NewPCG(10, 3))
			var prompts [][]int
			for range 8 { // random text: few guesses, mostly rejected
				p := make([]int, 3+rng.IntN(30))
				for i := range p {
					p[i] = rng.IntN(V)
				}
				prompts = append(prompts, p)
			}
			// Repetitive text: a run of one token and short periods. The
			// tiny models' greedy output seldom repeats (random weights), so
			// these decode longer for their few accepted guesses.
			for _, unit := range [][]int{{7}, {1, 2}, {5, 6, 7}, {100, 200, 300}} {
				var p []int
				for range 12 / len(unit) {
					p = append(p, unit...)
				}
				prompts = append(prompts, p)
			}
			var total SpecStats
			repAccepted, repWouldAccept := 0, 0
			for i, prompt := range prompts {
				run := func(m *Model) ([]int, [][]float32, SpecStats) {
					s := m.NewSession()
					var toks []int
					var rows [][]float32
					maxNew := 24
					if i >= 8 {
						maxNew = 300
					}
					_, err := s.Generate(t.Context(), prompt, GenerateOptions{
						MaxNew: maxNew,
						Logits: func(r []float32) error { rows = append(rows, append([]float32(nil), r...)); return nil },
					}, collect(&toks))
					require.NoError(t, err)
					// A second turn continues from the state speculation left.
					_, err = s.Generate(t.Context(), prompt[:2], GenerateOptions{MaxNew: 8}, collect(&toks))
					require.NoError(t, err)
					return toks, rows, s.SpecStats()
				}
				wantToks, wantRows, st0 := run(plain)
				gotToks, gotRows, st := run(spec)
				require.Zero(t, st0.Passes)
				require.Equal(t, wantToks, gotToks, "prompt %d", i)
				require.Equal(t, wantRows, gotRows, "prompt %d: logits rows bit for bit", i)
				total.Passes += st.Passes
				total.Accepted += st.Accepted
				total.Steps += st.Steps
				if i >= 8 {
					repAccepted += st.Accepted
					// The guesses the drafter would have got right on the
					// plain tokens of the first turn (300 of them): the
					// draft of prompt+want[:j] is the guess for want[j].
					for j := 1; j < 300; j++ {
						if g, ok := draft(append(append([]int(nil), prompt...), wantToks[:j]...)); ok && g == wantToks[j] {
							repWouldAccept++
						}
					}
				}
			}
			t.Logf("%s: %d speculative passes, %.0f%% accepted, %.2f tokens per pass; %d right guesses on the plain repetitive runs",
				fx.name, total.Passes, 100*total.AcceptRate(), total.TokensPerPass(), repWouldAccept)
			// Where the model's own greedy text repeats, speculation must
			// cash it in. A random-weight model may never repeat itself
			// (k3-tiny's regenerated weights do not on these prompts);
			// TestVerifyAcceptsAndRewinds drives the accepting pass directly.
			if repWouldAccept > 0 {
				require.Positive(t, repAccepted, "repetitive prompts have accepted guesses")
			}
			require.Less(t, total.Accepted, total.Passes, "some guesses are rejected and rewound")
		})
	}
}

// TestVerifyAcceptsAndRewinds drives verify passes of up to 6 positions
// directly: drafts right up to a wrong one give the next greedy rows bit
// for bit and stop there, keep rolls the KDA and MLA state back to the
// kept positions, and decoding afterwards gives the plain greedy tokens bit
// for bit, on both fixtures.
func TestVerifyAcceptsAndRewinds(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{filepath.Join("..", "testdata", "k3-tiny"), filepath.Join("..", "testdata", "kimi-linear-tiny", "hf")} {
		t.Run(dir, func(t *testing.T) {
			m, err := Open(t.Context(), dir, Options{NoSpec: true})
			require.NoError(t, err)
			defer m.Close()
			prompt := []int{3, 14, 15, 92, 65, 35}
			var greedy []int
			var rows [][]float32
			_, err = m.NewSession().Generate(t.Context(), prompt, GenerateOptions{MaxNew: 24,
				Logits: func(r []float32) error { rows = append(rows, append([]float32(nil), r...)); return nil }}, collect(&greedy))
			require.NoError(t, err)
			steps := rows[len(prompt)-1:] // steps[i] chose greedy[i]
			V := m.Info().VocabSize
			for _, tc := range []struct{ k, wrong int }{{1, 0}, {1, -1}, {3, 0}, {3, 1}, {3, -1}, {5, 2}, {5, 4}, {5, -1}} {
				s := m.NewSession()
				_, err = s.Generate(t.Context(), prompt, GenerateOptions{MaxNew: 1}, collect(new([]int)))
				require.NoError(t, err) // greedy[0] is pending
				drafts := append([]int(nil), greedy[1:1+tc.k]...)
				if tc.wrong >= 0 {
					drafts[tc.wrong] = (drafts[tc.wrong] + 1) % V
				}
				got, picks, err := s.verify(t.Context(), drafts, nil)
				require.NoError(t, err)
				kept := tc.k
				if tc.wrong >= 0 {
					kept = tc.wrong
				}
				require.Len(t, got, kept+1, "%+v: rows up to the first wrong draft", tc)
				for j := range got {
					require.Equal(t, steps[j+1], got[j], "%+v: row %d is a decode step, bit for bit", tc, j)
					require.Equal(t, greedy[j+1], picks[j])
				}
				require.Equal(t, len(prompt)+1+tc.k, s.Len(), "every position ran")
				s.keep(kept + 1)
				require.Equal(t, len(prompt)+1+kept, s.Len())
				// The rolled back session decodes on as if the wrong
				// drafts never ran.
				var rest []int
				s.pending = append(s.pending, picks[kept])
				s.hist = append(s.hist, picks[kept])
				_, err = s.Generate(t.Context(), nil, GenerateOptions{MaxNew: 6}, collect(&rest))
				require.NoError(t, err)
				require.Equal(t, greedy[kept+2:kept+8], rest, "%+v", tc)
			}
		})
	}
}

func TestSessionTokens(t *testing.T) {
	t.Parallel()
	m := openK3Tiny(t)
	s := m.NewSession()
	var got []int
	_, err := s.Generate(t.Context(), []int{5, 6, 7}, GenerateOptions{MaxNew: 5}, collect(&got))
	require.NoError(t, err)
	require.Equal(t, append([]int{5, 6, 7}, got...), s.Tokens())
	require.Equal(t, s.Len(), len(s.Tokens()))
	require.True(t, s.Usable())
}
