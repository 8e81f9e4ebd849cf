//go:build cgo

// AVX2+FMA+F16C row kernels. They are compiled with target attributes so the
// rest of the package stays baseline x86-64; fast.go only selects them after
// golang.org/x/sys/cpu has confirmed the CPU (and OS) support them.
#include "kern.h"

#include <immintrin.h>

#define AVX2 __attribute__((target("avx2,fma,f16c")))

AVX2 static inline float hsum(__m256 v) {
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

AVX2 static inline __m256 ld_bf16(const uint8_t *p) {
	__m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
	return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}
AVX2 static inline __m256 ld_f16(const uint8_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }
AVX2 static inline __m256 ld_i8(const uint8_t *p) {
	return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p)));
}
AVX2 static inline __m256 ld_f32(const uint8_t *p) { return _mm256_loadu_ps((const float *)p); }

// Software prefetch this many bytes ahead of the loads: a row's stream is
// cut into chunks and rows, and the hardware prefetcher restarts at each
// break (measured here: BF16/INT8 from 0.6–0.75 to about 0.9 of a plain read
// on one core).
#define PF_AHEAD 2048

// One loop per element type, 32 columns per step in four accumulators; the
// tail (cols % 32) is scalar.
#define DOT_BODY(LD, ES)                                                               \
	__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;                        \
	int64_t c = 0;                                                                     \
	for (; c + 32 <= cols; c += 32) {                                                  \
		for (int pf = 0; pf < (ES) * 32; pf += 64)                                     \
			_mm_prefetch((const char *)row + (ES) * c + PF_AHEAD + pf, _MM_HINT_T0);   \
		a0 = _mm256_fmadd_ps(LD(row + (ES) * c), _mm256_loadu_ps(x + c), a0);           \
		a1 = _mm256_fmadd_ps(LD(row + (ES) * (c + 8)), _mm256_loadu_ps(x + c + 8), a1);  \
		a2 = _mm256_fmadd_ps(LD(row + (ES) * (c + 16)), _mm256_loadu_ps(x + c + 16), a2); \
		a3 = _mm256_fmadd_ps(LD(row + (ES) * (c + 24)), _mm256_loadu_ps(x + c + 24), a3); \
	}                                                                                  \
	for (; c + 8 <= cols; c += 8) a0 = _mm256_fmadd_ps(LD(row + (ES) * c), _mm256_loadu_ps(x + c), a0);

AVX2 static float dot_bf16(const uint8_t *row, const float *x, int64_t cols) {
	DOT_BODY(ld_bf16, 2)
	float s = hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
	for (; c < cols; c++) s += df_f32bits((uint32_t)df_ld16(row + 2 * c) << 16) * x[c];
	return s;
}
AVX2 static float dot_f16(const uint8_t *row, const float *x, int64_t cols) {
	DOT_BODY(ld_f16, 2)
	float s = hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
	for (; c < cols; c++) s += df_f16(df_ld16(row + 2 * c)) * x[c];
	return s;
}
AVX2 static float dot_i8(const uint8_t *row, const float *x, int64_t cols) {
	DOT_BODY(ld_i8, 1)
	float s = hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
	for (; c < cols; c++) s += (float)(int8_t)row[c] * x[c];
	return s;
}
AVX2 static float dot_f32(const uint8_t *row, const float *x, int64_t cols) {
	DOT_BODY(ld_f32, 4)
	float s = hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
	for (; c < cols; c++) s += df_f32bits(df_ld32(row + 4 * c)) * x[c];
	return s;
}

// MXFP4: a pshufb table maps each nibble to 2·e2m1 as an int8, which is
// widened to float and multiplied with x in the deinterleaved layout (even
// columns, then odd ones, per group), so no re-interleaving is needed. The
// group's sum is then scaled by 2^(s-128), an exact power of two.
AVX2 static inline __m256 mx_group(const uint8_t *p, const float *xg) {
	const __m128i lut = _mm_loadu_si128((const __m128i *)df_e2m1x2);
	const __m128i m = _mm_set1_epi8(0x0f);
	__m128i v = _mm_loadu_si128((const __m128i *)p);
	__m128i lo = _mm_shuffle_epi8(lut, _mm_and_si128(v, m));
	__m128i hi = _mm_shuffle_epi8(lut, _mm_and_si128(_mm_srli_epi16(v, 4), m));
	__m256 a = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo)), _mm256_loadu_ps(xg));
	__m256 b = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi)), _mm256_loadu_ps(xg + 16));
	a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8))), _mm256_loadu_ps(xg + 8), a);
	b = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8))), _mm256_loadu_ps(xg + 24), b);
	return _mm256_add_ps(a, b);
}

AVX2 static float dot_mx(const uint8_t *row, const uint8_t *rs, const float *xp, int64_t cols) {
	__m256 a0 = _mm256_setzero_ps(), a1 = a0;
	int64_t ng = cols / 32, g = 0;
	for (; g + 2 <= ng; g += 2) {
		_mm_prefetch((const char *)row + 16 * g + PF_AHEAD, _MM_HINT_T0);
		a0 = _mm256_fmadd_ps(mx_group(row + 16 * g, xp + 32 * g), _mm256_set1_ps(df_e8m0_half[rs[g]]), a0);
		a1 = _mm256_fmadd_ps(mx_group(row + 16 * g + 16, xp + 32 * g + 32), _mm256_set1_ps(df_e8m0_half[rs[g + 1]]), a1);
	}
	if (g < ng) a0 = _mm256_fmadd_ps(mx_group(row + 16 * g, xp + 32 * g), _mm256_set1_ps(df_e8m0_half[rs[g]]), a0);
	return hsum(_mm256_add_ps(a0, a1));
}

AVX2 static float avx2_dot(int dtype, const uint8_t *row, const uint8_t *rs, const float *x, int64_t cols) {
	switch (dtype) {
	case DF_BF16: return dot_bf16(row, x, cols);
	case DF_F16: return dot_f16(row, x, cols);
	case DF_I8: return dot_i8(row, x, cols) * df_f32bits(df_ld32(rs));
	case DF_F32: return dot_f32(row, x, cols);
	default: return dot_mx(row, rs, x, cols);
	}
}

AVX2 static float avx2_dotf(const float *a, const float *b, int64_t cols) {
	return dot_f32((const uint8_t *)a, b, cols);
}

AVX2 static void avx2_decode(int dtype, const uint8_t *row, const uint8_t *rs, float *out, int64_t cols) {
	int64_t c = 0;
	switch (dtype) {
	case DF_BF16:
		for (; c + 8 <= cols; c += 8) _mm256_storeu_ps(out + c, ld_bf16(row + 2 * c));
		break;
	case DF_F16:
		for (; c + 8 <= cols; c += 8) _mm256_storeu_ps(out + c, ld_f16(row + 2 * c));
		break;
	case DF_I8: {
		__m256 sc = _mm256_set1_ps(df_f32bits(df_ld32(rs)));
		for (; c + 8 <= cols; c += 8) _mm256_storeu_ps(out + c, _mm256_mul_ps(ld_i8(row + c), sc));
		break;
	}
	case DF_MXFP4: {
		// 4 bytes give 8 columns: each byte twice, shifted by 0 or 4 per
		// lane; vpermps of the low 3 bits gives the magnitude, bit 3 the
		// sign (−0 included), then the block's scale: one rounding, as in
		// the reference.
		const __m256 tbl = _mm256_loadu_ps(df_e2m1);
		const __m256i sh = _mm256_set_epi32(4, 0, 4, 0, 4, 0, 4, 0), eight = _mm256_set1_epi32(8);
		for (; c + 32 <= cols; c += 32) {
			const __m256 sc = _mm256_set1_ps(df_e8m0[rs[c / 32]]);
			for (int j = 0; j < 32; j += 8) {
				__m128i b = _mm_cvtsi32_si128((int)df_ld32(row + (c + j) / 2));
				__m256i v = _mm256_srlv_epi32(_mm256_cvtepu8_epi32(_mm_unpacklo_epi8(b, b)), sh);
				__m256 m = _mm256_permutevar8x32_ps(tbl, v);
				__m256 f = _mm256_or_ps(m, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_and_si256(v, eight), 28)));
				_mm256_storeu_ps(out + c + j, _mm256_mul_ps(f, sc));
			}
		}
		return; // cols is a multiple of 32
	}
	}
	// F32 and the tails: the portable decoder is exact.
	if (c < cols) df_generic.decode(dtype, row + df_row_bytes(dtype, c), rs, out + c, cols - c);
}

// The blocked matmul's register tile (kern_mm.c): mr ≤ 6 rows × 16
// positions (two vectors; 8 for the last tile), 12 accumulators of the 16
// registers, each step two vector loads of x and mr broadcast weights.
#define MM_MR 6
// Named accumulators, not an array: with an array GCC 12 kept a copy of
// every accumulator on the stack, a store per FMA (16 registers is tight).
#define MM_ROWS(OP) OP(0) OP(1) OP(2) OP(3) OP(4) OP(5)
AVX2 static inline __attribute__((always_inline)) void mm_tile_t(const int mr, const int nv, const float *a,
                                                                int64_t lda, const float *b, int64_t kc, float *c,
                                                                int64_t ldc, int first) {
	const __m256 z = _mm256_setzero_ps();
	__m256 c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z, c40 = z, c41 = z, c50 = z, c51 = z;
#define MM_LOAD(i)                                                        \
	if (mr > i && !first) {                                               \
		c##i##0 = _mm256_loadu_ps(c + i * ldc);                           \
		if (nv > 1) c##i##1 = _mm256_loadu_ps(c + i * ldc + 8);           \
	}
#define MM_FMA(i)                                                         \
	if (mr > i) {                                                         \
		const __m256 ai = _mm256_broadcast_ss(a + i * lda + k);           \
		c##i##0 = _mm256_fmadd_ps(ai, b0, c##i##0);                       \
		if (nv > 1) c##i##1 = _mm256_fmadd_ps(ai, b1, c##i##1);           \
	}
#define MM_STORE(i)                                                       \
	if (mr > i) {                                                         \
		_mm256_storeu_ps(c + i * ldc, c##i##0);                           \
		if (nv > 1) _mm256_storeu_ps(c + i * ldc + 8, c##i##1);           \
	}
	MM_ROWS(MM_LOAD)
	const int w = 8 * nv;
	for (int64_t k = 0; k < kc; k++) {
		const __m256 b0 = _mm256_loadu_ps(b + k * w), b1 = nv > 1 ? _mm256_loadu_ps(b + k * w + 8) : b0;
		MM_ROWS(MM_FMA)
	}
	MM_ROWS(MM_STORE)
#undef MM_LOAD
#undef MM_FMA
#undef MM_STORE
}

#define MM_CASES(NV)                                                 \
	switch (mr) {                                                    \
	case 6: mm_tile_t(6, NV, a, lda, b, kc, c, ldc, first); return;  \
	case 5: mm_tile_t(5, NV, a, lda, b, kc, c, ldc, first); return;  \
	case 4: mm_tile_t(4, NV, a, lda, b, kc, c, ldc, first); return;  \
	case 3: mm_tile_t(3, NV, a, lda, b, kc, c, ldc, first); return;  \
	case 2: mm_tile_t(2, NV, a, lda, b, kc, c, ldc, first); return;  \
	default: mm_tile_t(1, NV, a, lda, b, kc, c, ldc, first); return; \
	}

AVX2 static void avx2_mm_tile(int mr, int w, const float *a, int64_t lda, const float *b, int64_t kc, float *c,
                              int64_t ldc, int first) {
	if (w == 16) MM_CASES(2)
	MM_CASES(1)
}

// Prefill: each widened weight vector is loaded once for four positions.
AVX2 static void avx2_dotf4(const float *a, const float *x, int64_t ldx, int64_t cols, float *out) {
	const float *x0 = x, *x1 = x + ldx, *x2 = x + 2 * ldx, *x3 = x + 3 * ldx;
	// Two sets of sums, so that eight multiply-adds are in flight.
	__m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, t0 = s0, t1 = s0, t2 = s0, t3 = s0;
	int64_t c = 0;
	for (; c + 16 <= cols; c += 16) {
		__m256 w = _mm256_loadu_ps(a + c), v = _mm256_loadu_ps(a + c + 8);
		s0 = _mm256_fmadd_ps(w, _mm256_loadu_ps(x0 + c), s0);
		s1 = _mm256_fmadd_ps(w, _mm256_loadu_ps(x1 + c), s1);
		s2 = _mm256_fmadd_ps(w, _mm256_loadu_ps(x2 + c), s2);
		s3 = _mm256_fmadd_ps(w, _mm256_loadu_ps(x3 + c), s3);
		t0 = _mm256_fmadd_ps(v, _mm256_loadu_ps(x0 + c + 8), t0);
		t1 = _mm256_fmadd_ps(v, _mm256_loadu_ps(x1 + c + 8), t1);
		t2 = _mm256_fmadd_ps(v, _mm256_loadu_ps(x2 + c + 8), t2);
		t3 = _mm256_fmadd_ps(v, _mm256_loadu_ps(x3 + c + 8), t3);
	}
	for (; c + 8 <= cols; c += 8) {
		__m256 w = _mm256_loadu_ps(a + c);
		s0 = _mm256_fmadd_ps(w, _mm256_loadu_ps(x0 + c), s0);
		s1 = _mm256_fmadd_ps(w, _mm256_loadu_ps(x1 + c), s1);
		s2 = _mm256_fmadd_ps(w, _mm256_loadu_ps(x2 + c), s2);
		s3 = _mm256_fmadd_ps(w, _mm256_loadu_ps(x3 + c), s3);
	}
	out[0] = hsum(_mm256_add_ps(s0, t0));
	out[1] = hsum(_mm256_add_ps(s1, t1));
	out[2] = hsum(_mm256_add_ps(s2, t2));
	out[3] = hsum(_mm256_add_ps(s3, t3));
	for (; c < cols; c++) {
		out[0] += a[c] * x0[c];
		out[1] += a[c] * x1[c];
		out[2] += a[c] * x2[c];
		out[3] += a[c] * x3[c];
	}
}

// The activation, eight at a time. One activation costs an exp and two
// tanh, about as long as reading its two weight rows, so libm's scalar
// functions would cost a tenth of the expert's time. These are the Cephes
// single-precision approximations (exp: range reduction by ln 2 and a
// degree-6 polynomial; tanh: an odd polynomial below 0.625, 1 − 2/(e^2x + 1)
// above), each within a few ulps of the reference's double-precision
// functions; the conformance tolerance allows 16 ulps of the result.
AVX2 static inline __m256 exp8(__m256 x) {
	// Above 88 the result is (nearly) out of range: +inf, so that a sigmoid
	// of a very negative gate is 0 as in the reference. Below −87 it is
	// clamped to e^−87: the sigmoid of a large gate is 1 either way.
	__m256 over = _mm256_cmp_ps(x, _mm256_set1_ps(88.0f), _CMP_GT_OQ);
	x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
	__m256 fx = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
	x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
	__m256 y = _mm256_set1_ps(1.9875691500E-4f);
	y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507E-3f));
	y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073E-3f));
	y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894E-2f));
	y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459E-1f));
	y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201E-1f));
	y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
	__m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)), 23);
	return _mm256_blendv_ps(_mm256_mul_ps(y, _mm256_castsi256_ps(e)), _mm256_set1_ps(__builtin_inff()), over);
}

AVX2 static inline __m256 tanh8(__m256 x) {
	const __m256 sign = _mm256_set1_ps(-0.0f);
	__m256 ax = _mm256_andnot_ps(sign, x);
	__m256 z = _mm256_mul_ps(x, x);
	__m256 p = _mm256_set1_ps(-5.70498872745E-3f);
	p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(2.06390887954E-2f));
	p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-5.37397155531E-2f));
	p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.33314422036E-1f));
	p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-3.33332819422E-1f));
	__m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), x, x);
	__m256 e = exp8(_mm256_add_ps(ax, ax));
	__m256 big = _mm256_sub_ps(_mm256_set1_ps(1.0f), _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, _mm256_set1_ps(1.0f))));
	big = _mm256_or_ps(big, _mm256_and_ps(sign, x));
	return _mm256_blendv_ps(small, big, _mm256_cmp_ps(ax, _mm256_set1_ps(0.625f), _CMP_GE_OQ));
}

AVX2 static void avx2_act(int kind, float beta, float lbeta, float *g, const float *u, int64_t n) {
	const __m256 one = _mm256_set1_ps(1.0f), vb = _mm256_set1_ps(beta), vl = _mm256_set1_ps(lbeta);
	for (int64_t i = 0; i < n; i += 8) {
		// The tail goes through the same vector code (via a padded copy), so
		// a row's result does not depend on where a chunk of rows ends.
		float gt[8] = {0}, ut[8] = {0};
		int64_t k = n - i < 8 ? n - i : 8;
		for (int64_t j = 0; j < k; j++) gt[j] = g[i + j], ut[j] = u[i + j];
		__m256 gv = _mm256_loadu_ps(k == 8 ? g + i : gt), uv = _mm256_loadu_ps(k == 8 ? u + i : ut);
		__m256 sig = _mm256_div_ps(one, _mm256_add_ps(one, exp8(_mm256_sub_ps(_mm256_setzero_ps(), gv))));
		__m256 h;
		if (kind == DF_SITU) {
			__m256 capg = _mm256_mul_ps(tanh8(_mm256_div_ps(gv, vb)), vb);
			__m256 capu = _mm256_mul_ps(tanh8(_mm256_div_ps(uv, vl)), vl);
			h = _mm256_mul_ps(_mm256_mul_ps(capg, sig), capu);
		} else {
			h = _mm256_mul_ps(_mm256_mul_ps(gv, sig), uv);
		}
		if (k == 8) {
			_mm256_storeu_ps(g + i, h);
			continue;
		}
		_mm256_storeu_ps(gt, h);
		for (int64_t j = 0; j < k; j++) g[i + j] = gt[j];
	}
}

const df_rowkern df_avx2 = {avx2_dot, avx2_decode, avx2_dotf, avx2_dotf4, avx2_act, 0, avx2_mm_tile, MM_MR, 16, 8};

AVX2 uint64_t df_read_avx2(const uint8_t *p, int64_t n) {
	__m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
	for (int64_t i = 0; i + 128 <= n; i += 128) {
		a0 = _mm256_add_epi64(a0, _mm256_loadu_si256((const __m256i *)(p + i)));
		a1 = _mm256_add_epi64(a1, _mm256_loadu_si256((const __m256i *)(p + i + 32)));
		a2 = _mm256_add_epi64(a2, _mm256_loadu_si256((const __m256i *)(p + i + 64)));
		a3 = _mm256_add_epi64(a3, _mm256_loadu_si256((const __m256i *)(p + i + 96)));
	}
	__m256i s = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
	uint64_t out[4];
	_mm256_storeu_si256((__m256i *)out, s);
	return out[0] + out[1] + out[2] + out[3];
}

// df_fma_avx2 is the FMA limit on AVX2 CPUs: 12 independent chains of 8
// lanes (of 16 registers, two hold a and b), enough for two FMA units of
// 4- to 5-cycle latency.
AVX2 double df_fma_avx2(int64_t n, float a, float b, int64_t *lanes) {
	enum { C = 12 };
	__m256 v[C];
	const __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b);
	const __m256 idx = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7);
	for (int c = 0; c < C; c++) v[c] = _mm256_add_ps(idx, _mm256_set1_ps((float)(8 * c)));
	for (int64_t i = 0; i < n; i++)
		for (int c = 0; c < C; c++) v[c] = _mm256_fmadd_ps(v[c], va, vb);
	float out[8 * C];
	for (int c = 0; c < C; c++) _mm256_storeu_ps(out + 8 * c, v[c]);
	*lanes = 8 * C;
	return df_fsum(out, 8 * C);
}
