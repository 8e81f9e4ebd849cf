// Shared declarations of the C kernels (see fast.go). Every function works on
// a range of output rows so that the Go worker pool can split a matrix.
#ifndef DELTAFIN_KERN_H
#define DELTAFIN_KERN_H

#include <stdint.h>

// Must match kernels.DType.
enum { DF_F32 = 0, DF_BF16 = 1, DF_F16 = 2, DF_I8 = 3, DF_MXFP4 = 4 };
// Instruction sets; which exist depends on the architecture compiled for.
enum { DF_ISA_GENERIC = 0, DF_ISA_AVX2 = 1, DF_ISA_NEON = 2, DF_ISA_AVX512 = 3 };
// Must match kernels.ActKind.
enum { DF_SILU = 0, DF_SITU = 1 };

void df_init(void);
int df_has_isa(int isa);

// dst[t*ldd + r] = Σ_c W[r,c]·x[t*cols + c] for r in [r0, r1), t in [0, n).
// For MXFP4 with n == 1, x is in the ISA's layout (df_mx_layout); otherwise
// it is plain. scratch holds at least cols floats (used when n > 1).
void df_matmul_rows(int isa, int dtype, const uint8_t *data, const uint8_t *scales,
                    int64_t cols, int64_t r0, int64_t r1, const float *x, int64_t n,
                    float *dst, int64_t ldd, float *scratch);

// The first half of an expert FFN for rows [r0, r1) of W1 and W3:
// g[t*rows + r] = act(W1·x_t, W3·x_t)[r]; u is a scratch of the same shape.
void df_ffn_up_rows(int isa, int dtype1, const uint8_t *d1, const uint8_t *s1,
                    int dtype3, const uint8_t *d3, const uint8_t *s3,
                    int64_t rows, int64_t cols, int64_t r0, int64_t r1,
                    const float *x, int64_t n, float *g, float *u, float *scratch,
                    int kind, float beta, float lbeta);

// Widens row r of a matrix into out (cols floats) with the ISA's decoder.
void df_decode_row(int isa, int dtype, const uint8_t *data, const uint8_t *scales, int64_t cols,
                   int64_t r, float *out);

// Reads n bytes (a multiple of 128) as fast as the CPU can: the memory
// read limit of `deltafin bench kernels`.
uint64_t df_read(int isa, const uint8_t *p, int64_t n);

// Runs n steps of v = v*a + b on *lanes independent fp32 lanes, lane j
// starting at j, as fast as the FMA units allow: the compute limit of
// `deltafin bench kernels`. Writes the ISA's lane count to *lanes and
// returns the sum of the lanes at the end (in double), which keeps the
// arithmetic from being optimised away and lets a test check it.
double df_fma(int isa, int64_t n, float a, float b, int64_t *lanes);

// The sum of n floats in double, in order: df_fma's checksum of its lanes.
static inline double df_fsum(const float *v, int64_t n) {
	double s = 0;
	for (int64_t i = 0; i < n; i++) s += v[i];
	return s;
}

// ISA-specific row kernels, selected by df_matmul_rows.
typedef struct {
	float (*dot)(int dtype, const uint8_t *row, const uint8_t *rscales, const float *x, int64_t cols);
	void (*decode)(int dtype, const uint8_t *row, const uint8_t *rscales, float *out, int64_t cols);
	float (*dotf)(const float *a, const float *b, int64_t cols);
	// out[j] = a·x_j for the four vectors x_j = x + j*ldx; NULL: four dotf.
	void (*dotf4)(const float *a, const float *x, int64_t ldx, int64_t cols, float *out);
	// g[i] = act(g[i], u[i]) for i < n; NULL: the scalar libm version.
	void (*act)(int kind, float beta, float lbeta, float *g, const float *u, int64_t n);
	// Writes x (cols, a multiple of 32) in the layout dot reads for MXFP4;
	// NULL: df_mx_group_layout.
	void (*mx_layout)(const float *x, int64_t cols, float *xp);
	// The blocked matmul's register tile (kern_mm.c; NULL: the row path at
	// every n): c[i*ldc + t] = (first ? 0 : c[i*ldc + t]) + Σ_k a[i*lda + k]·b[k*w + t]
	// for i < mr (≤ mm_mr) and t < w (mm_tile, or mm_pad for a last tile),
	// the k in order, one FMA each.
	void (*mm_tile)(int mr, int w, const float *a, int64_t lda, const float *b, int64_t kc, float *c,
	                int64_t ldc, int first);
	int mm_mr, mm_tile_w, mm_pad;
} df_rowkern;

// Blocked matmul (kern_mm.c), for n of about 8 and more positions. x is
// packed once per call (df_mm_pack) into tiles of mm_tile_w positions,
// position-contiguous per column; each block of DF_MM_MC rows is decoded
// DF_MM_KC columns at a time into an fp32 panel, which every tile of
// positions then reuses from L1. A register tile is mm_mr rows × one tile
// of positions. -D overrides the block sizes for experiments.
#ifndef DF_MM_MC
#define DF_MM_MC 64
#endif
#ifndef DF_MM_KC
#define DF_MM_KC 128
#endif

// df_mm_params reports the ISA's tile (0 without a blocked kernel).
int df_mm_params(int isa, int *mr, int *tile, int *pad);
// Positions padded to the ISA's pad: the packed x holds df_mm_padded·cols floats.
int64_t df_mm_padded(int isa, int64_t n);
// The packed layout: tile j (positions tile·j on) at xp + tile·j·cols, column
// k's w positions at + k·w; positions n and up are zero.
void df_mm_pack(int isa, const float *x, int64_t cols, int64_t n, float *xp);
// dst[t*ldd + r] = Σ_c W[r,c]·x_t[c] for r in [r0, r1), t < n, x packed;
// scratch holds DF_MM_MC·DF_MM_KC + DF_MM_MC·df_mm_padded floats.
void df_mm_rows(int isa, int dtype, const uint8_t *data, const uint8_t *scales, int64_t cols,
                int64_t r0, int64_t r1, const float *xp, int64_t n, float *dst, int64_t ldd, float *scratch);
// The expert FFN's first half over packed x: rows [r0, r1) of
// act(W1·x, W3·x), written packed into gp (the x of W2, whose cols are
// rows); scratch holds DF_MM_MC·DF_MM_KC + 2·DF_MM_MC·df_mm_padded floats.
void df_mm_ffn_up(int isa, int dtype, const uint8_t *d1, const uint8_t *s1, const uint8_t *d3,
                  const uint8_t *s3, int64_t rows, int64_t cols, int64_t r0, int64_t r1, const float *xp,
                  int64_t n, float *gp, float *scratch, int kind, float beta, float lbeta);

// x in the layout of the MXFP4 matvec of isa, into xp (cols floats).
void df_mx_layout(int isa, const float *x, int64_t cols, float *xp);
// The per-group layout: per group of 32 columns, the 16 even columns (low
// nibbles) then the 16 odd ones (high nibbles).
void df_mx_group_layout(const float *x, int64_t cols, float *xp);

float df_act1(int kind, float beta, float lbeta, float g, float u);

extern const df_rowkern df_generic;
const df_rowkern *df_kern_for(int isa);
#if defined(__x86_64__)
uint64_t df_read_avx2(const uint8_t *p, int64_t n);
uint64_t df_read_avx512(const uint8_t *p, int64_t n);
double df_fma_avx2(int64_t n, float a, float b, int64_t *lanes);
double df_fma_avx512(int64_t n, float a, float b, int64_t *lanes);
extern const df_rowkern df_avx2;
extern const df_rowkern df_avx512;
#endif
#if defined(__aarch64__)
extern const df_rowkern df_neon;
double df_fma_neon(int64_t n, float a, float b, int64_t *lanes);
#endif

// Tables filled by df_init.
extern float df_e2m1[16];      // exact e2m1 values, code 8 = -0
extern float df_e8m0[256];     // 2^(s-127), NaN at 255
extern float df_e8m0_half[256]; // 2^(s-128): the fast paths use 2·e2m1 as integers
extern const int8_t df_e2m1x2[16]; // 2·e2m1 as int8 (negative zero becomes 0)

static inline uint16_t df_ld16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t df_ld32(const uint8_t *p) {
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline float df_f32bits(uint32_t u) {
	union { uint32_t u; float f; } v = {u};
	return v.f;
}
float df_f16(uint16_t h);

// Bytes per row of the element data, and scale bytes per row.
static inline int64_t df_row_bytes(int dtype, int64_t cols) {
	switch (dtype) {
	case DF_F32: return 4 * cols;
	case DF_BF16: case DF_F16: return 2 * cols;
	case DF_I8: return cols;
	default: return cols / 2;
	}
}
static inline int64_t df_row_scales(int dtype, int64_t cols) {
	switch (dtype) {
	case DF_I8: return 4;
	case DF_MXFP4: return cols / 32;
	default: return 0;
	}
}

#endif
