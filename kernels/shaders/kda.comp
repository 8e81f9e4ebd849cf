#version 450
// The KDA gated delta rule over T tokens (engine/kda.go kdaRecurrent), one
// workgroup per head. Column j of the state S_h [d(K), d(V)] only meets
// column j of δ and o, so each thread owns whole columns and runs the
// reference's operations in the reference's order; only e^g differs (by
// about an ulp).
//
//   S[k,:] ← S[k,:]·e^g[k];  δ = β·(v − Σ_k k[k]·S[k,:]);
//   S[k,:] ← S[k,:] + k[k]·δ;  o = Σ_k q[k]·S[k,:]
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 64) in;

layout(std430, binding = 1) readonly buffer Q { float q[]; };    // [T, nh, d]
layout(std430, binding = 2) readonly buffer K { float k[]; };    // [T, nh, d]
layout(std430, binding = 3) readonly buffer V { float v[]; };    // [T, nh, d]
layout(std430, binding = 4) readonly buffer G { float g[]; };    // [T, nh, d] log-decay
layout(std430, binding = 5) readonly buffer B { float beta[]; }; // [T, nh]
layout(std430, binding = 6) buffer S { float st[]; };            // [nh, d, d]
layout(std430, binding = 7) writeonly buffer O { float o[]; };   // [T, nh, d]

layout(push_constant) uniform Params {
    uint T;
    uint nh;
    uint d;
} pc;

#include "common.glsl"

void main() {
    uint h = gl_WorkGroupID.x;
    uint d = pc.d;
    uint sb = h * d * d;
    for (uint j = gl_LocalInvocationID.x; j < d; j += 64u) {
        for (uint t = 0u; t < pc.T; t++) {
            uint base = (t * pc.nh + h) * d;
            precise float delta = v[base + j];
            for (uint i = 0u; i < d; i++) {
                precise float row = st[sb + i * d + j] * dfExp(g[base + i]);
                st[sb + i * d + j] = row;
                delta = delta - k[base + i] * row;
            }
            delta = delta * beta[t * pc.nh + h];
            precise float acc = 0.0;
            for (uint i = 0u; i < d; i++) {
                precise float row = st[sb + i * d + j] + k[base + i] * delta;
                st[sb + i * d + j] = row;
                acc = acc + q[base + i] * row;
            }
            o[base + j] = acc;
        }
    }
}
