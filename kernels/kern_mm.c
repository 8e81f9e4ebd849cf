//go:build cgo && (amd64 || arm64)

// The blocked matmul of prefill: W (rows × cols, any dtype) times n
// positions of x, compute-bound from about 8 positions on.
//
// Per block of DF_MM_MC rows, DF_MM_KC columns at a time: the block's
// weights are decoded once into an fp32 panel a (MC × KC floats, 32 KiB:
// L1/L2), and every tile of positions of the packed x (KC × tile floats,
// 16 KiB) runs over it in register tiles of mm_mr rows × tile positions,
// one broadcast weight times a vector of positions per FMA. Partial sums
// live in cb (MC × padded n floats) across the column blocks, so every
// output is one FMA chain over the columns in order, whatever the
// blocking: the same bits for any thread count or row range.
//
// Traffic: each weight byte is read from memory once per call; the packed
// x (n·cols floats) is read once per row block, 4/(2·MC) bytes per FLOP,
// from L2 or L3; the panel and the tile of x come from L1.
#include "kern.h"

#include <string.h>

static inline int64_t mm_min(int64_t a, int64_t b) { return a < b ? a : b; }

int df_mm_params(int isa, int *mr, int *tile, int *pad) {
	const df_rowkern *k = df_kern_for(isa);
	if (!k->mm_tile) return 0;
	*mr = k->mm_mr, *tile = k->mm_tile_w, *pad = k->mm_pad;
	return 1;
}

int64_t df_mm_padded(int isa, int64_t n) {
	int64_t p = df_kern_for(isa)->mm_pad;
	return p ? (n + p - 1) / p * p : n;
}

void df_mm_pack(int isa, const float *x, int64_t cols, int64_t n, float *xp) {
	const df_rowkern *k = df_kern_for(isa);
	int64_t P = df_mm_padded(isa, n), tw = k->mm_tile_w;
	for (int64_t t0 = 0; t0 < P; t0 += tw) {
		int64_t w = mm_min(tw, P - t0);
		float *tile = xp + t0 * cols;
		// 64 columns at a time, so that the w rows' lines stay in L1 while
		// the tile is written in order.
		for (int64_t c0 = 0; c0 < cols; c0 += 64) {
			int64_t c1 = mm_min(c0 + 64, cols);
			for (int64_t t = 0; t < w; t++) {
				if (t0 + t >= n) {
					for (int64_t c = c0; c < c1; c++) tile[c * w + t] = 0;
					continue;
				}
				const float *xt = x + (t0 + t) * cols;
				for (int64_t c = c0; c < c1; c++) tile[c * w + t] = xt[c];
			}
		}
	}
}

// mm_block computes rows [rb, rb+mc) over every position of xp (P padded
// positions) into cb[i*P + t], with a (DF_MM_MC × DF_MM_KC floats) as the
// panel.
static void mm_block(const df_rowkern *k, int dtype, const uint8_t *data, const uint8_t *scales,
                     int64_t cols, int64_t rb, int64_t mc, const float *xp, int64_t P, float *a,
                     float *cb) {
	const int64_t rbytes = df_row_bytes(dtype, cols), sb = df_row_scales(dtype, cols);
	const int64_t tw = k->mm_tile_w, mr = k->mm_mr;
	for (int64_t c0 = 0; c0 < cols; c0 += DF_MM_KC) {
		const int64_t kc = mm_min(DF_MM_KC, cols - c0), off = df_row_bytes(dtype, c0);
		const int64_t piece = df_row_bytes(dtype, kc);
		for (int64_t i = 0; i < mc; i++) {
			const uint8_t *row = data + (rb + i) * rbytes;
			const uint8_t *rs = scales ? scales + (rb + i) * sb : 0;
			if (rs && dtype == DF_MXFP4) rs += c0 / 32;
			// The rows' next pieces (the next block's first ones after the
			// last column block) while this one is computed: 64 rows
			// stream at once, more than the hardware prefetchers follow.
			// Prefetches never fault, past the matrix included.
			const uint8_t *next = c0 + DF_MM_KC < cols ? row + off + piece : row + mc * rbytes;
			for (int64_t o = 0; o < piece; o += 64) __builtin_prefetch(next + o, 0, 2);
			k->decode(dtype, row + off, rs, a + i * DF_MM_KC, kc);
		}
		for (int64_t t0 = 0; t0 < P; t0 += tw) {
			const int w = (int)mm_min(tw, P - t0);
			const float *b = xp + t0 * cols + c0 * w;
			for (int64_t i = 0; i < mc; i += mr)
				k->mm_tile((int)mm_min(mr, mc - i), w, a + i * DF_MM_KC, DF_MM_KC, b, kc, cb + i * P + t0, P,
				           c0 == 0);
		}
	}
}

void df_mm_rows(int isa, int dtype, const uint8_t *data, const uint8_t *scales, int64_t cols,
                int64_t r0, int64_t r1, const float *xp, int64_t n, float *dst, int64_t ldd, float *scratch) {
	const df_rowkern *k = df_kern_for(isa);
	const int64_t P = df_mm_padded(isa, n);
	float *a = scratch, *cb = scratch + DF_MM_MC * DF_MM_KC;
	for (int64_t rb = r0; rb < r1; rb += DF_MM_MC) {
		const int64_t mc = mm_min(DF_MM_MC, r1 - rb);
		mm_block(k, dtype, data, scales, cols, rb, mc, xp, P, a, cb);
		for (int64_t i = 0; i < mc; i++)
			for (int64_t t = 0; t < n; t++) dst[t * ldd + rb + i] = cb[i * P + t];
	}
}

void df_mm_ffn_up(int isa, int dtype, const uint8_t *d1, const uint8_t *s1, const uint8_t *d3,
                  const uint8_t *s3, int64_t rows, int64_t cols, int64_t r0, int64_t r1, const float *xp,
                  int64_t n, float *gp, float *scratch, int kind, float beta, float lbeta) {
	const df_rowkern *k = df_kern_for(isa);
	const int64_t P = df_mm_padded(isa, n), tw = k->mm_tile_w;
	float *a = scratch, *cg = scratch + DF_MM_MC * DF_MM_KC, *cu = cg + DF_MM_MC * P;
	for (int64_t rb = r0; rb < r1; rb += DF_MM_MC) {
		const int64_t mc = mm_min(DF_MM_MC, r1 - rb);
		mm_block(k, dtype, d1, s1, cols, rb, mc, xp, P, a, cg);
		mm_block(k, dtype, d3, s3, cols, rb, mc, xp, P, a, cu);
		// The padded positions too: their x is 0, so act(0, 0) = 0 there,
		// and W2 never mixes positions.
		if (k->act) {
			k->act(kind, beta, lbeta, cg, cu, mc * P);
		} else {
			for (int64_t i = 0; i < mc * P; i++) cg[i] = df_act1(kind, beta, lbeta, cg[i], cu[i]);
		}
		// g in W2's packed x layout: W2's column rb+i is this row.
		for (int64_t t0 = 0; t0 < P; t0 += tw) {
			const int64_t w = mm_min(tw, P - t0);
			for (int64_t i = 0; i < mc; i++) memcpy(gp + t0 * rows + (rb + i) * w, cg + i * P + t0, 4 * w);
		}
	}
}
