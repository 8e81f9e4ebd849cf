#version 450
// RMSNorm of each width-long row (engine/norm.go rmsNorm):
// y = w ⊙ (x · 1/√(mean(x²) + eps)); hasWeight 0 means no weight.
// One workgroup per row; the sum of squares is a tree reduction, so it
// differs from the sequential reference by rounding only.
layout(local_size_x = 64) in;

layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(std430, binding = 2) readonly buffer Wt { float wt[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Params {
    uint width;
    uint rows;
    float eps;
    uint hasWeight;
} pc;

shared float part[64];

void main() {
    uint lid = gl_LocalInvocationID.x;
    for (uint r = gl_WorkGroupID.x; r < pc.rows; r += gl_NumWorkGroups.x) {
        uint o = r * pc.width;
        float ss = 0.0;
        for (uint c = lid; c < pc.width; c += 64u) ss += x[o + c] * x[o + c];
        part[lid] = ss;
        barrier();
        for (uint h = 32u; h > 0u; h >>= 1) {
            if (lid < h) part[lid] += part[lid + h];
            barrier();
        }
        float inv = 1.0 / sqrt(part[0] / float(pc.width) + pc.eps);
        for (uint c = lid; c < pc.width; c += 64u) {
            float v = x[o + c] * inv;
            y[o + c] = pc.hasWeight != 0u ? wt[c] * v : v;
        }
        barrier();
    }
}
