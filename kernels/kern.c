//go:build cgo && (amd64 || arm64)

// Tables, the portable row kernels, the activation and the row-range drivers
// shared by every instruction set.
#include "kern.h"

#include <math.h>
#include <string.h>

float df_e2m1[16];
float df_e8m0[256];
float df_e8m0_half[256];
const int8_t df_e2m1x2[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

void df_init(void) {
	static const float mag[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
	for (int i = 0; i < 8; i++) {
		df_e2m1[i] = mag[i];
		df_e2m1[i + 8] = -mag[i]; // -0.0f at code 8
	}
	for (int s = 0; s < 256; s++) {
		df_e8m0[s] = s == 255 ? NAN : ldexpf(1.0f, s - 127);
		df_e8m0_half[s] = s == 255 ? NAN : ldexpf(1.0f, s - 128);
	}
}

int df_has_isa(int isa) {
	switch (isa) {
	case DF_ISA_GENERIC: return 1;
#if defined(__x86_64__)
	case DF_ISA_AVX2: return 1;
	case DF_ISA_AVX512: return 1;
#endif
#if defined(__aarch64__)
	case DF_ISA_NEON: return 1;
#endif
	}
	return 0;
}

float df_f16(uint16_t h) {
	uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
	if (exp == 0x1f) return df_f32bits(sign | 0x7f800000u | mant << 13);
	if (exp != 0) return df_f32bits(sign | (exp + 112) << 23 | mant << 13);
	float v = (float)mant * (1.0f / 16777216.0f); // exact: mant·2^-24
	return sign ? -v : v;
}

// Portable kernels: four accumulators so that the compiler can keep several
// multiply-adds in flight.

static float gen_dotf(const float *a, const float *b, int64_t n) {
	float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
	int64_t c = 0;
	for (; c + 4 <= n; c += 4) {
		s0 += a[c] * b[c];
		s1 += a[c + 1] * b[c + 1];
		s2 += a[c + 2] * b[c + 2];
		s3 += a[c + 3] * b[c + 3];
	}
	for (; c < n; c++) s0 += a[c] * b[c];
	return (s0 + s1) + (s2 + s3);
}

static void gen_decode(int dtype, const uint8_t *row, const uint8_t *rs, float *out, int64_t cols) {
	switch (dtype) {
	case DF_F32:
		memcpy(out, row, 4 * cols);
		break;
	case DF_BF16:
		for (int64_t c = 0; c < cols; c++) out[c] = df_f32bits((uint32_t)df_ld16(row + 2 * c) << 16);
		break;
	case DF_F16:
		for (int64_t c = 0; c < cols; c++) out[c] = df_f16(df_ld16(row + 2 * c));
		break;
	case DF_I8: {
		float sc = df_f32bits(df_ld32(rs));
		for (int64_t c = 0; c < cols; c++) out[c] = (float)(int8_t)row[c] * sc;
		break;
	}
	case DF_MXFP4:
		for (int64_t j = 0; j < cols / 2; j++) {
			float sc = df_e8m0[rs[j / 16]];
			out[2 * j] = df_e2m1[row[j] & 15] * sc;
			out[2 * j + 1] = df_e2m1[row[j] >> 4] * sc;
		}
		break;
	}
}

// gen_mx_dot works on x in the deinterleaved layout: per group of 32 columns
// the 16 even columns, then the 16 odd ones (the low and high nibbles).
static float gen_mx_dot(const uint8_t *row, const uint8_t *rs, const float *xp, int64_t cols) {
	float acc = 0;
	for (int64_t g = 0; g < cols / 32; g++) {
		const uint8_t *p = row + 16 * g;
		const float *xg = xp + 32 * g;
		float s0 = 0, s1 = 0;
		for (int j = 0; j < 16; j++) {
			s0 += (float)df_e2m1x2[p[j] & 15] * xg[j];
			s1 += (float)df_e2m1x2[p[j] >> 4] * xg[16 + j];
		}
		acc += (s0 + s1) * df_e8m0_half[rs[g]];
	}
	return acc;
}

static float gen_dot(int dtype, const uint8_t *row, const uint8_t *rs, const float *x, int64_t cols) {
	float buf[256];
	float acc = 0;
	switch (dtype) {
	case DF_MXFP4:
		return gen_mx_dot(row, rs, x, cols);
	case DF_I8: {
		float s = 0;
		for (int64_t c = 0; c < cols; c++) s += (float)(int8_t)row[c] * x[c];
		return s * df_f32bits(df_ld32(rs));
	}
	}
	// F32, BF16, F16: widen 256 columns at a time, then multiply.
	int64_t es = df_row_bytes(dtype, 1);
	for (int64_t c = 0; c < cols; c += 256) {
		int64_t k = cols - c < 256 ? cols - c : 256;
		gen_decode(dtype, row + es * c, rs, buf, k);
		acc += gen_dotf(buf, x + c, k);
	}
	return acc;
}

const df_rowkern df_generic = {gen_dot, gen_decode, gen_dotf, 0, 0};

const df_rowkern *df_kern_for(int isa) {
#if defined(__x86_64__)
	if (isa == DF_ISA_AVX2) return &df_avx2;
	if (isa == DF_ISA_AVX512) return &df_avx512;
#endif
#if defined(__aarch64__)
	if (isa == DF_ISA_NEON) return &df_neon;
#endif
	(void)isa;
	return &df_generic;
}

void df_mx_group_layout(const float *x, int64_t cols, float *xp) {
	for (int64_t g = 0; g + 32 <= cols; g += 32)
		for (int j = 0; j < 16; j++) {
			xp[g + j] = x[g + 2 * j];
			xp[g + 16 + j] = x[g + 2 * j + 1];
		}
}

void df_mx_layout(int isa, const float *x, int64_t cols, float *xp) {
	const df_rowkern *k = df_kern_for(isa);
	if (k->mx_layout) {
		k->mx_layout(x, cols, xp);
		return;
	}
	df_mx_group_layout(x, cols, xp);
}

void df_decode_row(int isa, int dtype, const uint8_t *data, const uint8_t *scales, int64_t cols,
                   int64_t r, float *out) {
	int64_t rb = df_row_bytes(dtype, cols), sb = df_row_scales(dtype, cols);
	df_kern_for(isa)->decode(dtype, data + r * rb, scales ? scales + r * sb : 0, out, cols);
}

void df_matmul_rows(int isa, int dtype, const uint8_t *data, const uint8_t *scales,
                    int64_t cols, int64_t r0, int64_t r1, const float *x, int64_t n,
                    float *dst, int64_t ldd, float *scratch) {
	const df_rowkern *k = df_kern_for(isa);
	int64_t rb = df_row_bytes(dtype, cols), sb = df_row_scales(dtype, cols);
	for (int64_t r = r0; r < r1; r++) {
		const uint8_t *row = data + r * rb;
		const uint8_t *rs = scales ? scales + r * sb : 0;
		if (n == 1) {
			dst[r] = k->dot(dtype, row, rs, x, cols);
			continue;
		}
		// Prefill: widen the row once, then use it for every position.
		k->decode(dtype, row, rs, scratch, cols);
		int64_t t = 0;
		if (k->dotf4) {
			float out[4];
			for (; t + 4 <= n; t += 4) {
				k->dotf4(scratch, x + t * cols, cols, cols, out);
				for (int j = 0; j < 4; j++) dst[(t + j) * ldd + r] = out[j];
			}
		}
		for (; t < n; t++) dst[t * ldd + r] = k->dotf(scratch, x + t * cols, cols);
	}
}

// act follows Activation.Apply's operation order. The reference evaluates
// exp and tanh in double and rounds; libm's float expf/tanhf are within an
// ulp or two of that and several times cheaper, which matters here: there is
// one activation per 2 weight rows.
float df_act1(int kind, float beta, float lbeta, float g, float u) {
	float sig = 1.0f / (1.0f + expf(-g));
	if (kind == DF_SITU) {
		float capg = tanhf(g / beta) * beta;
		float capu = tanhf(u / lbeta) * lbeta;
		return (capg * sig) * capu;
	}
	return g * sig * u;
}

void df_ffn_up_rows(int isa, int dtype1, const uint8_t *d1, const uint8_t *s1,
                    int dtype3, const uint8_t *d3, const uint8_t *s3,
                    int64_t rows, int64_t cols, int64_t r0, int64_t r1,
                    const float *x, int64_t n, float *g, float *u, float *scratch,
                    int kind, float beta, float lbeta) {
	const df_rowkern *k = df_kern_for(isa);
	if (n == 1) {
		// Row by row, W1 and W3 alternating: each row's prefetches run into
		// the next row of the same matrix, so both streams stay warm.
		int64_t rb1 = df_row_bytes(dtype1, cols), sb1 = df_row_scales(dtype1, cols);
		int64_t rb3 = df_row_bytes(dtype3, cols), sb3 = df_row_scales(dtype3, cols);
		for (int64_t r = r0; r < r1; r++) {
			g[r] = k->dot(dtype1, d1 + r * rb1, s1 ? s1 + r * sb1 : 0, x, cols);
			u[r] = k->dot(dtype3, d3 + r * rb3, s3 ? s3 + r * sb3 : 0, x, cols);
		}
	} else {
		df_matmul_rows(isa, dtype1, d1, s1, cols, r0, r1, x, n, g, rows, scratch);
		df_matmul_rows(isa, dtype3, d3, s3, cols, r0, r1, x, n, u, rows, scratch);
	}
	for (int64_t t = 0; t < n; t++) {
		float *gt = g + t * rows;
		const float *ut = u + t * rows;
		if (k->act) {
			k->act(kind, beta, lbeta, gt + r0, ut + r0, r1 - r0);
			continue;
		}
		for (int64_t r = r0; r < r1; r++) gt[r] = df_act1(kind, beta, lbeta, gt[r], ut[r]);
	}
}


uint64_t df_read(int isa, const uint8_t *p, int64_t n) {
#if defined(__x86_64__)
	if (isa == DF_ISA_AVX512) return df_read_avx512(p, n);
	if (isa == DF_ISA_AVX2) return df_read_avx2(p, n);
#endif
	(void)isa;
	uint64_t s[16] = {0};
	for (int64_t i = 0; i + 128 <= n; i += 128) {
		uint64_t w[16];
		memcpy(w, p + i, 128);
		for (int j = 0; j < 16; j++) s[j] += w[j];
	}
	uint64_t t = 0;
	for (int j = 0; j < 16; j++) t += s[j];
	return t;
}

// The portable FMA loop: 32 lanes of multiply-adds the compiler may fuse
// and vectorise as the baseline instruction set allows.
double df_fma(int isa, int64_t n, float a, float b, int64_t *lanes) {
#if defined(__x86_64__)
	if (isa == DF_ISA_AVX512) return df_fma_avx512(n, a, b, lanes);
	if (isa == DF_ISA_AVX2) return df_fma_avx2(n, a, b, lanes);
#endif
#if defined(__aarch64__)
	if (isa == DF_ISA_NEON) return df_fma_neon(n, a, b, lanes);
#endif
	enum { L = 32 };
	float v[L];
	for (int j = 0; j < L; j++) v[j] = (float)j;
	for (int64_t i = 0; i < n; i++)
		for (int j = 0; j < L; j++) v[j] = v[j] * a + b;
	*lanes = L;
	return df_fsum(v, L);
}
