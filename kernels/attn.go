package kernels

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
)

// Causal softmax attention in tiles (the flash-attention formulation): the
// T new positions of a layer, Past cached ones before them, every head
// independent. Each task is one head × one block of AttnBlockRows query
// rows; it walks the visible keys AttnBlockKeys at a time, keeping per row
// the running maximum m, the running sum l of e^{s−m} and the unnormalised
// output o, rescaled by e^{m_old−m_new} when the maximum grows:
//
//	s_j = scale · q·k_j            (j ≤ Past + i: causal)
//	m'  = max(m, max_j s_j)
//	l'  = l·e^{m−m'} + Σ_j e^{s_j−m'}
//	o'  = o·e^{m−m'} + Σ_j e^{s_j−m'} · v_j
//	out = o / l                    (after the last tile)
//
// No score matrix exists beyond one tile of it, so memory is linear in T
// and the keys of a tile are reused by every row of the block while they
// sit in cache.

// Tile shape, shared by every implementation (kern_attn.h has the same).
const (
	AttnBlockRows = 256 // query rows per task
	AttnBlockKeys = 64  // keys per tile
)

// Attn is one attention call: the heads of one layer over T new positions.
//
//	Q: [T, Heads, QK]; K: [Past+T, Heads, QK]; V: [Past+T, Heads, DV] → Dst: [T, Heads, DV]
//
// Position i of the new ones (absolute Past+i) attends to keys 0..Past+i.
type Attn struct {
	Dst, Q, K, V           []float32
	T, Past, Heads, QK, DV int
	Scale                  float32
}

// An Attender is a Backend that runs attention with its own kernels (SIMD
// on the CPU, a shader on a GPU). Attention computes a.Dst, checking ctx
// between tasks; a cancelled call returns ctx's error with Dst torn.
type Attender interface {
	Attention(ctx context.Context, a Attn) error
}

// Attention runs a on be: through be's own kernels when it is an Attender,
// else through the pure-Go tiles on one goroutine per thread of be. Shapes
// are the caller's contract: a mismatch panics.
func Attention(ctx context.Context, be Backend, a Attn) error {
	a.mustShape()
	if at, ok := be.(Attender); ok {
		return at.Attention(ctx, a)
	}
	return attentionGo(ctx, a, Threads(be))
}

func (a Attn) mustShape() {
	n := a.Past + a.T
	if a.T < 0 || a.Past < 0 || a.Heads <= 0 || a.QK <= 0 || a.DV <= 0 ||
		len(a.Q) < a.T*a.Heads*a.QK || len(a.K) < n*a.Heads*a.QK ||
		len(a.V) < n*a.Heads*a.DV || len(a.Dst) < a.T*a.Heads*a.DV {
		panic(fmt.Sprintf("kernels: Attention T %d past %d heads %d qk %d dv %d: q %d, k %d, v %d, dst %d",
			a.T, a.Past, a.Heads, a.QK, a.DV, len(a.Q), len(a.K), len(a.V), len(a.Dst)))
	}
}

// attnMinWork is the work (multiply-adds) below which a call runs on the
// caller's goroutine alone: a decode token of a tiny model.
const attnMinWork = 1 << 18

// runAttention runs the tasks of a (head × query block) on up to workers
// goroutines, the caller included, each with its own scratch of scratch
// floats. Blocks are handed out last first: the causal ones at the end
// cost the most, so the cheap ones fill the gaps at the end. ctx is
// checked before every task.
func runAttention(ctx context.Context, a Attn, workers, scratch int, block func(scr []float32, h, i0, i1 int)) error {
	blocks := (a.T + AttnBlockRows - 1) / AttnBlockRows
	tasks := blocks * a.Heads
	if tasks == 0 {
		return ctx.Err()
	}
	if a.T*(a.Past+a.T)*a.Heads*(a.QK+a.DV) < attnMinWork {
		workers = 1
	}
	workers = max(1, min(workers, tasks))
	var next atomic.Int64
	var stop atomic.Bool
	work := func() {
		scr := make([]float32, scratch)
		for !stop.Load() {
			i := int(next.Add(1)) - 1
			if i >= tasks {
				return
			}
			select {
			case <-ctx.Done():
				stop.Store(true)
				return
			default:
			}
			b := blocks - 1 - i/a.Heads
			i0 := b * AttnBlockRows
			block(scr, i%a.Heads, i0, min(a.T, i0+AttnBlockRows))
		}
	}
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work()
		}()
	}
	work()
	wg.Wait()
	if stop.Load() {
		return ctx.Err()
	}
	return nil
}

// attentionGo is the plain-Go implementation of the tiles, for backends
// without kernels of their own.
func attentionGo(ctx context.Context, a Attn, workers int) error {
	return runAttention(ctx, a, workers, attnGoScratch(a.DV), func(scr []float32, h, i0, i1 int) {
		attnBlockGo(a, scr, h, i0, i1)
	})
}

// attnGoScratch is the scratch attnBlockGo needs: o [rows, dv], m, l [rows],
// one tile of scores.
func attnGoScratch(dv int) int { return AttnBlockRows*(dv+2) + AttnBlockKeys }

// attnBlockGo computes rows [i0, i1) of head h, one row at a time over each
// tile of keys (the tile order and the online softmax of the SIMD kernels;
// their register blocking aside).
func attnBlockGo(a Attn, scr []float32, h, i0, i1 int) {
	nh, qk, dv := a.Heads, a.QK, a.DV
	rows := i1 - i0
	o, m, l, s := scr[:rows*dv], scr[AttnBlockRows*dv:][:rows], scr[AttnBlockRows*(dv+1):][:rows], scr[AttnBlockRows*(dv+2):]
	clear(o)
	for r := range m {
		m[r], l[r] = float32(math.Inf(-1)), 0
	}
	keys := a.Past + i1
	for j0 := 0; j0 < keys; j0 += AttnBlockKeys {
		for r := 0; r < rows; r++ {
			n := min(AttnBlockKeys, a.Past+i0+r+1-j0) // keys of this tile row r sees
			if n <= 0 {
				continue
			}
			qr := a.Q[((i0+r)*nh+h)*qk:][:qk]
			mx := m[r]
			for j := 0; j < n; j++ {
				kj := a.K[((j0+j)*nh+h)*qk:][:qk]
				var d float32
				for c, x := range qr {
					d += x * kj[c]
				}
				s[j] = d * a.Scale
				mx = max(mx, s[j])
			}
			corr := float32(math.Exp(float64(m[r] - mx)))
			or := o[r*dv : (r+1)*dv]
			for i := range or {
				or[i] *= corr
			}
			sum := float32(0)
			for j := 0; j < n; j++ {
				p := float32(math.Exp(float64(s[j] - mx)))
				sum += p
				vj := a.V[((j0+j)*nh+h)*dv:][:dv]
				for i, x := range vj {
					or[i] += p * x
				}
			}
			m[r], l[r] = mx, l[r]*corr+sum
		}
	}
	for r := 0; r < rows; r++ {
		inv := 1 / l[r]
		dst := a.Dst[((i0+r)*nh+h)*dv:][:dv]
		for i, x := range o[r*dv : (r+1)*dv] {
			dst[i] = x * inv
		}
	}
}

// Attention on a split backend runs where its batches run: a prompt's
// attention on the prefill side (a GPU), a decode token's on the decode
// side. The keys and values are never resident on a GPU (the cache grows
// in host memory), so Accelerate's rule treats them as streamed.
func (s split) Attention(ctx context.Context, a Attn) error {
	be := s.decode
	gpu := s.attnOnGPU(a)
	if gpu {
		be = s.prefill
	}
	if a.T > 1 {
		defer s.meter.time(gpu, kindAttention, a.T)()
	}
	return Attention(ctx, be, a)
}

// attnOnGPU is the split's rule for a's side: every prompt's on a plain
// split; under Accelerate's rule only from StreamedMinPositions rows, for
// heads of AttnMinHeadWidth or wider, where T·(Past+T) reaches
// AttnMinPositions².
func (s split) attnOnGPU(a Attn) bool {
	if s.rule == nil {
		return a.T > 1
	}
	r := s.rule
	return a.T >= r.StreamedMinPositions && a.QK+a.DV >= r.AttnMinHeadWidth && a.T*(a.Past+a.T) >= r.AttnMinPositions*r.AttnMinPositions
}
