// The 128-row × 64-position tiles of mmbig.comp and mmgroup.comp, which
// declare the buffers w, s, x, y and pc (rows, cols, n, dtype, yRows,
// yOffset) and set gW, gS and gN (mmstage.glsl) before calling bigTiles. A
// workgroup of 128 threads computes a tile of 128 rows × 64 positions
// (looping over row tiles past the dispatch limit); each thread keeps 8
// rows × 8 positions in registers, so every value it reads from shared
// memory feeds 8 multiply-adds. Every output is one fp32 multiply-add
// chain over the columns in order, as in kernels/ref.go.
//
// 32 columns at a time, the next ones loaded while these are multiplied
// (mmstage.glsl).

const uint NT = 128u; // threads
const uint TR = 128u; // rows per tile
const uint TT = 64u;  // positions per tile
#include "mmstage.glsl"

// bigTiles computes the positions t0 .. t0 + 63 (those below gN) of every
// row tile this workgroup owns.
void bigTiles(uint t0) {
    uint lid = gl_LocalInvocationID.x;
    uint rq = lid % 16u; // row quads rq and rq + 16
    uint tq = lid / 16u; // position quads tq and tq + 8
    bool fast = fastStage();
    for (uint r0 = gl_WorkGroupID.x * TR; r0 < pc.rows; r0 += gl_NumWorkGroups.x * TR) {
        // acc[i][h]: row 4·rq + i (i < 4) or 64 + 4·rq + i − 4, positions
        // 4·tq.. (h 0) or 32 + 4·tq.. (h 1).
        vec4 acc[8][2];
        for (uint i = 0u; i < 8u; i++) {
            acc[i][0] = vec4(0.0);
            acc[i][1] = vec4(0.0);
        }
        if (fast) fetch(lid, r0, t0, 0u);
        for (uint k0 = 0u; k0 < pc.cols; k0 += TK) {
            stageTile(lid, r0, t0, k0, fast);
            for (uint kk = 0u; kk < TK; kk++) {
                vec4 wa = wt[kk][rq], wb = wt[kk][rq + 16u];
                vec4 xa = xt[kk][tq], xb = xt[kk][tq + 8u];
                acc[0][0] = fma(vec4(wa.x), xa, acc[0][0]);
                acc[0][1] = fma(vec4(wa.x), xb, acc[0][1]);
                acc[1][0] = fma(vec4(wa.y), xa, acc[1][0]);
                acc[1][1] = fma(vec4(wa.y), xb, acc[1][1]);
                acc[2][0] = fma(vec4(wa.z), xa, acc[2][0]);
                acc[2][1] = fma(vec4(wa.z), xb, acc[2][1]);
                acc[3][0] = fma(vec4(wa.w), xa, acc[3][0]);
                acc[3][1] = fma(vec4(wa.w), xb, acc[3][1]);
                acc[4][0] = fma(vec4(wb.x), xa, acc[4][0]);
                acc[4][1] = fma(vec4(wb.x), xb, acc[4][1]);
                acc[5][0] = fma(vec4(wb.y), xa, acc[5][0]);
                acc[5][1] = fma(vec4(wb.y), xb, acc[5][1]);
                acc[6][0] = fma(vec4(wb.z), xa, acc[6][0]);
                acc[6][1] = fma(vec4(wb.z), xb, acc[6][1]);
                acc[7][0] = fma(vec4(wb.w), xa, acc[7][0]);
                acc[7][1] = fma(vec4(wb.w), xb, acc[7][1]);
            }
            barrier();
        }
        for (uint i = 0u; i < 8u; i++) {
            uint r = r0 + (i < 4u ? 4u * rq + i : 64u + 4u * rq + i - 4u);
            if (r >= pc.rows) continue;
            for (uint h = 0u; h < 2u; h++) {
                for (uint j = 0u; j < 4u; j++) {
                    uint t = t0 + 32u * h + 4u * tq + j;
                    if (t < gN) y[t * pc.yRows + pc.yOffset + r] = acc[i][h][j];
                }
            }
        }
    }
}
