package engine

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/deltafin/deltafin/kernels"
	"github.com/stretchr/testify/require"
)

// tinyMLA builds a random MLA layer: H 6, 2 heads, nope 3, rope 2, v 2,
// kv_lora 4, with q-LoRA 5 or a plain q_proj, and the output gate.
func tinyMLA(r *rand.Rand, qLoRA int, gate bool) (*Model, *mlaWeights) {
	c := &config{Hidden: 6, Heads: 2, NoPE: 3, RoPE: 2, VHead: 2, KVLoRA: 4, QLoRA: qLoRA, Eps: 1e-5, MLAOutputGate: gate}
	rnd := func(rows, cols int) kernels.Matrix {
		v := make([]float32, rows*cols)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return f32Matrix(rows, cols, v...)
	}
	ones := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = 1 + float32(r.NormFloat64())/4
		}
		return v
	}
	qk := c.NoPE + c.RoPE
	w := &mlaWeights{
		kvA: rnd(c.KVLoRA+c.RoPE, c.Hidden), kvANorm: ones(c.KVLoRA),
		kvB:   rnd(c.Heads*(c.NoPE+c.VHead), c.KVLoRA),
		oProj: rnd(c.Hidden, c.Heads*c.VHead),
	}
	if qLoRA > 0 {
		w.qA, w.qANorm, w.qB = rnd(qLoRA, c.Hidden), ones(qLoRA), rnd(c.Heads*qk, qLoRA)
	} else {
		w.qProj = rnd(c.Heads*qk, c.Hidden)
	}
	if gate {
		g := rnd(c.Heads*c.VHead, c.Hidden)
		w.gProj = &g
	}
	return &Model{cfg: c, backend: kernels.Ref()}, w
}

// naiveMLA is the textbook computation in float64 for a whole sequence:
// explicit per-head K and V, a −∞ causal mask, softmax, gate, o_proj.
func naiveMLA(m *Model, w *mlaWeights, x []float32, T int) []float64 {
	c := m.cfg
	H, nh, nope, rope, dv, r := c.Hidden, c.Heads, c.NoPE, c.RoPE, c.VHead, c.KVLoRA
	qk := nope + rope
	mv := func(wm kernels.Matrix, in []float64) []float64 {
		row := make([]float32, wm.Cols)
		out := make([]float64, wm.Rows)
		for i := range out {
			kernels.DecodeRow(row, wm, i)
			for j, a := range row {
				out[i] += float64(a) * in[j]
			}
		}
		return out
	}
	norm := func(v []float64, wt []float32) []float64 {
		var ss float64
		for _, a := range v {
			ss += a * a
		}
		s := 1 / math.Sqrt(ss/float64(len(v))+float64(c.Eps))
		out := make([]float64, len(v))
		for i, a := range v {
			out[i] = float64(wt[i]) * a * s
		}
		return out
	}
	Q := make([][]float64, T)
	K := make([][]float64, T)
	V := make([][]float64, T)
	X := make([][]float64, T)
	for t := 0; t < T; t++ {
		X[t] = make([]float64, H)
		for i := range X[t] {
			X[t][i] = float64(x[t*H+i])
		}
		if c.QLoRA > 0 {
			Q[t] = mv(w.qB, norm(mv(w.qA, X[t]), w.qANorm))
		} else {
			Q[t] = mv(w.qProj, X[t])
		}
		ckv := mv(w.kvA, X[t])
		kv := mv(w.kvB, norm(ckv[:r], w.kvANorm))
		for h := 0; h < nh; h++ {
			K[t] = append(K[t], kv[h*(nope+dv):h*(nope+dv)+nope]...)
			K[t] = append(K[t], ckv[r:]...)
			V[t] = append(V[t], kv[h*(nope+dv)+nope:(h+1)*(nope+dv)]...)
		}
	}
	out := make([]float64, 0, T*H)
	for t := 0; t < T; t++ {
		attn := make([]float64, nh*dv)
		for h := 0; h < nh; h++ {
			s := make([]float64, T)
			for p := range s {
				s[p] = math.Inf(-1)
				if p <= t {
					s[p] = 0
					for i := 0; i < qk; i++ {
						s[p] += Q[t][h*qk+i] * K[p][h*qk+i]
					}
					s[p] /= math.Sqrt(float64(qk))
				}
			}
			mx := math.Inf(-1)
			for _, a := range s {
				mx = math.Max(mx, a)
			}
			var z float64
			for p := range s {
				s[p] = math.Exp(s[p] - mx)
				z += s[p]
			}
			for p := range s {
				for i := 0; i < dv; i++ {
					attn[h*dv+i] += s[p] / z * V[p][h*dv+i]
				}
			}
		}
		if w.gProj != nil {
			g := mv(*w.gProj, X[t])
			for i := range attn {
				attn[i] *= 1 / (1 + math.Exp(-g[i]))
			}
		}
		out = append(out, mv(w.oProj, attn)...)
	}
	return out
}

func TestMLA(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		qLoRA int
		gate  bool
	}{{"q-LoRA with output gate (K3)", 5, true}, {"plain q_proj, no gate (Kimi-Linear)", 0, false}} {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, uint64(tt.qLoRA)))
			m, w := tinyMLA(r, tt.qLoRA, tt.gate)
			const T = 5
			H := m.cfg.Hidden
			x := make([]float32, T*H)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			want := naiveMLA(m, w, x, T)

			// The whole sequence as one batch.
			batch := make([]float32, T*H)
			_ = m.mlaForward(context.Background(), m.backend, batch, x, T, w, &mlaCache{})
			for i, v := range batch {
				require.InDelta(t, want[i], float64(v), 1e-5, "batch element %d", i)
			}
			// Two tokens, then one at a time through the cache.
			cache := &mlaCache{}
			step := make([]float32, T*H)
			_ = m.mlaForward(context.Background(), m.backend, step[:2*H], x[:2*H], 2, w, cache)
			for tk := 2; tk < T; tk++ {
				_ = m.mlaForward(context.Background(), m.backend, step[tk*H:(tk+1)*H], x[tk*H:(tk+1)*H], 1, w, cache)
			}
			d, _ := maxAbsDiff(batch, step)
			require.LessOrEqual(t, d, 1e-6)
			require.Len(t, cache.k, T*m.cfg.Heads*(m.cfg.NoPE+m.cfg.RoPE))
		})
	}
}
