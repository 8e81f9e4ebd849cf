package engine

import (
	"encoding/binary"
	"math"
	"path/filepath"
	"testing"

	"github.com/deltafin/deltafin/kernels"
	"github.com/stretchr/testify/require"
)

// f32Matrix stores rows as an F32 kernels.Matrix, as a checkpoint would.
func f32Matrix(rows, cols int, v ...float32) kernels.Matrix {
	if len(v) != rows*cols {
		panic("f32Matrix: wrong element count")
	}
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return kernels.Matrix{DType: kernels.F32, Rows: rows, Cols: cols, Data: b}
}

func TestRouter(t *testing.T) {
	t.Parallel()
	logit := func(p float64) float32 { return float32(math.Log(p / (1 - p))) } // σ⁻¹
	base := config{Experts: 4, TopK: 2, NGroup: 1, TopKGrp: 1, Renormalize: true, RoutedScaling: 1}
	tests := []struct {
		name    string
		cfg     func(c *config)
		logits  []float32
		bias    []float32
		wantIDs []int
		wantW   []float32
	}{
		{"plain top-2, renormalised", nil,
			[]float32{logit(0.2), logit(0.6), logit(0.4), logit(0.1)}, []float32{0, 0, 0, 0},
			[]int{1, 2}, []float32{0.6, 0.4}},
		{"ties go to the lower id", nil,
			[]float32{logit(0.5), logit(0.5), logit(0.5), logit(0.5)}, []float32{0, 0, 0, 0},
			[]int{0, 1}, []float32{0.5, 0.5}},
		{"bias selects, weights stay uncorrected", nil,
			[]float32{logit(0.2), logit(0.6), logit(0.4), logit(0.1)}, []float32{0, 0, 0, 0.6},
			[]int{3, 1}, []float32{0.1 / 0.7, 0.6 / 0.7}},
		{"scaling factor", func(c *config) { c.RoutedScaling = 2.5 },
			[]float32{logit(0.2), logit(0.6), logit(0.4), logit(0.1)}, []float32{0, 0, 0, 0},
			[]int{1, 2}, []float32{1.5, 1}},
		{"no renormalisation", func(c *config) { c.Renormalize = false },
			[]float32{logit(0.2), logit(0.6), logit(0.4), logit(0.1)}, []float32{0, 0, 0, 0},
			[]int{1, 2}, []float32{0.6, 0.4}},
		{"group-limited: best group by its top-2 sum", func(c *config) { c.NGroup, c.TopKGrp = 2, 1 },
			// Group 0 = {0,1} sums 0.9+0.05, group 1 = {2,3} sums 0.5+0.5: group 1 wins
			// although expert 0 is the single best.
			[]float32{logit(0.9), logit(0.05), logit(0.5), logit(0.5)}, []float32{0, 0, 0, 0},
			[]int{2, 3}, []float32{0.5, 0.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			if tt.cfg != nil {
				tt.cfg(&c)
			}
			r := c.router(tt.logits, tt.bias)
			require.Equal(t, tt.wantIDs, r.ids)
			require.InDeltaSlice(t, tt.wantW, r.w, 1e-6)
		})
	}

	t.Run("one-ulp cutoff is kept", func(t *testing.T) {
		a := float32(0.3)
		b := math.Nextafter32(a, 1) // one ulp above
		c := config{Experts: 3, TopK: 1, NGroup: 1, TopKGrp: 1, Renormalize: true, RoutedScaling: 1}
		// Equal sigmoid inputs, bias differing by one ulp decides.
		r := c.router([]float32{0, 0, 0}, []float32{a, b, a})
		require.Equal(t, []int{1}, r.ids)
	})
}

func TestSiTU(t *testing.T) {
	t.Parallel()
	c, err := parseConfig([]byte(`{"model_type":"kimi_linear","vocab_size":8,"hidden_size":4,"num_hidden_layers":1,
		"intermediate_size":4,"num_attention_heads":1,"kv_lora_rank":2,"qk_nope_head_dim":2,"v_head_dim":2,
		"hidden_act":"situ","activation_situ_beta":4.0,"activation_situ_linear_beta":25.0}`))
	require.NoError(t, err)
	require.Equal(t, kernels.Activation{Kind: kernels.SiTU, Beta: 4, LinearBeta: 25}, c.Act)
	situ := func(g, u float64) float64 {
		return 4 * math.Tanh(g/4) / (1 + math.Exp(-g)) * 25 * math.Tanh(u/25)
	}
	for _, x := range [][2]float64{{0, 1}, {1, 1}, {-3, 2}, {10, 1}, {100, 100}, {-100, 5}, {0.5, -40}} {
		got := c.Act.Apply(float32(x[0]), float32(x[1]))
		require.InDelta(t, situ(x[0], x[1]), float64(got), 1e-5*max(1, math.Abs(situ(x[0], x[1]))), "SiTU(%v)", x)
	}
	// The gate's linear factor is capped at β = 4, the up branch at 25.
	require.InDelta(t, 4*25, float64(c.Act.Apply(1000, 1000)), 1e-4)
	// For small inputs SiTU approaches SiLU(g)·u.
	silu := kernels.Activation{Kind: kernels.SiLU}
	require.InDelta(t, float64(silu.Apply(0.01, 0.01)), float64(c.Act.Apply(0.01, 0.01)), 1e-8)
}

func TestAttnResMix(t *testing.T) {
	t.Parallel()
	w := attnResWeights{norm: []float32{1, 1}, proj: []float32{1, 0}}
	// One value: softmax over one entry is exactly 1, the mix is the value.
	dst := make([]float32, 2)
	v := []float32{3, -7}
	attnResMix(dst, [][]float32{v}, w.fused(), 1e-5)
	require.Equal(t, v, dst)

	// Two values: the keys are normalised, the mix is over raw values.
	a, b := []float32{2, 0}, []float32{0, 5} // keys ≈ [√2,0] and [0,√2]
	attnResMix(dst, [][]float32{a, b}, w.fused(), 0)
	sa, sb := math.Sqrt2, 0.0
	alpha := math.Exp(sa) / (math.Exp(sa) + math.Exp(sb))
	require.InDeltaSlice(t, []float32{float32(2 * alpha), float32(5 * (1 - alpha))}, dst, 1e-6)

	// The norm weight scales the key before the projection.
	w2 := attnResWeights{norm: []float32{0.5, 1}, proj: []float32{2, 0}}
	attnResMix(dst, [][]float32{a, b}, w2.fused(), 0)
	sa = 2 * 0.5 * math.Sqrt2
	alpha = math.Exp(sa) / (math.Exp(sa) + 1)
	require.InDeltaSlice(t, []float32{float32(2 * alpha), float32(5 * (1 - alpha))}, dst, 1e-6)
}

func TestRMSNorm(t *testing.T) {
	t.Parallel()
	x := []float32{1, 2, 3, 4}
	dst := make([]float32, 4)
	rmsNorm(dst, x, []float32{1, 1, 2, 0.5}, 1e-5)
	r := 1 / math.Sqrt((1+4+9+16)/4.0+1e-5)
	require.InDeltaSlice(t, []float32{float32(r), float32(2 * r), float32(6 * r), float32(2 * r)}, dst, 1e-6)
}

// TestMXFP4Dequant checks the e2m1 × e8m0 decoding of every code at several
// scales bit for bit, negative zero included, and the nibble order.
func TestMXFP4Dequant(t *testing.T) {
	t.Parallel()
	mags := []float64{0, 0.5, 1, 1.5, 2, 3, 4, 6}
	for _, s := range []uint8{1, 100, 119, 127, 128, 135, 254} {
		packed := make([]byte, 16) // one row of 32 elements: codes 0..15 twice
		for j := range packed {
			lo, hi := uint8(2*j%16), uint8((2*j+1)%16)
			packed[j] = lo | hi<<4
		}
		m := kernels.Matrix{DType: kernels.MXFP4, Rows: 1, Cols: 32, Data: packed, Scales: []byte{s}}
		require.NoError(t, m.Validate())
		row := make([]float32, 32)
		kernels.DecodeRow(row, m, 0)
		for c := 0; c < 32; c++ {
			code := c % 16
			want := math.Ldexp(mags[code&7], int(s)-127)
			if code&8 != 0 {
				want = -want
				if mags[code&7] == 0 {
					want = math.Copysign(0, -1)
				}
			}
			require.Equal(t, math.Float32bits(float32(want)), math.Float32bits(row[c]), "scale %d code %d", s, code)
		}
	}
}

// TestExpertView decodes a real routed expert of the K3 tiny checkpoint
// through the engine's view (one span, no copy) and compares it with a
// decoding written straight from the file's bytes.
func TestExpertView(t *testing.T) {
	t.Parallel()
	m, err := Open(t.Context(), filepath.Join("..", "testdata", "k3-tiny"), Options{})
	require.NoError(t, err)
	defer m.Close()
	const layer, e = 2, 7
	batch, err := m.experts.acquire(t.Context(), layer, []int{e}, nil)
	require.NoError(t, err)
	defer batch.release()
	x, err := batch.expert(t.Context(), 0)
	require.NoError(t, err)
	sp := m.ck.span(m.cfg, layer, e)
	require.Equal(t, int64(3*(64*32+64*2)), sp.n)
	raw := make([]byte, sp.n)
	require.NoError(t, sp.shard.src.ReadAt(t.Context(), raw, sp.off))

	e2m1 := []float32{0, 0.5, 1, 1.5, 2, 3, 4, 6}
	check := func(w kernels.Matrix, packedOff, scaleOff int) {
		row := make([]float32, w.Cols)
		for r := 0; r < w.Rows; r++ {
			kernels.DecodeRow(row, w, r)
			for c := 0; c < w.Cols; c++ {
				b := raw[packedOff+r*w.Cols/2+c/2]
				code := b & 15 // low nibble: even element
				if c%2 == 1 {
					code = b >> 4
				}
				v := e2m1[code&7]
				if code&8 != 0 {
					v = -v
				}
				want := v * float32(math.Ldexp(1, int(raw[scaleOff+r*w.Cols/32+c/32])-127))
				require.Equal(t, want, row[c], "row %d col %d", r, c)
			}
		}
	}
	const p, s = 64 * 32, 64 * 2 // packed and scale bytes of one matrix
	check(x.W1, 0, p)
	check(x.W2, p+s, 2*p+s)
	check(x.W3, 2*(p+s), 3*p+2*s)
}

// TestBF16Widening: every BF16 weight is widened exactly (its bits shifted
// into the top half of an fp32).
func TestBF16Widening(t *testing.T) {
	t.Parallel()
	m, err := Open(t.Context(), filepath.Join("..", "testdata", "k3-tiny"), Options{})
	require.NoError(t, err)
	defer m.Close()
	raw, ref, err := m.ck.read(t.Context(), "model.layers.1.post_attention_layernorm.weight")
	require.NoError(t, err)
	require.Equal(t, "BF16", ref.t.DType)
	for i, v := range m.w.layers[1].postNorm {
		require.Equal(t, uint32(binary.LittleEndian.Uint16(raw[2*i:]))<<16, math.Float32bits(v))
	}
	for _, h := range []uint16{0x0000, 0x8000, 0x3f80, 0xbf80, 0x7f80, 0xff80, 0x0001, 0x7f7f, 0x4049} {
		require.Equal(t, uint32(h)<<16, math.Float32bits(kernels.BF16ToF32(h)))
	}
}
