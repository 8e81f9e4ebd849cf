package kernels

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// counting is a real backend (the reference) that records which calls it ran.
type counting struct {
	Backend
	calls *[]int
}

func (c counting) MatMul(dst []float32, w Matrix, x []float32, n int) {
	*c.calls = append(*c.calls, n)
	c.Backend.MatMul(dst, w, x, n)
}

func (c counting) MatVec(dst []float32, w Matrix, x []float32) { c.MatMul(dst, w, x, 1) }

func (c counting) ExpertFFN(dst []float32, e Expert, act Activation, x []float32, n int) {
	*c.calls = append(*c.calls, -n)
	c.Backend.ExpertFFN(dst, e, act, x, n)
}

func TestSplitSendsPrefillAndDecodeApart(t *testing.T) {
	t.Parallel()
	var pre, dec []int
	s := Split(counting{Ref(), &pre}, counting{Ref(), &dec})
	require.Equal(t, "ref+ref", s.Name())
	rng := rand.New(rand.NewPCG(1, 2))
	w := randMatrix(rng, MXFP4, 4, 64)
	e := Expert{W1: randMatrix(rng, BF16, 3, 64), W2: randMatrix(rng, BF16, 64, 3), W3: randMatrix(rng, BF16, 3, 64)}
	x := randVec(rng, 5*64)
	for _, n := range []int{1, 5} {
		want, got := make([]float32, n*4), make([]float32, n*4)
		Ref().MatMul(want, w, x, n)
		s.MatMul(got, w, x, n)
		require.Equal(t, want, got)
		wantF, gotF := make([]float32, n*64), make([]float32, n*64)
		Ref().ExpertFFN(wantF, e, Activation{}, x, n)
		s.ExpertFFN(gotF, e, Activation{}, x, n)
		require.Equal(t, wantF, gotF)
	}
	s.MatVec(make([]float32, 4), w, x[:64])
	require.Equal(t, []int{5, -5}, pre)
	require.Equal(t, []int{1, -1, 1}, dec)
	require.Equal(t, 1, Threads(s))
}

// keeping is a GPU stand-in that keeps keyed weights (or not).
type keeping struct {
	counting
	keeps bool
}

func (k keeping) KeepsResident() bool { return k.keeps }

func TestAccelerateFollowsItsRule(t *testing.T) {
	t.Parallel()
	var gpu, cpu []int
	rule := AccelOptions{DecodeMinBytes: 256, ResidentMinPositions: 3, StreamedMinPositions: 5}
	s := Accelerate(keeping{counting{Ref(), &gpu}, true}, counting{Ref(), &cpu}, rule)
	rng := rand.New(rand.NewPCG(3, 4))
	big := randMatrix(rng, BF16, 4, 64) // 512 bytes
	small := randMatrix(rng, BF16, 1, 64)
	x := randVec(rng, 6*64)
	dst := make([]float32, 6*4)

	s.MatVec(dst, big, x)    // streamed bytes, one position: CPU
	s.MatMul(dst, big, x, 4) // streamed, below 5 positions: CPU
	s.MatMul(dst, big, x, 5) // streamed, 5 positions: GPU
	big.Key, small.Key = NewKey(), NewKey()
	require.NotEqual(t, big.Key, small.Key)
	s.MatVec(dst, big, x)      // resident and large enough: GPU
	s.MatVec(dst, small, x)    // resident but small: CPU
	s.MatMul(dst, small, x, 2) // resident, below 3 positions: CPU
	s.MatMul(dst, small, x, 3) // resident, 3 positions: GPU
	require.Equal(t, []int{5, 1, 3}, gpu)
	require.Equal(t, []int{1, 4, 1, 2}, cpu)

	gpu, cpu = nil, nil
	e := Expert{W1: randMatrix(rng, BF16, 3, 64), W2: randMatrix(rng, BF16, 64, 3), W3: randMatrix(rng, BF16, 3, 64)}
	out := make([]float32, 6*64)
	s.ExpertFFN(out, e, Activation{}, x, 1) // no keys: CPU
	e.W1.Key, e.W2.Key = NewKey(), NewKey()
	s.ExpertFFN(out, e, Activation{}, x, 1) // one matrix streamed: CPU
	s.ExpertFFN(out, e, Activation{}, x, 4) // one streamed, 4 positions: CPU
	e.W3.Key = NewKey()
	s.ExpertFFN(out, e, Activation{}, x, 1) // all resident, 1152 bytes: GPU
	s.ExpertFFN(out, e, Activation{}, x, 3) // all resident, 3 positions: GPU
	require.Equal(t, []int{-1, -3}, gpu)
	require.Equal(t, []int{-1, -1, -4}, cpu)

	// A GPU that keeps nothing: keyed weights count as streamed.
	gpu, cpu = nil, nil
	s = Accelerate(keeping{counting{Ref(), &gpu}, false}, counting{Ref(), &cpu}, rule)
	s.MatVec(dst, big, x)
	s.MatMul(dst, big, x, 3)
	s.MatMul(dst, big, x, 5)
	require.Equal(t, []int{5}, gpu)
	require.Equal(t, []int{1, 3}, cpu)
}

func TestAutoTakesAnAcceleratorThatOpens(t *testing.T) {
	var calls []int
	acc := counting{Ref(), &calls}
	isolateAccelerators(t)

	RegisterAccelerator("none", func() (Backend, error) { return nil, ErrUnknownBackend })
	b, err := Open("auto", 1)
	require.NoError(t, err)
	require.Equal(t, Default().Name(), b.Name(), "no accelerator opens: the CPU")

	RegisterAccelerator("testgpu", func() (Backend, error) { return acc, nil })
	b, err = Open("auto", 1)
	require.NoError(t, err)
	require.Equal(t, "ref+"+Default().Name(), b.Name())
	rng := rand.New(rand.NewPCG(5, 6))
	w := randMatrix(rng, F32, 2, 32)
	b.MatMul(make([]float32, 6), w, randVec(rng, 3*32), 3)
	require.Equal(t, []int{}, append([]int{}, calls...), "3 positions over streamed weights: the CPU")
	long := DefaultAccelOptions().StreamedMinPositions
	b.MatMul(make([]float32, 2*long), w, randVec(rng, long*32), long)
	require.Equal(t, []int{}, append([]int{}, calls...), "a narrow matrix moves more than it computes: the CPU, however long the prompt")
	wide := randMatrix(rng, BF16, 1024, 1024) // 256 FLOPs per byte crossing
	b.MatMul(make([]float32, 1024*long), wide, randVec(rng, long*1024), long)
	require.Equal(t, []int{long}, calls, "a long prefill over a wide matrix runs on the accelerator")
	cpu, err := Open("cpu", 0)
	require.NoError(t, err)
	require.Equal(t, Default(), cpu)
	require.Panics(t, func() { RegisterAccelerator("testgpu", nil) })
}

func TestCheckOpensNoAccelerator(t *testing.T) {
	isolateAccelerators(t)
	opened := false
	RegisterAccelerator("slowgpu", func() (Backend, error) { opened = true; return Ref(), nil })
	for _, name := range []string{"", "auto", "cpu", "ref", "gpu", Default().Name()} {
		require.NoError(t, Check(name), name)
	}
	require.False(t, opened, "validating a name must not open the GPU")
	require.ErrorIs(t, Check("nope"), ErrUnknownBackend)
}

// isolateAccelerators empties the accelerator registry for one test.
func isolateAccelerators(t *testing.T) {
	regMu.Lock()
	saved, savedNames := accels, accelNames
	accels, accelNames = map[string]*registered{}, nil
	regMu.Unlock()
	t.Cleanup(func() {
		regMu.Lock()
		accels, accelNames = saved, savedNames
		regMu.Unlock()
	})
}

// batching runs ExpertsFFN's experts itself and counts the calls.
type batching struct {
	Backend
	calls *int
}

func (b batching) expertsFFN(dst [][]float32, es []Expert, act Activation, x [][]float32) bool {
	*b.calls++
	for i, e := range es {
		b.Backend.ExpertFFN(dst[i], e, act, x[i], 1)
	}
	return true
}

// A layer's experts reach the decode backend as one call when the rule
// sends them all there, and go one by one when it sends any to the GPU.
func TestSplitPassesALayersExpertsOnAsOneCall(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	es := make([]Expert, 3)
	dst, x := make([][]float32, 3), make([][]float32, 3)
	for i := range es {
		es[i] = Expert{W1: randMatrix(rng, BF16, 3, 64), W2: randMatrix(rng, BF16, 64, 3), W3: randMatrix(rng, BF16, 3, 64)}
		dst[i], x[i] = make([]float32, 64), randVec(rng, 64)
	}
	var gpu []int
	batches := 0
	for _, s := range []Backend{
		Split(counting{Ref(), &gpu}, batching{Ref(), &batches}),
		Accelerate(keeping{counting{Ref(), &gpu}, true}, batching{Ref(), &batches}, DefaultAccelOptions()),
	} {
		ExpertsFFN(s, dst, es, Activation{}, x)
	}
	require.Equal(t, 2, batches)
	require.Empty(t, gpu)

	every := DefaultAccelOptions()
	every.DecodeMinBytes = 0
	for i := range es {
		es[i].W1.Key, es[i].W2.Key, es[i].W3.Key = NewKey(), NewKey(), NewKey()
	}
	ExpertsFFN(Accelerate(keeping{counting{Ref(), &gpu}, true}, batching{Ref(), &batches}, every), dst, es, Activation{}, x)
	require.Equal(t, 2, batches, "resident experts the rule sends to the GPU go one by one")
	require.Equal(t, []int{-1, -1, -1}, gpu)
}

// attending records the rows of each attention call it runs.
type attending struct {
	Backend
	calls *[]int
}

func (a attending) Attention(ctx context.Context, at Attn) error {
	*a.calls = append(*a.calls, at.T)
	return attentionGo(ctx, at, 1)
}

// Accelerate's rule sends a prompt's attention to the GPU from
// StreamedMinPositions rows, only for heads of AttnMinHeadWidth or wider,
// and only where T·(Past+T) reaches AttnMinPositions²; a decode token's
// stays on the CPU.
func TestAccelerateAttentionRule(t *testing.T) {
	var gpu []int
	b := Accelerate(attending{Ref(), &gpu}, Ref(), AccelOptions{StreamedMinPositions: 4, AttnMinHeadWidth: 64, AttnMinPositions: 8})
	run := func(T, past, qk, dv int) {
		n := past + T
		a := Attn{T: T, Past: past, Heads: 1, QK: qk, DV: dv, Scale: 1,
			Q: make([]float32, T*qk), K: make([]float32, n*qk), V: make([]float32, n*dv), Dst: make([]float32, T*dv)}
		require.NoError(t, Attention(t.Context(), b, a))
	}
	run(3, 100, 48, 32) // too few rows
	run(9, 0, 24, 16)   // too narrow
	run(6, 0, 48, 16)   // 64 wide, but 36 < 64: the CPU
	run(8, 0, 48, 16)   // 64 = 8²: the GPU
	run(5, 9, 192, 128) // 5·14 = 70: the GPU
	run(4, 0, 192, 128) // 16: the CPU
	require.Equal(t, []int{8, 5}, gpu)
}

// TestAccelerateWeighsIntensity: under MinIntensity a batch whose
// activations would cross the bus for too little arithmetic stays on the
// CPU, resident weights or not, however many positions, unless its matrix
// holds IntensityWeights or more; K3's shapes pass DefaultAccelOptions' threshold
// and k3-tiny's do not.
func TestAccelerateWeighsIntensity(t *testing.T) {
	t.Parallel()
	shape := func(rows, cols int) Matrix { return Matrix{DType: BF16, Rows: rows, Cols: cols} }
	min := float64(DefaultAccelOptions().MinIntensity)
	for _, m := range []Matrix{shape(12288, 7168), shape(1536, 7168), shape(7168, 1536), shape(3072, 3584)} {
		require.GreaterOrEqual(t, matIntensity(m), min, "K3 %d×%d", m.Rows, m.Cols)
	}
	require.GreaterOrEqual(t, expertIntensity(Expert{W1: shape(3072, 7168)}), min, "K3's routed expert")
	for _, m := range []Matrix{shape(128, 256), shape(256, 128), shape(48, 128)} {
		require.Less(t, matIntensity(m), min, "k3-tiny %d×%d", m.Rows, m.Cols)
	}
	require.Less(t, expertIntensity(Expert{W1: shape(64, 128)}), min, "k3-tiny's routed expert")

	var gpu, cpu []int
	rule := AccelOptions{ResidentMinPositions: 3, StreamedMinPositions: 5, MinIntensity: 20}
	s := Accelerate(keeping{counting{Ref(), &gpu}, true}, counting{Ref(), &cpu}, rule)
	rng := rand.New(rand.NewPCG(7, 8))
	narrow, wide := randMatrix(rng, BF16, 8, 64), randMatrix(rng, BF16, 64, 64) // 3.6 and 16 FLOPs a byte
	narrow.Key = NewKey()
	x := randVec(rng, 64*64)
	s.MatMul(make([]float32, 64*8), narrow, x, 64) // resident, 64 positions, narrow: CPU
	rule.MinIntensity = 10
	s = Accelerate(keeping{counting{Ref(), &gpu}, true}, counting{Ref(), &cpu}, rule)
	s.MatMul(make([]float32, 64*64), wide, x, 64)  // streamed, 64 positions, wide enough: GPU
	s.MatMul(make([]float32, 64*8), narrow, x, 64) // still too narrow: CPU
	require.Equal(t, []int{64}, gpu)
	require.Equal(t, []int{64, 64}, cpu)

	// IntensityWeights: a narrow matrix of as many weights goes all the
	// same.
	rule.IntensityWeights = 8 * 64
	s = Accelerate(keeping{counting{Ref(), &gpu}, true}, counting{Ref(), &cpu}, rule)
	s.MatMul(make([]float32, 64*8), narrow, x, 64) // exactly as many: GPU
	rule.IntensityWeights++
	s = Accelerate(keeping{counting{Ref(), &gpu}, true}, counting{Ref(), &cpu}, rule)
	s.MatMul(make([]float32, 64*8), narrow, x, 64) // one short: CPU
	require.Equal(t, []int{64, 64}, gpu)
	require.Equal(t, []int{64, 64, 64}, cpu)
	// By DefaultAccelOptions' bound, K3's KDA decay-gate and β
	// projections go, k3-tiny's narrow products do not.
	big := DefaultAccelOptions().IntensityWeights
	for _, m := range []Matrix{shape(128, 7168), shape(12288, 128), shape(96, 7168)} {
		require.Less(t, matIntensity(m), min, "K3 %d×%d", m.Rows, m.Cols)
		require.GreaterOrEqual(t, weights([]Matrix{m}), big, "K3 %d×%d", m.Rows, m.Cols)
	}
	for _, m := range []Matrix{shape(128, 256), shape(256, 128), shape(48, 128)} {
		require.Less(t, weights([]Matrix{m}), big, "k3-tiny %d×%d", m.Rows, m.Cols)
	}
}

// TestRoutesCountBatchedCalls: a split backend counts its batched calls by
// side and kind (kernels.Routes, what bench slice reports), and leaves out
// single positions; a CPU backend has none.
func TestRoutesCountBatchedCalls(t *testing.T) {
	t.Parallel()
	s := Split(Ref(), Ref())
	rng := rand.New(rand.NewPCG(3, 4))
	w := randMatrix(rng, BF16, 4, 64)
	x, dst := randVec(rng, 5*64), make([]float32, 5*4)
	before, ok := Routes(s)
	require.True(t, ok)
	s.MatMul(dst, w, x, 5)
	s.MatMul(dst, w, x, 5)
	s.MatVec(dst, w, x)
	e := Expert{W1: randMatrix(rng, BF16, 3, 64), W2: randMatrix(rng, BF16, 64, 3), W3: randMatrix(rng, BF16, 3, 64)}
	s.ExpertFFN(make([]float32, 5*64), e, Activation{Kind: SiLU}, x, 5)
	after, _ := Routes(s)
	d := after.Sub(before)
	require.Equal(t, int64(2), d.GPU.MatMul.Calls, "Split sends batches to its prefill side")
	require.Equal(t, int64(1), d.GPU.Experts.Calls)
	require.Equal(t, int64(10), d.GPU.MatMul.Positions, "each call's positions are counted")
	require.Equal(t, int64(5), d.GPU.Experts.Positions)
	require.Zero(t, d.CPU.MatMul.Calls, "the single position is not counted")
	require.Greater(t, d.GPU.Seconds(), 0.0)
	_, ok = Routes(Ref())
	require.False(t, ok)
}

// TestSplitGemmOnItsCPU: a split backend runs MatMulF32 (the chunked delta
// rule's products) with its decode side's kernel, bit for bit, not with the
// scalar GemmRef it once fell through to.
func TestSplitGemmOnItsCPU(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	const m, k, n = 19, 33, 21
	a, b := randVec(rng, m*k), randVec(rng, k*n)
	run := func(be Backend) []float32 {
		c := make([]float32, m*n)
		MatMulF32(be, Gemm{C: c, LDC: n, A: a, LDA: k, B: b, LDB: n, M: m, K: k, N: n})
		return c
	}
	cpu := Default()
	for _, s := range []Backend{Split(Ref(), cpu), Accelerate(Ref(), cpu, DefaultAccelOptions())} {
		_, ok := s.(Gemmer)
		require.True(t, ok, "%s has no Gemm", s.Name())
		require.Equal(t, run(cpu), run(s), s.Name())
	}
}

// TestDeltaRuleOnTheCPU: a split backend runs the delta rule with its
// decode side's kernel, bit for bit, and a backend with no kernel of its
// own (a GPU's, here a wrapper that hides the reference's) gets this CPU's
// fastest one rather than the scalar twin.
func TestDeltaRuleOnTheCPU(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	const T, d = 5, 40
	q, k, v, dec := randVec(rng, T*d), randVec(rng, T*d), randVec(rng, T*d), randVec(rng, T*d)
	for i := range dec {
		dec[i] = 0.5 + dec[i]*dec[i]/(1+dec[i]*dec[i])/2
	}
	beta, s0 := randVec(rng, T), randVec(rng, d*d)
	run := func(be Backend) []float32 {
		o, s := make([]float32, T*d), make([]float32, d*d)
		RunDeltaRule(be, DeltaRule{O: o, Q: q, K: k, V: v, Decay: dec, Beta: beta, S0: s0, S: s, T: T, D: d, Stride: d, DecayStride: d, BetaStride: 1})
		return append(o, s...)
	}
	requireOnTheCPU(t, run)
}

// TestShortConvOnTheCPU: a split backend runs the short conv with its
// decode side's kernel, bit for bit, and a backend with no kernel of its
// own gets this CPU's fastest one.
func TestShortConvOnTheCPU(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(9, 10))
	const T, P, K = 6, 45, 4
	x, w, st := randVec(rng, T*P), randVec(rng, P*K), randVec(rng, P*(K-1))
	run := func(be Backend) []float32 {
		y, s := make([]float32, T*P), append([]float32(nil), st...)
		RunShortConv(be, ShortConv{Y: y, X: x, W: w, State: s, T: T, P: P, K: K, C0: 0, C1: P})
		return append(y, s...)
	}
	requireOnTheCPU(t, run)
}

// requireOnTheCPU: run, a CPU-only kernel over a backend, gives the bits of
// this CPU's fastest kernel through a split (its decode side, not its
// prefill side) and through a backend with no kernel of its own.
func requireOnTheCPU(t *testing.T, run func(Backend) []float32) {
	t.Helper()
	cpu := Default()
	for _, s := range []Backend{Split(Ref(), cpu), Accelerate(Ref(), cpu, DefaultAccelOptions())} {
		require.Equal(t, run(cpu), run(s), s.Name())
	}
	require.Equal(t, run(Ref()), run(Split(cpu, Ref())), "the decode side, not the prefill")
	var calls []int
	require.Equal(t, run(cpu), run(counting{Ref(), &calls}), "a backend without a kernel")
}

// sharing is a GPU stand-in that runs products over one input as one call
// and records how many each call took.
type sharing struct {
	keeping
	shared *[]int
}

func (s sharing) MatMulShared(dst [][]float32, ws []Matrix, x []float32, n int) {
	*s.shared = append(*s.shared, len(ws))
	for j, w := range ws {
		s.keeping.MatMul(dst[j], w, x, n)
	}
}

// Products over one input: those the rule gives the GPU reach it as one
// call, the rest run on the CPU, each with MatMul's bits; a backend that
// cannot share runs them one by one.
func TestMatMulSharedGoesToTheGPUAsOneCall(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(9, 10))
	wide1, narrow, wide2 := randMatrix(rng, BF16, 64, 64), randMatrix(rng, BF16, 8, 64), randMatrix(rng, I8, 48, 64)
	wide1.Key, narrow.Key, wide2.Key = NewKey(), NewKey(), NewKey()
	ws := []Matrix{wide1, narrow, wide2}
	const n = 20
	x := randVec(rng, n*64)
	check := func(b Backend) {
		t.Helper()
		dst := make([][]float32, len(ws))
		for j, w := range ws {
			dst[j] = make([]float32, n*w.Rows)
		}
		MatMulShared(b, dst, ws, x, n)
		for j, w := range ws {
			want := make([]float32, n*w.Rows)
			Ref().MatMul(want, w, x, n)
			require.Equal(t, want, dst[j], "product %d", j)
		}
	}
	var gpu, cpu, shared []int
	rule := AccelOptions{ResidentMinPositions: 3, StreamedMinPositions: 5, MinIntensity: 10} // narrow: 3.6 FLOPs a byte
	check(Accelerate(sharing{keeping{counting{Ref(), &gpu}, true}, &shared}, counting{Ref(), &cpu}, rule))
	require.Equal(t, []int{2}, shared, "the two wide products in one call")
	require.Equal(t, []int{n, n}, gpu)
	require.Equal(t, []int{n}, cpu, "the narrow one on the CPU")

	var one []int
	check(counting{Ref(), &one})
	require.Equal(t, []int{n, n, n}, one, "one by one elsewhere")
	require.Panics(t, func() { MatMulShared(Ref(), make([][]float32, 2), ws, x, n) }, "an output a product")
}

// latentAttending records the rows of each latent attention it runs whole;
// it keeps keyed weights, as a GPU does.
type latentAttending struct {
	Backend
	calls *[]int
}

func (latentAttending) KeepsResident() bool { return true }

func (a latentAttending) LatentAttention(ctx context.Context, la LatentAttn) error {
	*a.calls = append(*a.calls, la.T)
	return LatentSteps(ctx, a.Backend, la)
}

// Accelerate's rule sends a prompt's latent attention to the GPU whole
// where both its products would go there, from StreamedMinPositions rows,
// for heads of AttnMinHeadWidth or wider, where T·(Past+T) reaches
// LatentMinPositions² (AttnMinPositions² when unset); otherwise its steps
// go where the rule sends each.
func TestAccelerateLatentRule(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(4, 4))
	run := func(b Backend, T, past, nope, dv int, keyed bool) {
		const heads, rope, qlora, r = 1, 8, 16, 12
		qk, n := nope+rope, past+T
		vec := func(k int) []float32 {
			v := make([]float32, k)
			for i := range v {
				v[i] = float32(rng.NormFloat64())
			}
			return v
		}
		mat := func(rows, cols int) Matrix {
			m := Matrix{DType: F32, Rows: rows, Cols: cols, Data: make([]byte, 4*rows*cols)}
			if keyed {
				m.Key = NewKey()
			}
			return m
		}
		a := LatentAttn{T: T, Past: past, Heads: heads, NoPE: nope, RoPE: rope, DV: dv, Scale: 1,
			WQ: mat(heads*qk, qlora), QIn: vec(T * qlora), WKV: mat(heads*(nope+dv), r), Lat: vec(T * r),
			KPE: vec(T * (r + rope)), KPEStride: r + rope, KPEOff: r,
			K: vec(n * heads * qk), V: vec(n * heads * dv), KV: make([]float32, T*heads*(nope+dv)), Dst: make([]float32, T*dv)}
		require.NoError(t, LatentAttention(t.Context(), b, a))
	}
	var whole []int
	gpu := latentAttending{Ref(), &whole}
	b := Accelerate(gpu, Ref(), AccelOptions{StreamedMinPositions: 4, AttnMinHeadWidth: 64, AttnMinPositions: 16, LatentMinPositions: 8})
	run(b, 3, 100, 40, 32, true) // too few rows
	run(b, 9, 0, 8, 16, true)    // too narrow
	run(b, 6, 0, 40, 16, true)   // 64 wide, but 36 < 64: the steps
	run(b, 8, 0, 40, 16, true)   // 64 = 8²: whole
	run(b, 5, 9, 184, 128, true) // 5·14 = 70: whole
	run(b, 8, 0, 40, 16, false)  // streamed products go from 4 rows too
	require.Equal(t, []int{8, 5, 8}, whole)

	whole = nil
	b = Accelerate(gpu, Ref(), AccelOptions{StreamedMinPositions: 4, ResidentMinPositions: 10, AttnMinPositions: 9})
	run(b, 8, 0, 40, 16, true)  // the products stay on the CPU under 10 rows
	run(b, 10, 0, 40, 16, true) // no LatentMinPositions: AttnMinPositions' 9² ≤ 100
	require.Equal(t, []int{10}, whole)
}
