#version 450
#extension GL_GOOGLE_include_directive : require
// Causal softmax attention in tiles with an online softmax (flash
// attention; kernels/attn.go has the recurrence): dst[t, h] =
// Σ_{j ≤ past+t} softmax_j(scale·q[t,h]·k[j,h]) · v[j,h] for the T new
// positions of rows row0.. of a call.
//
// A workgroup is 32 query rows of one head (gl_WorkGroupID.x: the block
// after row0, .y: the head), 8 threads a row: thread l of a row holds
// query components and outputs l, l+8, l+16, … in registers (loops of
// constant length, so they stay registers). The keys and values the block
// sees go through shared memory 8 at a time, each read once from the
// buffers per workgroup. Per tile: every thread's partial dot products for
// the 8 keys; thread l of a row sums key l's 8 partials (in order), the
// row's running maximum is taken over the 8 scores, thread l computes key
// l's weight; then every thread rescales its outputs and adds the 8
// weighted values. The reductions go through shared memory, not subgroup
// operations, so the shader runs alike at any subgroup width (lavapipe's
// 8 or 16, NVIDIA's 32, Apple's 32) and gives the same bits on each.
//
// q: [T, nh, qk]; k: [past+T, nh, qk]; v: [past+T, nh, dv]; dst: [T, nh, dv].
layout(local_size_x = 256) in;

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

const uint MAXD = 256u;   // the widest head (gpu.AttnMaxHead)
const uint G = 8u;        // threads a row
const uint PER = MAXD / G; // components a thread holds at most
const uint BQ = 32u;      // rows a workgroup
const uint TK = G;        // keys a tile: thread l of a row reduces key l
const uint NT = BQ * G;   // threads a workgroup
shared float ks[TK][MAXD];
shared float vs[TK][MAXD];
shared float part[BQ][TK][G + 1u]; // +1: a row's 8 keys over the banks
shared float sc[BQ][TK];
shared float pw[BQ][TK];

void main() {
    uint lid = gl_LocalInvocationID.x;
    uint row = lid / G, l = lid % G;
    uint h = gl_WorkGroupID.y;
    uint b0 = pc.row0 + gl_WorkGroupID.x * BQ;
    uint t = b0 + row;
    bool live = t < pc.T;
    float qr[PER];
    float o[PER];
    for (uint i = 0u; i < PER; i++) {
        uint c = l + G * i;
        qr[i] = (live && c < pc.qk) ? q[(t * pc.nh + h) * pc.qk + c] * pc.scale : 0.0;
        o[i] = 0.0;
    }
    float m = -1e30, sum = 0.0;
    uint keys = pc.past + min(pc.T, b0 + BQ); // the keys the block's last row sees
    uint mine = live ? pc.past + t + 1u : 0u; // and this row
    const float NEG = uintBitsToFloat(0xff800000u);
    for (uint j0 = 0u; j0 < keys; j0 += TK) {
        for (uint i = lid; i < TK * pc.qk; i += NT) {
            uint jj = i / pc.qk, c = i % pc.qk, j = j0 + jj;
            ks[jj][c] = j < keys ? k[(j * pc.nh + h) * pc.qk + c] : 0.0;
        }
        for (uint i = lid; i < TK * pc.dv; i += NT) {
            uint jj = i / pc.dv, d = i % pc.dv, j = j0 + jj;
            vs[jj][d] = j < keys ? v[(j * pc.nh + h) * pc.dv + d] : 0.0;
        }
        barrier();
        for (uint jj = 0u; jj < TK; jj++) {
            float a = 0.0;
            for (uint i = 0u; i < PER; i++) {
                uint c = l + G * i;
                if (c < pc.qk) a = fma(qr[i], ks[jj][c], a);
            }
            part[row][jj][l] = a;
        }
        barrier();
        float s = 0.0;
        for (uint g = 0u; g < G; g++) s += part[row][l][g];
        sc[row][l] = j0 + l < mine ? s : NEG;
        barrier();
        float mx = m;
        for (uint jj = 0u; jj < TK; jj++) mx = max(mx, sc[row][jj]);
        pw[row][l] = dfExp(sc[row][l] - mx); // 0 for a key past the row's edge
        barrier();
        if (mine > j0) {
            float corr = dfExp(m - mx); // 0 on the first tile
            sum *= corr;
            for (uint i = 0u; i < PER; i++) o[i] *= corr;
            for (uint jj = 0u; jj < TK; jj++) {
                float p = pw[row][jj];
                sum += p;
                for (uint i = 0u; i < PER; i++) {
                    uint d = l + G * i;
                    if (d < pc.dv) o[i] = fma(p, vs[jj][d], o[i]);
                }
            }
            m = mx;
        }
        barrier();
    }
    if (live) {
        for (uint i = 0u; i < PER; i++) {
            uint d = l + G * i;
            if (d < pc.dv) dst[(t * pc.nh + h) * pc.dv + d] = o[i] / sum;
        }
    }
}
