// Widening of one weight of a kernels.Matrix from its on-disk bytes, shared by
// matmul.comp and mmtile.comp (which declare the w and s buffers and pc with
// cols and dtype). Each dtype matches its kernels/ref.go decoder exactly.

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
