#version 450
#extension GL_GOOGLE_include_directive : require
// y[t, yOffset + r] = Σ_c W[r, c] · x[t, c] for n ≥ 2 positions: the prefill
// matmul and the prefill expert FFN's three products (mmbig.comp's larger
// tiles only where a backend is told to: by the H200's own clock they ran
// at two thirds of this shader's rate), tiled so that each weight is
// widened once per 32 positions and each x value read once per 64 rows. A
// workgroup computes a tile of 64 rows × 32 positions (looping over row
// tiles when they exceed the dispatch limit; gl_WorkGroupID.y picks the
// positions); each of its 128 threads accumulates 4 rows × 4 positions in
// registers, one fp32 multiply-add chain over the columns in order for
// each output. (Issue 33: 64 threads of 4 × 8 left a routed expert's
// 3072-row products, 48 tiles per 32 positions, two warps on each
// multiprocessor of an H200; four hide the shared-memory latency better.)
//
// The tiles are mmtile.glsl's, which mmgroup.comp shares.
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

#include "mmtile.glsl"

void main() {
    gW = 0u;
    gS = 0u;
    gN = pc.n;
    smallTiles(gl_WorkGroupID.y * TT);
}
