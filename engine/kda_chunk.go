package engine

import (
	"context"
	"math"
)

// kdaChunkSize is the chunk length of the chunked KDA prefill (FLA's 64).
const kdaChunkSize = 64

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
// e^{Γ_t−Γ_i} is formed from the difference (≤ 0), never as a product of
// e^{Γ_t} and e^{−Γ_i}, which would overflow over long chunks.
//
// q, k, v, g: [T, nh, d]; beta: [T, nh]; s: [nh, d, d]; o: [T, nh, d].
// It stops early, leaving o and s torn, once ctx ends (checked per chunk).
func kdaChunked(ctx context.Context, o, q, k, v, g, beta, s []float32, T, nh, d, C int) {
	gam := make([]float32, C*d) // Γ for the chunk, [C, d]
	u := make([]float32, C*d)   // [C, d(V)]
	a := make([]float32, C)     // one row of A or B
	kd := make([]float32, d)    // e^{Γ_t} ⊙ k_t or e^{Γ_C−Γ_i} ⊙ k_i
	for h := 0; h < nh; h++ {
		S := s[h*d*d : (h+1)*d*d]
		row := func(x []float32, t int) []float32 { return x[(t*nh+h)*d : (t*nh+h+1)*d] }
		for c0 := 0; c0 < T; c0 += C {
			if stopped(ctx) {
				return
			}
			n := min(C, T-c0)
			for t := 0; t < n; t++ {
				gt := row(g, c0+t)
				for c := 0; c < d; c++ {
					prev := float32(0)
					if t > 0 {
						prev = gam[(t-1)*d+c]
					}
					gam[t*d+c] = prev + gt[c]
				}
			}
			// u_t by forward substitution.
			for t := 0; t < n; t++ {
				kt, vt := row(k, c0+t), row(v, c0+t)
				ut := u[t*d : (t+1)*d]
				copy(ut, vt)
				for c := 0; c < d; c++ {
					kd[c] = kt[c] * float32(math.Exp(float64(gam[t*d+c])))
				}
				subTransposed(ut, S, kd, d)
				for i := 0; i < t; i++ {
					a[i] = decayDot(kt, row(k, c0+i), gam[t*d:(t+1)*d], gam[i*d:(i+1)*d])
				}
				for i := 0; i < t; i++ {
					ui := u[i*d : (i+1)*d]
					for j := range ut {
						ut[j] -= a[i] * ui[j]
					}
				}
				bt := beta[(c0+t)*nh+h]
				for j := range ut {
					ut[j] *= bt
				}
			}
			// Outputs from S₀ and the chunk's updates.
			for t := 0; t < n; t++ {
				qt := row(q, c0+t)
				ot := row(o, c0+t)
				clear(ot)
				for c := 0; c < d; c++ {
					kd[c] = qt[c] * float32(math.Exp(float64(gam[t*d+c])))
				}
				subTransposed(ot, S, kd, d)
				for j := range ot {
					ot[j] = -ot[j]
				}
				for i := 0; i <= t; i++ {
					b := decayDot(qt, row(k, c0+i), gam[t*d:(t+1)*d], gam[i*d:(i+1)*d])
					ui := u[i*d : (i+1)*d]
					for j := range ot {
						ot[j] += b * ui[j]
					}
				}
			}
			// The state leaving the chunk.
			last := gam[(n-1)*d : n*d]
			for c := 0; c < d; c++ {
				e := float32(math.Exp(float64(last[c])))
				sr := S[c*d : (c+1)*d]
				for j := range sr {
					sr[j] *= e
				}
			}
			for i := 0; i < n; i++ {
				ki := row(k, c0+i)
				for c := 0; c < d; c++ {
					kd[c] = ki[c] * float32(math.Exp(float64(last[c]-gam[i*d+c])))
				}
				ui := u[i*d : (i+1)*d]
				for c := 0; c < d; c++ {
					sr := S[c*d : (c+1)*d]
					for j := range sr {
						sr[j] += kd[c] * ui[j]
					}
				}
			}
		}
	}
}

// subTransposed computes dst −= Sᵀx for S [d(K), d(V)] and x [d(K)].
func subTransposed(dst, S, x []float32, d int) {
	for c := 0; c < d; c++ {
		xc := x[c]
		sr := S[c*d : (c+1)*d]
		for j := range dst {
			dst[j] -= xc * sr[j]
		}
	}
}

// decayDot is Σ_c a[c]·b[c]·e^{ga[c]−gb[c]}.
func decayDot(a, b, ga, gb []float32) float32 {
	var s float32
	for c := range a {
		s += a[c] * b[c] * float32(math.Exp(float64(ga[c]-gb[c])))
	}
	return s
}
