#version 450
#extension GL_GOOGLE_include_directive : require
// y[t, yOffset + r] = Σ_c W[r, c] · x[t, c] for every dtype the kernels package knows
// (kernels.Matrix over its on-disk bytes): the BF16/INT8/F16/F32 matvec when
// n = 1, the batched prefill matmul when n > 1, and the three products of the
// MXFP4 expert FFN. One workgroup per row (looping when rows exceed the
// dispatch limit); its 64 threads stride over the columns, widen each weight
// once and use it for up to 8 positions, then reduce in shared memory. The
// backend runs prefill (n > 1) through mmtile.comp instead.
layout(local_size_x = 64) in;

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

const uint TB = 8; // positions per pass
shared float part[TB][64];

#include "weights.glsl"

void main() {
    uint lid = gl_LocalInvocationID.x;
    for (uint r = gl_WorkGroupID.x; r < pc.rows; r += gl_NumWorkGroups.x) {
        for (uint t0 = 0u; t0 < pc.n; t0 += TB) {
            uint nb = min(TB, pc.n - t0);
            float acc[TB];
            for (uint j = 0u; j < TB; j++) acc[j] = 0.0;
            for (uint c = lid; c < pc.cols; c += 64u) {
                float wv = weight(r, c);
                for (uint j = 0u; j < nb; j++) {
                    acc[j] += wv * x[(t0 + j) * pc.cols + c];
                }
            }
            for (uint j = 0u; j < TB; j++) part[j][lid] = acc[j];
            barrier();
            for (uint h = 32u; h > 0u; h >>= 1) {
                if (lid < h) {
                    for (uint j = 0u; j < nb; j++) part[j][lid] += part[j][lid + h];
                }
                barrier();
            }
            if (lid < nb) y[(t0 + lid) * pc.yRows + pc.yOffset + r] = part[lid][0];
            barrier();
        }
    }
}
