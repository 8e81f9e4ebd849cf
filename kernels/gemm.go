package kernels

import "fmt"

// Gemm is a product of small float32 matrices that live in the engine's
// activations rather than in weights (the chunked delta rule's per-chunk
// products), row-major with leading dimensions:
//
//	C[i, j] (+)= Σ_p A[i, p] · B[p, j]    A: [M, K] (lda), B: [K, N] (ldb), C: [M, N] (ldc)
//
// With Acc the product is added to C, else it replaces it.
type Gemm struct {
	C, A, B       []float32
	LDC, LDA, LDB int
	M, K, N       int
	Acc           bool
}

// A Gemmer is a Backend with its own kernel for Gemm.
type Gemmer interface {
	Gemm(g Gemm)
}

// MatMulF32 runs g on be: be's kernel when it is a Gemmer, else GemmRef.
// Every element of C is one sum over p in order, whatever the kernel, so
// the results do not depend on threads. Shapes are the caller's contract:
// a mismatch panics.
func MatMulF32(be Backend, g Gemm) {
	g.mustShape()
	if gm, ok := be.(Gemmer); ok {
		gm.Gemm(g)
		return
	}
	GemmRef(g)
}

func (g Gemm) mustShape() {
	need := func(rows, cols, ld, have int) bool {
		return rows == 0 || cols == 0 || (ld >= cols && have >= (rows-1)*ld+cols)
	}
	if g.M < 0 || g.K < 0 || g.N < 0 || !need(g.M, g.K, g.LDA, len(g.A)) || !need(g.K, g.N, g.LDB, len(g.B)) || !need(g.M, g.N, g.LDC, len(g.C)) {
		panic(fmt.Sprintf("kernels: Gemm [%d,%d]·[%d,%d]: a %d (ld %d), b %d (ld %d), c %d (ld %d)",
			g.M, g.K, g.K, g.N, len(g.A), g.LDA, len(g.B), g.LDB, len(g.C), g.LDC))
	}
}

// GemmRef is the reference twin: one obvious loop per element.
func GemmRef(g Gemm) {
	g.mustShape()
	for i := 0; i < g.M; i++ {
		for j := 0; j < g.N; j++ {
			var s float32
			if g.Acc {
				s = g.C[i*g.LDC+j]
			}
			for p := 0; p < g.K; p++ {
				s += g.A[i*g.LDA+p] * g.B[p*g.LDB+j]
			}
			g.C[i*g.LDC+j] = s
		}
	}
}
