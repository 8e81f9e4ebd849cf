// Shared helpers of the Deltafin compute shaders. Every function here has a
// Go twin it is tested against (kernels/ref.go: Activation.Apply).

// dfExp is e^x in fp32 by Cephes' expf (range reduction by ln 2 in two
// parts, degree-5 polynomial): about 1 ulp, where GLSL's exp only promises
// 3 + 2·|x| ulps.
float dfExp(float x) {
    if (x > 88.72283935546875) return uintBitsToFloat(0x7f800000u);
    if (x < -103.97208) return 0.0;
    float n = floor(x * 1.44269504088896341 + 0.5);
    precise float r = x - n * 0.693359375;
    r = r - n * -2.12194440e-4;
    float p = 1.9875691500e-4;
    p = p * r + 1.3981999507e-3;
    p = p * r + 8.3334519073e-3;
    p = p * r + 4.1665795894e-2;
    p = p * r + 1.6666665459e-1;
    p = p * r + 5.0000001201e-1;
    float y = p * r * r + r + 1.0;
    int e = int(n);
    // Two steps so that 2^e never leaves the normal range on its own.
    int e1 = e / 2;
    return y * uintBitsToFloat(uint(e1 + 127) << 23) * uintBitsToFloat(uint(e - e1 + 127) << 23);
}

// dfTanh is tanh by Cephes' tanhf: a polynomial below 0.625, 1 − 2/(e^2|x|+1)
// above; a few ulps.
float dfTanh(float x) {
    float a = abs(x);
    if (a < 0.625) {
        float z = x * x;
        float p = -5.70498872745e-3;
        p = p * z + 2.06390887954e-2;
        p = p * z - 5.37397155531e-2;
        p = p * z + 1.33314422036e-1;
        p = p * z - 3.33332819422e-1;
        return p * z * x + x;
    }
    if (a > 44.0) return sign(x);
    float y = 1.0 - 2.0 / (dfExp(a + a) + 1.0);
    return x < 0.0 ? -y : y;
}

float dfSigmoid(float x) { return 1.0 / (1.0 + dfExp(-x)); }
