package kernels

import (
	"context"
	"fmt"
)

// Latent attention: the work of a multi-head latent attention (MLA) layer
// between its input projections and its gate and output projection, over
// T new positions (engine/mla.go has the layer):
//
//	Q  = WQ · QIn                          [T, Heads·QK]   (no WQ: Q = QIn)
//	KV = WKV · Lat                         [T, Heads·(NoPE+DV)]
//	K[Past+t, h] = [KV[t, h, :NoPE] | KPE[t]]   (the RoPE-width columns every head shares)
//	V[Past+t, h] =  KV[t, h, NoPE:]
//	Dst = Attention(Q, K, V)              [T, Heads·DV]
//
// QK = NoPE + RoPE. A backend that is a LatentAttender runs it as one
// piece of work: on a GPU the queries, keys and values are made on the
// device from the latents, where the steps one by one would send each
// product's outputs back to the host and the attention's q, k and v over
// again (at 256 positions of K3's 96 heads, 40 MB across the bus instead
// of 109 MB; kernels/README.md, "Latent attention on the device").
// Any other backend runs the steps (LatentSteps). Either way the bits are
// the steps' on that backend: MatMul of each product, the keys and values
// copied, Attention.

// LatentAttn is one latent attention call.
//
//	QIn: [T, WQ.Cols] (or Q itself, [T, Heads·QK], when WQ has no rows)
//	Lat: [T, WKV.Cols]
//	KPE: T rows of KPEStride floats, the RoPE-width key columns at KPEOff
//	K: [Past+T, Heads, QK]; V: [Past+T, Heads, DV] (the rows from Past on are written)
//	KV: [T, Heads, NoPE+DV] (written: kv_b's outputs, for a caller that wants them)
//	Dst: [T, Heads, DV]
type LatentAttn struct {
	Dst, QIn, Lat, KPE, K, V, KV []float32
	WQ, WKV                      Matrix
	KPEStride, KPEOff            int
	T, Past, Heads, NoPE, RoPE   int
	DV                           int
	Scale                        float32
}

// QK is the query and key head width, NoPE + RoPE.
func (a LatentAttn) QK() int { return a.NoPE + a.RoPE }

// Attn is the attention the call ends in, over K and V as filled.
func (a LatentAttn) Attn(q []float32) Attn {
	return Attn{Dst: a.Dst, Q: q, K: a.K, V: a.V, T: a.T, Past: a.Past, Heads: a.Heads, QK: a.QK(), DV: a.DV, Scale: a.Scale}
}

// A LatentAttender runs latent attention as one piece of work
// (LatentAttention, whose contract it keeps).
type LatentAttender interface {
	LatentAttention(ctx context.Context, a LatentAttn) error
}

// LatentAttention runs a on be: as one piece of work where be is a
// LatentAttender, else its steps. ctx is checked as Attention checks it; a
// cancelled call returns ctx's error with Dst, K and V torn. Shapes are
// the caller's contract: a mismatch panics.
func LatentAttention(ctx context.Context, be Backend, a LatentAttn) error {
	a.mustShape()
	if la, ok := be.(LatentAttender); ok {
		return la.LatentAttention(ctx, a)
	}
	return LatentSteps(ctx, be, a)
}

// LatentSteps runs a step by step on be: the two products, the keys and
// values filled (FillKV), Attention. It is the reference a LatentAttender
// is held to, bit for bit.
func LatentSteps(ctx context.Context, be Backend, a LatentAttn) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if a.T == 0 {
		return nil
	}
	var q []float32
	if a.WQ.Rows > 0 {
		q = make([]float32, a.T*a.WQ.Rows)
		be.MatMul(q, a.WQ, a.QIn, a.T)
	} else {
		q = a.QIn[:a.T*a.Heads*a.QK()]
	}
	be.MatMul(a.KV, a.WKV, a.Lat, a.T)
	a.FillKV()
	return Attention(ctx, be, a.Attn(q))
}

// FillKV writes the keys and values of the new positions, K and V's rows
// from Past on, from KV and KPE.
func (a LatentAttn) FillKV() {
	nh, nope, qk, dv := a.Heads, a.NoPE, a.QK(), a.DV
	for t := range a.T {
		kpe := a.KPE[t*a.KPEStride+a.KPEOff:][:a.RoPE]
		for h := range nh {
			kv := a.KV[(t*nh+h)*(nope+dv):][:nope+dv]
			k := a.K[((a.Past+t)*nh+h)*qk:][:qk]
			copy(k, kv[:nope])
			copy(k[nope:], kpe)
			copy(a.V[((a.Past+t)*nh+h)*dv:][:dv], kv[nope:])
		}
	}
}

func (a LatentAttn) mustShape() {
	n, qk := a.Past+a.T, a.QK()
	bad := a.T < 0 || a.Past < 0 || a.Heads <= 0 || a.NoPE < 0 || a.RoPE < 0 || qk <= 0 || a.DV <= 0 ||
		a.WKV.Rows != a.Heads*(a.NoPE+a.DV) || len(a.Lat) < a.T*a.WKV.Cols ||
		len(a.K) < n*a.Heads*qk || len(a.V) < n*a.Heads*a.DV || len(a.KV) < a.T*a.WKV.Rows ||
		len(a.Dst) < a.T*a.Heads*a.DV || a.KPEOff < 0 || a.KPEOff+a.RoPE > a.KPEStride ||
		a.T > 0 && len(a.KPE) < (a.T-1)*a.KPEStride+a.KPEOff+a.RoPE
	if a.WQ.Rows > 0 {
		bad = bad || a.WQ.Rows != a.Heads*qk || len(a.QIn) < a.T*a.WQ.Cols
	} else {
		bad = bad || len(a.QIn) < a.T*a.Heads*qk
	}
	if err := a.WKV.Validate(); err != nil {
		panic(fmt.Sprintf("kernels: LatentAttention: kv_b: %v", err))
	}
	if err := a.WQ.Validate(); a.WQ.Rows > 0 && err != nil {
		panic(fmt.Sprintf("kernels: LatentAttention: q_b: %v", err))
	}
	if bad {
		panic(fmt.Sprintf("kernels: LatentAttention T %d past %d heads %d nope %d rope %d dv %d: wq [%d,%d], wkv [%d,%d], q %d, lat %d, kpe %d (stride %d at %d), k %d, v %d, kv %d, dst %d",
			a.T, a.Past, a.Heads, a.NoPE, a.RoPE, a.DV, a.WQ.Rows, a.WQ.Cols, a.WKV.Rows, a.WKV.Cols,
			len(a.QIn), len(a.Lat), len(a.KPE), a.KPEStride, a.KPEOff, len(a.K), len(a.V), len(a.KV), len(a.Dst)))
	}
}

// LatentAttention on a split backend goes to the prefill side as one piece
// of work where latentOnGPU says so: the bits are then those of the steps
// on that side. Otherwise each step goes where the rule sends it. The
// route meter counts a whole call as the GPU's attention, products and
// all.
func (s split) LatentAttention(ctx context.Context, a LatentAttn) error {
	la, ok := s.prefill.(LatentAttender)
	if !ok || !s.latentOnGPU(a) {
		return LatentSteps(ctx, s, a)
	}
	defer s.meter.time(true, kindAttention, a.T)()
	return la.LatentAttention(ctx, a)
}

// latentOnGPU is the split's rule for a whole latent attention: a prompt
// whose products would both go to the GPU, and, under Accelerate's rule,
// from StreamedMinPositions rows, for heads of AttnMinHeadWidth or wider,
// where T·(Past+T) reaches LatentMinPositions² (AttnMinPositions² when
// unset): only the latents and the cache cross the bus, not q, k and v.
func (s split) latentOnGPU(a LatentAttn) bool {
	if a.T < 2 || !s.onGPU(a.T, matIntensity(a.WKV), a.WKV) || a.WQ.Rows > 0 && !s.onGPU(a.T, matIntensity(a.WQ), a.WQ) {
		return false
	}
	r := s.rule
	if r == nil {
		return true
	}
	least := r.LatentMinPositions
	if least == 0 {
		least = r.AttnMinPositions
	}
	return a.T >= r.StreamedMinPositions && a.QK()+a.DV >= r.AttnMinHeadWidth && a.T*(a.Past+a.T) >= least*least
}
