package engine

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/kernels"
)

var tinyDrafterDir = filepath.Join("..", "testdata", "k3-tiny-eagle3")

// k3TinyDrafter are openEagle3's options for k3-tiny as the target.
func k3TinyDrafter(be kernels.Backend) drafterOptions {
	return drafterOptions{TargetLayers: 10, TargetHidden: 128, TargetVocab: 1024, Backend: be}
}

func TestDrafterLoads(t *testing.T) {
	t.Parallel()
	d, err := openEagle3(t.Context(), tinyDrafterDir, k3TinyDrafter(nil))
	require.NoError(t, err)
	// vLLM's aux ids 2, 5, 7 are the streams after layers 1, 4 and 6.
	require.Equal(t, []int{1, 4, 6}, d.tapLayers())
	// Every BF16 tensor of the file, plus the absorbed F32 key halves.
	fi, err := os.Stat(filepath.Join(tinyDrafterDir, "model.safetensors"))
	require.NoError(t, err)
	c := d.cfg
	var norms int64
	for _, n := range []int{c.Hidden, c.Hidden, c.QLora, c.KVLora, c.Hidden, c.Hidden, c.Hidden, c.Hidden, c.Hidden} {
		norms += int64(n)
	}
	header := fi.Size() - 2*tinyDrafterElements(c)
	want := fi.Size() - header - 2*norms + 4*norms + int64(4*c.Heads*c.KVLora*c.Nope)
	require.Equal(t, want, d.residentBytes())
	require.Contains(t, d.describe(), "taps [1 4 6]")
}

// tinyDrafterElements counts the roster's elements.
func tinyDrafterElements(c *drafterConfig) int64 {
	var n int64
	for _, s := range c.drafterRoster() {
		e := int64(1)
		for _, d := range s.shape {
			e *= d
		}
		n += e
	}
	return n
}

// observeRandom feeds n positions of random taps and tokens.
func observeRandom(dr drafter, rng *rand.Rand, n int) {
	hid := make([][]float32, 3)
	for p := range n {
		for i := range hid {
			hid[i] = make([]float32, 128)
			for j := range hid[i] {
				hid[i][j] = float32(rng.NormFloat64())
			}
		}
		dr.observe(rng.IntN(1024), hid)
		_ = p
	}
}

// TestDrafterDrafts: it proposes k in-vocabulary tokens, a proposal leaves
// the drafter as observe left it (the same proposal again, and the same
// as a drafter that never proposed), and reset forgets.
func TestDrafterDrafts(t *testing.T) {
	t.Parallel()
	eachCPUBackend(t, func(t *testing.T, be kernels.Backend) {
		d, err := openEagle3(t.Context(), tinyDrafterDir, k3TinyDrafter(be))
		require.NoError(t, err)
		a, b := d.newDrafter(nil), d.newDrafter(nil)
		require.Equal(t, []int{1, 4, 6}, a.taps())
		got, err := a.propose(t.Context(), []int{5}, 4)
		require.NoError(t, err)
		require.Empty(t, got, "nothing observed: no guess")

		observeRandom(a, rand.New(rand.NewPCG(1, 2)), 9)
		observeRandom(b, rand.New(rand.NewPCG(1, 2)), 5)
		first, err := a.propose(t.Context(), []int{17}, 5)
		require.NoError(t, err)
		require.Len(t, first, 5)
		for _, g := range first {
			require.True(t, g >= 0 && g < 1024)
		}
		again, err := a.propose(t.Context(), []int{17}, 5)
		require.NoError(t, err)
		require.Equal(t, first, again)
		// b proposes midway, then observes the rest: its cache is a's.
		_, err = b.propose(t.Context(), []int{3, 4, 5}, 3)
		require.NoError(t, err)
		rng := rand.New(rand.NewPCG(1, 2))
		observeRandom(d.newDrafter(nil), rng, 5) // advance the stream past b's first 5
		observeRandom(b, rng, 4)
		fromB, err := b.propose(t.Context(), []int{17}, 5)
		require.NoError(t, err)
		require.Equal(t, first, fromB)

		// A prefix's rows run before the guesses: the guess after
		// [17, first[0]] is first[1].
		tail, err := a.propose(t.Context(), []int{17, first[0]}, 4)
		require.NoError(t, err)
		require.Equal(t, first[1:5], tail)

		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err = a.propose(ctx, []int{17}, 5)
		require.ErrorIs(t, err, context.Canceled)

		a.reset()
		got, err = a.propose(t.Context(), []int{17}, 5)
		require.NoError(t, err)
		require.Empty(t, got)
	})
}

// TestDrafterAttentionExpanded checks the absorbed attention against the
// textbook MLA it stands for: every cached latent expanded into per-head
// keys and values through kv_b, in float64.
func TestDrafterAttentionExpanded(t *testing.T) {
	t.Parallel()
	d, err := openEagle3(t.Context(), tinyDrafterDir, k3TinyDrafter(refBackend(t)))
	require.NoError(t, err)
	c, w := d.cfg, &d.w
	rng := rand.New(rand.NewPCG(7, 7))
	var k drafterCache
	sc := newDrafterScratch(c)
	xs := make([][]float32, 6)
	for p := range xs {
		xs[p] = make([]float32, 2*c.Hidden)
		for i := range xs[p] {
			xs[p][i] = float32(rng.NormFloat64())
		}
		d.attend(sc.attn, xs[p], p, &k, sc)
	}
	got := append([]float32(nil), sc.attn...)

	// The reference, from the weights alone.
	dec := func(m kernels.Matrix) [][]float64 {
		rows := make([][]float64, m.Rows)
		r := make([]float32, m.Cols)
		for i := range rows {
			kernels.DecodeRow(r, m, i)
			rows[i] = make([]float64, m.Cols)
			for j, v := range r {
				rows[i][j] = float64(v)
			}
		}
		return rows
	}
	mv := func(m [][]float64, x []float64) []float64 {
		y := make([]float64, len(m))
		for i, row := range m {
			for j, v := range row {
				y[i] += v * x[j]
			}
		}
		return y
	}
	norm := func(x []float64, wt []float32) []float64 {
		var ss float64
		for _, v := range x {
			ss += v * v
		}
		r := 1 / math.Sqrt(ss/float64(len(x))+float64(c.Eps))
		y := make([]float64, len(x))
		for i, v := range x {
			y[i] = v * r * float64(wt[i])
		}
		return y
	}
	rot := func(x []float64, pos int) {
		for i, f := range c.rope.invFreq {
			a := float64(float32(float64(pos)) * float32(f))
			cs, sn := math.Cos(a)*c.rope.cosSinScale, math.Sin(a)*c.rope.cosSinScale
			e, o := x[2*i], x[2*i+1]
			x[2*i], x[2*i+1] = e*cs-o*sn, o*cs+e*sn
		}
	}
	qA, qB, kvA, kvB, wo := dec(w.qA), dec(w.qB), dec(w.kvA), dec(w.kvB), dec(w.o)
	keys := make([][][]float64, len(xs)) // [pos][head][nope+rope]
	vals := make([][][]float64, len(xs)) // [pos][head][v]
	var q []float64
	last := len(xs) - 1
	for p, x32 := range xs {
		x := make([]float64, len(x32))
		for i, v := range x32 {
			x[i] = float64(v)
		}
		kv := mv(kvA, x)
		lat := norm(kv[:c.KVLora], w.kvANorm)
		kr := append([]float64(nil), kv[c.KVLora:]...)
		rot(kr, p)
		up := mv(kvB, lat)
		for h := range c.Heads {
			o := h * (c.Nope + c.VDim)
			keys[p] = append(keys[p], append(append([]float64(nil), up[o:o+c.Nope]...), kr...))
			vals[p] = append(vals[p], up[o+c.Nope:o+c.Nope+c.VDim])
		}
		if p == last {
			q = mv(qB, norm(mv(qA, x), w.qANorm))
		}
	}
	heads := make([]float64, 0, c.Heads*c.VDim)
	for h := range c.Heads {
		qh := append([]float64(nil), q[h*c.qkDim:(h+1)*c.qkDim]...)
		rot(qh[c.Nope:], last)
		s := make([]float64, len(xs))
		mx := math.Inf(-1)
		for j := range xs {
			for i, v := range qh {
				s[j] += v * keys[j][h][i]
			}
			s[j] *= float64(c.softmaxScale)
			mx = max(mx, s[j])
		}
		var sum float64
		for j := range s {
			s[j] = math.Exp(s[j] - mx)
			sum += s[j]
		}
		o := make([]float64, c.VDim)
		for j := range xs {
			for i := range o {
				o[i] += s[j] / sum * vals[j][h][i]
			}
		}
		heads = append(heads, o...)
	}
	want := mv(wo, heads)
	for i, v := range want {
		require.InDelta(t, v, float64(got[i]), 1e-4*(1+math.Abs(v)), "output %d", i)
	}
}

// TestDrafterRefusesBadFiles: each broken drafter is refused at open with
// an error that names the problem, and none panics.
func TestDrafterRefusesBadFiles(t *testing.T) {
	t.Parallel()
	config, err := os.ReadFile(filepath.Join(tinyDrafterDir, "config.json"))
	require.NoError(t, err)
	weights, err := os.ReadFile(filepath.Join(tinyDrafterDir, "model.safetensors"))
	require.NoError(t, err)
	for _, tc := range []struct {
		name     string
		config   string
		weights  []byte
		opts     drafterOptions
		sentinel error
		says     string
	}{
		{"truncated weights", string(config), weights[:len(weights)-1000], k3TinyDrafter(nil), ErrCheckpoint, "model.safetensors"},
		{"truncated header", string(config), weights[:100], k3TinyDrafter(nil), ErrCheckpoint, "model.safetensors"},
		{"wrong shape", strings.Replace(string(config), `"intermediate_size": 192`, `"intermediate_size": 160`, 1), weights, k3TinyDrafter(nil), ErrCheckpoint, `"layers.0.mlp.gate_proj.weight": shape [192 128], want [160 128]`},
		{"fc_norm missing", strings.Replace(string(config), `"fc_norm": true`, `"fc_norm": false`, 1), weights, k3TinyDrafter(nil), ErrCheckpoint, `unexpected tensor`},
		{"taps past the target", string(config), weights, drafterOptions{TargetLayers: 6, TargetHidden: 128, TargetVocab: 1024}, ErrConfig, "aux hidden-state layer id 7 outside the target's 1..6"},
		{"another target width", string(config), weights, drafterOptions{TargetLayers: 10, TargetHidden: 256, TargetVocab: 1024}, ErrConfig, "target_hidden_size 128, but the target's hidden_size is 256"},
		{"another vocabulary", string(config), weights, drafterOptions{TargetLayers: 10, TargetHidden: 128, TargetVocab: 2048}, ErrConfig, "vocab_size 1024, but the target's is 2048"},
		{"not an EAGLE-3 drafter", strings.Replace(string(config), "Eagle3DeepseekV2ForCausalLM", "K3DSparkModel", 1), weights, k3TinyDrafter(nil), ErrConfig, `architectures ["K3DSparkModel"]`},
		{"two layers", strings.Replace(string(config), `"num_hidden_layers": 1`, `"num_hidden_layers": 2`, 1), weights, k3TinyDrafter(nil), ErrConfig, "only the one-layer"},
		{"pruned vocabulary", strings.Replace(string(config), `"draft_vocab_size": 1024`, `"draft_vocab_size": 512`, 1), weights, k3TinyDrafter(nil), ErrConfig, "d2t"},
		{"odd rope", strings.Replace(string(config), `"qk_rope_head_dim": 8`, `"qk_rope_head_dim": 7`, 1), weights, k3TinyDrafter(nil), ErrConfig, "odd"},
		{"not JSON", "{", weights, k3TinyDrafter(nil), ErrConfig, "config.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(tc.config), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "model.safetensors"), tc.weights, 0o644))
			_, err := openEagle3(t.Context(), dir, tc.opts)
			require.ErrorIs(t, err, tc.sentinel)
			require.ErrorContains(t, err, tc.says)
		})
	}
	_, err = openEagle3(t.Context(), t.TempDir(), k3TinyDrafter(nil))
	require.ErrorIs(t, err, ErrConfig)
}

// TestDrafterNaNRefused: a NaN weight is refused as the target's are.
func TestDrafterNaNRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	config, err := os.ReadFile(filepath.Join(tinyDrafterDir, "config.json"))
	require.NoError(t, err)
	weights, err := os.ReadFile(filepath.Join(tinyDrafterDir, "model.safetensors"))
	require.NoError(t, err)
	// The last tensor is lm_head: its final element becomes a BF16 NaN.
	weights[len(weights)-2], weights[len(weights)-1] = 0xc0, 0x7f
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), config, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "model.safetensors"), weights, 0o644))
	_, err = openEagle3(t.Context(), dir, k3TinyDrafter(nil))
	require.ErrorIs(t, err, ErrCheckpoint)
	require.ErrorContains(t, err, "lm_head.weight")
}

func refBackend(t *testing.T) kernels.Backend {
	be, err := kernels.ByName("ref")
	require.NoError(t, err)
	return be
}

// TestDrafterInTheBudget: a streamed model opened with the drafter plans
// for its resident bytes (experts.TestPlanBudgetDrafter: what they take out
// of the plan).
func TestDrafterInTheBudget(t *testing.T) {
	t.Parallel()
	d, err := openEagle3(t.Context(), tinyDrafterDir, k3TinyDrafter(nil))
	require.NoError(t, err)
	m, err := Open(t.Context(), filepath.Join("..", "testdata", "k3-tiny"), Options{Draft: Draft{src: d}, Stream: &StreamOptions{OverrideRAM: 64 << 30}})
	require.NoError(t, err)
	defer m.Close()
	require.Equal(t, d.residentBytes(), m.Plan().Draft)
}
