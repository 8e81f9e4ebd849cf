#version 450
#extension GL_GOOGLE_include_directive : require
// y[t, yOffset + r] = Σ_c W[r, c] · x[t, c] for n ≥ 2 positions: the prefill
// matmul and the prefill expert FFN's three products where mmbig.comp's
// larger tiles would leave the device idle (a routed expert's few hundred
// positions), tiled so that each weight is widened once per 32 positions
// and each x value read once per 64 rows. A workgroup computes a tile of
// 64 rows × 32 positions (looping over row tiles when they exceed the
// dispatch limit; gl_WorkGroupID.y picks the positions); each of its 128
// threads accumulates 4 rows × 4 positions in registers, one fp32
// multiply-add chain over the columns in order for each output. (Issue 33:
// 64 threads of 4 × 8 left a routed expert's 3072-row products, 48 tiles
// per 32 positions, two warps on each multiprocessor of an H200; four hide
// the shared-memory latency better.)
//
// 32 columns at a time, the next ones loaded while these are multiplied
// (mmstage.glsl).
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
const uint TR = 64u;  // rows per tile
const uint TT = 32u;  // positions per tile
const uint TK = 32u;  // columns staged at a time
shared vec4 wt[TK][TR / 4u + 1u];
shared vec4 xt[TK][TT / 4u + 1u];

#include "mmstage.glsl"

void main() {
    uint lid = gl_LocalInvocationID.x;
    uint rq = lid % 16u; // this thread's rows 4·rq ..
    uint tq = lid / 16u; // and positions 4·tq ..
    uint t0 = gl_WorkGroupID.y * TT;
    gW = 0u;
    gS = 0u;
    gN = pc.n;
    bool fast = fastStage();
    for (uint r0 = gl_WorkGroupID.x * TR; r0 < pc.rows; r0 += gl_NumWorkGroups.x * TR) {
        vec4 acc[4]; // acc[i]: row 4·rq + i, positions 4·tq ..
        for (uint i = 0u; i < 4u; i++) acc[i] = vec4(0.0);
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
                vec4 wa = wt[kk][rq], xa = xt[kk][tq];
                acc[0] = fma(vec4(wa.x), xa, acc[0]);
                acc[1] = fma(vec4(wa.y), xa, acc[1]);
                acc[2] = fma(vec4(wa.z), xa, acc[2]);
                acc[3] = fma(vec4(wa.w), xa, acc[3]);
            }
            barrier();
        }
        for (uint i = 0u; i < 4u; i++) {
            uint r = r0 + 4u * rq + i;
            if (r >= pc.rows) continue;
            for (uint j = 0u; j < 4u; j++) {
                uint t = t0 + 4u * tq + j;
                if (t < pc.n) y[t * pc.yRows + pc.yOffset + r] = acc[i][j];
            }
        }
    }
}
