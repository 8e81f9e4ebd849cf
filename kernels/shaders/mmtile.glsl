// The 64-row × 32-position tiles of mmtile.comp and mmgroup.comp, which
// declare the buffers w, s, x, y and pc (rows, cols, n, dtype, yRows,
// yOffset) and set gW, gS and gN (mmstage.glsl) before calling
// smallTiles. A workgroup of 128 threads computes a tile of 64 rows × 32
// positions (looping over row tiles past the dispatch limit); each thread
// accumulates 4 rows × 4 positions in registers, one fp32 multiply-add
// chain over the columns in order for each output, as in kernels/ref.go.
//
// 32 columns at a time, the next ones loaded while these are multiplied
// (mmstage.glsl).

const uint NT = 128u; // threads
const uint TR = 64u;  // rows per tile
const uint TT = 32u;  // positions per tile
#include "mmstage.glsl"

// smallTiles computes the positions t0 .. t0 + 31 (those below gN) of every
// row tile this workgroup owns.
void smallTiles(uint t0) {
    uint lid = gl_LocalInvocationID.x;
    uint rq = lid % 16u; // this thread's rows 4·rq ..
    uint tq = lid / 16u; // and positions 4·tq ..
    bool fast = fastStage();
    for (uint r0 = gl_WorkGroupID.x * TR; r0 < pc.rows; r0 += gl_NumWorkGroups.x * TR) {
        vec4 acc[4]; // acc[i]: row 4·rq + i, positions 4·tq ..
        for (uint i = 0u; i < 4u; i++) acc[i] = vec4(0.0);
        if (fast) fetch(lid, r0, t0, 0u);
        for (uint k0 = 0u; k0 < pc.cols; k0 += TK) {
            stageTile(lid, r0, t0, k0, fast);
            for (uint kk = 0u; kk < TK; kk++) {
                vec4 wa = wt[kk][rq], xa = xt[kk][tq];
                acc[0] = fma(vec4(wa.x), xa, acc[0]);
                acc[1] = fma(vec4(wa.y), xa, acc[1]);
                acc[2] = fma(vec4(wa.z), xa, acc[2]);
                acc[3] = fma(vec4(wa.w), xa, acc[3]);
            }
            barrier();
        }
        for (uint i = 0u; i < 4u; i++) {
            uint r = r0 + 4u * rq + i;
            if (r >= pc.rows) continue;
            for (uint j = 0u; j < 4u; j++) {
                uint t = t0 + 4u * tq + j;
                if (t < gN) y[t * pc.yRows + pc.yOffset + r] = acc[i][j];
            }
        }
    }
}
