package kernels_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/kernels"
	"github.com/deltafin/deltafin/kernels/conformance"
)

// A latent attention whose shapes disagree panics, naming them, before any
// work: kv_b's rows not heads × (nope + dv), a cache too short, kpe
// columns past their row.
func TestLatentAttentionRejectsBadShapes(t *testing.T) {
	t.Parallel()
	c := conformance.LatentCases()[0]
	for name, spoil := range map[string]func(a *kernels.LatentAttn){
		"kv_b rows":   func(a *kernels.LatentAttn) { a.WKV.Rows--; a.WKV.Data = a.WKV.Data[:a.WKV.Rows*a.WKV.Cols*2] },
		"short cache": func(a *kernels.LatentAttn) { a.K = a.K[:len(a.K)-1] },
		"kpe columns": func(a *kernels.LatentAttn) { a.KPEOff++ },
		"q_b bytes":   func(a *kernels.LatentAttn) { a.WQ.Data = a.WQ.Data[1:] },
	} {
		t.Run(name, func(t *testing.T) {
			a := conformance.NewLatent(rand.New(rand.NewPCG(1, 2)), c)
			spoil(&a)
			defer func() { require.Contains(t, fmt.Sprint(recover()), "kernels: LatentAttention") }()
			_ = kernels.LatentAttention(t.Context(), kernels.Ref(), a)
		})
	}
}
