#version 450
#extension GL_GOOGLE_include_directive : require
// y[t, yOffset + r] = Σ_c W[r, c] · x[t, c] for many positions (the backend
// takes it from 33 on; mmtile.comp below): the prefill matmul and the
// prefill expert FFN's products, compute-bound. A workgroup of 128 threads
// computes a tile of 128 rows × 64 positions (looping over row tiles past
// the dispatch limit; gl_WorkGroupID.y picks the positions); each thread
// keeps 8 rows × 8 positions in registers, so every value it reads from
// shared memory feeds 8 multiply-adds. Every output is one fp32
// multiply-add chain over the columns in order, as in kernels/ref.go.
//
// 32 columns at a time. Where the row's bytes are whole words (BF16, F16,
// INT8, MXFP4 with cols a multiple of 32) the next 32 columns' raw words
// and x values are loaded into registers while the current ones are
// multiplied, so the loads' latency hides behind the arithmetic (issue 33:
// the loads had each tile's threads wait at the barrier); neighbouring
// threads load neighbouring words of W and of x, whole lines of them,
// and widen the weights as they stage them. Other shapes stage one weight
// at a time, without the prefetch.
layout(local_size_x = 128) in;

layout(std430, binding = 1) readonly buffer Wd { uint w[]; };
layout(std430, binding = 2) readonly buffer Ws { uint s[]; };
layout(std430, binding = 3) readonly buffer X { float x[]; };
layout(std430, binding = 4) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Params {
    uint rows;
    uint cols;
    uint n;
    uint dtype;   // kernels.DType: 0 F32, 1 BF16, 2 F16, 3 I8, 4 MXFP4
    uint yRows;   // y is [n, yRows]: a block of rows of a taller matrix
    uint yOffset; // the block's first row in y
} pc;

#include "weights.glsl"

const uint NT = 128u; // threads
const uint TR = 128u; // rows per tile
const uint TT = 64u;  // positions per tile
const uint TK = 32u;  // columns staged at a time
// [column][quad of rows or positions]: a thread reads its 4 consecutive
// rows (positions) as one vec4. The extra quad spreads the staging's
// column-strided writes over the banks.
shared vec4 wt[TK][TR / 4u + 1u];
shared vec4 xt[TK][TT / 4u + 1u];

void putW(uint kk, uint r, float v) { wt[kk][r >> 2][r & 3u] = v; }

// The prefetched tile: raw weight words (16 a thread for BF16/F16, 8 for
// INT8, 4 for MXFP4), each word's row scale (INT8, MXFP4), and 16 values
// of x.
uint pw[16];
float psc[8];
float px[16];

// fetch loads the tile of columns k0.. of rows r0.. into the registers;
// wpr is the words a row of the tile takes (32 × bits / 32), constant in
// each case so that the register arrays stay registers.
void fetch(uint lid, uint r0, uint t0, uint k0) {
    switch (pc.dtype) {
    case 1u:
    case 2u:
        for (uint i = 0u; i < 16u; i++) {
            uint idx = i * NT + lid, r = r0 + idx / 16u;
            pw[i] = r < pc.rows ? w[((r * pc.cols + k0) >> 1) + idx % 16u] : 0u;
        }
        break;
    case 3u:
        for (uint i = 0u; i < 8u; i++) {
            uint idx = i * NT + lid, r = r0 + idx / 8u;
            pw[i] = r < pc.rows ? w[((r * pc.cols + k0) >> 2) + idx % 8u] : 0u;
            psc[i] = r < pc.rows ? uintBitsToFloat(s[r]) : 0.0;
        }
        break;
    default: // MXFP4: k0 is one scale group
        for (uint i = 0u; i < 4u; i++) {
            uint idx = i * NT + lid, r = r0 + idx / 4u, g = (r * pc.cols + k0) >> 5;
            pw[i] = r < pc.rows ? w[((r * pc.cols + k0) >> 3) + idx % 4u] : 0u;
            psc[i] = r < pc.rows ? e8m0((s[g >> 2] >> ((g & 3u) * 8u)) & 0xffu) : 0.0;
        }
        break;
    }
    for (uint i = 0u; i < 16u; i++) {
        uint idx = i * NT + lid, t = t0 + idx / TK;
        px[i] = t < pc.n ? x[t * pc.cols + k0 + idx % TK] : 0.0;
    }
}

// stage widens the prefetched tile into shared memory.
void stage(uint lid) {
    switch (pc.dtype) {
    case 1u:
        for (uint i = 0u; i < 16u; i++) {
            uint idx = i * NT + lid, rr = idx / 16u, kk = 2u * (idx % 16u);
            putW(kk, rr, uintBitsToFloat(pw[i] << 16));
            putW(kk + 1u, rr, uintBitsToFloat(pw[i] & 0xffff0000u));
        }
        break;
    case 2u:
        for (uint i = 0u; i < 16u; i++) {
            uint idx = i * NT + lid, rr = idx / 16u, kk = 2u * (idx % 16u);
            putW(kk, rr, f16(pw[i] & 0xffffu));
            putW(kk + 1u, rr, f16(pw[i] >> 16));
        }
        break;
    case 3u:
        for (uint i = 0u; i < 8u; i++) {
            uint idx = i * NT + lid, rr = idx / 8u, kk = 4u * (idx % 8u);
            for (uint b = 0u; b < 4u; b++) putW(kk + b, rr, float(int(pw[i] << (24u - 8u * b)) >> 24) * psc[i]);
        }
        break;
    default:
        for (uint i = 0u; i < 4u; i++) {
            uint idx = i * NT + lid, rr = idx / 4u, kk = 8u * (idx % 4u);
            for (uint b = 0u; b < 8u; b++) putW(kk + b, rr, e2m1((pw[i] >> (4u * b)) & 15u) * psc[i]);
        }
        break;
    }
    for (uint i = 0u; i < 16u; i++) {
        uint idx = i * NT + lid, tt = idx / TK;
        xt[idx % TK][tt >> 2][tt & 3u] = px[i];
    }
}

// stageSlow widens columns k0.. one weight at a time, zeros past the
// matrix: F32, or a row that is not whole words.
void stageSlow(uint lid, uint r0, uint t0, uint k0) {
    for (uint kk = 0u; kk < TK; kk++) {
        uint r = r0 + lid, c = k0 + kk;
        putW(kk, lid, (r < pc.rows && c < pc.cols) ? weight(r, c) : 0.0);
    }
    for (uint i = 0u; i < 16u; i++) {
        uint idx = i * NT + lid, tt = idx / TK, c = k0 + idx % TK, t = t0 + tt;
        xt[idx % TK][tt >> 2][tt & 3u] = (t < pc.n && c < pc.cols) ? x[t * pc.cols + c] : 0.0;
    }
}

void main() {
    uint lid = gl_LocalInvocationID.x;
    uint rq = lid % 16u; // row quads rq and rq + 16
    uint tq = lid / 16u; // position quads tq and tq + 8
    uint t0 = gl_WorkGroupID.y * TT;
    bool fast = pc.dtype >= 1u && pc.dtype <= 4u && pc.cols % TK == 0u;
    for (uint r0 = gl_WorkGroupID.x * TR; r0 < pc.rows; r0 += gl_NumWorkGroups.x * TR) {
        // acc[i][h]: row 4·rq + i (i < 4) or 64 + 4·rq + i − 4, positions
        // 4·tq.. (h 0) or 32 + 4·tq.. (h 1).
        vec4 acc[8][2];
        for (uint i = 0u; i < 8u; i++) {
            acc[i][0] = vec4(0.0);
            acc[i][1] = vec4(0.0);
        }
        if (fast) fetch(lid, r0, t0, 0u);
        for (uint k0 = 0u; k0 < pc.cols; k0 += TK) {
            if (fast) {
                stage(lid);
            } else {
                stageSlow(lid, r0, t0, k0);
            }
            barrier();
            if (fast && k0 + TK < pc.cols) fetch(lid, r0, t0, k0 + TK);
            for (uint kk = 0u; kk < TK; kk++) {
                vec4 wa = wt[kk][rq], wb = wt[kk][rq + 16u];
                vec4 xa = xt[kk][tq], xb = xt[kk][tq + 8u];
                acc[0][0] = fma(vec4(wa.x), xa, acc[0][0]);
                acc[0][1] = fma(vec4(wa.x), xb, acc[0][1]);
                acc[1][0] = fma(vec4(wa.y), xa, acc[1][0]);
                acc[1][1] = fma(vec4(wa.y), xb, acc[1][1]);
                acc[2][0] = fma(vec4(wa.z), xa, acc[2][0]);
                acc[2][1] = fma(vec4(wa.z), xb, acc[2][1]);
                acc[3][0] = fma(vec4(wa.w), xa, acc[3][0]);
                acc[3][1] = fma(vec4(wa.w), xb, acc[3][1]);
                acc[4][0] = fma(vec4(wb.x), xa, acc[4][0]);
                acc[4][1] = fma(vec4(wb.x), xb, acc[4][1]);
                acc[5][0] = fma(vec4(wb.y), xa, acc[5][0]);
                acc[5][1] = fma(vec4(wb.y), xb, acc[5][1]);
                acc[6][0] = fma(vec4(wb.z), xa, acc[6][0]);
                acc[6][1] = fma(vec4(wb.z), xb, acc[6][1]);
                acc[7][0] = fma(vec4(wb.w), xa, acc[7][0]);
                acc[7][1] = fma(vec4(wb.w), xb, acc[7][1]);
            }
            barrier();
        }
        for (uint i = 0u; i < 8u; i++) {
            uint r = r0 + (i < 4u ? 4u * rq + i : 64u + 4u * rq + i - 4u);
            if (r >= pc.rows) continue;
            for (uint h = 0u; h < 2u; h++) {
                for (uint j = 0u; j < 4u; j++) {
                    uint t = t0 + 32u * h + 4u * tq + j;
                    if (t < pc.n) y[t * pc.yRows + pc.yOffset + r] = acc[i][h][j];
                }
            }
        }
    }
}
