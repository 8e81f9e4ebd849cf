//go:build cgo

// AVX-512F row kernels for the dtypes where AVX2 runs out of arithmetic
// before memory runs out of bandwidth: MXFP4 (a 16-entry vpermps table turns
// each nibble into its exact float, −0 included), INT8 and BF16. F16, F32 and
// the prefill paths reuse the AVX2 kernels. fast.go selects this set only
// when golang.org/x/sys/cpu reports AVX-512F (and AVX2/FMA/F16C).
#include "kern.h"

#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f,avx512bw,avx2,fma,f16c")))

// Four accumulators: an FMA's latency is four cycles, so fewer would leave
// the loop waiting on its own sums rather than on memory.
AVX512 static inline __m512 ld_bf16(const uint8_t *p) {
	__m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p));
	return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}
AVX512 static inline __m512 ld_i8(const uint8_t *p) {
	return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)p)));
}

// Software prefetch distances: see kern_avx2_amd64.c. Every loop here
// prefetches in two levels, into L1 a little ahead (BF16/INT8 2 KiB, MXFP4
// 1 KiB) and into L2 16 KiB ahead: with arithmetic between the loads, a
// core keeps fewer lines in flight than a plain read does, and its
// line-fill buffers alone cannot cover DRAM latency; the far L2 prefetches
// keep more lines on their way. BF16 on the 2-vCPU VM, two threads, against
// a prefetched 64-byte read in the same run: L1 2 KiB alone 0.79, with L2
// 16 KiB 0.88–0.92; INT8 0.75 → 0.79–0.81. MXFP4, with a static split over
// N threads, best of 15–40 interleaved passes, against the same run's plain
// 64-byte read
// (2-vCPU Emerald Rapids VM; 16-core Xeon host of the device machine):
//
//	                 VM, 2 threads   host, 16 / 8 / 4 / 1 threads
//	L1 8 KiB only    0.72            0.86 / 0.70 / 0.71 / 0.67
//	L1 4 + L2 32     0.71–0.81       0.85 / 0.72 / 0.73 / 0.67
//	L1 1 + L2 16     0.77–0.81       0.88 / 0.75 / 0.73 / 0.68
//	no prefetch      0.42            0.52 / 0.37 / 0.35 / 0.32
//
// -D overrides them for such experiments.
#ifndef PF_AHEAD512
#define PF_AHEAD512 2048
#endif
#ifndef PF_AHEAD512_L2
#define PF_AHEAD512_L2 16384
#endif
#ifndef PF_MX
#define PF_MX 1024
#endif
#ifndef PF_MX_L2
#define PF_MX_L2 16384
#endif

// prefetch2 asks for the n bytes (whole lines) at p + near into L1 and at
// p + far into L2: the two levels every loop here prefetches in.
AVX512 static inline void prefetch2(const void *p, int n, int64_t near, int64_t far) {
	for (int o = 0; o < n; o += 64) {
		_mm_prefetch((const char *)p + near + o, _MM_HINT_T0);
		_mm_prefetch((const char *)p + far + o, _MM_HINT_T1);
	}
}

#define DOT512(LD, ES)                                                                    \
	__m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;                           \
	int64_t c = 0;                                                                        \
	for (; c + 64 <= cols; c += 64) {                                                     \
		prefetch2(row + (ES) * c, (ES) * 64, PF_AHEAD512, PF_AHEAD512_L2);                \
		a0 = _mm512_fmadd_ps(LD(row + (ES) * c), _mm512_loadu_ps(x + c), a0);              \
		a1 = _mm512_fmadd_ps(LD(row + (ES) * (c + 16)), _mm512_loadu_ps(x + c + 16), a1);   \
		a2 = _mm512_fmadd_ps(LD(row + (ES) * (c + 32)), _mm512_loadu_ps(x + c + 32), a2);   \
		a3 = _mm512_fmadd_ps(LD(row + (ES) * (c + 48)), _mm512_loadu_ps(x + c + 48), a3);   \
	}                                                                                     \
	for (; c + 16 <= cols; c += 16) a0 = _mm512_fmadd_ps(LD(row + (ES) * c), _mm512_loadu_ps(x + c), a0); \
	float s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));

AVX512 static float dot_bf16(const uint8_t *row, const float *x, int64_t cols) {
	DOT512(ld_bf16, 2)
	for (; c < cols; c++) s += df_f32bits((uint32_t)df_ld16(row + 2 * c) << 16) * x[c];
	return s;
}

AVX512 static float dot_i8(const uint8_t *row, const float *x, int64_t cols) {
	DOT512(ld_i8, 1)
	for (; c < cols; c++) s += (float)(int8_t)row[c] * x[c];
	return s;
}

// MXFP4. 64 bytes of a row are 16 dwords of 8 nibbles: dword k holds
// columns 8k..8k+7 of a 128-column chunk, nibble n (bits 4n..4n+3) column
// 8k+n. vpermps reads the low 4 bits of each dword lane, so any vector whose
// lanes have nibble n in their low bits, permuted through a 16-entry table,
// gives nibble n of every lane as its exact float (−0 included). Loading the
// chunk at byte offsets 0..3 brings the even nibbles 0, 2, 4, 6 there for
// free (the load ports do the shifting), and one shift by 4 of each load the
// odd ones: 8 permutes, 4 shifts and 8 FMAs per 128 weights, where shifting
// one load by 4n cost 7 shifts on the port the permutes do not use (in-cache
// throughput ≈ 10 → 15 GB/s per core). x is in the matching layout
// (avx512_mx_layout): xp[c + 16n + k] = x[c + 8k + n]. Lanes 4b..4b+3 cover
// MX block b of the chunk, so the four scales are one per-lane vector,
// applied with one FMA per chunk. Columns past the last whole chunk (cols is
// a multiple of 32) use the per-group path and the per-group layout.

// One group of 32 in the per-group layout (kern.h): the 16 bytes widened to
// dwords; the low nibble, and after a shift the high one.
AVX512 static inline __m512 mx_group(const uint8_t *p, const float *xg, __m512 tbl) {
	__m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)p));
	__m512 lo = _mm512_permutexvar_ps(b, tbl);
	__m512 hi = _mm512_permutexvar_ps(_mm512_srli_epi32(b, 4), tbl);
	return _mm512_fmadd_ps(hi, _mm512_loadu_ps(xg + 16), _mm512_mul_ps(lo, _mm512_loadu_ps(xg)));
}

// The 128 products of one chunk, unscaled, summed per lane in two chains:
// their latency is hidden by the next chunks' independent chains. v0..v3
// are the chunk loaded at byte offsets 0..3.
AVX512 static inline __m512 mx_chunk4(__m512i v0, __m512i v1, __m512i v2, __m512i v3, const float *x, __m512 tbl) {
	__m512 a = _mm512_mul_ps(_mm512_permutexvar_ps(v0, tbl), _mm512_loadu_ps(x));
	__m512 b = _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(v0, 4), tbl), _mm512_loadu_ps(x + 16));
	a = _mm512_fmadd_ps(_mm512_permutexvar_ps(v1, tbl), _mm512_loadu_ps(x + 32), a);
	b = _mm512_fmadd_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(v1, 4), tbl), _mm512_loadu_ps(x + 48), b);
	a = _mm512_fmadd_ps(_mm512_permutexvar_ps(v2, tbl), _mm512_loadu_ps(x + 64), a);
	b = _mm512_fmadd_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(v2, 4), tbl), _mm512_loadu_ps(x + 80), b);
	a = _mm512_fmadd_ps(_mm512_permutexvar_ps(v3, tbl), _mm512_loadu_ps(x + 96), a);
	b = _mm512_fmadd_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(v3, 4), tbl), _mm512_loadu_ps(x + 112), b);
	return _mm512_add_ps(a, b);
}

// mx_chunk reads up to 3 bytes past the chunk (the next chunk's, within the
// row); mx_chunk_last, for a row's final chunk, masks them off, since the
// row may end its buffer.
AVX512 static inline __m512 mx_chunk(const uint8_t *p, const float *x, __m512 tbl) {
	return mx_chunk4(_mm512_loadu_si512(p), _mm512_loadu_si512(p + 1), _mm512_loadu_si512(p + 2),
	                 _mm512_loadu_si512(p + 3), x, tbl);
}
AVX512 static inline __m512 mx_chunk_last(const uint8_t *p, const float *x, __m512 tbl) {
	return mx_chunk4(_mm512_loadu_si512(p), _mm512_maskz_loadu_epi8(~(__mmask64)0 >> 1, p + 1),
	                 _mm512_maskz_loadu_epi8(~(__mmask64)0 >> 2, p + 2),
	                 _mm512_maskz_loadu_epi8(~(__mmask64)0 >> 3, p + 3), x, tbl);
}
#define MX_CHUNK(p, x, tbl, last) ((last) ? mx_chunk_last(p, x, tbl) : mx_chunk(p, x, tbl))

// Scales. The 16 scales of four chunks widened once, lane b = 2^(s_b−127)
// (shifted into the exponent field: exact for s in 1..254; rows with a 0,
// whose 2^−127 is subnormal, or a 255, NaN, take the table instead), then
// spread per chunk: lanes 4b..4b+3 of chunk j get scale 4j+b.
AVX512 static inline __m512 mx_scales16(const uint8_t *rs, int fast) {
	if (fast) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)rs)), 23));
	return _mm512_i32gather_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)rs)), df_e8m0, 4);
}
#define MX_SPREAD(j) _mm512_set_epi32(4 * (j) + 3, 4 * (j) + 3, 4 * (j) + 3, 4 * (j) + 3, 4 * (j) + 2, 4 * (j) + 2, 4 * (j) + 2, \
	                                  4 * (j) + 2, 4 * (j) + 1, 4 * (j) + 1, 4 * (j) + 1, 4 * (j) + 1, 4 * (j), 4 * (j), 4 * (j), 4 * (j))
// One chunk's scales alone, for the chunks after the last group of four.
AVX512 static inline __m512 mx_scales4(const uint8_t *rs) {
	__m128 q = _mm_set_ps(df_e8m0[rs[3]], df_e8m0[rs[2]], df_e8m0[rs[1]], df_e8m0[rs[0]]);
	return _mm512_permutexvar_ps(MX_SPREAD(0), _mm512_castps128_ps512(q));
}

// mx_fast_scales reports whether none of the n scale bytes is 0 or 255.
AVX512 static inline int mx_fast_scales(const uint8_t *rs, int64_t n) {
	__mmask64 bad = 0;
	for (int64_t i = 0; i < n; i += 64) {
		__mmask64 m = n - i >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << (n - i)) - 1;
		__m512i v = _mm512_maskz_loadu_epi8(m, rs + i);
		// s+1 wraps 255 to 0; s+1 <= 1 is s == 0 or s == 255.
		bad |= _mm512_mask_cmple_epu8_mask(m, _mm512_add_epi8(v, _mm512_set1_epi8(1)), _mm512_set1_epi8(1));
	}
	return bad == 0;
}

AVX512 static inline float dot_mx_body(const uint8_t *row, const uint8_t *rs, const float *xp, int64_t cols, int fast) {
	const __m512 tbl = _mm512_loadu_ps(df_e2m1);
	__m512 a0 = _mm512_setzero_ps(), a1 = a0;
	int64_t c = 0;
	for (; c + 512 <= cols; c += 512) {
		prefetch2(row + c / 2, 256, PF_MX, PF_MX_L2);
		prefetch2(rs + c / 32, 1, PF_MX / 16, PF_MX_L2 / 16);
		__m512 s = mx_scales16(rs + c / 32, fast);
		a0 = _mm512_fmadd_ps(mx_chunk(row + c / 2, xp + c, tbl), _mm512_permutexvar_ps(MX_SPREAD(0), s), a0);
		a1 = _mm512_fmadd_ps(mx_chunk(row + c / 2 + 64, xp + c + 128, tbl), _mm512_permutexvar_ps(MX_SPREAD(1), s), a1);
		a0 = _mm512_fmadd_ps(mx_chunk(row + c / 2 + 128, xp + c + 256, tbl), _mm512_permutexvar_ps(MX_SPREAD(2), s), a0);
		a1 = _mm512_fmadd_ps(MX_CHUNK(row + c / 2 + 192, xp + c + 384, tbl, c + 512 == cols),
		                     _mm512_permutexvar_ps(MX_SPREAD(3), s), a1);
	}
	for (; c + 128 <= cols; c += 128) {
		_mm_prefetch((const char *)row + c / 2 + PF_MX, _MM_HINT_T0);
		a0 = _mm512_fmadd_ps(MX_CHUNK(row + c / 2, xp + c, tbl, c + 128 == cols), mx_scales4(rs + c / 32), a0);
	}
	for (; c < cols; c += 32) // at most 3 groups
		a1 = _mm512_fmadd_ps(mx_group(row + c / 2, xp + c, tbl), _mm512_set1_ps(df_e8m0[rs[c / 32]]), a1);
	return _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
}

AVX512 static float dot_mx(const uint8_t *row, const uint8_t *rs, const float *xp, int64_t cols) {
	if (mx_fast_scales(rs, cols / 32)) return dot_mx_body(row, rs, xp, cols, 1);
	return dot_mx_body(row, rs, xp, cols, 0);
}

// avx512_mx_layout writes x in the layout dot_mx reads (see above): per
// chunk a 16×8 transpose, one gather per output vector. It runs once per
// call before any row, and for the expert FFN between its two phases while
// every thread waits, so a scalar loop's few microseconds showed on a
// many-core machine.
AVX512 static void avx512_mx_layout(const float *x, int64_t cols, float *xp) {
	const __m512i idx = _mm512_set_epi32(120, 112, 104, 96, 88, 80, 72, 64, 56, 48, 40, 32, 24, 16, 8, 0);
	int64_t c = 0;
	for (; c + 128 <= cols; c += 128)
		for (int n = 0; n < 8; n++) _mm512_storeu_ps(xp + c + 16 * n, _mm512_i32gather_ps(idx, x + c + n, 4));
	df_mx_group_layout(x + c, cols - c, xp + c);
}

AVX512 static float avx512_dot(int dtype, const uint8_t *row, const uint8_t *rs, const float *x, int64_t cols) {
	switch (dtype) {
	case DF_BF16: return dot_bf16(row, x, cols);
	case DF_I8: return dot_i8(row, x, cols) * df_f32bits(df_ld32(rs));
	case DF_MXFP4: return dot_mx(row, rs, x, cols);
	default: return df_avx2.dot(dtype, row, rs, x, cols);
	}
}

// Decoding, for the blocked matmul's panels (and DecodeRow's bits: exact,
// −0 included). MXFP4: 8 bytes give 16 columns, each byte twice
// (unpacklo), shifted by 0 or 4 per lane so that the column's nibble is in
// the low 4 bits vpermps reads, then times the block's scale: the
// reference's one rounding.
AVX512 static void avx512_decode(int dtype, const uint8_t *row, const uint8_t *rs, float *out, int64_t cols) {
	int64_t c = 0;
	switch (dtype) {
	case DF_BF16:
		for (; c + 16 <= cols; c += 16) _mm512_storeu_ps(out + c, ld_bf16(row + 2 * c));
		break;
	case DF_I8: {
		const __m512 sc = _mm512_set1_ps(df_f32bits(df_ld32(rs)));
		for (; c + 16 <= cols; c += 16) _mm512_storeu_ps(out + c, _mm512_mul_ps(ld_i8(row + c), sc));
		break;
	}
	case DF_MXFP4: {
		const __m512 tbl = _mm512_loadu_ps(df_e2m1);
		const __m512i sh = _mm512_set_epi32(4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0);
		for (; c + 32 <= cols; c += 32) {
			const __m512 sc = _mm512_set1_ps(df_e8m0[rs[c / 32]]);
			__m128i b = _mm_loadu_si128((const __m128i *)(row + c / 2));
			__m512i lo = _mm512_srlv_epi32(_mm512_cvtepu8_epi32(_mm_unpacklo_epi8(b, b)), sh);
			__m512i hi = _mm512_srlv_epi32(_mm512_cvtepu8_epi32(_mm_unpackhi_epi8(b, b)), sh);
			_mm512_storeu_ps(out + c, _mm512_mul_ps(_mm512_permutexvar_ps(lo, tbl), sc));
			_mm512_storeu_ps(out + c + 16, _mm512_mul_ps(_mm512_permutexvar_ps(hi, tbl), sc));
		}
		return; // cols is a multiple of 32
	}
	default:
		df_avx2.decode(dtype, row, rs, out, cols);
		return;
	}
	if (c < cols) df_generic.decode(dtype, row + df_row_bytes(dtype, c), rs, out + c, cols - c);
}

// The blocked matmul's register tile (kern_mm.c): mr ≤ 8 rows × 32
// positions (two vectors; 8, 16 or 24 for the last tile, in a 256-bit
// half), 16 accumulators, each step two vector loads of x and mr
// broadcast weights (folded into the FMAs' memory operands). On two FMA
// ports that is 8 cycles of FMAs per 10 loads.
#define MM_MR 8
AVX512 static inline __attribute__((always_inline)) void mm_tile_t(const int mr, const int nz, const int ny,
                                                                  const float *a, int64_t lda, const float *b,
                                                                  int64_t kc, float *c, int64_t ldc, int first) {
	__m512 acc[MM_MR][2];
	__m256 acy[MM_MR];
	for (int i = 0; i < mr; i++) {
		for (int v = 0; v < nz; v++) acc[i][v] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(c + i * ldc + 16 * v);
		if (ny) acy[i] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(c + i * ldc + 16 * nz);
	}
	const int w = 16 * nz + 8 * ny;
	for (int64_t k = 0; k < kc; k++) {
		__m512 bz[2];
		for (int v = 0; v < nz; v++) bz[v] = _mm512_loadu_ps(b + k * w + 16 * v);
		const __m256 by = ny ? _mm256_loadu_ps(b + k * w + 16 * nz) : _mm256_setzero_ps();
		for (int i = 0; i < mr; i++) {
			for (int v = 0; v < nz; v++) acc[i][v] = _mm512_fmadd_ps(_mm512_set1_ps(a[i * lda + k]), bz[v], acc[i][v]);
			if (ny) acy[i] = _mm256_fmadd_ps(_mm256_set1_ps(a[i * lda + k]), by, acy[i]);
		}
	}
	for (int i = 0; i < mr; i++) {
		for (int v = 0; v < nz; v++) _mm512_storeu_ps(c + i * ldc + 16 * v, acc[i][v]);
		if (ny) _mm256_storeu_ps(c + i * ldc + 16 * nz, acy[i]);
	}
}

#define MM_CASES(NZ, NY)                                                     \
	switch (mr) {                                                            \
	case 8: mm_tile_t(8, NZ, NY, a, lda, b, kc, c, ldc, first); return;      \
	case 7: mm_tile_t(7, NZ, NY, a, lda, b, kc, c, ldc, first); return;      \
	case 6: mm_tile_t(6, NZ, NY, a, lda, b, kc, c, ldc, first); return;      \
	case 5: mm_tile_t(5, NZ, NY, a, lda, b, kc, c, ldc, first); return;      \
	case 4: mm_tile_t(4, NZ, NY, a, lda, b, kc, c, ldc, first); return;      \
	case 3: mm_tile_t(3, NZ, NY, a, lda, b, kc, c, ldc, first); return;      \
	case 2: mm_tile_t(2, NZ, NY, a, lda, b, kc, c, ldc, first); return;      \
	default: mm_tile_t(1, NZ, NY, a, lda, b, kc, c, ldc, first); return;     \
	}

AVX512 static void avx512_mm_tile(int mr, int w, const float *a, int64_t lda, const float *b, int64_t kc,
                                  float *c, int64_t ldc, int first) {
	switch (w) {
	case 32: MM_CASES(2, 0)
	case 24: MM_CASES(1, 1)
	case 16: MM_CASES(1, 0)
	default: MM_CASES(0, 1)
	}
}

static float avx512_dotf(const float *a, const float *b, int64_t cols) { return df_avx2.dotf(a, b, cols); }

static void avx512_dotf4(const float *a, const float *x, int64_t ldx, int64_t cols, float *out) {
	df_avx2.dotf4(a, x, ldx, cols, out);
}

static void avx512_act(int kind, float beta, float lbeta, float *g, const float *u, int64_t n) {
	df_avx2.act(kind, beta, lbeta, g, u, n);
}

// df_read_avx512 is the memory read limit of `deltafin bench kernels` on
// AVX-512 CPUs: whole-line loads, and the MXFP4 kernel's two-level prefetch,
// so that the limit is the best streaming read we know how to do, not one
// the kernels are measured against favourably. On the 2-vCPU Emerald
// Rapids VM the AVX2 read (two 32-byte loads a line) gave 0.88–0.91 of the
// 64-byte one, and prefetching added ≈ 4%.
AVX512 uint64_t df_read_avx512(const uint8_t *p, int64_t n) {
	__m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
	for (int64_t i = 0; i + 256 <= n; i += 256) {
		prefetch2(p + i, 256, PF_MX, PF_MX_L2);
		a0 = _mm512_add_epi64(a0, _mm512_loadu_si512(p + i));
		a1 = _mm512_add_epi64(a1, _mm512_loadu_si512(p + i + 64));
		a2 = _mm512_add_epi64(a2, _mm512_loadu_si512(p + i + 128));
		a3 = _mm512_add_epi64(a3, _mm512_loadu_si512(p + i + 192));
	}
	uint64_t s = _mm512_reduce_add_epi64(_mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
	for (int64_t i = n / 256 * 256; i + 8 <= n; i += 8) s += df_ld32(p + i) + ((uint64_t)df_ld32(p + i + 4) << 32);
	return s;
}

const df_rowkern df_avx512 = {avx512_dot,       avx512_decode, avx512_dotf, avx512_dotf4, avx512_act,
                              avx512_mx_layout, avx512_mm_tile, MM_MR,       32,           8};

// df_fma_avx512 is the FMA limit on AVX-512 CPUs: 16 independent chains of
// 16 lanes, enough to cover two FMA units of 4-cycle latency twice over.
AVX512 double df_fma_avx512(int64_t n, float a, float b, int64_t *lanes) {
	enum { C = 16 };
	__m512 v[C];
	const __m512 va = _mm512_set1_ps(a), vb = _mm512_set1_ps(b);
	const __m512 idx = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
	for (int c = 0; c < C; c++) v[c] = _mm512_add_ps(idx, _mm512_set1_ps((float)(16 * c)));
	for (int64_t i = 0; i < n; i++)
		for (int c = 0; c < C; c++) v[c] = _mm512_fmadd_ps(v[c], va, vb);
	float out[16 * C];
	for (int c = 0; c < C; c++) _mm512_storeu_ps(out + 16 * c, v[c]);
	*lanes = 16 * C;
	return df_fsum(out, 16 * C);
}
