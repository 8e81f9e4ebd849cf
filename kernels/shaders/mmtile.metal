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

constant uint3 gl_WorkGroupSize [[maybe_unused]] = uint3(64u, 1u, 1u);

constant spvUnsafeArray<float, 16> _250 = spvUnsafeArray<float, 16>({ 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0 });

static inline __attribute__((always_inline))
uint byteAt(thread const uint& i, const device Wd& v_31)
{
    return (v_31.w[i >> uint(2)] >> ((i & 3u) * 8u)) & 255u;
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
uint halfAt(thread const uint& i, const device Wd& v_31)
{
    return (v_31.w[i >> uint(1)] >> ((i & 1u) * 16u)) & 65535u;
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
    float _120;
    if (sgn != 0u)
    {
        _120 = -v;
    }
    else
    {
        _120 = v;
    }
    return _120;
}

static inline __attribute__((always_inline))
float weight(thread const uint& r, thread const uint& c, const device Wd& v_31, constant Params& pc, const device Ws& v_201)
{
    uint i = (r * pc.cols) + c;
    switch (pc.dtype)
    {
        case 0u:
        {
            return as_type<float>(v_31.w[i]);
        }
        case 1u:
        {
            uint param = i;
            return as_type<float>(halfAt(param, v_31) << uint(16));
        }
        case 2u:
        {
            uint param_1 = i;
            uint param_2 = halfAt(param_1, v_31);
            return f16(param_2);
        }
        case 3u:
        {
            uint param_3 = i;
            int q = int(byteAt(param_3, v_31) << uint(24)) >> 24;
            return float(q) * as_type<float>(v_201.s[r]);
        }
        default:
        {
            uint param_4 = i >> uint(1);
            uint nib = (byteAt(param_4, v_31) >> ((i & 1u) * 4u)) & 15u;
            uint sb = (v_201.s[i >> uint(7)] >> (((i >> uint(5)) & 3u) * 8u)) & 255u;
            uint param_5 = sb;
            return _250[nib] * e8m0(param_5);
        }
    }
}

kernel void main0(constant Params& pc [[buffer(0)]], const device Wd& v_31 [[buffer(1)]], const device Ws& v_201 [[buffer(2)]], const device X& _445 [[buffer(3)]], device Y& _592 [[buffer(4)]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]], uint3 gl_NumWorkGroups [[threadgroups_per_grid]])
{
    threadgroup float wt[32][65];
    threadgroup float xt[32][33];
    uint lid = gl_LocalInvocationID.x;
    uint rg = (lid % 16u) * 4u;
    uint tg = (lid / 16u) * 8u;
    uint t0 = gl_WorkGroupID.y * 32u;
    uint _288 = gl_WorkGroupID.x * 64u;
    spvUnsafeArray<spvUnsafeArray<float, 8>, 4> acc;
    float _380;
    float _439;
    spvUnsafeArray<float, 4> wv;
    spvUnsafeArray<float, 8> xv;
    for (uint r0 = _288; r0 < pc.rows; r0 += (gl_NumWorkGroups.x * 64u))
    {
        for (uint a = 0u; a < 4u; a++)
        {
            for (uint b = 0u; b < 8u; b++)
            {
                acc[a][b] = 0.0;
            }
        }
        for (uint k0 = 0u; k0 < pc.cols; k0 += 32u)
        {
            for (uint i = 0u; i < 32u; i++)
            {
                uint idx = (i * 64u) + lid;
                uint rr = idx / 32u;
                uint kk = idx % 32u;
                uint r = r0 + rr;
                uint c = k0 + kk;
                bool _372 = r < pc.rows;
                bool _379;
                if (_372)
                {
                    _379 = c < pc.cols;
                }
                else
                {
                    _379 = _372;
                }
                if (_379)
                {
                    uint param = r;
                    uint param_1 = c;
                    _380 = weight(param, param_1, v_31, pc, v_201);
                }
                else
                {
                    _380 = 0.0;
                }
                wt[kk][rr] = _380;
            }
            for (uint i_1 = 0u; i_1 < 16u; i_1++)
            {
                uint idx_1 = (i_1 * 64u) + lid;
                uint tt = idx_1 / 32u;
                uint kk_1 = idx_1 % 32u;
                uint t = t0 + tt;
                uint c_1 = k0 + kk_1;
                bool _431 = t < pc.n;
                bool _438;
                if (_431)
                {
                    _438 = c_1 < pc.cols;
                }
                else
                {
                    _438 = _431;
                }
                if (_438)
                {
                    _439 = _445.x[(t * pc.cols) + c_1];
                }
                else
                {
                    _439 = 0.0;
                }
                xt[kk_1][tt] = _439;
            }
            threadgroup_barrier(mem_flags::mem_threadgroup);
            for (uint kk_2 = 0u; kk_2 < 32u; kk_2++)
            {
                for (uint a_1 = 0u; a_1 < 4u; a_1++)
                {
                    wv[a_1] = wt[kk_2][rg + a_1];
                }
                for (uint b_1 = 0u; b_1 < 8u; b_1++)
                {
                    xv[b_1] = xt[kk_2][tg + b_1];
                }
                for (uint a_2 = 0u; a_2 < 4u; a_2++)
                {
                    for (uint b_2 = 0u; b_2 < 8u; b_2++)
                    {
                        acc[a_2][b_2] += (wv[a_2] * xv[b_2]);
                    }
                }
            }
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        for (uint a_3 = 0u; a_3 < 4u; a_3++)
        {
            uint r_1 = (r0 + rg) + a_3;
            for (uint b_3 = 0u; b_3 < 8u; b_3++)
            {
                uint t_1 = (t0 + tg) + b_3;
                bool _579 = r_1 < pc.rows;
                bool _586;
                if (_579)
                {
                    _586 = t_1 < pc.n;
                }
                else
                {
                    _586 = _579;
                }
                if (_586)
                {
                    _592.y[((t_1 * pc.yRows) + pc.yOffset) + r_1] = acc[a_3][b_3];
                }
            }
        }
    }
}

