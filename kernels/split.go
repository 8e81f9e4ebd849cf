package kernels

// Split returns a backend that runs batched products (prefill: MatMul and
// ExpertFFN with n > 1) on prefill and single positions (decode) on decode.
// Its name is "PREFILL+DECODE". It is what "gpu" names: a GPU, software or
// not, for prefill and the CPU for decode.
func Split(prefill, decode Backend) Backend {
	return split{prefill: prefill, decode: decode, meter: &routeMeter{}}
}

// AccelOptions is the rule Accelerate follows: where a product goes to the
// GPU. A GPU call has a fixed cost (a submission and a wait), weights that
// are not on the device cross the bus first, and the CPU's batched product
// slows down in proportion to the positions while the GPU's does not.
type AccelOptions struct {
	// DecodeMinBytes: a single position over resident weights runs on the
	// GPU from this many bytes of weights (0: every size).
	DecodeMinBytes int
	// ResidentMinPositions: a batch over resident weights runs on the GPU
	// from this many positions.
	ResidentMinPositions int
	// StreamedMinPositions: a batch over weights the GPU must first
	// receive (streamed experts) runs there from this many positions, and
	// so does a prompt's attention (its cache crosses the bus every call).
	StreamedMinPositions int
	// AttnMinHeadWidth: attention runs on the GPU only for heads at least
	// this wide (QK + DV; 0: any width). Narrow heads give each of the
	// shader's threads a few columns between its barriers, and their
	// arithmetic is too little to pay for the cache's crossing.
	AttnMinHeadWidth int
	// AttnMinPositions: a prompt's attention runs on the GPU only where
	// its new positions times the keys the last of them sees, T·(Past+T),
	// reach AttnMinPositions² (0: no bound): a fresh prompt from
	// AttnMinPositions tokens, a short turn after a long conversation
	// sooner. Below it the copies of q, k and v and the call's fixed cost
	// outweigh the shaders.
	AttnMinPositions int
	// LatentMinPositions is AttnMinPositions for a prompt's latent
	// attention as one call (LatentAttention: the queries, keys and values
	// made on the device, so only the latents and the cache cross); 0:
	// AttnMinPositions. Below it the steps go where the rule sends each.
	LatentMinPositions int
	// MinIntensity: a batch runs on the GPU only where each byte of
	// activations that crosses the bus (its fp32 input and output rows,
	// which cross every call, resident weights or not) carries at least
	// this many FLOPs of the product: rows·cols / (2·(rows+cols)) for a
	// matrix, 3·inter / 4 for a routed expert (0: any). A narrow model's
	// products move more than they compute.
	MinIntensity int
	// IntensityWeights: MinIntensity binds only a batch over fewer weights
	// than this (rows·cols over its matrices; 0: every batch). A large
	// matrix of low intensity is one the cores run far below their peak
	// while its activations cross the bus in less time; a small one's
	// call is mostly the GPU's fixed cost.
	IntensityWeights int
	// ExpertGPUFixed and ExpertGPUSpeedup share a prompt's experts between
	// the two sides (PlanExperts): a GPU expert call costs as much as
	// ExpertGPUFixed positions of the CPU's expert FFN plus its positions
	// at ExpertGPUSpeedup times the CPU's rate. 0 speedup: every expert the
	// rule allows goes to the GPU.
	ExpertGPUFixed   float64
	ExpertGPUSpeedup float64
	// ExpertMinPositions, when set, replaces StreamedMinPositions for the
	// experts PlanExperts shares: a GPU's share of a group runs as one
	// call (kernels.ExpertGroupFFN), where an expert pays little more than
	// its weights' crossing, and the plan's cost model, not a threshold,
	// decides whether the smaller ones go.
	ExpertMinPositions int
}

// DefaultAccelOptions is the rule "auto" uses, from `deltafin bench kernels`
// on the device machine (an NVIDIA H200 through Vulkan beside 16 AVX-512
// cores reading 108 GB/s, where a GPU call costs about 0.2 ms and weights
// cross the bus at about 3.5 GB/s; kernels/README.md has the figures):
//   - DecodeMinBytes 32 MiB (176 MB: GPU 113-285 GB/s against the CPU's
//     104-108; 22 MB: 55-90 against about 100);
//   - ResidentMinPositions 16 (8: a tie; 64: 30-32 GB/s of weights against
//     the CPU's 4.6);
//   - StreamedMinPositions 96 (the GPU's 3.4-3.8 GB/s against the CPU's 32
//     at 8 positions and 4.6 at 64; with issue 33's tiles and DMA copies,
//     BF16 12288×7168 streamed: GPU 0.81-0.82 TFLOP/s against the CPU's
//     0.92 at 64 positions, 3.0-3.2 against about 1.2 at 256; the MXFP4
//     expert FFN at 64: GPU 0.54-0.55, CPU 0.90);
//   - AttnMinHeadWidth 128 (K3's 192/128 head at 256 / 1,024 / 4,096
//     positions: GPU 0.24 / 1.1 / 2.9 TFLOP/s against the CPU's 0.17 /
//     0.60 / 2.1; k3-tiny's 24/16 heads: a 16,384-token prefill took 8.6 s
//     with its attention on the GPU against 7.3 s on the CPU alone);
//   - AttnMinPositions 512 (4 Dec 2026, K3's 96 heads, one lease: GPU
//     555-607 GFLOP/s at 256 positions against the CPU's 655, 2.2-2.4
//     TFLOP/s at 1,024 against 0.97; at 256 the call's copies and host
//     work were 95% of it, its shaders running at 10.7 TFLOP/s);
//   - LatentMinPositions 256 (7 Dec 2026, an H100, one lease, K3's MLA
//     at 256 positions: q_b, kv_b and the attention as one call 3.59-3.83
//     TFLOP/s against 1.59-1.73 for the steps under this rule, the
//     attention on the CPU; fewer positions were not measured);
//   - MinIntensity 256 (k3-tiny, attention on the CPU: its 128×256
//     products, 43 FLOPs a byte, made a 1,024-token prefill 0.45 s against
//     the CPU's 0.40 and a 16,384-token one 8.5 s against 7.3; K3's
//     narrowest matrix, 1536×7168, has 632, its routed experts 2,304),
//     for matrices under IntensityWeights 2^19 (7 Dec 2026: K3's KDA
//     decay-gate and β projections, 128×7168, 12288×128 and 96×7168, 47-63
//     FLOPs a byte, stayed on the cores, 0.7-1.0 s of a 16,384-token slice
//     prompt with the GPU idle, 57 calls, where the GPU takes them in
//     about 0.1 s: the prompt took 9.12 s against 9.83 in one H100 lease;
//     they hold 0.7-1.6 M weights each, k3-tiny's at most 33 K);
//   - ExpertGPUSpeedup 7 (7 Dec 2026, an H100, the tiled and pipelined
//     group calls): 3.4, 5 and 7 in one lease of the K3 slice's prompts
//     (`bench slice --prefill`, kernels/README.md): 16,384 tokens 13.09,
//     11.64 and 11.06 s, 4,096 with the experts cached 3.41, 3.20 and
//     2.93 s; at 7 both sides' experts end together (16,384 tokens: the
//     GPU's 3.19 s, the cores' 3.14, where 3.4 left them 3.02 and 5.44);
//   - ExpertGPUFixed 14, ExpertMinPositions 16 (4 Dec 2026): grouped
//     (kernels.ExpertGroupFFN), a GPU expert pays about its weights'
//     crossing, 1.3 ms or 14 of the CPU's positions, where one call each
//     paid 2.1 ms more; against 100 and the 96-position threshold, a
//     4,096-token slice prompt took 6.19 against 6.60 s in one lease, the
//     CPU's share of its experts 1.99 s against 3.05 (the GPU's 2.18
//     against 1.68).
func DefaultAccelOptions() AccelOptions {
	return AccelOptions{DecodeMinBytes: 32 << 20, ResidentMinPositions: 16, StreamedMinPositions: 96, AttnMinHeadWidth: 128,
		AttnMinPositions: 512, LatentMinPositions: 256, MinIntensity: 256, IntensityWeights: 1 << 19, ExpertGPUFixed: 14, ExpertGPUSpeedup: 7, ExpertMinPositions: 16}
}

// WithBeside returns be with beside as the CPU it runs experts on while its
// GPU runs others of the group (OnCPUBesideGPU): the CPU backend with a
// thread or two fewer. be unchanged when it is not Accelerate's.
func WithBeside(be, beside Backend) Backend {
	if s, ok := be.(split); ok && s.rule != nil {
		s.beside = beside
		return s
	}
	return be
}

// BesideThreads is the threads WithBeside's CPU keeps of threads: one in
// eight left to feed the GPU (at least one; none below three).
func BesideThreads(threads int) int {
	if threads < 3 {
		return threads
	}
	return threads - max(1, threads/8)
}

// matIntensity and expertIntensity are a product's FLOPs per byte of the
// activations that cross the bus (AccelOptions.MinIntensity).
func matIntensity(w Matrix) float64 {
	return float64(w.Rows) * float64(w.Cols) / float64(2*(w.Rows+w.Cols))
}

func expertIntensity(e Expert) float64 { return 0.75 * float64(e.W1.Rows) }

// weights is how many weights mats hold.
func weights(mats []Matrix) int {
	n := 0
	for _, m := range mats {
		n += m.Rows * m.Cols
	}
	return n
}

// Accelerate returns the backend "auto" picks on a machine with a hardware
// GPU (with DefaultAccelOptions): products go to gpu where it wins by the
// rule opt, the rest to cpu.
// Resident weights are those with a Matrix.Key (the engine's pinned spine
// and in-RAM experts), which the GPU keeps in its memory; streamed experts
// arrive in host memory once per token and mostly stay on the CPU.
// A GPU backend that does not keep keyed weights (a budget of zero, as on
// unified memory, where a copy would double the pinned spine in RAM) gets
// every product as streamed.
func Accelerate(gpu, cpu Backend, opt AccelOptions) Backend {
	keeps := false
	if k, ok := gpu.(interface{ KeepsResident() bool }); ok {
		keeps = k.KeepsResident()
	}
	return split{prefill: gpu, decode: cpu, rule: &opt, keeps: keeps, meter: &routeMeter{}}
}

type split struct {
	prefill, decode Backend
	// beside: the decode side with fewer threads, for the CPU's experts
	// while the GPU runs others (OnCPUBesideGPU); nil: decode.
	beside Backend
	// rule: Accelerate's rule; nil: every batch to prefill (Split).
	rule *AccelOptions
	// keeps: the prefill backend keeps keyed weights in its memory.
	keeps bool
	// meter counts the batched calls on each side (Routes).
	meter *routeMeter
}

func (s split) Name() string { return s.prefill.Name() + "+" + s.decode.Name() }

// onGPU reports whether a product over mats for n positions, of the given
// intensity (FLOPs per byte of activations crossing), goes to the prefill
// (GPU) backend.
func (s split) onGPU(n int, intensity float64, mats ...Matrix) bool {
	if s.rule == nil {
		return n > 1
	}
	if n > 1 && intensity < float64(s.rule.MinIntensity) && (s.rule.IntensityWeights <= 0 || weights(mats) < s.rule.IntensityWeights) {
		return false
	}
	bytes, resident := 0, s.keeps
	for _, m := range mats {
		resident = resident && m.Key != 0
		bytes += len(m.Data) + len(m.Scales)
	}
	switch {
	case !resident:
		return n >= s.rule.StreamedMinPositions
	case n == 1:
		return bytes >= s.rule.DecodeMinBytes
	}
	return n >= s.rule.ResidentMinPositions
}

func (s split) MatVec(dst []float32, w Matrix, x []float32) { s.MatMul(dst, w, x, 1) }

func (s split) MatMul(dst []float32, w Matrix, x []float32, n int) {
	be, gpu := s.decode, s.onGPU(n, matIntensity(w), w)
	if gpu {
		be = s.prefill
	}
	if n > 1 {
		defer s.meter.time(gpu, kindMatMul, n)()
	}
	be.MatMul(dst, w, x, n)
}

// MatMulShared sends the products the rule gives the GPU there as one
// call (MatMulShared on the prefill backend: their input crosses once) and
// runs the rest on the CPU, each as MatMul would.
func (s split) MatMulShared(dst [][]float32, ws []Matrix, x []float32, n int) {
	var gd [][]float32
	var gw []Matrix
	var cpu []int
	for j, w := range ws {
		if s.onGPU(n, matIntensity(w), w) {
			gd, gw = append(gd, dst[j]), append(gw, w)
		} else {
			cpu = append(cpu, j)
		}
	}
	if len(gw) > 0 {
		done := func() {}
		if n > 1 {
			done = s.meter.timeCalls(true, kindMatMul, len(gw), len(gw)*n)
		}
		MatMulShared(s.prefill, gd, gw, x, n)
		done()
	}
	for _, j := range cpu {
		s.MatMul(dst[j], ws[j], x, n)
	}
}

func (s split) ExpertFFN(dst []float32, e Expert, act Activation, x []float32, n int) {
	be, gpu := s.decode, s.onGPU(n, expertIntensity(e), e.W1, e.W2, e.W3)
	if gpu {
		be = s.prefill
	}
	if n > 1 {
		defer s.meter.time(gpu, kindExperts, n)()
	}
	be.ExpertFFN(dst, e, act, x, n)
}

// Gemm runs on the decode side (the CPU): the chunked delta rule's
// products are a few dozen rows each, far below a GPU call's cost. (Before
// this, a split backend fell through MatMulF32 to GemmRef, the scalar
// twin: "auto" with a GPU ran every chunked KDA product in plain Go.)
func (s split) Gemm(g Gemm) { MatMulF32(s.decode, g) }

// Preloads reports whether Preload can do anything on be: a split
// backend whose GPU keeps keyed weights.
func Preloads(be Backend) bool {
	s, ok := be.(split)
	if !ok || s.rule == nil || !s.keeps {
		return false
	}
	_, ok = s.prefill.(interface{ Preload(Matrix) bool })
	return ok
}

// Preload asks be to copy m into its GPU's memory ahead of the first
// product over it, so that the first prompt does not wait for the pinned
// spine to cross the bus (at the H200's 23 GB/s, a K3 slice's layer of
// BF16 projections is tens of milliseconds each). Only a split backend
// whose GPU keeps keyed weights does anything, and only for a matrix its
// rule would give the GPU (in a prompt or a decode step); it reports false
// once the GPU's budget is full (the caller stops: nothing is evicted for
// a preload), true otherwise.
func Preload(be Backend, m Matrix) bool {
	s, ok := be.(split)
	if !Preloads(be) || m.Key == 0 {
		return true
	}
	batch := matIntensity(m) >= float64(s.rule.MinIntensity) || s.rule.IntensityWeights > 0 && m.Rows*m.Cols >= s.rule.IntensityWeights
	decode := len(m.Data)+len(m.Scales) >= s.rule.DecodeMinBytes
	p, ok := s.prefill.(interface{ Preload(Matrix) bool })
	if !ok || (!batch && !decode) {
		return true
	}
	return p.Preload(m)
}

// Threads is the decode backend's: the figure that matters per token.
func (s split) Threads() int { return Threads(s.decode) }

// expertsFFN hands a layer's experts to the decode backend as one call when
// the rule sends every one of them there (streamed experts: always in
// decode), so that "auto" with a GPU keeps the CPU's one pool call per
// layer; otherwise it declines and ExpertsFFN runs them one by one.
func (s split) expertsFFN(dst [][]float32, es []Expert, act Activation, x [][]float32) bool {
	for _, e := range es {
		if s.onGPU(1, expertIntensity(e), e.W1, e.W2, e.W3) {
			return false
		}
	}
	m, ok := s.decode.(expertsFFNer)
	return ok && m.expertsFFN(dst, es, act, x)
}
