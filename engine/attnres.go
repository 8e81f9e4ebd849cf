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
// over the raw values v_i (each [H]), with pw = proj ⊙ norm (fused):
// s_i = rsqrt(mean(v_i²) + eps) · Σ pw·v_i, so that each value is read
// once for both sums and no normalised key is written. The sums run in
// four interleaved partial sums (dotSq): one fp32 chain per sum was
// latency-bound, most of this mix's time, itself an eighth of a k3-tiny
// prefill. Prompts and decode steps both come through here, so they
// agree.
func attnResMix(dst []float32, values [][]float32, pw []float32, eps float32) {
	var scores [8]float32
	sc := scores[:0]
	if len(values) > len(scores) {
		sc = make([]float32, 0, len(values))
	}
	for _, v := range values {
		dot, ss := dotSq(pw, v)
		sc = append(sc, dot*rsqrt(ss/float32(len(v))+eps))
	}
	softmax(sc)
	clear(dst)
	for i, v := range values {
		a := sc[i]
		for d, x := range v {
			dst[d] += a * x
		}
	}
}

// fused is proj ⊙ norm, attnResMix's pw.
func (w attnResWeights) fused() []float32 {
	pw := make([]float32, len(w.proj))
	for i, p := range w.proj {
		pw[i] = p * w.norm[i]
	}
	return pw
}

// dotSq returns Σ pw·v and Σ v², each as four partial sums over the
// indices mod 4, added pairwise at the end: independent chains of
// multiply-adds instead of one.
func dotSq(pw, v []float32) (dot, ss float32) {
	var d0, d1, d2, d3, s0, s1, s2, s3 float32
	pw = pw[:len(v)]
	i := 0
	for ; i+4 <= len(v); i += 4 {
		x0, x1, x2, x3 := v[i], v[i+1], v[i+2], v[i+3]
		d0 += pw[i] * x0
		d1 += pw[i+1] * x1
		d2 += pw[i+2] * x2
		d3 += pw[i+3] * x3
		s0 += x0 * x0
		s1 += x1 * x1
		s2 += x2 * x2
		s3 += x3 * x3
	}
	for ; i < len(v); i++ {
		d0 += pw[i] * v[i]
		s0 += v[i] * v[i]
	}
	return (d0 + d1) + (d2 + d3), (s0 + s1) + (s2 + s3)
}

// attnResRows mixes every position of a batch: values are [T, H] each and
// dst is [T, H].
func attnResRows(dst []float32, values [][]float32, w attnResWeights, eps float32, H int) {
	// Positions are independent: a prompt's are spread over the cores.
	T := len(dst) / H
	pw := w.fused()
	parallelHeads(T, headSplit{}.workers(len(dst)*4*len(values)), func(t0, t1 int) {
		row := make([][]float32, len(values))
		for o := t0 * H; o < t1*H; o += H {
			for i, v := range values {
				row[i] = v[o : o+H]
			}
			attnResMix(dst[o:o+H], row, pw, eps)
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
