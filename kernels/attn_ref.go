package kernels

import "math"

// AttentionRef is the oracle of Attention: each row on its own, the whole
// score row, its softmax, then the weighted sum of the values, in float64.
// It is what every Attender and the plain-Go tiles are held to
// (kernels/conformance), not something the engine runs.
func AttentionRef(a Attn) {
	a.mustShape()
	nh, qk, dv := a.Heads, a.QK, a.DV
	s := make([]float64, a.Past+a.T)
	o := make([]float64, dv)
	for t := 0; t < a.T; t++ {
		n := a.Past + t + 1
		for h := 0; h < nh; h++ {
			qh := a.Q[(t*nh+h)*qk:][:qk]
			mx := math.Inf(-1)
			for p := 0; p < n; p++ {
				kp := a.K[(p*nh+h)*qk:][:qk]
				var d float64
				for i, x := range qh {
					d += float64(x) * float64(kp[i])
				}
				s[p] = d * float64(a.Scale)
				mx = max(mx, s[p])
			}
			var z float64
			for p := 0; p < n; p++ {
				s[p] = math.Exp(s[p] - mx)
				z += s[p]
			}
			clear(o)
			for p := 0; p < n; p++ {
				vp := a.V[(p*nh+h)*dv:][:dv]
				for i, x := range vp {
					o[i] += s[p] / z * float64(x)
				}
			}
			dst := a.Dst[(t*nh+h)*dv:][:dv]
			for i, x := range o {
				dst[i] = float32(x)
			}
		}
	}
}
