#pragma clang diagnostic ignored "-Wmissing-prototypes"
#pragma clang diagnostic ignored "-Wmissing-braces"

#include <metal_stdlib>
#include <simd/simd.h>

using namespace metal;

template<typename T, size_t Num>
struct spvUnsafeArray
{
    T elements[Num ? Num : 1];
    
    thread T& operator [] (size_t pos) thread
    {
        return elements[pos];
    }
    constexpr const thread T& operator [] (size_t pos) const thread
    {
        return elements[pos];
    }
    
    device T& operator [] (size_t pos) device
    {
        return elements[pos];
    }
    constexpr const device T& operator [] (size_t pos) const device
    {
        return elements[pos];
    }
    
    constexpr const constant T& operator [] (size_t pos) const constant
    {
        return elements[pos];
    }
    
    threadgroup T& operator [] (size_t pos) threadgroup
    {
        return elements[pos];
    }
    constexpr const threadgroup T& operator [] (size_t pos) const threadgroup
    {
        return elements[pos];
    }
};

struct Wd
{
    uint w[1];
};

struct Params
{
    uint rows;
    uint cols;
    uint n;
    uint dtype;
    uint yRows;
    uint yOffset;
};

struct Ws
{
    uint s[1];
};

struct X
{
    float x[1];
};

struct Y
{
    float y[1];
};

constant uint3 gl_WorkGroupSize [[maybe_unused]] = uint3(128u, 1u, 1u);

static inline __attribute__((always_inline))
bool fastStage(constant Params& pc)
{
    bool _322 = pc.dtype >= 1u;
    bool _328;
    if (_322)
    {
        _328 = pc.dtype <= 4u;
    }
    else
    {
        _328 = _322;
    }
    bool _336;
    if (_328)
    {
        _336 = (pc.cols % 32u) == 0u;
    }
    else
    {
        _336 = _328;
    }
    return _336;
}

static inline __attribute__((always_inline))
float e8m0(thread const uint& b)
{
    if (b == 255u)
    {
        return as_type<float>(2143289344u);
    }
    if (b == 0u)
    {
        return as_type<float>(4194304u);
    }
    return as_type<float>(b << uint(23));
}

static inline __attribute__((always_inline))
void fetch(thread const uint& lid, thread const uint& r0, thread const uint& t0, thread const uint& k0, const device Wd& v_116, constant Params& pc, const device Ws& v_278, thread spvUnsafeArray<uint, 16>& pw, thread uint& gW, thread spvUnsafeArray<float, 8>& psc, thread uint& gS, thread spvUnsafeArray<float, 16>& px, thread uint& gN, const device X& v_591)
{
    switch (pc.dtype)
    {
        case 1u:
        case 2u:
        {
            uint _386;
            for (uint i = 0u; i < 16u; i++)
            {
                uint idx = (i * 128u) + lid;
                uint r = r0 + (idx / 16u);
                if (r < pc.rows)
                {
                    _386 = v_116.w[(gW + (((r * pc.cols) + k0) >> uint(1))) + (idx % 16u)];
                }
                else
                {
                    _386 = 0u;
                }
                pw[i] = _386;
            }
            break;
        }
        case 3u:
        {
            uint _434;
            float _462;
            for (uint i_1 = 0u; i_1 < 8u; i_1++)
            {
                uint idx_1 = (i_1 * 128u) + lid;
                uint r_1 = r0 + (idx_1 / 8u);
                if (r_1 < pc.rows)
                {
                    _434 = v_116.w[(gW + (((r_1 * pc.cols) + k0) >> uint(2))) + (idx_1 % 8u)];
                }
                else
                {
                    _434 = 0u;
                }
                pw[i_1] = _434;
                if (r_1 < pc.rows)
                {
                    _462 = as_type<float>(v_278.s[gS + r_1]);
                }
                else
                {
                    _462 = 0.0;
                }
                psc[i_1] = _462;
            }
            break;
        }
        default:
        {
            uint _511;
            float _536;
            for (uint i_2 = 0u; i_2 < 4u; i_2++)
            {
                uint idx_2 = (i_2 * 128u) + lid;
                uint r_2 = r0 + (idx_2 / 4u);
                uint g = ((r_2 * pc.cols) + k0) >> uint(5);
                if (r_2 < pc.rows)
                {
                    _511 = v_116.w[(gW + (((r_2 * pc.cols) + k0) >> uint(3))) + (idx_2 % 4u)];
                }
                else
                {
                    _511 = 0u;
                }
                pw[i_2] = _511;
                if (r_2 < pc.rows)
                {
                    uint param = (v_278.s[gS + (g >> uint(2))] >> ((g & 3u) * 8u)) & 255u;
                    _536 = e8m0(param);
                }
                else
                {
                    _536 = 0.0;
                }
                psc[i_2] = _536;
            }
            break;
        }
    }
    float _585;
    for (uint i_3 = 0u; i_3 < 16u; i_3++)
    {
        uint idx_3 = (i_3 * 128u) + lid;
        uint t = t0 + (idx_3 / 32u);
        if (t < gN)
        {
            _585 = v_591.x[((t * pc.cols) + k0) + (idx_3 % 32u)];
        }
        else
        {
            _585 = 0.0;
        }
        px[i_3] = _585;
    }
}

static inline __attribute__((always_inline))
float e2m1(thread const uint& nib)
{
    uint v = nib & 7u;
    uint _79;
    if (v >= 2u)
    {
        _79 = ((126u + (v >> uint(1))) << uint(23)) | ((v & 1u) << uint(22));
    }
    else
    {
        _79 = (v == 1u) ? 1056964608u : 0u;
    }
    uint mag = _79;
    return as_type<float>(mag | ((nib & 8u) << uint(28)));
}

static inline __attribute__((always_inline))
void putW(thread const uint& kk, thread const uint& r, thread const float& v, threadgroup float4 (&wt)[32][33])
{
    ((threadgroup float*)&wt[kk][r >> uint(2)])[r & 3u] = v;
}

static inline __attribute__((always_inline))
float f16(thread const uint& h)
{
    uint sgn = (h >> uint(15)) << uint(31);
    uint e = (h >> uint(10)) & 31u;
    uint m = h & 1023u;
    if (e == 31u)
    {
        return as_type<float>((sgn | 2139095040u) | (m << uint(13)));
    }
    if (e != 0u)
    {
        return as_type<float>((sgn | ((e + 112u) << uint(23))) | (m << uint(13)));
    }
    float v = float(m) * 5.9604644775390625e-08;
    float _197;
    if (sgn != 0u)
    {
        _197 = -v;
    }
    else
    {
        _197 = v;
    }
    return _197;
}

static inline __attribute__((always_inline))
void stage(thread const uint& lid, constant Params& pc, threadgroup float4 (&wt)[32][33], thread spvUnsafeArray<uint, 16>& pw, thread spvUnsafeArray<float, 8>& psc, thread spvUnsafeArray<float, 16>& px, threadgroup float4 (&xt)[32][17])
{
    switch (pc.dtype)
    {
        case 1u:
        {
            for (uint i = 0u; i < 16u; i++)
            {
                uint idx = (i * 128u) + lid;
                uint rr = idx / 16u;
                uint kk = 2u * (idx % 16u);
                uint param = kk;
                uint param_1 = rr;
                float param_2 = as_type<float>(pw[i] << uint(16));
                putW(param, param_1, param_2, wt);
                uint param_3 = kk + 1u;
                uint param_4 = rr;
                float param_5 = as_type<float>(pw[i] & 4294901760u);
                putW(param_3, param_4, param_5, wt);
            }
            break;
        }
        case 2u:
        {
            for (uint i_1 = 0u; i_1 < 16u; i_1++)
            {
                uint idx_1 = (i_1 * 128u) + lid;
                uint rr_1 = idx_1 / 16u;
                uint kk_1 = 2u * (idx_1 % 16u);
                uint param_6 = pw[i_1] & 65535u;
                uint param_7 = kk_1;
                uint param_8 = rr_1;
                float param_9 = f16(param_6);
                putW(param_7, param_8, param_9, wt);
                uint param_10 = pw[i_1] >> uint(16);
                uint param_11 = kk_1 + 1u;
                uint param_12 = rr_1;
                float param_13 = f16(param_10);
                putW(param_11, param_12, param_13, wt);
            }
            break;
        }
        case 3u:
        {
            for (uint i_2 = 0u; i_2 < 8u; i_2++)
            {
                uint idx_2 = (i_2 * 128u) + lid;
                uint rr_2 = idx_2 / 8u;
                uint kk_2 = 4u * (idx_2 % 8u);
                for (uint b = 0u; b < 4u; b++)
                {
                    uint param_14 = kk_2 + b;
                    uint param_15 = rr_2;
                    float param_16 = float(int(pw[i_2] << (24u - (8u * b))) >> 24) * psc[i_2];
                    putW(param_14, param_15, param_16, wt);
                }
            }
            break;
        }
        default:
        {
            for (uint i_3 = 0u; i_3 < 4u; i_3++)
            {
                uint idx_3 = (i_3 * 128u) + lid;
                uint rr_3 = idx_3 / 4u;
                uint kk_3 = 8u * (idx_3 % 4u);
                for (uint b_1 = 0u; b_1 < 8u; b_1++)
                {
                    uint param_17 = (pw[i_3] >> (4u * b_1)) & 15u;
                    uint param_18 = kk_3 + b_1;
                    uint param_19 = rr_3;
                    float param_20 = e2m1(param_17) * psc[i_3];
                    putW(param_18, param_19, param_20, wt);
                }
            }
            break;
        }
    }
    for (uint i_4 = 0u; i_4 < 16u; i_4++)
    {
        uint idx_4 = (i_4 * 128u) + lid;
        uint tt = idx_4 / 32u;
        ((threadgroup float*)&xt[idx_4 % 32u][tt >> uint(2)])[tt & 3u] = px[i_4];
    }
}

static inline __attribute__((always_inline))
uint byteAt(thread const uint& i, const device Wd& v_116)
{
    return (v_116.w[i >> uint(2)] >> ((i & 3u) * 8u)) & 255u;
}

static inline __attribute__((always_inline))
uint halfAt(thread const uint& i, const device Wd& v_116)
{
    return (v_116.w[i >> uint(1)] >> ((i & 1u) * 16u)) & 65535u;
}

static inline __attribute__((always_inline))
float weight(thread const uint& r, thread const uint& c, const device Wd& v_116, constant Params& pc, const device Ws& v_278)
{
    uint i = (r * pc.cols) + c;
    switch (pc.dtype)
    {
        case 0u:
        {
            return as_type<float>(v_116.w[i]);
        }
        case 1u:
        {
            uint param = i;
            return as_type<float>(halfAt(param, v_116) << uint(16));
        }
        case 2u:
        {
            uint param_1 = i;
            uint param_2 = halfAt(param_1, v_116);
            return f16(param_2);
        }
        case 3u:
        {
            uint param_3 = i;
            int q = int(byteAt(param_3, v_116) << uint(24)) >> 24;
            return float(q) * as_type<float>(v_278.s[r]);
        }
        default:
        {
            uint param_4 = i >> uint(1);
            uint nib = (byteAt(param_4, v_116) >> ((i & 1u) * 4u)) & 15u;
            uint sb = (v_278.s[i >> uint(7)] >> (((i >> uint(5)) & 3u) * 8u)) & 255u;
            uint param_5 = nib;
            uint param_6 = sb;
            return e2m1(param_5) * e8m0(param_6);
        }
    }
}

static inline __attribute__((always_inline))
void stageSlow(thread const uint& lid, thread const uint& r0, thread const uint& t0, thread const uint& k0, const device Wd& v_116, constant Params& pc, const device Ws& v_278, threadgroup float4 (&wt)[32][33], thread uint& gN, const device X& v_591, threadgroup float4 (&xt)[32][17])
{
    float _893;
    for (uint i = 0u; i < 32u; i++)
    {
        uint idx = (i * 128u) + lid;
        uint rr = idx / 32u;
        uint kk = idx % 32u;
        uint r = r0 + rr;
        uint c = k0 + kk;
        bool _885 = r < pc.rows;
        bool _892;
        if (_885)
        {
            _892 = c < pc.cols;
        }
        else
        {
            _892 = _885;
        }
        if (_892)
        {
            uint param = r;
            uint param_1 = c;
            _893 = weight(param, param_1, v_116, pc, v_278);
        }
        else
        {
            _893 = 0.0;
        }
        uint param_2 = kk;
        uint param_3 = rr;
        float param_4 = _893;
        putW(param_2, param_3, param_4, wt);
    }
    float _952;
    for (uint i_1 = 0u; i_1 < 16u; i_1++)
    {
        uint idx_1 = (i_1 * 128u) + lid;
        uint tt = idx_1 / 32u;
        uint c_1 = k0 + (idx_1 % 32u);
        uint t = t0 + tt;
        bool _944 = t < gN;
        bool _951;
        if (_944)
        {
            _951 = c_1 < pc.cols;
        }
        else
        {
            _951 = _944;
        }
        if (_951)
        {
            _952 = v_591.x[(t * pc.cols) + c_1];
        }
        else
        {
            _952 = 0.0;
        }
        ((threadgroup float*)&xt[idx_1 % 32u][tt >> uint(2)])[tt & 3u] = _952;
    }
}

static inline __attribute__((always_inline))
void stageTile(thread const uint& lid, thread const uint& r0, thread const uint& t0, thread const uint& k0, thread const bool& fast, const device Wd& v_116, constant Params& pc, const device Ws& v_278, threadgroup float4 (&wt)[32][33], thread spvUnsafeArray<uint, 16>& pw, thread uint& gW, thread spvUnsafeArray<float, 8>& psc, thread uint& gS, thread spvUnsafeArray<float, 16>& px, thread uint& gN, const device X& v_591, threadgroup float4 (&xt)[32][17])
{
    if (fast)
    {
        uint param = lid;
        stage(param, pc, wt, pw, psc, px, xt);
    }
    else
    {
        uint param_1 = lid;
        uint param_2 = r0;
        uint param_3 = t0;
        uint param_4 = k0;
        stageSlow(param_1, param_2, param_3, param_4, v_116, pc, v_278, wt, gN, v_591, xt);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    bool _993;
    if (fast)
    {
        _993 = (k0 + 32u) < pc.cols;
    }
    else
    {
        _993 = fast;
    }
    if (_993)
    {
        uint param_5 = lid;
        uint param_6 = r0;
        uint param_7 = t0;
        uint param_8 = k0 + 32u;
        fetch(param_5, param_6, param_7, param_8, v_116, pc, v_278, pw, gW, psc, gS, px, gN, v_591);
    }
}

static inline __attribute__((always_inline))
void bigTiles(thread const uint& t0, const device Wd& v_116, constant Params& pc, const device Ws& v_278, threadgroup float4 (&wt)[32][33], thread spvUnsafeArray<uint, 16>& pw, thread uint& gW, thread spvUnsafeArray<float, 8>& psc, thread uint& gS, thread spvUnsafeArray<float, 16>& px, thread uint& gN, const device X& v_591, threadgroup float4 (&xt)[32][17], thread uint3& gl_LocalInvocationID, thread uint3& gl_WorkGroupID, device Y& v_1322, thread uint3& gl_NumWorkGroups)
{
    uint lid = gl_LocalInvocationID.x;
    uint rq = lid % 16u;
    uint tq = lid / 16u;
    bool fast = fastStage(pc);
    uint _1025 = gl_WorkGroupID.x * 128u;
    spvUnsafeArray<spvUnsafeArray<float4, 2>, 8> acc;
    uint _1264;
    for (uint r0 = _1025; r0 < pc.rows; r0 += (gl_NumWorkGroups.x * 128u))
    {
        for (uint i = 0u; i < 8u; i++)
        {
            acc[i][0] = float4(0.0);
            acc[i][1] = float4(0.0);
        }
        if (fast)
        {
            uint param = lid;
            uint param_1 = r0;
            uint param_2 = t0;
            uint param_3 = 0u;
            fetch(param, param_1, param_2, param_3, v_116, pc, v_278, pw, gW, psc, gS, px, gN, v_591);
        }
        for (uint k0 = 0u; k0 < pc.cols; k0 += 32u)
        {
            uint param_4 = lid;
            uint param_5 = r0;
            uint param_6 = t0;
            uint param_7 = k0;
            bool param_8 = fast;
            stageTile(param_4, param_5, param_6, param_7, param_8, v_116, pc, v_278, wt, pw, gW, psc, gS, px, gN, v_591, xt);
            for (uint kk = 0u; kk < 32u; kk++)
            {
                float4 wa = wt[kk][rq];
                float4 wb = wt[kk][rq + 16u];
                float4 xa = xt[kk][tq];
                float4 xb = xt[kk][tq + 8u];
                acc[0][0] = fma(float4(wa.x), xa, acc[0][0]);
                acc[0][1] = fma(float4(wa.x), xb, acc[0][1]);
                acc[1][0] = fma(float4(wa.y), xa, acc[1][0]);
                acc[1][1] = fma(float4(wa.y), xb, acc[1][1]);
                acc[2][0] = fma(float4(wa.z), xa, acc[2][0]);
                acc[2][1] = fma(float4(wa.z), xb, acc[2][1]);
                acc[3][0] = fma(float4(wa.w), xa, acc[3][0]);
                acc[3][1] = fma(float4(wa.w), xb, acc[3][1]);
                acc[4][0] = fma(float4(wb.x), xa, acc[4][0]);
                acc[4][1] = fma(float4(wb.x), xb, acc[4][1]);
                acc[5][0] = fma(float4(wb.y), xa, acc[5][0]);
                acc[5][1] = fma(float4(wb.y), xb, acc[5][1]);
                acc[6][0] = fma(float4(wb.z), xa, acc[6][0]);
                acc[6][1] = fma(float4(wb.z), xb, acc[6][1]);
                acc[7][0] = fma(float4(wb.w), xa, acc[7][0]);
                acc[7][1] = fma(float4(wb.w), xb, acc[7][1]);
            }
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        for (uint i_1 = 0u; i_1 < 8u; i_1++)
        {
            if (i_1 < 4u)
            {
                _1264 = (4u * rq) + i_1;
            }
            else
            {
                _1264 = ((64u + (4u * rq)) + i_1) - 4u;
            }
            uint r = r0 + _1264;
            if (r >= pc.rows)
            {
                continue;
            }
            for (uint h = 0u; h < 2u; h++)
            {
                for (uint j = 0u; j < 4u; j++)
                {
                    uint t = ((t0 + (32u * h)) + (4u * tq)) + j;
                    if (t < gN)
                    {
                        v_1322.y[((t * pc.yRows) + pc.yOffset) + r] = acc[i_1][h][j];
                    }
                }
            }
        }
    }
}

kernel void main0(constant Params& pc [[buffer(0)]], const device Wd& v_116 [[buffer(1)]], const device Ws& v_278 [[buffer(2)]], const device X& v_591 [[buffer(3)]], device Y& v_1322 [[buffer(4)]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]], uint3 gl_NumWorkGroups [[threadgroups_per_grid]])
{
    threadgroup float4 wt[32][33];
    threadgroup float4 xt[32][17];
    uint gW = 0u;
    uint gS = 0u;
    uint gN = pc.n;
    uint param = gl_WorkGroupID.y * 64u;
    spvUnsafeArray<uint, 16> pw;
    spvUnsafeArray<float, 8> psc;
    spvUnsafeArray<float, 16> px;
    bigTiles(param, v_116, pc, v_278, wt, pw, gW, psc, gS, px, gN, v_591, xt, gl_LocalInvocationID, gl_WorkGroupID, v_1322, gl_NumWorkGroups);
}

