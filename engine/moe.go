package engine

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/deltafin/deltafin/experts"
	"github.com/deltafin/deltafin/kernels"
)

// Mixture of experts (docs/MODEL.md §5.8). Notation: E experts, top-k
// per token, D the width experts work in (the latent R for K3, else H).

type moeWeights struct {
	router     kernels.Matrix  // [E, H]
	bias       []float32       // [E] e_score_correction_bias, for selection only
	down, up   kernels.Matrix  // latent MoE: [R, H] and [H, R]
	latentNorm []float32       // [R], when latent_moe_use_norm
	shared     *kernels.Expert // merged shared experts, width shared·I
}

// route is one token's selected experts and their combine weights, in
// selection order (which is the combine's summation order).
type route struct {
	ids []int
	w   []float32
}

// router picks the top-k experts of one token from its router logits [E]:
//
//	scores = σ(logits); choice = scores + bias (group-limited when n_group > 1)
//	ids = top-k(choice), ties to the lower id
//	w = scores[ids] / (Σ scores[ids] + 1e−20) (when renormalising) · routed_scaling_factor
func (c *config) router(logits, bias []float32) route {
	E := len(logits)
	scores := make([]float32, E)
	choice := make([]float32, E)
	for e, l := range logits {
		scores[e] = sigmoid(l)
		choice[e] = scores[e] + bias[e]
	}
	if c.NGroup > 1 {
		// Keep the topk_group groups whose two best choices sum highest; the
		// others' choices become 0, as in DeepSeek-V3's masked_fill.
		per := E / c.NGroup
		gs := make([]float32, c.NGroup)
		for g := range gs {
			top := topK(choice[g*per:(g+1)*per], 2)
			gs[g] = choice[g*per+top[0]] + choice[g*per+top[1]]
		}
		keep := make([]bool, c.NGroup)
		for _, g := range topK(gs, c.TopKGrp) {
			keep[g] = true
		}
		for e := range choice {
			if !keep[e/per] {
				choice[e] = 0
			}
		}
	}
	r := route{ids: topK(choice, c.TopK), w: make([]float32, c.TopK)}
	var sum float32
	for j, id := range r.ids {
		r.w[j] = scores[id]
		sum += scores[id]
	}
	for j := range r.w {
		if c.Renormalize && c.TopK > 1 {
			r.w[j] /= sum + 1e-20
		}
		r.w[j] *= c.RoutedScaling
	}
	return r
}

// topK returns the indices of the k largest values, largest first, ties to
// the lower index.
//
// It keeps the k best seen so far in order, each new index going after
// every kept one at least as large: the order of a stable sort by value,
// descending, in O(len(x)·k) without the sort's closure calls (a router
// of 16 to 384 experts picks 2 to 8 per token; the full sort was 5% of a
// k3-tiny prefill).
func topK(x []float32, k int) []int {
	k = min(k, len(x))
	top := make([]int, 0, k)
	for i, v := range x {
		p := len(top)
		for p > 0 && x[top[p-1]] < v {
			p--
		}
		if p >= k {
			continue
		}
		if len(top) < k {
			top = append(top, 0)
		}
		copy(top[p+1:], top[p:len(top)-1])
		top[p] = i
	}
	return top
}

// moeForward runs the MoE block for T tokens, in three steps:
//
//	x: [T, H] (post-attention-normalised) → out: [T, H]
//	route:   (ids_t, w_t) = router(W_r · x_t)           top-k of E per token
//	experts: y_{t,j} = expert_{ids_t[j]}(z_t)            [T, K, D], z = down·x (latent) or x
//	combine: r_t = Σ_j w_t[j] · y_{t,j}                  [T, D]
//	         out = up · RMSNorm(r) (latent) or r, + shared(x)
//
// The experts' reads start as soon as the router has chosen, so they
// overlap the latent projection and the shared experts; in a prompt the
// shared experts run at the first wait for a routed expert's bytes.
//
// routes, when not nil, are the tokens' selections already made (a prompt
// routed chunk by chunk as its attention ran, attend.go) and order their
// union in the order it was read; nil routes are computed here and the
// union taken in ascending ids.
func (m *Model) moeForward(ctx context.Context, be kernels.Backend, out, x []float32, T, layer, pos int, w *moeWeights, routes []route, order []int) error {
	c := m.cfg
	if routes == nil {
		var err error
		if routes, err = m.route(be, x, T, layer, pos, w); err != nil {
			return err
		}
		order = nil
	}
	work := expertMajor(routes, c.TopK, order)
	batch, err := m.experts.acquire(ctx, layer, work.groups[0], work.union)
	if err != nil {
		return err
	}

	z := x
	if c.Latent > 0 {
		z = make([]float32, T*c.ExpertDim())
		be.MatMul(z, w.down, x, T)
	}
	var shared []float32
	sharedFFN := func() {
		if w.shared != nil {
			shared = make([]float32, T*c.Hidden)
			m.ffn(be, shared, *w.shared, x, T)
		}
	}
	var idle func()
	if T > 2 {
		// A prompt's shared experts wait for the first moment a routed
		// expert's bytes have not arrived: they fill the cores then
		// instead of keeping the reads' window full while the disk idles.
		// (One call at a time: the kernels' pool serves the latest call.)
		idle = sync.OnceFunc(sharedFFN)
	} else {
		sharedFFN()
	}

	ys, err := m.runExperts(ctx, be, layer, work, batch, z, T, idle)
	if err != nil {
		return err
	}
	if idle != nil {
		idle() // no routed expert ever waited
	}
	m.combine(be, out, routes, ys, shared, w, T)
	return ctx.Err()
}

// route computes the router logits [T, E] = x · W_rᵀ and picks each
// token's experts (one trace line per token when tracing).
func (m *Model) route(be kernels.Backend, x []float32, T, layer, pos int, w *moeWeights) ([]route, error) {
	c := m.cfg
	logits := make([]float32, T*c.Experts) // [T, E]
	be.MatMul(logits, w.router, x, T)
	routes := make([]route, T)
	// Each token's top-k is its own: a prompt's are split over the cores.
	parallelHeads(T, m.heads.workers(T*c.Experts*16), func(t0, t1 int) {
		for t := t0; t < t1; t++ {
			routes[t] = c.router(logits[t*c.Experts:(t+1)*c.Experts], w.bias)
		}
	})
	if m.routerTrace != nil {
		for t, r := range routes {
			if err := m.routerTrace.Record(pos+t, layer, r.ids); err != nil {
				return nil, err
			}
		}
	}
	return routes, nil
}

// expertWork is a layer's routes turned expert-major: each selected expert
// runs once over all the tokens that chose it.
type expertWork struct {
	users  map[int][]int // expert → its (token, slot) pairs as token·K + slot
	union  []int         // every selected expert, in reading order
	groups [][]int       // union in acquisition groups of at most experts.MaxTopK
}

// expertMajor inverts routes. A prefill's union can name hundreds of
// experts; they are acquired a decode token's worth (experts.MaxTopK) at a time,
// the next group prefetched. The union is order (the experts in the order
// a prompt routed chunk by chunk read them: the first to arrive run
// first) or, when order is nil, ascending ids. The combine sums in route
// order, so the order changes no output.
func expertMajor(routes []route, K int, order []int) expertWork {
	w := expertWork{users: make(map[int][]int)}
	for t, r := range routes {
		for j, id := range r.ids {
			w.users[id] = append(w.users[id], t*K+j)
		}
	}
	w.union = order
	if order == nil {
		w.union = make([]int, 0, len(w.users))
		for id := range w.users {
			w.union = append(w.union, id)
		}
		sort.Ints(w.union)
	}
	for ids := w.union; len(ids) > 0; {
		n := min(len(ids), experts.MaxTopK)
		w.groups, ids = append(w.groups, ids[:n]), ids[n:]
	}
	return w
}

// expertRows holds every (token, slot) output of a layer's experts, [T·K,
// D], and where each one is: row at[t·K + j] of ys for token t's slot j.
// A decode token's rows are its slots in order; a prompt's are each
// expert's users one after another, so that an expert (or the GPU's share
// of a group) writes its outputs straight into them, with no scatter and
// no buffer of its own: at 16,384 tokens a scatter was a second pass over
// the layer's 3.8 GB of outputs, each into memory touched for the first
// time.
type expertRows struct {
	ys   []float32
	at   []int32
	next int // rows given out so far
}

func newExpertRows(T, K, D int) *expertRows {
	r := &expertRows{ys: make([]float32, T*K*D), at: make([]int32, T*K)}
	for i := range r.at {
		r.at[i] = int32(i)
	}
	return r
}

// take gives users (token·K + slot each) the next len(users) rows and
// returns them, [len(users), D].
func (r *expertRows) take(users []int, D int) []float32 {
	for i, tk := range users {
		r.at[tk] = int32(r.next + i)
	}
	r0 := r.next
	r.next += len(users)
	return r.ys[r0*D : r.next*D]
}

// row is token t's slot j's output, [D].
func (r *expertRows) row(t, j, K, D int) []float32 {
	i := int(r.at[t*K+j])
	return r.ys[i*D : (i+1)*D]
}

// runExperts applies every selected expert to its tokens' z [T, D] and
// returns each (token, slot) output (expertRows), so that the combine can
// sum in route order. batch holds work.groups[0], already acquired; each
// later group is acquired in turn and the one after it prefetched.
func (m *Model) runExperts(ctx context.Context, be kernels.Backend, layer int, work expertWork, batch expertBatch, z []float32, T int, idle func()) (*expertRows, error) {
	c := m.cfg
	D, K := c.ExpertDim(), c.TopK
	rows := newExpertRows(T, K, D)
	// The experts' inputs, gathered into buffers each side reuses from
	// group to group (the GPU's is free again once its goroutine is over).
	var cpuIn, gpuIn []float32
	for g, group := range work.groups {
		if g > 0 {
			var err error
			// The store reads the next group ahead, and the rest as far
			// as the buffers this group's release freed allow.
			if batch, err = m.experts.acquire(ctx, layer, group, work.union); err != nil {
				return nil, err
			}
		}
		if T == 1 {
			err := decodeExperts(ctx, be, batch, group, work.users, z, rows.ys, c.Act, D)
			batch.release()
			if err != nil {
				return nil, err
			}
			continue
		}
		// Experts the plan gives a GPU run on a goroutine of their own
		// (gpu) as one call, so that the device computes them together
		// (kernels.ExpertGroupFFN: each product one dispatch over all of
		// them), while the CPU runs the others here, one product at a
		// time; the plan, from the positions alone, not the overlap,
		// decides which side computes an expert. The GPU's are handed over
		// first, once their bytes have arrived, so that it is busy from
		// the group's start rather than waiting behind the CPU's experts
		// that precede its own in the group, and the CPU's leave a core or
		// two to the goroutine feeding it (kernels.OnCPUBesideGPU);
		// neither changes a bit (each expert's rows are its own, the
		// GPU's group call gives what its calls one by one would, and the
		// CPU's kernels give the same bits on any number of threads).
		ex0, err := m.waitExpert(ctx, batch, 0, idle)
		if err != nil {
			batch.release()
			return nil, err
		}
		ns := make([]int, len(group))
		for j, id := range group {
			ns[j] = len(work.users[id])
		}
		plan := kernels.PlanExperts(be, ex0, ns)
		// gather puts the rows of z that chose an expert (u, its users)
		// into buf, grown as needed, and returns them, [len(u), D]. Over
		// the cores: the GPU's share of a long prompt's group is
		// thousands of rows, and one goroutine copying them took a third
		// of that side's time.
		gather := func(buf *[]float32, u []int) []float32 {
			if cap(*buf) < len(u)*D {
				*buf = make([]float32, len(u)*D)
			}
			in := (*buf)[:len(u)*D]
			parallelHeads(len(u), m.heads.workers(len(u)*D), func(r0, r1 int) {
				for i := r0; i < r1; i++ {
					tk := u[i]
					copy(in[i*D:(i+1)*D], z[(tk/K)*D:(tk/K+1)*D])
				}
			})
			return in
		}
		var onGPU []kernels.Expert
		var all []int // the GPU's experts' users, one expert after another
		var counts []int
		for i, id := range group {
			if plan[i] != kernels.OnGPU {
				continue
			}
			ex, err := m.waitExpert(ctx, batch, i, idle)
			if err != nil {
				batch.release()
				return nil, err
			}
			onGPU = append(onGPU, ex)
			all, counts = append(all, work.users[id]...), append(counts, len(work.users[id]))
		}
		var gpu sync.WaitGroup
		if len(onGPU) > 0 {
			out := rows.take(all, D)
			gpu.Go(func() {
				in := gather(&gpuIn, all)
				ins, outs := make([][]float32, len(onGPU)), make([][]float32, len(onGPU))
				for j, at := 0, 0; j < len(onGPU); j, at = j+1, at+counts[j] {
					ins[j], outs[j] = in[at*D:(at+counts[j])*D], out[at*D:(at+counts[j])*D]
				}
				kernels.ExpertGroupFFNOn(be, kernels.OnGPU, outs, onGPU, c.Act, ins, counts)
			})
		}
		for i, id := range group {
			if plan[i] == kernels.OnGPU {
				continue
			}
			ex, err := m.waitExpert(ctx, batch, i, idle)
			if err != nil {
				gpu.Wait()
				batch.release()
				return nil, err
			}
			u := work.users[id]
			kernels.ExpertFFNOn(be, plan[i], rows.take(u, D), ex, c.Act, gather(&cpuIn, u), len(u))
		}
		gpu.Wait()
		batch.release()
	}
	return rows, nil
}

// waitExpert returns expert i of batch, counting the time spent waiting
// for its bytes (Stats.ExpertWait); when they have not arrived, idle (if
// set) runs first.
func (m *Model) waitExpert(ctx context.Context, batch expertBatch, i int, idle func()) (kernels.Expert, error) {
	if batch.ready(i) {
		return batch.expert(ctx, i)
	}
	if idle != nil {
		idle()
		if batch.ready(i) {
			return batch.expert(ctx, i)
		}
	}
	start := time.Now()
	ex, err := batch.expert(ctx, i)
	m.expertWait.Add(int64(time.Since(start)))
	return ex, err
}

// combine sums each token's expert outputs with its route weights, in
// route order, r_t = Σ_j w_t[j] · y_{t,j} ([T, D]); projects the latent
// back, out = up · RMSNorm(r) ([T, H]), or takes r as is; and adds the
// shared experts' output.
func (m *Model) combine(be kernels.Backend, out []float32, routes []route, ys *expertRows, shared []float32, w *moeWeights, T int) {
	c := m.cfg
	H, D, K := c.Hidden, c.ExpertDim(), c.TopK
	r := make([]float32, T*D)
	// Tokens are independent: a prompt's are split over the cores (the
	// combine is the last thing before lm_head, with the disk done).
	parallelHeads(T, m.heads.workers(T*K*D), func(t0, t1 int) {
		for t := t0; t < t1; t++ {
			acc := r[t*D : (t+1)*D]
			for j, wj := range routes[t].w {
				for i, v := range ys.row(t, j, K, D) {
					acc[i] += wj * v
				}
			}
		}
	})
	if c.Latent > 0 {
		if w.latentNorm != nil {
			rmsNormRows(r, r, w.latentNorm, c.Eps, D)
		}
		be.MatMul(out, w.up, r, T)
	} else {
		copy(out, r[:T*H])
	}
	if shared != nil {
		add(out, shared)
	}
}

// decodeExperts runs one token's experts of group (batch holds them in
// group's order) on its latent z, each into its slot of ys: those whose
// bytes have arrived as one kernels.ExpertsFFN call (one pool call for all
// of them: the kernels' fixed cost per call is paid once, not per expert),
// and when none has, the next one in order, as soon as it arrives, so that
// compute still overlaps the reads of the rest.
func decodeExperts(ctx context.Context, be kernels.Backend, batch expertBatch, group []int, users map[int][]int,
	z, ys []float32, act kernels.Activation, D int) error {
	todo := make([]int, len(group)) // indices into group and batch
	for i := range todo {
		todo[i] = i
	}
	for len(todo) > 0 {
		var run, rest []int
		for _, i := range todo {
			if batch.ready(i) {
				run = append(run, i)
			} else {
				rest = append(rest, i)
			}
		}
		if len(run) == 0 {
			run, rest = todo[:1], todo[1:]
		}
		es := make([]kernels.Expert, len(run))
		dst, xs := make([][]float32, len(run)), make([][]float32, len(run))
		for k, i := range run {
			ex, err := batch.expert(ctx, i)
			if err != nil {
				return err
			}
			tk := users[group[i]][0] // T = 1: token 0's slot that chose it
			es[k], dst[k], xs[k] = ex, ys[tk*D:(tk+1)*D], z[:D]
		}
		kernels.ExpertsFFN(be, dst, es, act, xs)
		todo = rest
	}
	return nil
}
