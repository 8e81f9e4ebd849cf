// Tiled causal attention (kernels/attn.go has the algorithm): one call
// computes query rows [i0, i1) of head h over every key they see.
#ifndef DF_KERN_ATTN_H
#define DF_KERN_ATTN_H

#include <stdint.h>

#define DF_ATTN_BQ 256 // query rows per call (AttnBlockRows)
#define DF_ATTN_BK 64 // keys per tile (AttnBlockKeys)

// q: [T, nh, qk], k: [past+T, nh, qk], v: [past+T, nh, dv], dst: [T, nh, dv];
// scratch: df_attn_scratch(qk, dv) floats, not shared between threads.
void df_attn_block(int isa, const float *q, const float *k, const float *v, float *dst, int64_t past, int64_t nh,
                   int64_t qk, int64_t dv, float scale, int64_t h, int64_t i0, int64_t i1, float *scratch);
int64_t df_attn_scratch(int64_t qk, int64_t dv);

// df_gemm: c[i*ldc+j] (+ when acc)= Σ_p a[i*lda+p]·b[p*ldb+j], i < m, j < n,
// each element summed over p in order.
void df_gemm(int isa, int64_t m, int64_t k, int64_t n, const float *a, int64_t lda, const float *b, int64_t ldb,
             float *c, int64_t ldc, int acc);

// df_delta_rule: one head's gated delta rule over T tokens (deltarule.go's
// DeltaRule): q, k, v, o rows at t*stride, decay at t*dstride, beta at
// t*bstride; the state s0 [d, d] into s, which is s0 or disjoint from it.
void df_delta_rule(int isa, float *o, const float *q, const float *k, const float *v, const float *decay,
                   const float *beta, const float *s0, float *s, int64_t T, int64_t d, int64_t stride,
                   int64_t dstride, int64_t bstride);

// df_short_conv: the causal short convolution + SiLU of channels [c0, c1)
// over T tokens (shortconv.go's ShortConv): x, y [T, P], w [P, K], the
// window st [P, K-1] updated in place.
void df_short_conv(int isa, float *y, const float *x, const float *w, float *st, int64_t T, int64_t P, int64_t K,
                   int64_t c0, int64_t c1);

// df_elementwise: dst[i] = op(x[i]) for n floats (elementwise.go's
// ElemOp: DF_ELEM_EXP e^x for x ≤ 0, DF_ELEM_SIGMOID σ(x)).
#define DF_ELEM_EXP 1
#define DF_ELEM_SIGMOID 2
void df_elementwise(int isa, int op, float *dst, const float *x, int64_t n);

#define DF_ATTN_DECL(SUFFIX)                                                                                          \
	void df_attn_block_##SUFFIX(const float *q, const float *k, const float *v, float *dst, int64_t past, int64_t nh, \
	                            int64_t qk, int64_t dv, float scale, int64_t h, int64_t i0, int64_t i1, float *scratch); \
	void df_gemm_##SUFFIX(int64_t m, int64_t k, int64_t n, const float *a, int64_t lda, const float *b, int64_t ldb,   \
	                      float *c, int64_t ldc, int acc);                                                       \
	void df_delta_rule_##SUFFIX(float *o, const float *q, const float *k, const float *v, const float *decay,         \
	                            const float *beta, const float *s0, float *s, int64_t T, int64_t d, int64_t stride,  \
	                            int64_t dstride, int64_t bstride);                                     \
	void df_short_conv_##SUFFIX(float *y, const float *x, const float *w, float *st, int64_t T, int64_t P,           \
	                            int64_t K, int64_t c0, int64_t c1);                                             \
	void df_elementwise_##SUFFIX(int op, float *dst, const float *x, int64_t n);
DF_ATTN_DECL(generic)
#if defined(__x86_64__)
DF_ATTN_DECL(avx2)
DF_ATTN_DECL(avx512)
#endif
#if defined(__aarch64__)
DF_ATTN_DECL(neon)
#endif

#endif
