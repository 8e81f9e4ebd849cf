#version 450
// y[t, yOffset + r] = Σ_c W[r, c] · x[t, c] for every dtype the kernels package knows
// (kernels.Matrix over its on-disk bytes): the BF16/INT8/F16/F32 matvec when
// n = 1, the batched prefill matmul when n > 1, and the three products of the
// MXFP4 expert FFN. One workgroup per row (looping when rows exceed the
// dispatch limit); its 64 threads stride over the columns, widen each weight
// once and use it for up to 8 positions, then reduce in shared memory.
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

const float E2M1[16] = float[16](0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
                                 -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0);

uint byteAt(uint i) { return (w[i >> 2] >> ((i & 3u) * 8u)) & 0xffu; }
uint halfAt(uint i) { return (w[i >> 1] >> ((i & 1u) * 16u)) & 0xffffu; }

// f16 exactly as kernels.F16ToF32, subnormals included.
float f16(uint h) {
    uint sgn = (h >> 15) << 31;
    uint e = (h >> 10) & 0x1fu;
    uint m = h & 0x3ffu;
    if (e == 0x1fu) return uintBitsToFloat(sgn | 0x7f800000u | (m << 13));
    if (e != 0u) return uintBitsToFloat(sgn | ((e + 112u) << 23) | (m << 13));
    float v = float(m) * (1.0 / 16777216.0);
    return sgn != 0u ? -v : v;
}

// e8m0 is 2^(s−127); 255 is NaN (OCP MX).
float e8m0(uint b) {
    if (b == 255u) return uintBitsToFloat(0x7fc00000u);
    if (b == 0u) return uintBitsToFloat(0x00400000u);
    return uintBitsToFloat(b << 23);
}

float weight(uint r, uint c) {
    uint i = r * pc.cols + c;
    switch (pc.dtype) {
    case 0u:
        return uintBitsToFloat(w[i]);
    case 1u:
        return uintBitsToFloat(halfAt(i) << 16);
    case 2u:
        return f16(halfAt(i));
    case 3u: {
        int q = int(byteAt(i) << 24) >> 24;
        return float(q) * uintBitsToFloat(s[r]);
    }
    default: {
        uint nib = (byteAt(i >> 1) >> ((i & 1u) * 4u)) & 15u;
        uint sb = (s[i >> 7] >> (((i >> 5) & 3u) * 8u)) & 0xffu;
        return E2M1[nib] * e8m0(sb);
    }
    }
}

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
