#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// Causal softmax attention in tiles with an online softmax (flash
// attention v2; kernels/attn.go has the recurrence): dst[t, h] =
// Σ_{j ≤ past+t} softmax_j(scale·q[t,h]·k[j,h]) · v[j,h] for the T new
// positions of rows row0.. of a call.
//
// A workgroup is 64 query rows of one head and 128 output columns of it
// (gl_WorkGroupID.x: block × slices + slice of dv, the blocks after row0
// counted from the last, which sees the most keys, so that the light ones
// fill the tail; .y: the head; a wider dv is several slices, each
// recomputing the scores). Its 256 threads are 16 groups of 4 rows × 16
// threads: thread (tr, tc) owns rows 4tr..4tr+3, and in each tile of 64
// keys the scores of keys tc, tc+16, tc+32, tc+48 (4×4 in registers) and
// output columns 4tc..4tc+3, 64+4tc..64+4tc+3 (4×8 in registers). Per tile:
//
//   - S = Q·Kᵀ as a small GEMM: 32 columns of the block's queries and of
//     the tile's keys at a time go through shared memory (coalesced rows
//     from the buffers; each value a thread reads there feeds 4
//     multiply-adds, one fp32 chain per score over the columns in order);
//   - the online softmax: each thread's maximum over its 4 keys of a row
//     goes through shared memory, every thread of the row takes the same
//     maximum over the 16 (max is exact, so the order does not matter),
//     rescales its outputs and its own partial sum and writes its 16
//     weights to the tile's P;
//   - O += P·V, 32 keys of values at a time through shared memory, each
//     value read feeding 4 rows.
//
// Only the tiles that cross the causal edge (or hold a row past T) mask
// scores; keys past the block's last row are never loaded. The partial
// sums of a row's 16 threads are added in order once at the end. The
// loads of the next chunk (queries and keys, or values) are issued into
// registers before the current one is used, so that their latency hides
// behind the arithmetic; two barriers a chunk. The reductions go through
// shared memory, not subgroup operations, so the shader runs alike at any
// subgroup width (lavapipe's 8 or 16, NVIDIA's 32, Apple's 32) and gives
// the same bits on each. Shared memory is 32 KiB (Apple's limit), reused:
// the chunk of queries and keys, then the row maxima, then values.
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
    uint qk;   // any width: streamed DC columns at a time
    uint dv;   // any width: DS columns a workgroup
    float scale;
    uint row0; // the first row of this dispatch
} pc;

#include "common.glsl"

const uint BQ = 64u;  // query rows a workgroup (gpu.attnRows)
const uint BK = 64u;  // keys a tile
const uint DC = 32u;  // query and key columns a chunk
const uint DS = 128u; // output columns a workgroup (gpu.attnCols)
const uint VK = 32u;  // keys of values a chunk
const uint NT = 256u; // threads a workgroup
// The loops of constant length are [[unroll]]: the private arrays stay
// registers and the shared reads become a base register and a constant.
// A: a chunk of queries at [0, 512) and of keys at [512, 1024) as
// [column quad g][row ^ g] (a quad is 4 columns; the xor spreads a staging
// warp's stores over the banks while the reads stay conflict-free), or the
// row maxima and sums as [tc][tr], or a chunk of values as [key][column
// quad]. P: the tile's weights as [key][tr], a vec4 of the group's 4 rows.
shared vec4 A[1024];
shared vec4 P[1024];

uint lid, h, b0, d0, keys;
float pre[16]; // the next chunk, on its way from the buffers

// fetchQK loads columns c0.. of the block's queries and of the keys
// j0.. (zero past the edges) into pre: thread lid takes column lid%32 of
// rows lid/32 + 8n, so each warp reads whole rows.
void fetchQK(uint j0, uint c0) {
    [[unroll]] for (uint n = 0u; n < 8u; n++) {
        uint e = lid + NT * n, r = e >> 5, c = c0 + (e & 31u);
        uint t = b0 + r, j = j0 + r;
        pre[n] = (t < pc.T && c < pc.qk) ? q[(t * pc.nh + h) * pc.qk + c] : 0.0;
        pre[8u + n] = (j < keys && c < pc.qk) ? k[(j * pc.nh + h) * pc.qk + c] : 0.0;
    }
}

void storeQK() {
    [[unroll]] for (uint n = 0u; n < 8u; n++) {
        uint e = lid + NT * n, r = e >> 5, g = (e & 31u) >> 2, i = g * BQ + (r ^ g);
        A[i][e & 3u] = pre[n];
        A[512u + i][e & 3u] = pre[8u + n];
    }
}

// fetchV loads the values of keys j.. j+VK−1, columns d0.. (zero past the
// edges) into pre, whole rows a warp.
void fetchV(uint j) {
    [[unroll]] for (uint n = 0u; n < 16u; n++) {
        uint e = lid + NT * n, jj = j + (e >> 7), d = d0 + (e & 127u);
        pre[n] = (jj < keys && d < pc.dv) ? v[(jj * pc.nh + h) * pc.dv + d] : 0.0;
    }
}

void storeV() {
    [[unroll]] for (uint n = 0u; n < 16u; n++) {
        uint e = lid + NT * n;
        A[e >> 2][e & 3u] = pre[n];
    }
}

void main() {
    lid = gl_LocalInvocationID.x;
    uint tr = lid >> 4, tc = lid & 15u;
    uint slices = (pc.dv + DS - 1u) / DS;
    uint blk = gl_NumWorkGroups.x / slices - 1u - gl_WorkGroupID.x / slices;
    d0 = gl_WorkGroupID.x % slices * DS;
    h = gl_WorkGroupID.y;
    b0 = pc.row0 + blk * BQ;
    keys = pc.past + min(pc.T, b0 + BQ); // the keys the block's last row sees
    // A tile holding key edge or later holds one some row must not see
    // (every row past T sees none).
    uint edge = b0 + BQ <= pc.T ? pc.past + b0 + 1u : 0u;
    vec4 m = vec4(-1e30), l = vec4(0.0); // per row: running maximum, this thread's sum
    vec4 o[4][2];
    [[unroll]] for (uint r = 0u; r < 4u; r++) o[r][0] = o[r][1] = vec4(0.0);
    uint nc = (pc.qk + DC - 1u) / DC;
    const float NEG = uintBitsToFloat(0xff800000u);
    fetchQK(0u, 0u);
    for (uint j0 = 0u; j0 < keys; j0 += BK) {
        vec4 s[4]; // s[r][kk]: row 4tr+r, key j0+tc+16kk
        [[unroll]] for (uint r = 0u; r < 4u; r++) s[r] = vec4(0.0);
        for (uint ci = 0u; ci < nc; ci++) {
            barrier(); // every read of A done
            storeQK();
            barrier();
            if (ci + 1u < nc) fetchQK(j0, (ci + 1u) * DC);
            else fetchV(j0);
            [[unroll]] for (uint g = 0u; g < DC / 4u; g++) {
                // Rows 4tr+r and keys tc+16kk at quad g, the xors split so
                // that once unrolled each read is a base and a constant.
                vec4 qv[4], kv[4];
                [[unroll]] for (uint r = 0u; r < 4u; r++) qv[r] = A[g * BQ + ((4u * tr) ^ (g & 4u)) + (r ^ (g & 3u))];
                [[unroll]] for (uint kk = 0u; kk < 4u; kk++) kv[kk] = A[512u + g * BK + (tc ^ g) + 16u * kk];
                [[unroll]] for (uint r = 0u; r < 4u; r++) {
                    [[unroll]] for (uint kk = 0u; kk < 4u; kk++) {
                        float a = s[r][kk];
                        a = fma(qv[r].x, kv[kk].x, a);
                        a = fma(qv[r].y, kv[kk].y, a);
                        a = fma(qv[r].z, kv[kk].z, a);
                        s[r][kk] = fma(qv[r].w, kv[kk].w, a);
                    }
                }
            }
        }
        bool mask = j0 + BK > edge;
        vec4 pm;
        [[unroll]] for (uint r = 0u; r < 4u; r++) {
            s[r] *= pc.scale;
            uint t = b0 + 4u * tr + r, sees = t < pc.T ? pc.past + t + 1u : 0u; // keys
            [[unroll]] for (uint kk = 0u; kk < 4u; kk++) {
                if (mask && j0 + tc + 16u * kk >= sees) s[r][kk] = NEG;
            }
            pm[r] = max(max(s[r].x, s[r].y), max(s[r].z, s[r].w));
        }
        barrier(); // every read of A done
        A[tc * 16u + tr] = pm;
        barrier();
        vec4 mx = m;
        [[unroll]] for (uint u = 0u; u < 16u; u++) mx = max(mx, A[u * 16u + tr]);
        [[unroll]] for (uint r = 0u; r < 4u; r++) {
            float corr = dfExp(m[r] - mx[r]); // 0 on the first tile
            // 0 for a masked key: e^−∞
            vec4 p = vec4(dfExp(s[r].x - mx[r]), dfExp(s[r].y - mx[r]), dfExp(s[r].z - mx[r]), dfExp(s[r].w - mx[r]));
            s[r] = p;
            l[r] = l[r] * corr + ((p.x + p.y) + (p.z + p.w));
            o[r][0] *= corr;
            o[r][1] *= corr;
        }
        m = mx;
        [[unroll]] for (uint kk = 0u; kk < 4u; kk++) {
            P[(tc + 16u * kk) * 16u + tr] = vec4(s[0][kk], s[1][kk], s[2][kk], s[3][kk]);
        }
        uint nv = j0 + VK < keys ? 2u : 1u; // the second half past every key: skipped
        for (uint vc = 0u; vc < nv; vc++) {
            barrier(); // every read of A done (and P written)
            storeV();
            barrier();
            if (vc + 1u < nv) fetchV(j0 + VK);
            else if (j0 + BK < keys) fetchQK(j0 + BK, 0u);
            [[unroll]] for (uint kj = 0u; kj < VK; kj++) {
                vec4 pv = P[(vc * VK + kj) * 16u + tr];
                vec4 v0 = A[kj * 32u + tc], v1 = A[kj * 32u + 16u + tc];
                [[unroll]] for (uint r = 0u; r < 4u; r++) {
                    o[r][0] = fma(vec4(pv[r]), v0, o[r][0]);
                    o[r][1] = fma(vec4(pv[r]), v1, o[r][1]);
                }
            }
        }
    }
    barrier(); // every read of A done
    A[tc * 16u + tr] = l;
    barrier();
    vec4 sum = vec4(0.0);
    [[unroll]] for (uint u = 0u; u < 16u; u++) sum += A[u * 16u + tr];
    [[unroll]] for (uint r = 0u; r < 4u; r++) {
        uint t = b0 + 4u * tr + r;
        if (t >= pc.T) continue;
        [[unroll]] for (uint i = 0u; i < 2u; i++) {
            [[unroll]] for (uint c = 0u; c < 4u; c++) {
                uint d = d0 + 4u * (tc + 16u * i) + c;
                if (d < pc.dv) dst[(t * pc.nh + h) * pc.dv + d] = o[r][i][c] / sum[r];
            }
        }
    }
}
