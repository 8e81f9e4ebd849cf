//go:build cgo

// AVX-512F row kernels for the dtypes where AVX2 runs out of arithmetic
// before memory runs out of bandwidth: MXFP4 (a 16-entry vpermps table turns
// each nibble into its exact float, −0 included), INT8 and BF16. F16, F32 and
// the prefill paths reuse the AVX2 kernels. fast.go selects this set only
// when golang.org/x/sys/cpu reports AVX-512F (and AVX2/FMA/F16C).
#include "kern.h"

#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f,avx2,fma,f16c")))

// Four accumulators: an FMA's latency is four cycles, so fewer would leave
// the loop waiting on its own sums rather than on memory.
AVX512 static inline __m512 ld_bf16(const uint8_t *p) {
	__m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p));
	return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}
AVX512 static inline __m512 ld_i8(const uint8_t *p) {
	return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)p)));
}

// Software prefetch distance: see kern_avx2_amd64.c.
#define PF_AHEAD 2048

#define DOT512(LD, ES)                                                                    \
	__m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;                           \
	int64_t c = 0;                                                                        \
	for (; c + 64 <= cols; c += 64) {                                                     \
		for (int pf = 0; pf < (ES) * 64; pf += 64)                                        \
			_mm_prefetch((const char *)row + (ES) * c + PF_AHEAD + pf, _MM_HINT_T0);      \
		a0 = _mm512_fmadd_ps(LD(row + (ES) * c), _mm512_loadu_ps(x + c), a0);              \
		a1 = _mm512_fmadd_ps(LD(row + (ES) * (c + 16)), _mm512_loadu_ps(x + c + 16), a1);   \
		a2 = _mm512_fmadd_ps(LD(row + (ES) * (c + 32)), _mm512_loadu_ps(x + c + 32), a2);   \
		a3 = _mm512_fmadd_ps(LD(row + (ES) * (c + 48)), _mm512_loadu_ps(x + c + 48), a3);   \
	}                                                                                     \
	for (; c + 16 <= cols; c += 16) a0 = _mm512_fmadd_ps(LD(row + (ES) * c), _mm512_loadu_ps(x + c), a0); \
	float s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));

AVX512 static float dot_bf16(const uint8_t *row, const float *x, int64_t cols) {
	DOT512(ld_bf16, 2)
	for (; c < cols; c++) s += df_f32bits((uint32_t)df_ld16(row + 2 * c) << 16) * x[c];
	return s;
}

AVX512 static float dot_i8(const uint8_t *row, const float *x, int64_t cols) {
	DOT512(ld_i8, 1)
	for (; c < cols; c++) s += (float)(int8_t)row[c] * x[c];
	return s;
}

// One group of 32: the 16 bytes widened to dwords; vpermps reads the low 4
// bits of each index, i.e. the low nibble, and after a shift the high one.
AVX512 static inline __m512 mx_group(const uint8_t *p, const float *xg, __m512 tbl) {
	__m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)p));
	__m512 lo = _mm512_permutexvar_ps(b, tbl);
	__m512 hi = _mm512_permutexvar_ps(_mm512_srli_epi32(b, 4), tbl);
	return _mm512_fmadd_ps(hi, _mm512_loadu_ps(xg + 16), _mm512_mul_ps(lo, _mm512_loadu_ps(xg)));
}

AVX512 static float dot_mx(const uint8_t *row, const uint8_t *rs, const float *xp, int64_t cols) {
	const __m512 tbl = _mm512_loadu_ps(df_e2m1);
	__m512 a0 = _mm512_setzero_ps(), a1 = a0;
	int64_t ng = cols / 32, g = 0;
	for (; g + 2 <= ng; g += 2) {
		_mm_prefetch((const char *)row + 16 * g + PF_AHEAD, _MM_HINT_T0);
		a0 = _mm512_fmadd_ps(mx_group(row + 16 * g, xp + 32 * g, tbl), _mm512_set1_ps(df_e8m0[rs[g]]), a0);
		a1 = _mm512_fmadd_ps(mx_group(row + 16 * g + 16, xp + 32 * g + 32, tbl), _mm512_set1_ps(df_e8m0[rs[g + 1]]), a1);
	}
	if (g < ng) a0 = _mm512_fmadd_ps(mx_group(row + 16 * g, xp + 32 * g, tbl), _mm512_set1_ps(df_e8m0[rs[g]]), a0);
	return _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
}

AVX512 static float avx512_dot(int dtype, const uint8_t *row, const uint8_t *rs, const float *x, int64_t cols) {
	switch (dtype) {
	case DF_BF16: return dot_bf16(row, x, cols);
	case DF_I8: return dot_i8(row, x, cols) * df_f32bits(df_ld32(rs));
	case DF_MXFP4: return dot_mx(row, rs, x, cols);
	default: return df_avx2.dot(dtype, row, rs, x, cols);
	}
}

static void avx512_decode(int dtype, const uint8_t *row, const uint8_t *rs, float *out, int64_t cols) {
	df_avx2.decode(dtype, row, rs, out, cols);
}

static float avx512_dotf(const float *a, const float *b, int64_t cols) { return df_avx2.dotf(a, b, cols); }

static void avx512_dotf4(const float *a, const float *x, int64_t ldx, int64_t cols, float *out) {
	df_avx2.dotf4(a, x, ldx, cols, out);
}

static void avx512_act(int kind, float beta, float lbeta, float *g, const float *u, int64_t n) {
	df_avx2.act(kind, beta, lbeta, g, u, n);
}

const df_rowkern df_avx512 = {avx512_dot, avx512_decode, avx512_dotf, avx512_dotf4, avx512_act};
