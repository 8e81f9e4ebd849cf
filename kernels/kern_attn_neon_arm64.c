//go:build cgo

// The tiled attention kernel on Advanced SIMD: 4 lanes, 4×4 accumulators
// (32 registers).
#include <arm_neon.h>

#define ATTN_SUFFIX neon
#define ATTN_ATTR
#define VF float32x4_t
#define VI int32x4_t
#define W 4
#define NV 4
#define VFMA(a, b, c) vfmaq_f32((c), (a), (b))
#define VBC(x) vdupq_n_f32(x)
#define VMAX(a, b) vmaxq_f32((a), (b))
#define HMAX(v) vmaxvq_f32(v)
#define HSUM(v) vaddvq_f32(v)
#include "kern_attn_tmpl.h"
