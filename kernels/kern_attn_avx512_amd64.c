//go:build cgo

// The tiled attention kernel on AVX-512F: 16 lanes, 4×4 accumulators.
#include <immintrin.h>
#include <stdint.h>

typedef int32_t df_attn_vi16 __attribute__((vector_size(64)));

#define ATTN_SUFFIX avx512
#define ATTN_ATTR __attribute__((target("avx512f,avx512bw,avx2,fma,f16c")))
#define VF __m512
#define VI df_attn_vi16
#define W 16
#define NV 4
#define VFMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define VBC(x) _mm512_set1_ps(x)
#define VMAX(a, b) _mm512_max_ps((a), (b))
#define HMAX(v) _mm512_reduce_max_ps(v)
#define HSUM(v) _mm512_reduce_add_ps(v)
#include "kern_attn_tmpl.h"
