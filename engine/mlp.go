package engine

import (
	"github.com/deltafin/deltafin/kernels"
)

// ffn is the gated MLP shared by the dense layers, the shared experts and
// the routed experts: out = down · act(gate·x, up·x), where act is SiTU (K3)
// or SiLU (Kimi-Linear).
//
//	x: [T, D] → out: [T, D]; f.W1 gate and f.W3 up [I, D], f.W2 down [D, I]
func (m *Model) ffn(be kernels.Backend, out []float32, f kernels.Expert, x []float32, T int) {
	be.ExpertFFN(out, f, m.cfg.Act, x, T)
}
