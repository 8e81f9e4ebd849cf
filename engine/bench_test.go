package engine

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/deltafin/deltafin/kernels"
)

// kernelFloor times the matrix work one decode step cannot avoid: one
// MatVec of every spine matrix and top-k ExpertFFN calls per MoE layer.
func kernelFloor(m *Model, iters int) time.Duration {
	c, be := m.cfg, m.backend
	var mats []kernels.Matrix
	var ffns []kernels.Expert
	for i, lw := range m.w.layers {
		if k := lw.kda; k != nil {
			mats = append(mats, k.qProj, k.kProj, k.vProj, k.fA, k.fB, k.bProj, k.oProj)
			if c.FullRankGate {
				mats = append(mats, k.gProj)
			} else {
				mats = append(mats, k.gA, k.gB)
			}
		}
		if a := lw.mla; a != nil {
			mats = append(mats, a.kvA, a.kvB, a.oProj)
			if c.QLoRA > 0 {
				mats = append(mats, a.qA, a.qB)
			} else {
				mats = append(mats, a.qProj)
			}
			if a.gProj != nil {
				mats = append(mats, *a.gProj)
			}
		}
		if lw.mlp != nil {
			ffns = append(ffns, *lw.mlp)
		}
		if e := lw.moe; e != nil {
			mats = append(mats, e.router)
			if c.Latent > 0 {
				mats = append(mats, e.down, e.up)
			}
			if e.shared != nil {
				ffns = append(ffns, *e.shared)
			}
			ids := make([]int, c.TopK)
			for j := range ids {
				ids[j] = j
			}
			batch, _ := m.experts.acquire(context.Background(), i, ids, ids)
			for j := range ids {
				x, _ := batch.expert(context.Background(), j)
				ffns = append(ffns, x)
			}
		}
	}
	mats = append(mats, m.w.lmHead)
	x := make([]float32, 1<<16)
	y := make([]float32, 1<<18)
	start := time.Now()
	for range iters {
		for _, w := range mats {
			be.MatVec(y[:w.Rows], w, x[:w.Cols])
		}
		for _, f := range ffns {
			be.ExpertFFN(y[:f.W2.Rows], f, c.Act, x[:f.W1.Cols], 1)
		}
	}
	return time.Since(start)
}

// BenchmarkDecodeK3Tiny measures one greedy decode step on the K3 tiny
// model and reports it as a ratio to the kernel floor measured in the same
// run: how much the engine's own work adds to the matrix products.
func BenchmarkDecodeK3Tiny(b *testing.B) {
	m, err := Open(b.Context(), filepath.Join("..", "testdata", "k3-tiny"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	s := m.NewSession()
	if _, err := s.Forward(b.Context(), []int{1, 2, 3, 4, 5, 6, 7, 8}, false); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if _, err := s.Forward(b.Context(), []int{(i * 37) % 768}, false); err != nil {
			b.Fatal(err)
		}
	}
	step := time.Since(start)
	b.StopTimer()
	floor := kernelFloor(m, b.N)
	b.ReportMetric(float64(b.N)/step.Seconds(), "tok/s")
	b.ReportMetric(step.Seconds()/floor.Seconds(), "x-kernel-floor")
}

// BenchmarkPrefillK3Tiny prefills a 1,024-token prompt on the K3 tiny
// model in a fresh session per iteration, on the default CPU backend: at
// a hidden size of 128 the products are small, so the elementwise work
// (short conv, gates, decays, norms) shows as it does beside GPU products.
func BenchmarkPrefillK3Tiny(b *testing.B) {
	m, err := Open(b.Context(), filepath.Join("..", "testdata", "k3-tiny"), Options{NoSpec: true})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	ids := make([]int, 1024)
	for i := range ids {
		ids[i] = (i*37 + 11) % 768
	}
	b.ResetTimer()
	for range b.N {
		if _, err := m.NewSession().Forward(b.Context(), ids, false); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(ids))/b.Elapsed().Seconds(), "tok/s")
}
