//go:build cgo && (amd64 || arm64)

// The portable instance of the tiled attention kernel (GCC's generic
// 16-byte vectors: SSE2 on amd64, Advanced SIMD on arm64, unfused
// multiply-adds) and the dispatch by instruction set.
#include "kern.h"
#include "kern_attn.h"

typedef float df_attn_vf4 __attribute__((vector_size(16)));
typedef int32_t df_attn_vi4 __attribute__((vector_size(16)));

#define ATTN_SUFFIX generic
#define ATTN_ATTR
#define VF df_attn_vf4
#define VI df_attn_vi4
#define W 4
#define NV 2
#define VFMA(a, b, c) ((a) * (b) + (c))
#define VBC(x) ((df_attn_vf4){(x), (x), (x), (x)})
#define VMAX(a, b) df_attn_max4((a), (b))
static inline df_attn_vf4 df_attn_max4(df_attn_vf4 a, df_attn_vf4 b) {
	df_attn_vi4 gt = a > b;
	return (df_attn_vf4)(((df_attn_vi4)a & gt) | ((df_attn_vi4)b & ~gt));
}
#include "kern_attn_tmpl.h"

int64_t df_attn_scratch(int64_t qk, int64_t dv) {
	int64_t dvp = (dv + 15) & ~(int64_t)15;
	return 16 + qk * DF_ATTN_BK + DF_ATTN_BK * dvp + DF_ATTN_BQ * qk + DF_ATTN_BQ * dvp + 4 * DF_ATTN_BK + DF_ATTN_BQ * 16;
}

void df_attn_block(int isa, const float *q, const float *k, const float *v, float *dst, int64_t past, int64_t nh,
                   int64_t qk, int64_t dv, float scale, int64_t h, int64_t i0, int64_t i1, float *scratch) {
	switch (isa) {
#if defined(__x86_64__)
	case DF_ISA_AVX512:
		df_attn_block_avx512(q, k, v, dst, past, nh, qk, dv, scale, h, i0, i1, scratch);
		return;
	case DF_ISA_AVX2:
		df_attn_block_avx2(q, k, v, dst, past, nh, qk, dv, scale, h, i0, i1, scratch);
		return;
#endif
#if defined(__aarch64__)
	case DF_ISA_NEON:
		df_attn_block_neon(q, k, v, dst, past, nh, qk, dv, scale, h, i0, i1, scratch);
		return;
#endif
	}
	df_attn_block_generic(q, k, v, dst, past, nh, qk, dv, scale, h, i0, i1, scratch);
}

void df_gemm(int isa, int64_t m, int64_t k, int64_t n, const float *a, int64_t lda, const float *b, int64_t ldb,
             float *c, int64_t ldc, int acc) {
	switch (isa) {
#if defined(__x86_64__)
	case DF_ISA_AVX512:
		df_gemm_avx512(m, k, n, a, lda, b, ldb, c, ldc, acc);
		return;
	case DF_ISA_AVX2:
		df_gemm_avx2(m, k, n, a, lda, b, ldb, c, ldc, acc);
		return;
#endif
#if defined(__aarch64__)
	case DF_ISA_NEON:
		df_gemm_neon(m, k, n, a, lda, b, ldb, c, ldc, acc);
		return;
#endif
	}
	df_gemm_generic(m, k, n, a, lda, b, ldb, c, ldc, acc);
}

void df_delta_rule(int isa, float *o, const float *q, const float *k, const float *v, const float *decay,
                   const float *beta, const float *s0, float *s, int64_t T, int64_t d, int64_t stride,
                   int64_t dstride, int64_t bstride) {
	switch (isa) {
#if defined(__x86_64__)
	case DF_ISA_AVX512:
		df_delta_rule_avx512(o, q, k, v, decay, beta, s0, s, T, d, stride, dstride, bstride);
		return;
	case DF_ISA_AVX2:
		df_delta_rule_avx2(o, q, k, v, decay, beta, s0, s, T, d, stride, dstride, bstride);
		return;
#endif
#if defined(__aarch64__)
	case DF_ISA_NEON:
		df_delta_rule_neon(o, q, k, v, decay, beta, s0, s, T, d, stride, dstride, bstride);
		return;
#endif
	}
	df_delta_rule_generic(o, q, k, v, decay, beta, s0, s, T, d, stride, dstride, bstride);
}

void df_short_conv(int isa, float *y, const float *x, const float *w, float *st, int64_t T, int64_t P, int64_t K,
                   int64_t c0, int64_t c1) {
	switch (isa) {
#if defined(__x86_64__)
	case DF_ISA_AVX512:
		df_short_conv_avx512(y, x, w, st, T, P, K, c0, c1);
		return;
	case DF_ISA_AVX2:
		df_short_conv_avx2(y, x, w, st, T, P, K, c0, c1);
		return;
#endif
#if defined(__aarch64__)
	case DF_ISA_NEON:
		df_short_conv_neon(y, x, w, st, T, P, K, c0, c1);
		return;
#endif
	}
	df_short_conv_generic(y, x, w, st, T, P, K, c0, c1);
}

void df_elementwise(int isa, int op, float *dst, const float *x, int64_t n) {
	switch (isa) {
#if defined(__x86_64__)
	case DF_ISA_AVX512:
		df_elementwise_avx512(op, dst, x, n);
		return;
	case DF_ISA_AVX2:
		df_elementwise_avx2(op, dst, x, n);
		return;
#endif
#if defined(__aarch64__)
	case DF_ISA_NEON:
		df_elementwise_neon(op, dst, x, n);
		return;
#endif
	}
	df_elementwise_generic(op, dst, x, n);
}
