#version 450
#extension GL_GOOGLE_include_directive : require
// One product of a group of experts of one shape, each over its own
// positions, in one dispatch (the prefill expert FFN's W1, W3 or W2 for
// every expert a prompt's group gives the GPU): expert e's matrix is the
// e-th of the concatenated w (and s), its positions the rows
// tab[1 + 2e] .. + tab[2 + 2e] of x and y, so that the experts' tiles
// fill the device together, in mmtile.glsl's tiles (by the H200's own
// clock they ran a routed expert's products at 0.25 of its FMA peak where
// mmbig.glsl's larger ones ran at 0.15-0.22). Whole-word rows only
// (fastStage shapes); the backend runs any other one expert at a time.
//
// tab: [0] the position tiles each expert has along gl_WorkGroupID.y (the
// most any expert needs), then start and count per expert. A workgroup
// past its expert's positions does nothing.
layout(local_size_x = 128) in;

layout(std430, binding = 1) readonly buffer Wd { uint w[]; };
layout(std430, binding = 2) readonly buffer Ws { uint s[]; };
layout(std430, binding = 3) readonly buffer X { float x[]; };
layout(std430, binding = 4) writeonly buffer Y { float y[]; };
layout(std430, binding = 5) readonly buffer Tab { uint tab[]; };

layout(push_constant) uniform Params {
    uint rows;
    uint cols;
    uint n;       // every expert's positions together
    uint dtype;   // kernels.DType: 1 BF16, 2 F16, 3 I8, 4 MXFP4
    uint yRows;   // y is [n, yRows]
    uint yOffset; // 0
    uint wWords;  // one expert's matrix in w, words
    uint sWords;  // and its scales in s
} pc;

#include "mmtile.glsl"

void main() {
    uint e = gl_WorkGroupID.y / tab[0], tile = gl_WorkGroupID.y % tab[0];
    uint start = tab[1u + 2u * e], count = tab[2u + 2u * e];
    if (tile * TT >= count) return; // the whole workgroup: no barrier is skipped by some
    gW = e * pc.wWords;
    gS = e * pc.sWords;
    gN = start + count;
    smallTiles(start + tile * TT);
}
