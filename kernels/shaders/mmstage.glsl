// Staging of a tile of W and x for mmbig.glsl and mmtile.glsl, whose
// shaders declare the buffers and pc, and which set NT (threads), TR (rows)
// and TT (positions) before including this; the tile's 32 columns (TK)
// are staged in shared vec4 wt[TK][TR/4 + 1] and xt[TK][TT/4 + 1]:
// [column][quad of rows or positions], so that a thread reads its 4
// consecutive rows (positions) as one vec4; the extra quad spreads the
// staging's column-strided writes over the banks.
//
// Where a row's bytes are whole words (BF16, F16, INT8, MXFP4 with cols a
// multiple of 32: fastStage) fetch loads the next tile's raw words and x
// into registers while the current tile is multiplied, so that the loads'
// latency hides behind the arithmetic (issue 33: every tile's threads
// waited at the barrier for them), and stage widens them into shared
// memory; neighbouring threads load neighbouring words of W and of x,
// whole lines of them. Other shapes stage one weight at a time
// (stageSlow), without the prefetch.
//
// The including shader's main sets gW and gS, the first words of its
// matrix in w and in s, and gN, the end of its positions: 0, 0 and pc.n
// for one matrix; mmgroup.comp's expert's own (fastStage shapes only: the
// one-weight path reads weights.glsl, which knows no offset).
#include "weights.glsl"

const uint TK = 32u; // columns staged at a time
shared vec4 wt[TK][TR / 4u + 1u];
shared vec4 xt[TK][TT / 4u + 1u];

uint gW, gS, gN;

bool fastStage() { return pc.dtype >= 1u && pc.dtype <= 4u && pc.cols % TK == 0u; }

void putW(uint kk, uint r, float v) { wt[kk][r >> 2][r & 3u] = v; }

// The prefetched tile: raw weight words (TR·16/NT a thread for BF16/F16,
// half that for INT8, a quarter for MXFP4), each word's row scale (INT8,
// MXFP4), and TT·TK/NT values of x.
uint pw[TR * 16u / NT];
float psc[TR * 8u / NT];
float px[TT * TK / NT];

// fetch loads the tile of columns k0.. of rows r0.. into the registers;
// every loop's length is a constant, so that the arrays stay registers.
void fetch(uint lid, uint r0, uint t0, uint k0) {
    switch (pc.dtype) {
    case 1u:
    case 2u:
        for (uint i = 0u; i < TR * 16u / NT; i++) {
            uint idx = i * NT + lid, r = r0 + idx / 16u;
            pw[i] = r < pc.rows ? w[gW + ((r * pc.cols + k0) >> 1) + idx % 16u] : 0u;
        }
        break;
    case 3u:
        for (uint i = 0u; i < TR * 8u / NT; i++) {
            uint idx = i * NT + lid, r = r0 + idx / 8u;
            pw[i] = r < pc.rows ? w[gW + ((r * pc.cols + k0) >> 2) + idx % 8u] : 0u;
            psc[i] = r < pc.rows ? uintBitsToFloat(s[gS + r]) : 0.0;
        }
        break;
    default: // MXFP4: k0 is one scale group
        for (uint i = 0u; i < TR * 4u / NT; i++) {
            uint idx = i * NT + lid, r = r0 + idx / 4u, g = (r * pc.cols + k0) >> 5;
            pw[i] = r < pc.rows ? w[gW + ((r * pc.cols + k0) >> 3) + idx % 4u] : 0u;
            psc[i] = r < pc.rows ? e8m0((s[gS + (g >> 2)] >> ((g & 3u) * 8u)) & 0xffu) : 0.0;
        }
        break;
    }
    for (uint i = 0u; i < TT * TK / NT; i++) {
        uint idx = i * NT + lid, t = t0 + idx / TK;
        px[i] = t < gN ? x[t * pc.cols + k0 + idx % TK] : 0.0;
    }
}

// stage widens the prefetched tile into shared memory.
void stage(uint lid) {
    switch (pc.dtype) {
    case 1u:
        for (uint i = 0u; i < TR * 16u / NT; i++) {
            uint idx = i * NT + lid, rr = idx / 16u, kk = 2u * (idx % 16u);
            putW(kk, rr, uintBitsToFloat(pw[i] << 16));
            putW(kk + 1u, rr, uintBitsToFloat(pw[i] & 0xffff0000u));
        }
        break;
    case 2u:
        for (uint i = 0u; i < TR * 16u / NT; i++) {
            uint idx = i * NT + lid, rr = idx / 16u, kk = 2u * (idx % 16u);
            putW(kk, rr, f16(pw[i] & 0xffffu));
            putW(kk + 1u, rr, f16(pw[i] >> 16));
        }
        break;
    case 3u:
        for (uint i = 0u; i < TR * 8u / NT; i++) {
            uint idx = i * NT + lid, rr = idx / 8u, kk = 4u * (idx % 8u);
            for (uint b = 0u; b < 4u; b++) putW(kk + b, rr, float(int(pw[i] << (24u - 8u * b)) >> 24) * psc[i]);
        }
        break;
    default:
        for (uint i = 0u; i < TR * 4u / NT; i++) {
            uint idx = i * NT + lid, rr = idx / 4u, kk = 8u * (idx % 4u);
            for (uint b = 0u; b < 8u; b++) putW(kk + b, rr, e2m1((pw[i] >> (4u * b)) & 15u) * psc[i]);
        }
        break;
    }
    for (uint i = 0u; i < TT * TK / NT; i++) {
        uint idx = i * NT + lid, tt = idx / TK;
        xt[idx % TK][tt >> 2][tt & 3u] = px[i];
    }
}

// stageSlow widens columns k0.. one weight at a time, zeros past the
// matrix: F32, or a row that is not whole words.
void stageSlow(uint lid, uint r0, uint t0, uint k0) {
    for (uint i = 0u; i < TR * TK / NT; i++) {
        uint idx = i * NT + lid, rr = idx / TK, kk = idx % TK, r = r0 + rr, c = k0 + kk;
        putW(kk, rr, (r < pc.rows && c < pc.cols) ? weight(r, c) : 0.0);
    }
    for (uint i = 0u; i < TT * TK / NT; i++) {
        uint idx = i * NT + lid, tt = idx / TK, c = k0 + idx % TK, t = t0 + tt;
        xt[idx % TK][tt >> 2][tt & 3u] = (t < gN && c < pc.cols) ? x[t * pc.cols + c] : 0.0;
    }
}

// stageTile puts columns k0.. of the tile in shared memory (from the
// registers fetch filled on the fast path), waits for every thread's, and
// starts fetching the next columns: the top of each step over the columns,
// before the step's multiply-adds.
void stageTile(uint lid, uint r0, uint t0, uint k0, bool fast) {
    if (fast) {
        stage(lid);
    } else {
        stageSlow(lid, r0, t0, k0);
    }
    barrier();
    if (fast && k0 + TK < pc.cols) fetch(lid, r0, t0, k0 + TK);
}
