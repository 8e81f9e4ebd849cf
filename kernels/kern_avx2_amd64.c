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

// One loop per element type, 32 columns per step in four accumulators; the
// tail (cols % 32) is scalar.
#define DOT_BODY(LD, ES)                                                               \
	__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;                        \
	int64_t c = 0;                                                                     \
	for (; c + 32 <= cols; c += 32) {                                                  \
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
	}
	if (c == 0 || c < cols) {
		// F32, MXFP4 and the tails: the portable decoder is exact and the row
		// is reused for every position, so its speed matters little.
		int64_t es = df_row_bytes(dtype, 1);
		if (dtype == DF_MXFP4 || c == 0) {
			df_generic.decode(dtype, row, rs, out, cols);
		} else {
			df_generic.decode(dtype, row + es * c, rs, out + c, cols - c);
		}
	}
}

// Prefill: each widened weight vector is loaded once for four positions.
AVX2 static void avx2_dotf4(const float *a, const float *x, int64_t ldx, int64_t cols, float *out) {
	const float *x0 = x, *x1 = x + ldx, *x2 = x + 2 * ldx, *x3 = x + 3 * ldx;
	__m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
	int64_t c = 0;
	for (; c + 8 <= cols; c += 8) {
		__m256 w = _mm256_loadu_ps(a + c);
		s0 = _mm256_fmadd_ps(w, _mm256_loadu_ps(x0 + c), s0);
		s1 = _mm256_fmadd_ps(w, _mm256_loadu_ps(x1 + c), s1);
		s2 = _mm256_fmadd_ps(w, _mm256_loadu_ps(x2 + c), s2);
		s3 = _mm256_fmadd_ps(w, _mm256_loadu_ps(x3 + c), s3);
	}
	out[0] = hsum(s0);
	out[1] = hsum(s1);
	out[2] = hsum(s2);
	out[3] = hsum(s3);
	for (; c < cols; c++) {
		out[0] += a[c] * x0[c];
		out[1] += a[c] * x1[c];
		out[2] += a[c] * x2[c];
		out[3] += a[c] * x3[c];
	}
}

const df_rowkern df_avx2 = {avx2_dot, avx2_decode, avx2_dotf, avx2_dotf4};
