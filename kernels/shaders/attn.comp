#version 450
#extension GL_GOOGLE_include_directive : require
// Causal softmax attention in tiles with an online softmax (kernels/attn.go
// has the algorithm): dst[t, h] = Σ_{j ≤ past+t} softmax_j(scale·q[t,h]·k[j,h]) · v[j,h]
// for the T new positions of rows row0.. of a call. A workgroup is 64 query
// rows of one head (gl_WorkGroupID.x: the block after row0, .y: the head),
// one row per thread, the row's query, running maximum, sum and output in
// registers. The keys and values it sees go through shared memory TK at a
// time, each read once from the buffers per workgroup.
//
// q: [T, nh, qk]; k: [past+T, nh, qk]; v: [past+T, nh, dv]; dst: [T, nh, dv].
layout(local_size_x = 64) in;

layout(std430, binding = 1) readonly buffer Q { float q[]; };
layout(std430, binding = 2) readonly buffer K { float k[]; };
layout(std430, binding = 3) readonly buffer V { float v[]; };
layout(std430, binding = 4) writeonly buffer D { float dst[]; };

layout(push_constant) uniform Params {
    uint T;
    uint past;
    uint nh;
    uint qk;   // ≤ MAXD
    uint dv;   // ≤ MAXD
    float scale;
    uint row0; // the first row of this dispatch
} pc;

#include "common.glsl"

const uint MAXD = 256u; // the widest head (gpu.AttnMaxHead)
const uint TK = 8u;     // keys per tile
shared float ks[TK][MAXD];
shared float vs[TK][MAXD];

void main() {
    uint lid = gl_LocalInvocationID.x;
    uint h = gl_WorkGroupID.y;
    uint b0 = pc.row0 + gl_WorkGroupID.x * 64u;
    uint t = b0 + lid;
    bool live = t < pc.T;
    float qr[MAXD];
    float o[MAXD];
    for (uint c = 0u; c < pc.qk; c++) qr[c] = live ? q[(t * pc.nh + h) * pc.qk + c] * pc.scale : 0.0;
    for (uint d = 0u; d < pc.dv; d++) o[d] = 0.0;
    float m = -1e30, l = 0.0;
    uint keys = pc.past + min(pc.T, b0 + 64u); // the keys the block's last row sees
    uint mine = pc.past + t + 1u;              // and this row
    for (uint j0 = 0u; j0 < keys; j0 += TK) {
        for (uint i = lid; i < TK * pc.qk; i += 64u) {
            uint jj = i / pc.qk, c = i % pc.qk, j = j0 + jj;
            ks[jj][c] = j < keys ? k[(j * pc.nh + h) * pc.qk + c] : 0.0;
        }
        for (uint i = lid; i < TK * pc.dv; i += 64u) {
            uint jj = i / pc.dv, d = i % pc.dv, j = j0 + jj;
            vs[jj][d] = j < keys ? v[(j * pc.nh + h) * pc.dv + d] : 0.0;
        }
        barrier();
        uint n = live && mine > j0 ? min(TK, mine - j0) : 0u;
        if (n > 0u) {
            float s[TK];
            float mx = m;
            for (uint jj = 0u; jj < n; jj++) {
                float a = 0.0;
                for (uint c = 0u; c < pc.qk; c++) a += qr[c] * ks[jj][c];
                s[jj] = a;
                mx = max(mx, a);
            }
            float corr = dfExp(m - mx); // 0 on the first tile
            l *= corr;
            for (uint d = 0u; d < pc.dv; d++) o[d] *= corr;
            for (uint jj = 0u; jj < n; jj++) {
                float p = dfExp(s[jj] - mx);
                l += p;
                for (uint d = 0u; d < pc.dv; d++) o[d] += p * vs[jj][d];
            }
            m = mx;
        }
        barrier();
    }
    if (live)
        for (uint d = 0u; d < pc.dv; d++) dst[(t * pc.nh + h) * pc.dv + d] = o[d] / l;
}
