// Widening of one weight of a kernels.Matrix from its on-disk bytes, shared by
// matmul.comp and mmtile.comp (which declare the w and s buffers and pc with
// cols and dtype). Each dtype matches its kernels/ref.go decoder exactly.

// e2m1 widens an FP4 (E2M1) nibble: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their
// negatives, built from its bits rather than looked up: a table indexed by
// a value the GPU only knows at run time lives in each thread's local
// memory, one load per weight. Magnitude v = nibble & 7: v ≥ 2 is
// 2^(v/2 − 1)·(1 + (v & 1)/2), i.e. exponent 126 + v/2 and mantissa bit
// (v & 1) << 22; v = 1 is 0.5 and v = 0 zero. Exact, as the table was.
float e2m1(uint nib) {
    uint v = nib & 7u;
    uint mag = v >= 2u ? ((126u + (v >> 1)) << 23) | ((v & 1u) << 22) : (v == 1u ? 0x3f000000u : 0u);
    return uintBitsToFloat(mag | ((nib & 8u) << 28));
}

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
        return e2m1(nib) * e8m0(sb);
    }
    }
}
