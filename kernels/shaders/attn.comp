#version 450
// Causal attention over the MLA cache (engine/mla.go): for new token t and
// head h, softmax(q·k_p·scale) over the past+t+1 positions p, then Σ_p a_p·v_p.
// One workgroup per (h, t). Each score is the reference's sequential dot;
// the softmax max and sum are tree reductions (rounding only); each output
// element sums over p in the reference's order.
#extension GL_GOOGLE_include_directive : require
layout(local_size_x = 64) in;

layout(std430, binding = 1) readonly buffer Q { float q[]; };   // [T, nh, qk]
layout(std430, binding = 2) readonly buffer Kc { float kc[]; }; // [L, nh, qk]
layout(std430, binding = 3) readonly buffer Vc { float vc[]; }; // [L, nh, dv]
layout(std430, binding = 4) buffer Sc { float sc[]; };          // [T, nh, L] scratch
layout(std430, binding = 5) writeonly buffer O { float o[]; };  // [T, nh, dv]

layout(push_constant) uniform Params {
    uint T;
    uint nh;
    uint qk;
    uint dv;
    uint past;
    float scale;
} pc;

#include "common.glsl"

shared float red[64];

void main() {
    uint h = gl_WorkGroupID.x, t = gl_WorkGroupID.y, lid = gl_LocalInvocationID.x;
    uint L = pc.past + pc.T;
    uint n = pc.past + t + 1u;
    uint qo = (t * pc.nh + h) * pc.qk;
    uint so = (t * pc.nh + h) * L;

    float m = uintBitsToFloat(0xff800000u);
    for (uint p = lid; p < n; p += 64u) {
        uint ko = (p * pc.nh + h) * pc.qk;
        precise float s = 0.0;
        for (uint i = 0u; i < pc.qk; i++) s = s + q[qo + i] * kc[ko + i];
        s = s * pc.scale;
        sc[so + p] = s;
        m = max(m, s);
    }
    red[lid] = m;
    barrier();
    for (uint w = 32u; w > 0u; w >>= 1) {
        if (lid < w) red[lid] = max(red[lid], red[lid + w]);
        barrier();
    }
    m = red[0];
    barrier();

    float sum = 0.0;
    for (uint p = lid; p < n; p += 64u) {
        float e = dfExp(sc[so + p] - m);
        sc[so + p] = e;
        sum += e;
    }
    red[lid] = sum;
    barrier();
    for (uint w = 32u; w > 0u; w >>= 1) {
        if (lid < w) red[lid] += red[lid + w];
        barrier();
    }
    sum = red[0];
    memoryBarrierBuffer();
    barrier();

    uint oo = (t * pc.nh + h) * pc.dv;
    for (uint i = lid; i < pc.dv; i += 64u) {
        precise float acc = 0.0;
        for (uint p = 0u; p < n; p++) acc = acc + (sc[so + p] / sum) * vc[(p * pc.nh + h) * pc.dv + i];
        o[oo + i] = acc;
    }
}
