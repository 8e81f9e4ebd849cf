package kernels

import "math"

// LayerOps is implemented by backends that also run the activation-bound
// operations of a layer on their device (the GPU backends), so that a layer
// can stay there between its matrix products. The functions below are their
// references: the same arithmetic as the engine's (engine/norm.go rmsNorm,
// engine/kda.go kdaRecurrent, the attention loop of engine/mla.go), in the
// same order, and the oracle of the GPU conformance tests.
type LayerOps interface {
	// RMSNormRows computes dst = w ⊙ (x · 1/√(mean(x²)+eps)) for each
	// width-long row of x; w nil means no weight.
	RMSNormRows(dst, x, w []float32, eps float32, width int)
	// KDARecurrent runs the gated delta rule over T tokens, updating s.
	// q, k, v, g: [T, nh, d]; beta: [T, nh]; s: [nh, d, d]; o: [T, nh, d].
	KDARecurrent(o, q, k, v, g, beta, s []float32, T, nh, d int)
	// Attention is causal softmax attention of T new tokens over a cache of
	// past+T positions: o[t,h] = Σ_p softmax_p(q[t,h]·kc[p,h]·scale)·vc[p,h]
	// for p ≤ past+t. q: [T, nh, qk]; kc: [past+T, nh, qk];
	// vc: [past+T, nh, dv]; o: [T, nh, dv].
	Attention(o, q, kc, vc []float32, T, nh, qk, dv, past int, scale float32)
}

// RefLayerOps returns the pure-Go LayerOps.
func RefLayerOps() LayerOps { return refLayerOps{} }

type refLayerOps struct{}

func (refLayerOps) RMSNormRows(dst, x, w []float32, eps float32, width int) {
	for o := 0; o+width <= len(x); o += width {
		xr := x[o : o+width]
		var ss float32
		for _, v := range xr {
			ss += v * v
		}
		r := float32(1 / math.Sqrt(float64(ss/float32(width)+eps)))
		for i, v := range xr {
			n := v * r
			if w != nil {
				n = w[i] * n
			}
			dst[o+i] = n
		}
	}
}

func (refLayerOps) KDARecurrent(o, q, k, v, g, beta, s []float32, T, nh, d int) {
	delta := make([]float32, d)
	for t := 0; t < T; t++ {
		for h := 0; h < nh; h++ {
			base := (t*nh + h) * d
			qh, kh, vh, gh := q[base:base+d], k[base:base+d], v[base:base+d], g[base:base+d]
			S := s[h*d*d : (h+1)*d*d]
			copy(delta, vh)
			for i := 0; i < d; i++ {
				row := S[i*d : (i+1)*d]
				decay := float32(math.Exp(float64(gh[i])))
				for j := range row {
					row[j] *= decay
					delta[j] -= kh[i] * row[j]
				}
			}
			bt := beta[t*nh+h]
			for j := range delta {
				delta[j] *= bt
			}
			oh := o[base : base+d]
			clear(oh)
			for i := 0; i < d; i++ {
				row := S[i*d : (i+1)*d]
				ki, qi := kh[i], qh[i]
				for j := range row {
					row[j] += ki * delta[j]
					oh[j] += qi * row[j]
				}
			}
		}
	}
}

func (refLayerOps) Attention(o, q, kc, vc []float32, T, nh, qk, dv, past int, scale float32) {
	scores := make([]float32, past+T)
	for t := 0; t < T; t++ {
		n := past + t + 1
		for h := 0; h < nh; h++ {
			qh := q[(t*nh+h)*qk : (t*nh+h+1)*qk]
			for p := 0; p < n; p++ {
				kp := kc[(p*nh+h)*qk : (p*nh+h+1)*qk]
				var s float32
				for i, a := range qh {
					s += a * kp[i]
				}
				scores[p] = s * scale
			}
			m := float32(math.Inf(-1))
			for _, v := range scores[:n] {
				m = max(m, v)
			}
			var sum float32
			for p, v := range scores[:n] {
				e := float32(math.Exp(float64(v - m)))
				scores[p] = e
				sum += e
			}
			for p := range scores[:n] {
				scores[p] /= sum
			}
			oh := o[(t*nh+h)*dv : (t*nh+h+1)*dv]
			clear(oh)
			for p := 0; p < n; p++ {
				vp := vc[(p*nh+h)*dv : (p*nh+h+1)*dv]
				a := scores[p]
				for i, x := range vp {
					oh[i] += a * x
				}
			}
		}
	}
}
