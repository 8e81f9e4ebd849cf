//go:build cgo

// The tiled attention kernel on AVX2+FMA: 8 lanes, 4×2 accumulators (16
// registers).
#include <immintrin.h>
#include <stdint.h>

typedef int32_t df_attn_vi8 __attribute__((vector_size(32)));

#define ATTN_SUFFIX avx2
#define ATTN_ATTR __attribute__((target("avx2,fma,f16c")))
#define VF __m256
#define VI df_attn_vi8
#define W 8
#define NV 2
#define VFMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define VBC(x) _mm256_set1_ps(x)
#define VMAX(a, b) _mm256_max_ps((a), (b))
#include "kern_attn_tmpl.h"
