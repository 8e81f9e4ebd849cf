package engine

// Block Attention Residuals (docs/MODEL.md §5.3). Instead of one
// residual stream, a layer's input is a softmax-weighted mix of the completed
// block sums (anchors) and the running sum of the current block, scored by a
// learned pseudo-query against RMS-normalised keys. Kimi-Linear has no
// AttnRes and uses the plain residual stream.

// attnResWeights are one mix's parameters.
type attnResWeights struct {
	norm []float32 // [H] key RMSNorm weight
	proj []float32 // [H] pseudo-query (stored [1, H])
}

// attnResMix computes, for one position,
//
//	s_i = proj · RMSNorm_norm(v_i)   α = softmax(s)   dst = Σ_i α_i · v_i
//
// over the raw values v_i (each [H]); key is scratch of [H].
func attnResMix(dst []float32, values [][]float32, w attnResWeights, eps float32, key []float32) {
	scores := make([]float32, len(values))
	for i, v := range values {
		rmsNorm(key, v, w.norm, eps)
		var s float32
		for d, k := range key {
			s += w.proj[d] * k
		}
		scores[i] = s
	}
	softmax(scores)
	clear(dst)
	for i, v := range values {
		a := scores[i]
		for d, x := range v {
			dst[d] += a * x
		}
	}
}

// attnResRows mixes every position of a batch: values are [T, H] each and
// dst is [T, H].
func attnResRows(dst []float32, values [][]float32, w attnResWeights, eps float32, H int) {
	// Positions are independent: a prompt's are spread over the cores.
	T := len(dst) / H
	parallelHeads(T, headSplit{}.workers(len(dst)*4*len(values)), func(t0, t1 int) {
		key := make([]float32, H)
		row := make([][]float32, len(values))
		for o := t0 * H; o < t1*H; o += H {
			for i, v := range values {
				row[i] = v[o : o+H]
			}
			attnResMix(dst[o:o+H], row, w, eps, key)
		}
	})
}

// mixRows is the AttnRes mix of the block sums and the partial sum over
// rows [t0, t1) (the mix is row by row): [t1−t0, H]. A pass mixes all its
// rows; a prompt attending chunk by chunk, a chunk's (attend.go).
func (m *Model) mixRows(blocks [][]float32, partial []float32, res attnResWeights, t0, t1 int) []float32 {
	c := m.cfg
	H := c.Hidden
	if c.AttnResBlock == 0 || len(blocks) == 0 {
		return partial[t0*H : t1*H]
	}
	rows := make([][]float32, 0, len(blocks)+1)
	for _, b := range blocks {
		rows = append(rows, b[t0*H:t1*H])
	}
	dst := make([]float32, (t1-t0)*H)
	attnResRows(dst, append(rows, partial[t0*H:t1*H]), res, c.Eps, H)
	return dst
}
