#version 450
// The gated activation of the expert FFN, in place: g[i] = act(g[i], u[i])
// (kernels.Activation.Apply): SiLU g·σ(g)·u, or K3's SiTU
// (β·tanh(g/β)·σ(g))·(β_lin·tanh(u/β_lin)).
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 64) in;

layout(std430, binding = 1) buffer G { float g[]; };
layout(std430, binding = 2) readonly buffer U { float u[]; };

layout(push_constant) uniform Params {
    uint count;
    uint kind; // kernels.ActKind: 0 SiLU, 1 SiTU
    float beta;
    float linearBeta;
} pc;

#include "common.glsl"

void main() {
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
    if (i >= pc.count) return;
    float gv = g[i], uv = u[i];
    float sig = dfSigmoid(gv);
    if (pc.kind == 1u) {
        float capG = dfTanh(gv / pc.beta) * pc.beta;
        float capU = dfTanh(uv / pc.linearBeta) * pc.linearBeta;
        g[i] = (capG * sig) * capU;
    } else {
        g[i] = gv * sig * uv;
    }
}
