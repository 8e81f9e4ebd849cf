// The tiled attention kernel, written once over a vector type and included
// by each instruction set's file, which defines first:
//
//	ATTN_SUFFIX  name suffix (generic, avx2, avx512, neon)
//	ATTN_ATTR    the functions' target attribute (may be empty)
//	VF, VI, W    the float and int32 vector types and their lane count
//	NV           vectors per register block (R·NV accumulators fit the file)
//	VFMA(a,b,c)  a·b + c, fused where the ISA has it
//	VMAX(a,b)    lane-wise maximum
//	VBC(x)       x in every lane
//	HMAX, HSUM   (optional) horizontal maximum and sum
//
// Per call: the query rows [i0, i1) of head h, prescaled, and for each tile
// of DF_ATTN_BK keys the keys packed transposed ([qk][BK]) and the values
// padded to dvp = dv rounded up to 16 ([BK][dvp]), so that every vector
// load is aligned and every lane useful. Rows go R at a time: the scores of
// R rows × NV·W keys are R·NV accumulators over qk (NV key vectors and R
// broadcasts per step), then each row's online-softmax update, then
// o[R rows][NV·W columns of dv] += p · v the same way.
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kern_attn.h"

#define ATTN_CAT2(a, b) a##_##b
#define ATTN_CAT(a, b) ATTN_CAT2(a, b)
#define FN(name) ATTN_CAT(name, ATTN_SUFFIX)

#define R 4
#define KB (NV * W)

ATTN_ATTR static inline VF FN(bc)(float x) { return VBC(x); }

#ifndef HMAX
ATTN_ATTR static inline float FN(hmax)(VF v) {
	float r = v[0];
	for (int u = 1; u < W; u++) r = r > v[u] ? r : v[u];
	return r;
}
#define HMAX FN(hmax)
#endif
#ifndef HSUM
ATTN_ATTR static inline float FN(hsum)(VF v) {
	float r = v[0];
	for (int u = 1; u < W; u++) r += v[u];
	return r;
}
#define HSUM FN(hsum)
#endif

// vexp2 is 2^x for x ≤ 0 by Cephes' exp2f (round to an integer n with the
// 1.5·2^23 trick, a degree-6 polynomial for 2^(x−n)); below −126 it gives
// 2^−126 rather than 0, which the masked lanes then zero. Scores are kept
// in units of log2(e) (the queries are prescaled by it), so 2^x is e^s.
ATTN_ATTR static inline VF FN(vexp2)(VF x) {
	x = VMAX(x, FN(bc)(-126.0f));
	VF t = x + FN(bc)(12582912.0f); // low bits: n = round(x)
	VF r = x - (t - FN(bc)(12582912.0f));
	VF p = FN(bc)(1.535336188319500e-4f);
	p = VFMA(p, r, FN(bc)(1.339887440266574e-3f));
	p = VFMA(p, r, FN(bc)(9.618437357674640e-3f));
	p = VFMA(p, r, FN(bc)(5.550332471162809e-2f));
	p = VFMA(p, r, FN(bc)(2.402264791363012e-1f));
	p = VFMA(p, r, FN(bc)(6.931472028550421e-1f));
	VF y = VFMA(p, r, FN(bc)(1.0f));
	VI e = ((VI)t - (0x4B400000 - 127)) << 23;
	return y * (VF)e;
}

// pv adds p · v for n keys into nd vectors of R rows of o (row stride dvp).
// With few vectors per row (k3-tiny's dv of 16 is one AVX-512 vector) even
// and odd keys go to separate accumulators, so that 2·R·nd chains of FMAs
// hide their latency.
ATTN_ATTR static inline __attribute__((always_inline)) void FN(pv)(float *o, int64_t dvp, const float *vt, const float *p,
                                                                   int64_t n, const int nd) {
	VF acc[R][NV], acc2[R][NV];
	const int two = 2 * nd <= NV;
	for (int r = 0; r < R; r++)
		for (int u = 0; u < nd; u++) acc[r][u] = *(const VF *)(o + r * dvp + u * W), acc2[r][u] = (VF){0};
	int64_t j = 0;
	if (two)
		for (; j + 2 <= n; j += 2) {
			VF vv[NV], vw[NV];
			for (int u = 0; u < nd; u++) {
				vv[u] = *(const VF *)(vt + j * dvp + u * W);
				vw[u] = *(const VF *)(vt + (j + 1) * dvp + u * W);
			}
			for (int r = 0; r < R; r++) {
				VF b = FN(bc)(p[r * DF_ATTN_BK + j]), c = FN(bc)(p[r * DF_ATTN_BK + j + 1]);
				for (int u = 0; u < nd; u++) {
					acc[r][u] = VFMA(b, vv[u], acc[r][u]);
					acc2[r][u] = VFMA(c, vw[u], acc2[r][u]);
				}
			}
		}
	for (; j < n; j++) {
		VF vv[NV];
		for (int u = 0; u < nd; u++) vv[u] = *(const VF *)(vt + j * dvp + u * W);
		for (int r = 0; r < R; r++) {
			VF b = FN(bc)(p[r * DF_ATTN_BK + j]);
			for (int u = 0; u < nd; u++) acc[r][u] = VFMA(b, vv[u], acc[r][u]);
		}
	}
	for (int r = 0; r < R; r++)
		for (int u = 0; u < nd; u++) *(VF *)(o + r * dvp + u * W) = acc[r][u] + acc2[r][u];
}

// scores computes s[r][jb..jb+KB) = q_r · k_j for R rows (q: [R][qk]).
ATTN_ATTR static inline void FN(scores)(float *s, const float *q, const float *kt, int64_t qk, int64_t jb) {
	VF acc[R][NV];
	for (int r = 0; r < R; r++)
		for (int u = 0; u < NV; u++) acc[r][u] = (VF){0};
	for (int64_t c = 0; c < qk; c++) {
		VF kv[NV];
		for (int u = 0; u < NV; u++) kv[u] = *(const VF *)(kt + c * DF_ATTN_BK + jb + u * W);
		for (int r = 0; r < R; r++) {
			VF b = FN(bc)(q[r * qk + c]);
			for (int u = 0; u < NV; u++) acc[r][u] = VFMA(b, kv[u], acc[r][u]);
		}
	}
	for (int r = 0; r < R; r++)
		for (int u = 0; u < NV; u++) *(VF *)(s + r * DF_ATTN_BK + jb + u * W) = acc[r][u];
}

ATTN_ATTR void FN(df_attn_block)(const float *q, const float *k, const float *v, float *dst, int64_t past, int64_t nh,
                                 int64_t qk, int64_t dv, float scale, int64_t h, int64_t i0, int64_t i1,
                                 float *scratch) {
	enum { BK = DF_ATTN_BK, BQ = DF_ATTN_BQ };
	const int64_t dvp = (dv + 15) & ~(int64_t)15;
	float *kt = (float *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
	float *vt = kt + qk * BK, *qs = vt + BK * dvp, *o = qs + BQ * qk, *pr = o + BQ * dvp, *lv = pr + R * BK;
	float m[BQ];
	const int64_t nq = i1 - i0;
	const float scale2 = scale * 1.44269504088896341f;
	for (int64_t i = 0; i < BQ; i++) {
		if (i < nq) {
			const float *qi = q + ((i0 + i) * nh + h) * qk;
			for (int64_t c = 0; c < qk; c++) qs[i * qk + c] = qi[c] * scale2;
		} else {
			memset(qs + i * qk, 0, sizeof(float) * (size_t)qk);
		}
		m[i] = -INFINITY;
	}
	memset(o, 0, sizeof(float) * (size_t)(BQ * dvp));
	memset(lv, 0, sizeof(float) * (size_t)(BQ * W));
	VI iota;
	for (int u = 0; u < W; u++) iota[u] = u;
	const int64_t keys = past + i1;
	for (int64_t j0 = 0; j0 < keys; j0 += BK) {
		const int64_t nb = keys - j0 < BK ? keys - j0 : BK;
		for (int64_t j = 0; j < BK; j++) {
			if (j < nb) {
				const float *kj = k + ((j0 + j) * nh + h) * qk, *vj = v + ((j0 + j) * nh + h) * dv;
				for (int64_t c = 0; c < qk; c++) kt[c * BK + j] = kj[c];
				memcpy(vt + j * dvp, vj, sizeof(float) * (size_t)dv);
				for (int64_t d = dv; d < dvp; d++) vt[j * dvp + d] = 0;
			} else {
				for (int64_t c = 0; c < qk; c++) kt[c * BK + j] = 0;
				memset(vt + j * dvp, 0, sizeof(float) * (size_t)dvp);
			}
		}
		for (int64_t r0 = 0; r0 < nq; r0 += R) {
			const int64_t rn = nq - r0 < R ? nq - r0 : R;
			int64_t gn = past + i0 + r0 + rn - j0; // keys of the tile the group's last row sees
			if (gn <= 0) continue;
			if (gn > nb) gn = nb;
			const int64_t gw = (gn + KB - 1) / KB * KB;
			for (int64_t jb = 0; jb < gw; jb += KB) FN(scores)(pr, qs + r0 * qk, kt, qk, jb);
			for (int64_t r = 0; r < R; r++) {
				float *pw = pr + r * BK;
				const int64_t i = r0 + r;
				int64_t n = r < rn ? past + i0 + i + 1 - j0 : 0;
				if (n > nb) n = nb;
				if (n <= 0) {
					memset(pw, 0, sizeof(float) * (size_t)gw);
					continue;
				}
				const int64_t nw = (n + W - 1) / W * W;
				for (int64_t j = n; j < nw; j++) pw[j] = -INFINITY;
				VF mx = *(const VF *)pw;
				for (int64_t j = W; j < nw; j += W) mx = VMAX(mx, *(const VF *)(pw + j));
				float mnew = HMAX(mx);
				if (m[i] > mnew) mnew = m[i];
				const VF mb = FN(bc)(mnew);
				VF sum = (VF){0};
				for (int64_t j = 0; j < nw; j += W) {
					VF p = FN(vexp2)(*(const VF *)(pw + j) - mb);
					if (j + W > n) p = (VF)((VI)p & (VI)(iota < ((VI){0} + (int)(n - j))));
					sum += p;
					*(VF *)(pw + j) = p;
				}
				for (int64_t j = nw; j < gw; j++) pw[j] = 0;
				VF *li = (VF *)(lv + i * W);
				if (mnew != m[i]) { // rescale by 2^(m − m'): 0 on the first tile
					const VF cb = FN(vexp2)(FN(bc)(m[i] - mnew));
					*li *= cb;
					for (int64_t d = 0; d < dvp; d += W) *(VF *)(o + i * dvp + d) *= cb;
				}
				*li += sum;
				m[i] = mnew;
			}
			for (int64_t d0 = 0; d0 < dvp; d0 += KB) {
				float *od = o + r0 * dvp + d0;
				const float *vd = vt + d0;
				int64_t nd = (dvp - d0) / W;
				if (nd >= NV) FN(pv)(od, dvp, vd, pr, gn, NV);
				else if (nd == 1) FN(pv)(od, dvp, vd, pr, gn, 1);
#if NV > 2
				else if (nd == 2) FN(pv)(od, dvp, vd, pr, gn, 2);
#endif
#if NV > 3
				else if (nd == 3) FN(pv)(od, dvp, vd, pr, gn, 3);
#endif
			}
		}
	}
	for (int64_t i = 0; i < nq; i++) {
		const float inv = 1.0f / HSUM(*(const VF *)(lv + i * W));
		float *di = dst + ((i0 + i) * nh + h) * dv;
		for (int64_t d = 0; d < dv; d++) di[d] = o[i * dvp + d] * inv;
	}
}

// gemm_rows computes rows (a constant after inlining) rows of c over the
// full vectors of n, then the columns past them one at a time.
ATTN_ATTR static inline __attribute__((always_inline)) void FN(gemm_rows)(int64_t k, int64_t n, const float *a,
                                                                          int64_t lda, const float *b, int64_t ldb,
                                                                          float *c, int64_t ldc, int acc,
                                                                          const int rows) {
	int64_t j = 0;
	for (; j + W <= n; j += W) {
		VF s[R];
		for (int r = 0; r < rows; r++) {
			s[r] = (VF){0};
			if (acc) memcpy(&s[r], c + r * ldc + j, sizeof(VF));
		}
		for (int64_t p = 0; p < k; p++) {
			VF bv;
			memcpy(&bv, b + p * ldb + j, sizeof bv);
			for (int r = 0; r < rows; r++) s[r] = VFMA(FN(bc)(a[r * lda + p]), bv, s[r]);
		}
		for (int r = 0; r < rows; r++) memcpy(c + r * ldc + j, &s[r], sizeof(VF));
	}
	for (; j < n; j++)
		for (int r = 0; r < rows; r++) {
			float s = acc ? c[r * ldc + j] : 0;
			for (int64_t p = 0; p < k; p++) s = fmaf(a[r * lda + p], b[p * ldb + j], s);
			c[r * ldc + j] = s;
		}
}

ATTN_ATTR void FN(df_gemm)(int64_t m, int64_t k, int64_t n, const float *a, int64_t lda, const float *b, int64_t ldb,
                           float *c, int64_t ldc, int acc) {
	int64_t i = 0;
	for (; i + R <= m; i += R) FN(gemm_rows)(k, n, a + i * lda, lda, b, ldb, c + i * ldc, ldc, acc, R);
	for (; i < m; i++) FN(gemm_rows)(k, n, a + i * lda, lda, b, ldb, c + i * ldc, ldc, acc, 1);
}

// The gated delta rule of one head (kernels/deltarule.go has the
// recurrence). Columns of the state are independent recurrences, so the
// columns go nv·W at a time (a stripe: D rows × nv vectors, 32 KiB for
// K3's D of 128 on AVX-512, resident in L1 over the tokens), each through
// all T tokens with δ and o in registers. Token 0's decay and δ read s0
// and write s; each later sweep over the stripe's rows applies token t's
// δ to a row, adds it to o_t, then applies token t+1's decay and adds the
// row to δ_{t+1}, so the state is read and written once a token. Per
// element the operations are those of one token at a time, in the same
// order, whatever T is.
ATTN_ATTR static inline VF FN(ldu)(const float *p) {
	VF x;
	memcpy(&x, p, sizeof x);
	return x;
}

ATTN_ATTR static inline void FN(stu)(float *p, VF x) { memcpy(p, &x, sizeof x); }

ATTN_ATTR static inline __attribute__((always_inline)) void FN(dr_stripe)(
    float *o, const float *q, const float *k, const float *v, const float *decay, const float *beta, const float *s0,
    float *s, int64_t T, int64_t d, int64_t stride, int64_t dstride, int64_t bstride, int64_t j0, const int nv) {
	VF dl[NV], ac[NV], nx[NV];
	for (int u = 0; u < nv; u++) dl[u] = FN(ldu)(v + j0 + u * W), nx[u] = (VF){0};
	for (int64_t i = 0; i < d; i++) {
		const VF dc = FN(bc)(decay[i]), kn = FN(bc)(-k[i]);
		for (int u = 0; u < nv; u++) {
			VF r = FN(ldu)(s0 + i * d + j0 + u * W) * dc;
			FN(stu)(s + i * d + j0 + u * W, r);
			dl[u] = VFMA(kn, r, dl[u]);
		}
	}
	for (int64_t t = 0; t < T; t++) {
		const float *qt = q + t * stride, *kt = k + t * stride;
		const VF bt = FN(bc)(beta[t * bstride]);
		for (int u = 0; u < nv; u++) dl[u] *= bt, ac[u] = (VF){0};
		if (t + 1 < T) {
			const float *kn1 = k + (t + 1) * stride, *dc1 = decay + (t + 1) * dstride;
			for (int u = 0; u < nv; u++) nx[u] = FN(ldu)(v + (t + 1) * stride + j0 + u * W);
			for (int64_t i = 0; i < d; i++) {
				const VF ki = FN(bc)(kt[i]), qi = FN(bc)(qt[i]), dc = FN(bc)(dc1[i]), kn = FN(bc)(-kn1[i]);
				for (int u = 0; u < nv; u++) {
					float *p = s + i * d + j0 + u * W;
					VF r = VFMA(ki, dl[u], FN(ldu)(p));
					ac[u] = VFMA(qi, r, ac[u]);
					r = r * dc;
					nx[u] = VFMA(kn, r, nx[u]);
					FN(stu)(p, r);
				}
			}
		} else {
			for (int64_t i = 0; i < d; i++) {
				const VF ki = FN(bc)(kt[i]), qi = FN(bc)(qt[i]);
				for (int u = 0; u < nv; u++) {
					float *p = s + i * d + j0 + u * W;
					VF r = VFMA(ki, dl[u], FN(ldu)(p));
					ac[u] = VFMA(qi, r, ac[u]);
					FN(stu)(p, r);
				}
			}
		}
		for (int u = 0; u < nv; u++) {
			FN(stu)(o + t * stride + j0 + u * W, ac[u]);
			dl[u] = nx[u];
		}
	}
}

// dr_col is dr_stripe for one column j (the columns past the last full
// vector), in scalar arithmetic.
ATTN_ATTR static void FN(dr_col)(float *o, const float *q, const float *k, const float *v, const float *decay,
                                 const float *beta, const float *s0, float *s, int64_t T, int64_t d, int64_t stride,
                                 int64_t dstride, int64_t bstride, int64_t j) {
	float dl = v[j], nx = 0;
	for (int64_t i = 0; i < d; i++) {
		float r = s0[i * d + j] * decay[i];
		s[i * d + j] = r;
		dl -= k[i] * r;
	}
	for (int64_t t = 0; t < T; t++) {
		const float *qt = q + t * stride, *kt = k + t * stride;
		const int more = t + 1 < T;
		const float *kn1 = more ? k + (t + 1) * stride : k, *dc1 = more ? decay + (t + 1) * dstride : decay;
		float ac = 0;
		dl *= beta[t * bstride];
		if (more) nx = v[(t + 1) * stride + j];
		for (int64_t i = 0; i < d; i++) {
			float r = s[i * d + j] + kt[i] * dl;
			ac += qt[i] * r;
			if (more) {
				r *= dc1[i];
				nx -= kn1[i] * r;
			}
			s[i * d + j] = r;
		}
		o[t * stride + j] = ac;
		dl = nx;
	}
}

ATTN_ATTR void FN(df_delta_rule)(float *o, const float *q, const float *k, const float *v, const float *decay,
                                 const float *beta, const float *s0, float *s, int64_t T, int64_t d, int64_t stride,
                                 int64_t dstride, int64_t bstride) {
	int64_t j = 0;
	for (; j + NV * W <= d; j += NV * W) FN(dr_stripe)(o, q, k, v, decay, beta, s0, s, T, d, stride, dstride, bstride, j, NV);
	const int64_t rest = (d - j) / W;
	if (rest == 1) FN(dr_stripe)(o, q, k, v, decay, beta, s0, s, T, d, stride, dstride, bstride, j, 1);
#if NV > 2
	else if (rest == 2) FN(dr_stripe)(o, q, k, v, decay, beta, s0, s, T, d, stride, dstride, bstride, j, 2);
#endif
#if NV > 3
	else if (rest == 3) FN(dr_stripe)(o, q, k, v, decay, beta, s0, s, T, d, stride, dstride, bstride, j, 3);
#endif
	for (j += rest * W; j < d; j++) FN(dr_col)(o, q, k, v, decay, beta, s0, s, T, d, stride, dstride, bstride, j);
}

// The causal short convolution + SiLU (kernels/shortconv.go): channels
// [c0, c1) of x [T, P], weights w [P, K], the window st [P, K−1]. Channels
// go DF_CONV_CB at a time: the chunk's weights transposed to tap-major on
// the stack (one vector per tap), then token by token its vectors, each
// reading the K rows of x (or the window, before token 0) that end at t.
// Every lane, the tail's included (loaded into a zero-padded vector), runs
// the same vector arithmetic, so a channel's bits do not depend on where
// the caller's range puts it, nor on T.
#define DF_CONV_CB 256

// ldn loads n ≤ W floats at stride sp into the low lanes of a zeroed
// vector: a data move, no arithmetic.
ATTN_ATTR static inline VF FN(ldn)(const float *p, int64_t sp, int64_t n) {
	float b[W] = {0};
	for (int64_t u = 0; u < n; u++) b[u] = p[u * sp];
	return FN(ldu)(b);
}

// vexpneg is e^a for a ≤ 0 by Cephes' expf (n = round(a·log2 e), the
// remainder a − n·ln 2 in two parts, a degree-5 polynomial): about 1 ulp,
// where 2^(a·log2 e) would lose |a|·2^−24 to the product's rounding. It
// is 0 where e^a is below fp32's normal range (a < −87.3).
ATTN_ATTR static inline VF FN(vexpneg)(VF a) {
	const VF one = FN(bc)(1.0f);
	const VI live = (VI)(a >= FN(bc)(-87.33654f));
	const VF x0 = VMAX(a, FN(bc)(-87.33654f));
	VF t = VFMA(x0, FN(bc)(1.44269504088896341f), FN(bc)(12582912.0f)); // low bits: n = round(a·log2 e)
	const VF n = t - FN(bc)(12582912.0f);
	VF x = VFMA(n, FN(bc)(-0.693359375f), x0);
	x = VFMA(n, FN(bc)(2.12194440e-4f), x);
	VF p = FN(bc)(1.9875691500e-4f);
	p = VFMA(p, x, FN(bc)(1.3981999507e-3f));
	p = VFMA(p, x, FN(bc)(8.3334519073e-3f));
	p = VFMA(p, x, FN(bc)(4.1665795894e-2f));
	p = VFMA(p, x, FN(bc)(1.6666665459e-1f));
	p = VFMA(p, x, FN(bc)(5.0000001201e-1f));
	VF y = VFMA(p, x * x, x + one);
	const VI e2n = ((VI)t - (0x4B400000 - 127)) << 23;
	return (VF)((VI)(y * (VF)e2n) & live);
}

// vsigm is σ(s) = 1/(1+e^−|s|) for s ≥ 0 and e^−|s|/(1+e^−|s|) below, so
// that e = e^−|s| ≤ 1 never overflows: large s give σ = 1, and a large
// negative s gives 0 (e is 0 past fp32's normal range), never NaN.
ATTN_ATTR static inline VF FN(vsigm)(VF s) {
	const VF one = FN(bc)(1.0f), ns = -s;
	const VF e = FN(vexpneg)(-VMAX(s, ns));
	const VI pos = (VI)(s >= FN(bc)(0.0f));
	const VF num = (VF)(((VI)one & pos) | ((VI)e & ~pos));
	return num / (one + e);
}

// vsilu is s·σ(s).
ATTN_ATTR static inline VF FN(vsilu)(VF s) { return s * FN(vsigm)(s); }

ATTN_ATTR void FN(df_short_conv)(float *y, const float *x, const float *w, float *st, int64_t T, int64_t P,
                                 int64_t K, int64_t c0, int64_t c1) {
	const int64_t ks = K - 1;
	for (int64_t cc = c0; cc < c1; cc += DF_CONV_CB) {
		const int64_t nc = c1 - cc < DF_CONV_CB ? c1 - cc : DF_CONV_CB;
		const int64_t nvec = (nc + W - 1) / W;
		float wt[K][DF_CONV_CB + W]; // tap-major, zero past nc
		for (int64_t j = 0; j < K; j++) {
			for (int64_t u = 0; u < nc; u++) wt[j][u] = w[(cc + u) * K + j];
			for (int64_t u = nc; u < nvec * W; u++) wt[j][u] = 0;
		}
		for (int64_t t = 0; t < T; t++) {
			for (int64_t v = 0; v < nvec; v++) {
				const int64_t c = cc + v * W, m = nc - v * W < W ? nc - v * W : W;
				VF acc = FN(bc)(0.0f);
				for (int64_t j = 0; j < K; j++) {
					const int64_t tt = t - ks + j; // < 0: the window's slot ks + tt
					VF in;
					if (tt >= 0)
						in = m == W ? FN(ldu)(x + tt * P + c) : FN(ldn)(x + tt * P + c, 1, m);
					else
						in = FN(ldn)(st + c * ks + ks + tt, ks, m);
					acc = VFMA(in, FN(ldu)(&wt[j][v * W]), acc);
				}
				const VF o = FN(vsilu)(acc);
				if (m == W)
					FN(stu)(y + t * P + c, o);
				else
					for (int64_t u = 0; u < m; u++) y[t * P + c + u] = o[u];
			}
		}
		// The new window: slot i is time T−ks+i, the old window's slot
		// i+T before token 0 (ahead of i, so in place is safe).
		for (int64_t c = cc; c < cc + nc; c++)
			for (int64_t i = 0; i < ks; i++) {
				const int64_t tt = T - ks + i;
				st[c * ks + i] = tt >= 0 ? x[tt * P + c] : st[c * ks + ks + tt];
			}
	}
}
#undef DF_CONV_CB

// df_elementwise (kernels/elementwise.go): dst[i] = op(x[i]) for n
// floats, e^x (x ≤ 0: the decays) or σ(x), a vector at a time; the tail
// goes through the same vector arithmetic (zero-padded), so an element's
// bits do not depend on its place in the call, nor on n.
ATTN_ATTR void FN(df_elementwise)(int op, float *dst, const float *x, int64_t n) {
	for (int64_t i = 0; i < n; i += W) {
		const int64_t m = n - i < W ? n - i : W;
		const VF in = m == W ? FN(ldu)(x + i) : FN(ldn)(x + i, 1, m);
		const VF o = op == DF_ELEM_EXP ? FN(vexpneg)(in) : FN(vsigm)(in);
		if (m == W)
			FN(stu)(dst + i, o);
		else
			for (int64_t u = 0; u < m; u++) dst[i + u] = o[u];
	}
}

#undef R
#undef KB
#undef FN
