package engine

import (
	"context"

	"github.com/deltafin/deltafin/kernels"
)

// kdaChunkSize is the chunk length of the chunked KDA prefill (FLA's 64).
const kdaChunkSize = 64

// kdaSubChunk is the length of the sub-chunks whose first position is the
// reference point of the decays between sub-chunks (FLA's 16).
const kdaSubChunk = 16

// kdaChunked computes the same outputs and final state as kdaRecurrent, a
// chunk of C tokens at a time. Per head, with S₀ the state entering the
// chunk, u_t = β_t·δ_t the delta-rule updates and Γ_t = Σ_{i≤t} g_i the
// cumulative log-decay inside the chunk (per channel):
//
//	S_t       = e^{Γ_t} ⊙ S₀ + Σ_{i≤t} (e^{Γ_t−Γ_i} ⊙ k_i) u_iᵀ
//	A[t,i]    = Σ_c k_t[c]·k_i[c]·e^{Γ_t[c]−Γ_i[c]}          (i < t)
//	u_t       = β_t · (v_t − S₀ᵀ(e^{Γ_t} ⊙ k_t) − Σ_{i<t} A[t,i]·u_i)   (forward substitution)
//	B[t,i]    = Σ_c q_t[c]·k_i[c]·e^{Γ_t[c]−Γ_i[c]}          (i ≤ t)
//	o_t       = S₀ᵀ(e^{Γ_t} ⊙ q_t) + Σ_{i≤t} B[t,i]·u_i
//	S_C       = e^{Γ_C} ⊙ S₀ + Σ_i (e^{Γ_C−Γ_i} ⊙ k_i) u_iᵀ
//
// Every decay factor e^{Γ_t−Γ_i} (t ≥ i) is ≤ 1 and is formed as a product
// of the per-token factors e^{g_j}, never as e^{Γ_t}·e^{−Γ_i}, which would
// overflow over long chunks. Between sub-chunks it splits at the first
// position r of t's sub-chunk, e^{Γ_t−Γ_r}·e^{Γ_r−Γ_i}, both factors ≤ 1,
// so that A and B there are plain matrix products of scaled keys and
// queries (kernels.MatMulF32), as are the S₀ terms, the cross-sub-chunk
// part of the substitution, the outputs and the state update; only the
// pairs inside a sub-chunk and the substitution's rows there stay scalar.
//
// q, k, v, g: [T, nh, d]; beta: [T, nh]; s: [nh, d, d]; o: [T, nh, d].
// Heads run in parallel. It stops early, leaving o and s torn, once ctx
// ends (checked per chunk).
func kdaChunked(ctx context.Context, be kernels.Backend, o, q, k, v, g, beta, s []float32, T, nh, d, C int, heads headSplit) {
	parallelHeads(nh, heads.workers(T*nh*d*d), func(h0, h1 int) {
		w := newKDAChunk(C, d)
		for h := h0; h < h1; h++ {
			for c0 := 0; c0 < T; c0 += C {
				if stopped(ctx) {
					return
				}
				w.run(be, o, q, k, v, g, beta, s[h*d*d:(h+1)*d*d], c0, min(C, T-c0), h, nh, d)
			}
		}
	})
}

// kdaChunk is one worker's scratch for chunks of up to C tokens.
type kdaChunk struct {
	C              int
	eg, p0, kq, qq []float32 // [C, d]: e^{g_t}; e^{Γ_t}; k_t, q_t ⊙ e^{Γ_t−Γ_r(t)}
	ks, u          []float32 // [C, d]: −e^{Γ_t} ⊙ k_t, then e^{Γ_t} ⊙ q_t; the updates
	kc             []float32 // [d, C]: keys before the sub-chunk ⊙ e^{Γ_r−Γ_i}, then ⊙ e^{Γ_C−Γ_i}
	a, b           []float32 // [C, C]: −A and B
	dd             []float32 // [d]
}

func newKDAChunk(C, d int) *kdaChunk {
	f := func(n int) []float32 { return make([]float32, n) }
	return &kdaChunk{C: C, eg: f(C * d), p0: f(C * d), kq: f(C * d), qq: f(C * d), ks: f(C * d), u: f(C * d),
		kc: f(d * C), a: f(C * C), b: f(C * C), dd: f(d)}
}

// run advances head h's state S over the n tokens from c0, writing their
// outputs.
func (w *kdaChunk) run(be kernels.Backend, o, q, k, v, g, beta, S []float32, c0, n, h, nh, d int) {
	C, ld := w.C, nh*d
	row := func(x []float32, t int) []float32 { return x[((c0+t)*nh+h)*d:][:d] }
	mm := func(c []float32, ldc int, a []float32, lda int, b []float32, ldb int, m, kk, nn int, acc bool) {
		kernels.MatMulF32(be, kernels.Gemm{C: c, LDC: ldc, A: a, LDA: lda, B: b, LDB: ldb, M: m, K: kk, N: nn, Acc: acc})
	}
	for t := 0; t < n; t++ {
		et, pt, gt := w.eg[t*d:(t+1)*d], w.p0[t*d:(t+1)*d], row(g, t)
		// e^g (g ≤ 0) in the elementwise kernel of the backend the
		// chunk's products run on.
		kernels.RunElementwise(be, kernels.ElemExp, et, gt)
		for c := range et {
			pt[c] = et[c]
			if t > 0 {
				pt[c] *= w.p0[(t-1)*d+c]
			}
		}
	}
	clear(w.a[:C*C])
	clear(w.b[:C*C])
	L := min(kdaSubChunk, C)
	for r := 0; r < n; r += L {
		m := min(L, n-r)
		// Scaled rows of the sub-chunk: k_t, q_t ⊙ e^{Γ_t−Γ_r}.
		w.reset()
		for t := r; t < r+m; t++ {
			if t > r {
				w.carry(t, d)
			}
			kt, qt := row(k, t), row(q, t)
			for c, f := range w.dd {
				w.kq[t*d+c], w.qq[t*d+c] = kt[c]*f, qt[c]*f
			}
		}
		if r > 0 {
			// Keys before the sub-chunk ⊙ e^{Γ_r−Γ_i}, transposed [d, r].
			w.reset()
			for i := r - 1; i >= 0; i-- {
				w.carry(i+1, d)
				w.transposed(row(k, i), i)
			}
			mm(w.a[r*C:], C, w.kq[r*d:], d, w.kc, C, m, d, r, false)
			mm(w.b[r*C:], C, w.qq[r*d:], d, w.kc, C, m, d, r, false)
			for i := r * C; i < (r+m)*C; i++ {
				w.a[i] = -w.a[i]
			}
		}
		// Pairs inside the sub-chunk, the decay carried from i to t.
		for i := r; i < r+m; i++ {
			ki := row(k, i)
			w.reset()
			for t := i; t < r+m; t++ {
				if t > i {
					w.carry(t, d)
				}
				kt, qt := row(k, t), row(q, t)
				var sa, sb float32
				for c, f := range w.dd {
					kd := ki[c] * f
					sa += kt[c] * kd
					sb += qt[c] * kd
				}
				if t > i {
					w.a[t*C+i] = -sa
				}
				w.b[t*C+i] = sb
			}
		}
	}

	// u = v − (e^Γ ⊙ k)·S₀ − A·u, the last term a product across
	// sub-chunks and a substitution inside each.
	for t := 0; t < n; t++ {
		copy(w.u[t*d:(t+1)*d], row(v, t))
		kt, pt := row(k, t), w.p0[t*d:(t+1)*d]
		for c := range pt {
			w.ks[t*d+c] = -kt[c] * pt[c]
		}
	}
	mm(w.u, d, w.ks, d, S, d, n, d, d, true)
	for r := 0; r < n; r += L {
		m := min(L, n-r)
		if r > 0 {
			mm(w.u[r*d:], d, w.a[r*C:], C, w.u, d, m, r, d, true)
		}
		for t := r; t < r+m; t++ {
			ut := w.u[t*d : (t+1)*d]
			for i := r; i < t; i++ {
				ai, ui := w.a[t*C+i], w.u[i*d:(i+1)*d]
				for j := range ut {
					ut[j] += ai * ui[j]
				}
			}
			bt := beta[(c0+t)*nh+h]
			for j := range ut {
				ut[j] *= bt
			}
		}
	}

	// o = (e^Γ ⊙ q)·S₀ + B·u, written in place in o's [T, nh, d] layout.
	for t := 0; t < n; t++ {
		qt, pt := row(q, t), w.p0[t*d:(t+1)*d]
		for c := range pt {
			w.ks[t*d+c] = qt[c] * pt[c]
		}
	}
	ot := o[(c0*nh+h)*d:]
	mm(ot, ld, w.ks, d, S, d, n, d, d, false)
	mm(ot, ld, w.b, C, w.u, d, n, n, d, true)

	// S ← e^{Γ_C} ⊙ S₀ + (keys ⊙ e^{Γ_C−Γ_i})ᵀ·u.
	last := w.p0[(n-1)*d : n*d]
	for c := 0; c < d; c++ {
		sr := S[c*d : (c+1)*d]
		for j := range sr {
			sr[j] *= last[c]
		}
	}
	w.reset()
	for i := n - 1; i >= 0; i-- {
		if i < n-1 {
			w.carry(i+1, d)
		}
		w.transposed(row(k, i), i)
	}
	mm(S, d, w.kc, C, w.u, d, d, n, d, true)
}

// reset sets the carried decay dd to 1.
func (w *kdaChunk) reset() {
	for c := range w.dd {
		w.dd[c] = 1
	}
}

// carry multiplies the carried decay by token t's factors e^{g_t}.
func (w *kdaChunk) carry(t, d int) {
	for c := range w.dd {
		w.dd[c] *= w.eg[t*d+c]
	}
}

// transposed writes key i ⊙ dd into column i of kc.
func (w *kdaChunk) transposed(ki []float32, i int) {
	for c, f := range w.dd {
		w.kc[c*w.C+i] = ki[c] * f
	}
}
