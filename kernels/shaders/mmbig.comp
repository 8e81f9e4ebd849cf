#version 450
#extension GL_GOOGLE_include_directive : require
// y[t, yOffset + r] = Σ_c W[r, c] · x[t, c] for many positions (the backend
// takes it from 33 on; mmtile.comp has the smaller tiles): the prefill
// matmul, compute-bound, in mmbig.glsl's 128-row × 64-position tiles;
// gl_WorkGroupID.y picks the positions.
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

#include "mmbig.glsl"

void main() {
    gW = 0u;
    gS = 0u;
    gN = pc.n;
    bigTiles(gl_WorkGroupID.y * TT);
}
