#version 450
#extension GL_GOOGLE_include_directive : require
// y[t, yOffset + r] = Σ_c W[r, c] · x[t, c] for n ≥ 2 positions: the prefill
// matmul and the prefill expert FFN's three products, tiled so that each
// weight is widened once per 32 positions and each x value read once per 64
// rows. A workgroup computes a tile of 64 rows × 32 positions (looping over
// row tiles when they exceed the dispatch limit; gl_WorkGroupID.y picks the
// positions). 32 columns at a time, its 128 threads stage the widened
// weights and x in shared memory, then each thread accumulates 4 rows × 4
// positions in registers, summing over c in column order. (Issue 33: 64
// threads of 4 × 8 left a routed expert's 3072-row products, 48 tiles per
// 32 positions, two warps on each multiprocessor of an H200; four hide the
// shared-memory latency better.)
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

const uint TR = 64u; // rows per tile
const uint TT = 32u; // positions per tile
const uint TK = 32u; // columns staged at a time
// [column][row or position]; the +1 spreads a column over the banks.
shared float wt[TK][TR + 1u];
shared float xt[TK][TT + 1u];

void main() {
    uint lid = gl_LocalInvocationID.x;
    uint rg = (lid % 16u) * 4u; // this thread's 4 rows in the tile
    uint tg = (lid / 16u) * 4u; // and its 4 positions
    uint t0 = gl_WorkGroupID.y * TT;
    for (uint r0 = gl_WorkGroupID.x * TR; r0 < pc.rows; r0 += gl_NumWorkGroups.x * TR) {
        float acc[4][4];
        for (uint a = 0u; a < 4u; a++)
            for (uint b = 0u; b < 4u; b++) acc[a][b] = 0.0;
        for (uint k0 = 0u; k0 < pc.cols; k0 += TK) {
            // Neighbouring threads take neighbouring columns: coalesced reads.
            for (uint i = 0u; i < TR * TK / 128u; i++) {
                uint idx = i * 128u + lid;
                uint rr = idx / TK, kk = idx % TK;
                uint r = r0 + rr, c = k0 + kk;
                wt[kk][rr] = (r < pc.rows && c < pc.cols) ? weight(r, c) : 0.0;
            }
            for (uint i = 0u; i < TT * TK / 128u; i++) {
                uint idx = i * 128u + lid;
                uint tt = idx / TK, kk = idx % TK;
                uint t = t0 + tt, c = k0 + kk;
                xt[kk][tt] = (t < pc.n && c < pc.cols) ? x[t * pc.cols + c] : 0.0;
            }
            barrier();
            for (uint kk = 0u; kk < TK; kk++) {
                float wv[4], xv[4];
                for (uint a = 0u; a < 4u; a++) wv[a] = wt[kk][rg + a];
                for (uint b = 0u; b < 4u; b++) xv[b] = xt[kk][tg + b];
                for (uint a = 0u; a < 4u; a++)
                    for (uint b = 0u; b < 4u; b++) acc[a][b] += wv[a] * xv[b];
            }
            barrier();
        }
        for (uint a = 0u; a < 4u; a++) {
            uint r = r0 + rg + a;
            for (uint b = 0u; b < 4u; b++) {
                uint t = t0 + tg + b;
                if (r < pc.rows && t < pc.n) y[t * pc.yRows + pc.yOffset + r] = acc[a][b];
            }
        }
    }
}
