//go:build cgo

// NEON row kernels (every arm64 CPU has Advanced SIMD). The same shapes as
// the AVX2 ones, four float32x4 accumulators at a time.
#include "kern.h"

#include <arm_neon.h>

static inline float32x4_t ld_bf16(const uint8_t *p) {
	return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16((const uint16_t *)(const void *)p), 16));
}
static inline float32x4_t ld_f16(const uint8_t *p) {
	return vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(p)));
}
static inline float32x4_t ld_f32(const uint8_t *p) { return vreinterpretq_f32_u8(vld1q_u8(p)); }

#define DOT_BODY(LD, ES)                                                          \
	float32x4_t a0 = vdupq_n_f32(0), a1 = a0, a2 = a0, a3 = a0;                   \
	int64_t c = 0;                                                                \
	for (; c + 16 <= cols; c += 16) {                                             \
		a0 = vfmaq_f32(a0, LD(row + (ES) * c), vld1q_f32(x + c));                  \
		a1 = vfmaq_f32(a1, LD(row + (ES) * (c + 4)), vld1q_f32(x + c + 4));        \
		a2 = vfmaq_f32(a2, LD(row + (ES) * (c + 8)), vld1q_f32(x + c + 8));        \
		a3 = vfmaq_f32(a3, LD(row + (ES) * (c + 12)), vld1q_f32(x + c + 12));      \
	}                                                                             \
	for (; c + 4 <= cols; c += 4) a0 = vfmaq_f32(a0, LD(row + (ES) * c), vld1q_f32(x + c)); \
	float s = vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));

static float dot_bf16(const uint8_t *row, const float *x, int64_t cols) {
	DOT_BODY(ld_bf16, 2)
	for (; c < cols; c++) s += df_f32bits((uint32_t)df_ld16(row + 2 * c) << 16) * x[c];
	return s;
}
static float dot_f16(const uint8_t *row, const float *x, int64_t cols) {
	DOT_BODY(ld_f16, 2)
	for (; c < cols; c++) s += df_f16(df_ld16(row + 2 * c)) * x[c];
	return s;
}
static float dot_i8(const uint8_t *row, const float *x, int64_t cols) {
	float32x4_t a0 = vdupq_n_f32(0), a1 = a0, a2 = a0, a3 = a0;
	int64_t c = 0;
	for (; c + 16 <= cols; c += 16) {
		int8x16_t v = vld1q_s8((const int8_t *)row + c);
		int16x8_t lo = vmovl_s8(vget_low_s8(v)), hi = vmovl_s8(vget_high_s8(v));
		a0 = vfmaq_f32(a0, vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo))), vld1q_f32(x + c));
		a1 = vfmaq_f32(a1, vcvtq_f32_s32(vmovl_s16(vget_high_s16(lo))), vld1q_f32(x + c + 4));
		a2 = vfmaq_f32(a2, vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi))), vld1q_f32(x + c + 8));
		a3 = vfmaq_f32(a3, vcvtq_f32_s32(vmovl_s16(vget_high_s16(hi))), vld1q_f32(x + c + 12));
	}
	float s = vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));
	for (; c < cols; c++) s += (float)(int8_t)row[c] * x[c];
	return s;
}
static float dot_f32(const uint8_t *row, const float *x, int64_t cols) {
	DOT_BODY(ld_f32, 4)
	for (; c < cols; c++) s += df_f32bits(df_ld32(row + 4 * c)) * x[c];
	return s;
}

// MXFP4: every e2m1 value is exact in IEEE half precision with a zero low
// byte, so one table lookup gives each nibble's high byte, a zip with zeros
// makes the halves (−0 included), and FCVTL widens them to float: 7
// instructions per 16 elements. x is in the deinterleaved layout (kern.h).
static const uint8_t e2m1_f16_hi[16] = {0x00, 0x38, 0x3c, 0x3e, 0x40, 0x42, 0x44, 0x46,
                                        0x80, 0xb8, 0xbc, 0xbe, 0xc0, 0xc2, 0xc4, 0xc6};

static inline float32x4_t mx_half16(uint8x16_t hb, const float *x) {
	const uint8x16_t z = vdupq_n_u8(0);
	float16x8_t h0 = vreinterpretq_f16_u8(vzip1q_u8(z, hb)), h1 = vreinterpretq_f16_u8(vzip2q_u8(z, hb));
	float32x4_t a = vmulq_f32(vcvt_f32_f16(vget_low_f16(h0)), vld1q_f32(x));
	float32x4_t b = vmulq_f32(vcvt_high_f32_f16(h0), vld1q_f32(x + 4));
	a = vfmaq_f32(a, vcvt_f32_f16(vget_low_f16(h1)), vld1q_f32(x + 8));
	b = vfmaq_f32(b, vcvt_high_f32_f16(h1), vld1q_f32(x + 12));
	return vaddq_f32(a, b);
}

static inline float32x4_t mx_group(const uint8_t *p, const float *xg, uint8x16_t lut) {
	uint8x16_t v = vld1q_u8(p);
	float32x4_t lo = mx_half16(vqtbl1q_u8(lut, vandq_u8(v, vdupq_n_u8(15))), xg);
	float32x4_t hi = mx_half16(vqtbl1q_u8(lut, vshrq_n_u8(v, 4)), xg + 16);
	return vaddq_f32(lo, hi);
}

static float dot_mx(const uint8_t *row, const uint8_t *rs, const float *xp, int64_t cols) {
	const uint8x16_t lut = vld1q_u8(e2m1_f16_hi);
	float32x4_t a0 = vdupq_n_f32(0), a1 = a0;
	int64_t ng = cols / 32, g = 0;
	for (; g + 2 <= ng; g += 2) {
		a0 = vfmaq_n_f32(a0, mx_group(row + 16 * g, xp + 32 * g, lut), df_e8m0[rs[g]]);
		a1 = vfmaq_n_f32(a1, mx_group(row + 16 * g + 16, xp + 32 * g + 32, lut), df_e8m0[rs[g + 1]]);
	}
	if (g < ng) a0 = vfmaq_n_f32(a0, mx_group(row + 16 * g, xp + 32 * g, lut), df_e8m0[rs[g]]);
	return vaddvq_f32(vaddq_f32(a0, a1));
}

static float neon_dot(int dtype, const uint8_t *row, const uint8_t *rs, const float *x, int64_t cols) {
	switch (dtype) {
	case DF_BF16: return dot_bf16(row, x, cols);
	case DF_F16: return dot_f16(row, x, cols);
	case DF_I8: return dot_i8(row, x, cols) * df_f32bits(df_ld32(rs));
	case DF_F32: return dot_f32(row, x, cols);
	default: return dot_mx(row, rs, x, cols);
	}
}

static float neon_dotf(const float *a, const float *b, int64_t cols) { return dot_f32((const uint8_t *)a, b, cols); }

// Decoding, for the prefill paths (exact, −0 included). MXFP4: the
// nibbles of 16 bytes zipped into column order, then the half-precision
// table of dot_mx, widened and times the block's scale (one rounding, as
// in the reference).
static void neon_decode(int dtype, const uint8_t *row, const uint8_t *rs, float *out, int64_t cols) {
	int64_t c = 0;
	switch (dtype) {
	case DF_BF16:
		for (; c + 4 <= cols; c += 4) vst1q_f32(out + c, ld_bf16(row + 2 * c));
		break;
	case DF_I8: {
		const float sc = df_f32bits(df_ld32(rs));
		for (; c + 8 <= cols; c += 8) {
			int16x8_t v = vmovl_s8(vld1_s8((const int8_t *)row + c));
			vst1q_f32(out + c, vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(v))), sc));
			vst1q_f32(out + c + 4, vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_high_s16(v))), sc));
		}
		break;
	}
	case DF_MXFP4: {
		const uint8x16_t lut = vld1q_u8(e2m1_f16_hi), z = vdupq_n_u8(0);
		for (; c + 32 <= cols; c += 32) {
			const float sc = df_e8m0[rs[c / 32]];
			uint8x16_t v = vld1q_u8(row + c / 2);
			uint8x16_t lo = vandq_u8(v, vdupq_n_u8(15)), hi = vshrq_n_u8(v, 4);
			uint8x16_t q[2] = {vqtbl1q_u8(lut, vzip1q_u8(lo, hi)), vqtbl1q_u8(lut, vzip2q_u8(lo, hi))};
			for (int j = 0; j < 2; j++) {
				float16x8_t h0 = vreinterpretq_f16_u8(vzip1q_u8(z, q[j])), h1 = vreinterpretq_f16_u8(vzip2q_u8(z, q[j]));
				float *o = out + c + 16 * j;
				vst1q_f32(o, vmulq_n_f32(vcvt_f32_f16(vget_low_f16(h0)), sc));
				vst1q_f32(o + 4, vmulq_n_f32(vcvt_high_f32_f16(h0), sc));
				vst1q_f32(o + 8, vmulq_n_f32(vcvt_f32_f16(vget_low_f16(h1)), sc));
				vst1q_f32(o + 12, vmulq_n_f32(vcvt_high_f32_f16(h1), sc));
			}
		}
		return; // cols is a multiple of 32
	}
	}
	if (c < cols) df_generic.decode(dtype, row + df_row_bytes(dtype, c), rs, out + c, cols - c);
}

// Prefill: each widened weight vector is loaded once for four positions.
static void neon_dotf4(const float *a, const float *x, int64_t ldx, int64_t cols, float *out) {
	const float *x0 = x, *x1 = x + ldx, *x2 = x + 2 * ldx, *x3 = x + 3 * ldx;
	float32x4_t s0 = vdupq_n_f32(0), s1 = s0, s2 = s0, s3 = s0, t0 = s0, t1 = s0, t2 = s0, t3 = s0;
	int64_t c = 0;
	for (; c + 8 <= cols; c += 8) {
		float32x4_t w = vld1q_f32(a + c), v = vld1q_f32(a + c + 4);
		s0 = vfmaq_f32(s0, w, vld1q_f32(x0 + c));
		s1 = vfmaq_f32(s1, w, vld1q_f32(x1 + c));
		s2 = vfmaq_f32(s2, w, vld1q_f32(x2 + c));
		s3 = vfmaq_f32(s3, w, vld1q_f32(x3 + c));
		t0 = vfmaq_f32(t0, v, vld1q_f32(x0 + c + 4));
		t1 = vfmaq_f32(t1, v, vld1q_f32(x1 + c + 4));
		t2 = vfmaq_f32(t2, v, vld1q_f32(x2 + c + 4));
		t3 = vfmaq_f32(t3, v, vld1q_f32(x3 + c + 4));
	}
	out[0] = vaddvq_f32(vaddq_f32(s0, t0));
	out[1] = vaddvq_f32(vaddq_f32(s1, t1));
	out[2] = vaddvq_f32(vaddq_f32(s2, t2));
	out[3] = vaddvq_f32(vaddq_f32(s3, t3));
	for (; c < cols; c++) {
		out[0] += a[c] * x0[c];
		out[1] += a[c] * x1[c];
		out[2] += a[c] * x2[c];
		out[3] += a[c] * x3[c];
	}
}

// The blocked matmul's register tile (kern_mm.c): mr ≤ 4 rows × 16
// positions (four vectors; 8 for the last tile), 16 accumulators: four
// FMA pipes of 4-cycle latency (Apple's P cores) need 16 chains. Four
// columns of a row come in one load and are used by lane (fmla by
// element), so a step of 4 columns is mr + 4·nv loads for 16·mr·nv/4·4 FMAs.
#define MM_MR 4
static inline __attribute__((always_inline)) void mm_tile_t(const int mr, const int nv, const float *a, int64_t lda,
                                                           const float *b, int64_t kc, float *c, int64_t ldc,
                                                           int first) {
	float32x4_t acc[MM_MR][4];
	for (int i = 0; i < mr; i++)
		for (int v = 0; v < nv; v++) acc[i][v] = first ? vdupq_n_f32(0) : vld1q_f32(c + i * ldc + 4 * v);
	const int w = 4 * nv;
	int64_t k = 0;
#define MM_STEP(L)                                                                \
	{                                                                             \
		float32x4_t bv[4];                                                        \
		for (int v = 0; v < nv; v++) bv[v] = vld1q_f32(b + (k + (L)) * w + 4 * v); \
		for (int i = 0; i < mr; i++)                                              \
			for (int v = 0; v < nv; v++) acc[i][v] = vfmaq_laneq_f32(acc[i][v], bv[v], av[i], (L)); \
	}
	for (; k + 4 <= kc; k += 4) {
		float32x4_t av[MM_MR];
		for (int i = 0; i < mr; i++) av[i] = vld1q_f32(a + i * lda + k);
		MM_STEP(0) MM_STEP(1) MM_STEP(2) MM_STEP(3)
	}
#undef MM_STEP
	for (; k < kc; k++)
		for (int i = 0; i < mr; i++) {
			const float32x4_t ai = vld1q_dup_f32(a + i * lda + k);
			for (int v = 0; v < nv; v++) acc[i][v] = vfmaq_f32(acc[i][v], ai, vld1q_f32(b + k * w + 4 * v));
		}
	for (int i = 0; i < mr; i++)
		for (int v = 0; v < nv; v++) vst1q_f32(c + i * ldc + 4 * v, acc[i][v]);
}

#define MM_CASES(NV)                                                 \
	switch (mr) {                                                    \
	case 4: mm_tile_t(4, NV, a, lda, b, kc, c, ldc, first); return;  \
	case 3: mm_tile_t(3, NV, a, lda, b, kc, c, ldc, first); return;  \
	case 2: mm_tile_t(2, NV, a, lda, b, kc, c, ldc, first); return;  \
	default: mm_tile_t(1, NV, a, lda, b, kc, c, ldc, first); return; \
	}

static void neon_mm_tile(int mr, int w, const float *a, int64_t lda, const float *b, int64_t kc, float *c,
                         int64_t ldc, int first) {
	if (w == 16) MM_CASES(4)
	MM_CASES(2)
}

const df_rowkern df_neon = {neon_dot, neon_decode, neon_dotf, neon_dotf4, 0, 0, neon_mm_tile, MM_MR, 16, 8};

// df_fma_neon is the FMA limit on arm64: 24 independent chains of 4 lanes,
// enough for four FMA pipes of 4-cycle latency (Apple's P cores) and more.
double df_fma_neon(int64_t n, float a, float b, int64_t *lanes) {
	enum { C = 24 };
	float32x4_t v[C];
	const float32x4_t vb = vdupq_n_f32(b);
	const float idx0[4] = {0, 1, 2, 3};
	const float32x4_t idx = vld1q_f32(idx0);
	for (int c = 0; c < C; c++) v[c] = vaddq_f32(idx, vdupq_n_f32((float)(4 * c)));
	for (int64_t i = 0; i < n; i++)
		for (int c = 0; c < C; c++) v[c] = vfmaq_n_f32(vb, v[c], a);
	float out[4 * C];
	for (int c = 0; c < C; c++) vst1q_f32(out + 4 * c, v[c]);
	*lanes = 4 * C;
	return df_fsum(out, 4 * C);
}
