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

// MXFP4: a table lookup maps each nibble to 2·e2m1 as an int8, widened to
// float and multiplied with x in the deinterleaved layout (see kern.h).
static inline float32x4_t mx_group(const uint8_t *p, const float *xg, int8x16_t lut) {
	uint8x16_t v = vld1q_u8(p);
	int8x16_t lo = vqtbl1q_s8(lut, vandq_u8(v, vdupq_n_u8(15)));
	int8x16_t hi = vqtbl1q_s8(lut, vshrq_n_u8(v, 4));
	int16x8_t l0 = vmovl_s8(vget_low_s8(lo)), l1 = vmovl_s8(vget_high_s8(lo));
	int16x8_t h0 = vmovl_s8(vget_low_s8(hi)), h1 = vmovl_s8(vget_high_s8(hi));
	float32x4_t a = vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(l0))), vld1q_f32(xg));
	float32x4_t b = vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_high_s16(l0))), vld1q_f32(xg + 4));
	float32x4_t d = vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(h0))), vld1q_f32(xg + 16));
	float32x4_t e = vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_high_s16(h0))), vld1q_f32(xg + 20));
	a = vfmaq_f32(a, vcvtq_f32_s32(vmovl_s16(vget_low_s16(l1))), vld1q_f32(xg + 8));
	b = vfmaq_f32(b, vcvtq_f32_s32(vmovl_s16(vget_high_s16(l1))), vld1q_f32(xg + 12));
	d = vfmaq_f32(d, vcvtq_f32_s32(vmovl_s16(vget_low_s16(h1))), vld1q_f32(xg + 24));
	e = vfmaq_f32(e, vcvtq_f32_s32(vmovl_s16(vget_high_s16(h1))), vld1q_f32(xg + 28));
	return vaddq_f32(vaddq_f32(a, b), vaddq_f32(d, e));
}

static float dot_mx(const uint8_t *row, const uint8_t *rs, const float *xp, int64_t cols) {
	const int8x16_t lut = vld1q_s8(df_e2m1x2);
	float32x4_t a0 = vdupq_n_f32(0), a1 = a0;
	int64_t ng = cols / 32, g = 0;
	for (; g + 2 <= ng; g += 2) {
		a0 = vfmaq_n_f32(a0, mx_group(row + 16 * g, xp + 32 * g, lut), df_e8m0_half[rs[g]]);
		a1 = vfmaq_n_f32(a1, mx_group(row + 16 * g + 16, xp + 32 * g + 32, lut), df_e8m0_half[rs[g + 1]]);
	}
	if (g < ng) a0 = vfmaq_n_f32(a0, mx_group(row + 16 * g, xp + 32 * g, lut), df_e8m0_half[rs[g]]);
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

static void neon_decode(int dtype, const uint8_t *row, const uint8_t *rs, float *out, int64_t cols) {
	int64_t c = 0;
	if (dtype == DF_BF16)
		for (; c + 4 <= cols; c += 4) vst1q_f32(out + c, ld_bf16(row + 2 * c));
	df_generic.decode(dtype, row + df_row_bytes(dtype, 1) * c, rs, out + c, cols - c);
}

const df_rowkern df_neon = {neon_dot, neon_decode, neon_dotf, 0, 0};
