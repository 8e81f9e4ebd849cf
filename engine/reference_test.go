package engine

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltafin/deltafin/internal/testref"
	"github.com/deltafin/deltafin/kernels"
	"github.com/stretchr/testify/require"
)

// refFile is a reference.safetensors: F32 and I64 tensors by name.
type refFile map[string]refTensor

type refTensor struct {
	shape []int64
	f32   []float32
	i64   []int
}

func loadRef(t *testing.T, path string) refFile {
	t.Helper()
	out := refFile{}
	for _, x := range testref.All(t, path) {
		rt := refTensor{shape: x.Shape}
		switch x.DType {
		case "F32":
			rt.f32 = testref.F32s(x.Data)
		case "I64":
			rt.i64 = testref.I64s(x.Data)
		default:
			t.Fatalf("reference tensor %s has dtype %s", x.Name, x.DType)
		}
		out[x.Name] = rt
	}
	return out
}

func (r refFile) ints(t *testing.T, name string) []int {
	t.Helper()
	x, ok := r[name]
	require.True(t, ok, "reference has no %s", name)
	return x.i64
}

func (r refFile) floats(t *testing.T, name string) []float32 {
	t.Helper()
	x, ok := r[name]
	require.True(t, ok, "reference has no %s", name)
	return x.f32
}

// maxAbsDiff returns max |a−b| and where it is.
func maxAbsDiff(a, b []float32) (float64, int) {
	worst, at := 0.0, -1
	for i := range a {
		d := math.Abs(float64(a[i]) - float64(b[i]))
		if d > worst || math.IsNaN(d) {
			worst, at = d, i
		}
	}
	return worst, at
}

func flatten(rows [][]float32) []float32 {
	var out []float32
	for _, r := range rows {
		out = append(out, r...)
	}
	return out
}

// checkReference runs every prompt tag against the reference: logits at
// every prompt position within tol, greedy tokens identical, the logits that
// chose each token within tol, and each cached decode step equal to a full
// recompute within selfTol of this run's own distance to the reference. It
// returns the worst |Δlogit| seen.
func checkReference(t *testing.T, m *Model, ref refFile, tags []string, tol float64) float64 {
	worst := 0.0
	for _, tag := range tags {
		t.Run(tag, func(t *testing.T) {
			prompt := ref.ints(t, tag+".input_ids")
			want := ref.floats(t, tag+".logits")
			wantTokens := ref.ints(t, tag+".greedy_tokens")
			wantSteps := ref.floats(t, tag+".greedy_step_logits")
			V := m.Info().VocabSize

			s := m.NewSession()
			var rows [][]float32
			var got []int
			res, err := s.Generate(t.Context(), prompt, GenerateOptions{
				MaxNew: len(wantTokens),
				Logits: func(row []float32) error { rows = append(rows, append([]float32(nil), row...)); return nil },
			}, func(tok int) error { got = append(got, tok); return nil })
			require.NoError(t, err)
			require.Equal(t, "length", res.FinishReason)
			require.Len(t, rows, len(prompt)+len(wantTokens)-1)

			d, at := maxAbsDiff(flatten(rows[:len(prompt)]), want)
			t.Logf("%s: prompt logits max |Δ| = %.3g (position %d)", tag, d, at/max(V, 1))
			require.LessOrEqual(t, d, tol, "prompt logits at position %d", at/V)
			worst = max(worst, d)

			require.Equal(t, wantTokens, got, "greedy tokens")
			steps := flatten(rows[len(prompt)-1:])
			d, at = maxAbsDiff(steps, wantSteps)
			t.Logf("%s: greedy step logits max |Δ| = %.3g (step %d)", tag, d, at/V)
			require.LessOrEqual(t, d, tol, "step logits at step %d", at/V)
			worst = max(worst, d)

			// Decode with caches equals a full recompute of prompt+greedy[:s].
			cacheWorst := 0.0
			first := 1
			if testing.Short() {
				first = len(wantTokens) - 1 // emulated (qemu): the longest recompute only
			}
			for step := first; step < len(wantTokens); step++ {
				full := m.NewSession()
				ids := append(append([]int(nil), prompt...), got[:step]...)
				last, err := full.Forward(t.Context(), ids, false)
				require.NoError(t, err)
				d, _ := maxAbsDiff(last[0], rows[len(prompt)-1+step])
				cacheWorst = max(cacheWorst, d)
			}
			bound := selfTol(worst)
			t.Logf("%s: cached decode vs full recompute max |Δ| = %.3g (bound %.3g)", tag, cacheWorst, bound)
			require.LessOrEqual(t, cacheWorst, bound)
		})
	}
	return worst
}

// refTol is what the fixtures' makers hold an fp32 engine to against their
// float64 references (testdata/PROVENANCE.md: an fp32 engine lands within
// about 1e-4; llama.cpp's fp32 graph is at 2.0e-4 on k3-tiny).
const refTol = 2e-3

// selfTol bounds the difference between two fp32 evaluations of the same
// logits in different summation orders (cached decode against a full
// recompute, a batched prompt against one token at a time). Each lies
// within the fp32 forward error E of the float64 reference, so the two lie
// within 2E of each other; E is measured in the same run, on the same
// backend, as the largest distance to the reference seen (refE), and a
// second factor of 2 covers the rows where it was not measured. Deriving
// the bound from the measured error, not fixing it, keeps it right on
// every CPU (an AVX2 machine's sums differ from an AVX-512 machine's: a
// fixed 1e-4 failed there at 1.14e-4) while a real cache or batching bug,
// orders of magnitude above rounding, still fails it.
func selfTol(refE float64) float64 { return 4 * refE }

// eachCPUBackend runs f once under every CPU backend this machine has
// (avx512, avx2, c, ref here; neon, c, ref on arm64), so the exactness
// tests hold on every CPU CI may land on, not only the fastest here.
// DELTAFIN_TEST_KERNELS, a comma-separated list, narrows it (the Makefile's
// qemu run takes only neon: the others run natively).
func eachCPUBackend(t *testing.T, f func(t *testing.T, be kernels.Backend)) {
	names := kernels.Available()
	if only := os.Getenv("DELTAFIN_TEST_KERNELS"); only != "" {
		names = strings.Split(only, ",")
	}
	for _, name := range names {
		be, err := kernels.ByName(name)
		require.NoError(t, err)
		if !kernels.IsCPU(be) {
			continue
		}
		t.Run(name, func(t *testing.T) { f(t, be) })
	}
}

func TestK3TinyReference(t *testing.T) {
	t.Parallel()
	ref := loadRef(t, filepath.Join("..", "testdata", "k3-tiny", "reference.safetensors"))
	eachCPUBackend(t, func(t *testing.T, be kernels.Backend) {
		m, err := Open(t.Context(), filepath.Join("..", "testdata", "k3-tiny"), Options{Backend: be})
		require.NoError(t, err)
		defer m.Close()
		info := m.Info()
		require.Equal(t, "deltafin-kimi-k3", info.ID)
		require.Equal(t, 1024, info.VocabSize)
		require.Equal(t, 770, info.EOS)
		worst := checkReference(t, m, ref, []string{"short", "long", "text"}, refTol)
		fmt.Printf("k3-tiny (%s): max |Δlogit| = %.3g\n", be.Name(), worst)
	})
}

func TestKimiLinearTinyReference(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "testdata", "kimi-linear-tiny")
	ref := loadRef(t, filepath.Join(dir, "reference.safetensors"))
	eachCPUBackend(t, func(t *testing.T, be kernels.Backend) {
		m, err := Open(t.Context(), filepath.Join(dir, "hf"), Options{Backend: be})
		require.NoError(t, err)
		defer m.Close()
		require.Equal(t, "hf", m.Info().ID)
		worst := checkReference(t, m, ref, []string{"short", "long"}, refTol)
		fmt.Printf("kimi-linear-tiny (%s): max |Δlogit| = %.3g\n", be.Name(), worst)
	})
}

// TestKimiLinearHidden compares the residual stream layer by layer with the
// reference's p.hidden.k (Hugging Face's convention: hidden.0 is the
// embedding, hidden.k the output of layer k−1, the last one the final norm).
func TestKimiLinearHidden(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "testdata", "kimi-linear-tiny")
	m, err := Open(t.Context(), filepath.Join(dir, "hf"), Options{})
	require.NoError(t, err)
	defer m.Close()
	ref := loadRef(t, filepath.Join(dir, "reference.safetensors"))
	for _, tag := range []string{"short", "long"} {
		t.Run(tag, func(t *testing.T) {
			hidden := map[int][]float32{}
			_, err := m.NewSession().forward(t.Context(), ref.ints(t, tag+".input_ids"), true, func(layer int, h []float32) {
				k := layer + 1
				if layer == m.cfg.Layers {
					k = layer
				}
				hidden[k] = append([]float32(nil), h...)
			})
			require.NoError(t, err)
			for k := 0; k <= m.cfg.Layers; k++ {
				d, at := maxAbsDiff(hidden[k], ref.floats(t, fmt.Sprintf("%s.hidden.%d", tag, k)))
				t.Logf("hidden.%d max |Δ| = %.3g (position %d)", k, d, at/m.cfg.Hidden)
				require.LessOrEqual(t, d, 2e-3, "hidden.%d", k)
			}
		})
	}
}
