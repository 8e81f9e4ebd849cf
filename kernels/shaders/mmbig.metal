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
void putW(thread const uint& kk, thread const uint& lid, thread const float& v, threadgroup float4 (&wt)[32][32])
{
    ((threadgroup float*)&wt[kk][lid >> uint(2)])[lid & 3u] = v;
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
float e2m1(thread const uint& nib)
{
    uint v = nib & 7u;
    uint _53;
    if (v >= 2u)
    {
        _53 = ((126u + (v >> uint(1))) << uint(23)) | ((v & 1u) << uint(22));
    }
    else
    {
        _53 = (v == 1u) ? 1056964608u : 0u;
    }
    uint mag = _53;
    return as_type<float>(mag | ((nib & 8u) << uint(28)));
}

static inline __attribute__((always_inline))
uint byteAt(thread const uint& i, const device Wd& v_90)
{
    return (v_90.w[i >> uint(2)] >> ((i & 3u) * 8u)) & 255u;
}

static inline __attribute__((always_inline))
uint halfAt(thread const uint& i, const device Wd& v_90)
{
    return (v_90.w[i >> uint(1)] >> ((i & 1u) * 16u)) & 65535u;
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
    float _171;
    if (sgn != 0u)
    {
        _171 = -v;
    }
    else
    {
        _171 = v;
    }
    return _171;
}

static inline __attribute__((always_inline))
float weight(thread const uint& r, thread const uint& c, const device Wd& v_90, constant Params& pc, const device Ws& v_252)
{
    uint i = (r * pc.cols) + c;
    switch (pc.dtype)
    {
        case 0u:
        {
            return as_type<float>(v_90.w[i]);
        }
        case 1u:
        {
            uint param = i;
            return as_type<float>(halfAt(param, v_90) << uint(16));
        }
        case 2u:
        {
            uint param_1 = i;
            uint param_2 = halfAt(param_1, v_90);
            return f16(param_2);
        }
        case 3u:
        {
            uint param_3 = i;
            int q = int(byteAt(param_3, v_90) << uint(24)) >> 24;
            return float(q) * as_type<float>(v_252.s[r]);
        }
        default:
        {
            uint param_4 = i >> uint(1);
            uint nib = (byteAt(param_4, v_90) >> ((i & 1u) * 4u)) & 15u;
            uint sb = (v_252.s[i >> uint(7)] >> (((i >> uint(5)) & 3u) * 8u)) & 255u;
            uint param_5 = nib;
            uint param_6 = sb;
            return e2m1(param_5) * e8m0(param_6);
        }
    }
}

static inline __attribute__((always_inline))
void stageRow(thread const uint& lid, thread const uint& r, thread const uint& k0, const device Wd& v_90, constant Params& pc, const device Ws& v_252, threadgroup float4 (&wt)[32][32])
{
    bool _313 = r < pc.rows;
    bool _321;
    if (_313)
    {
        _321 = (k0 + 32u) <= pc.cols;
    }
    else
    {
        _321 = _313;
    }
    bool full = _321;
    uint i0 = (r * pc.cols) + k0;
    bool _335;
    if (full)
    {
        _335 = pc.dtype == 1u;
    }
    else
    {
        _335 = full;
    }
    bool _342;
    if (_335)
    {
        _342 = (pc.cols & 1u) == 0u;
    }
    else
    {
        _342 = _335;
    }
    if (_342)
    {
        for (uint j = 0u; j < 16u; j++)
        {
            uint v = v_90.w[(i0 >> uint(1)) + j];
            uint param = 2u * j;
            uint param_1 = lid;
            float param_2 = as_type<float>(v << uint(16));
            putW(param, param_1, param_2, wt);
            uint param_3 = (2u * j) + 1u;
            uint param_4 = lid;
            float param_5 = as_type<float>(v & 4294901760u);
            putW(param_3, param_4, param_5, wt);
        }
        return;
    }
    bool _391;
    if (full)
    {
        _391 = pc.dtype == 3u;
    }
    else
    {
        _391 = full;
    }
    bool _398;
    if (_391)
    {
        _398 = (pc.cols & 3u) == 0u;
    }
    else
    {
        _398 = _391;
    }
    if (_398)
    {
        float sc = as_type<float>(v_252.s[r]);
        for (uint j_1 = 0u; j_1 < 8u; j_1++)
        {
            uint v_1 = v_90.w[(i0 >> uint(2)) + j_1];
            for (uint b = 0u; b < 4u; b++)
            {
                uint param_6 = (4u * j_1) + b;
                uint param_7 = lid;
                float param_8 = float(int(v_1 << (24u - (8u * b))) >> 24) * sc;
                putW(param_6, param_7, param_8, wt);
            }
        }
        return;
    }
    bool _460;
    if (full)
    {
        _460 = pc.dtype == 4u;
    }
    else
    {
        _460 = full;
    }
    if (_460)
    {
        uint sb = (v_252.s[i0 >> uint(7)] >> (((i0 >> uint(5)) & 3u) * 8u)) & 255u;
        uint param_9 = sb;
        float sc_1 = e8m0(param_9);
        for (uint j_2 = 0u; j_2 < 4u; j_2++)
        {
            uint v_2 = v_90.w[(i0 >> uint(3)) + j_2];
            for (uint b_1 = 0u; b_1 < 8u; b_1++)
            {
                uint param_10 = (v_2 >> (4u * b_1)) & 15u;
                uint param_11 = (8u * j_2) + b_1;
                uint param_12 = lid;
                float param_13 = e2m1(param_10) * sc_1;
                putW(param_11, param_12, param_13, wt);
            }
        }
        return;
    }
    float _547;
    for (uint kk = 0u; kk < 32u; kk++)
    {
        uint c = k0 + kk;
        bool _539 = r < pc.rows;
        bool _546;
        if (_539)
        {
            _546 = c < pc.cols;
        }
        else
        {
            _546 = _539;
        }
        if (_546)
        {
            uint param_14 = r;
            uint param_15 = c;
            _547 = weight(param_14, param_15, v_90, pc, v_252);
        }
        else
        {
            _547 = 0.0;
        }
        uint param_16 = kk;
        uint param_17 = lid;
        float param_18 = _547;
        putW(param_16, param_17, param_18, wt);
    }
}

kernel void main0(constant Params& pc [[buffer(0)]], const device Wd& v_90 [[buffer(1)]], const device Ws& v_252 [[buffer(2)]], const device X& _692 [[buffer(3)]], device Y& _942 [[buffer(4)]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]], uint3 gl_NumWorkGroups [[threadgroups_per_grid]])
{
    threadgroup float4 wt[32][32];
    threadgroup float4 xt[32][16];
    uint lid = gl_LocalInvocationID.x;
    uint rq = lid % 16u;
    uint tq = lid / 16u;
    uint t0 = gl_WorkGroupID.y * 64u;
    uint tt = lid & 63u;
    uint kb = (lid >> uint(6)) * 16u;
    uint _598 = gl_WorkGroupID.x * 128u;
    spvUnsafeArray<spvUnsafeArray<float4, 2>, 8> acc;
    float _686;
    uint _884;
    for (uint r0 = _598; r0 < pc.rows; r0 += (gl_NumWorkGroups.x * 128u))
    {
        for (uint i = 0u; i < 8u; i++)
        {
            acc[i][0] = float4(0.0);
            acc[i][1] = float4(0.0);
        }
        for (uint k0 = 0u; k0 < pc.cols; k0 += 32u)
        {
            uint param = lid;
            uint param_1 = r0 + lid;
            uint param_2 = k0;
            stageRow(param, param_1, param_2, v_90, pc, v_252, wt);
            uint t = t0 + tt;
            for (uint kk = kb; kk < (kb + 16u); kk++)
            {
                uint c = k0 + kk;
                bool _678 = t < pc.n;
                bool _685;
                if (_678)
                {
                    _685 = c < pc.cols;
                }
                else
                {
                    _685 = _678;
                }
                if (_685)
                {
                    _686 = _692.x[(t * pc.cols) + c];
                }
                else
                {
                    _686 = 0.0;
                }
                ((threadgroup float*)&xt[kk][tt >> uint(2)])[tt & 3u] = _686;
            }
            threadgroup_barrier(mem_flags::mem_threadgroup);
            for (uint kk_1 = 0u; kk_1 < 32u; kk_1++)
            {
                float4 wa = wt[kk_1][rq];
                float4 wb = wt[kk_1][rq + 16u];
                float4 xa = xt[kk_1][tq];
                float4 xb = xt[kk_1][tq + 8u];
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
                _884 = (4u * rq) + i_1;
            }
            else
            {
                _884 = ((64u + (4u * rq)) + i_1) - 4u;
            }
            uint r = r0 + _884;
            if (r >= pc.rows)
            {
                continue;
            }
            for (uint h = 0u; h < 2u; h++)
            {
                for (uint j = 0u; j < 4u; j++)
                {
                    uint t_1 = ((t0 + (32u * h)) + (4u * tq)) + j;
                    if (t_1 < pc.n)
                    {
                        _942.y[((t_1 * pc.yRows) + pc.yOffset) + r] = acc[i_1][h][j];
                    }
                }
            }
        }
    }
}

