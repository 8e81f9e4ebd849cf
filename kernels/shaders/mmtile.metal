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
uint byteAt(thread const uint& i, const device Wd& v_77)
{
    return (v_77.w[i >> uint(2)] >> ((i & 3u) * 8u)) & 255u;
}

static inline __attribute__((always_inline))
float e2m1(thread const uint& nib)
{
    uint v = nib & 7u;
    uint _40;
    if (v >= 2u)
    {
        _40 = ((126u + (v >> uint(1))) << uint(23)) | ((v & 1u) << uint(22));
    }
    else
    {
        _40 = (v == 1u) ? 1056964608u : 0u;
    }
    uint mag = _40;
    return as_type<float>(mag | ((nib & 8u) << uint(28)));
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
uint halfAt(thread const uint& i, const device Wd& v_77)
{
    return (v_77.w[i >> uint(1)] >> ((i & 1u) * 16u)) & 65535u;
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
    float _159;
    if (sgn != 0u)
    {
        _159 = -v;
    }
    else
    {
        _159 = v;
    }
    return _159;
}

static inline __attribute__((always_inline))
float weight(thread const uint& r, thread const uint& c, const device Wd& v_77, constant Params& pc, const device Ws& v_240)
{
    uint i = (r * pc.cols) + c;
    switch (pc.dtype)
    {
        case 0u:
        {
            return as_type<float>(v_77.w[i]);
        }
        case 1u:
        {
            uint param = i;
            return as_type<float>(halfAt(param, v_77) << uint(16));
        }
        case 2u:
        {
            uint param_1 = i;
            uint param_2 = halfAt(param_1, v_77);
            return f16(param_2);
        }
        case 3u:
        {
            uint param_3 = i;
            int q = int(byteAt(param_3, v_77) << uint(24)) >> 24;
            return float(q) * as_type<float>(v_240.s[r]);
        }
        default:
        {
            uint param_4 = i >> uint(1);
            uint nib = (byteAt(param_4, v_77) >> ((i & 1u) * 4u)) & 15u;
            uint sb = (v_240.s[i >> uint(7)] >> (((i >> uint(5)) & 3u) * 8u)) & 255u;
            uint param_5 = nib;
            uint param_6 = sb;
            return e2m1(param_5) * e8m0(param_6);
        }
    }
}

kernel void main0(constant Params& pc [[buffer(0)]], const device Wd& v_77 [[buffer(1)]], const device Ws& v_240 [[buffer(2)]], const device X& _466 [[buffer(3)]], device Y& _610 [[buffer(4)]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]], uint3 gl_NumWorkGroups [[threadgroups_per_grid]])
{
    threadgroup float wt[32][65];
    threadgroup float xt[32][33];
    uint lid = gl_LocalInvocationID.x;
    uint rg = (lid % 16u) * 4u;
    uint tg = (lid / 16u) * 4u;
    uint t0 = gl_WorkGroupID.y * 32u;
    uint _307 = gl_WorkGroupID.x * 64u;
    spvUnsafeArray<spvUnsafeArray<float, 4>, 4> acc;
    float _401;
    float _460;
    spvUnsafeArray<float, 4> wv;
    spvUnsafeArray<float, 4> xv;
    for (uint r0 = _307; r0 < pc.rows; r0 += (gl_NumWorkGroups.x * 64u))
    {
        for (uint a = 0u; a < 4u; a++)
        {
            for (uint b = 0u; b < 4u; b++)
            {
                acc[a][b] = 0.0;
            }
        }
        for (uint k0 = 0u; k0 < pc.cols; k0 += 32u)
        {
            for (uint i = 0u; i < 16u; i++)
            {
                uint idx = (i * 128u) + lid;
                uint rr = idx / 32u;
                uint kk = idx % 32u;
                uint r = r0 + rr;
                uint c = k0 + kk;
                bool _393 = r < pc.rows;
                bool _400;
                if (_393)
                {
                    _400 = c < pc.cols;
                }
                else
                {
                    _400 = _393;
                }
                if (_400)
                {
                    uint param = r;
                    uint param_1 = c;
                    _401 = weight(param, param_1, v_77, pc, v_240);
                }
                else
                {
                    _401 = 0.0;
                }
                wt[kk][rr] = _401;
            }
            for (uint i_1 = 0u; i_1 < 8u; i_1++)
            {
                uint idx_1 = (i_1 * 128u) + lid;
                uint tt = idx_1 / 32u;
                uint kk_1 = idx_1 % 32u;
                uint t = t0 + tt;
                uint c_1 = k0 + kk_1;
                bool _452 = t < pc.n;
                bool _459;
                if (_452)
                {
                    _459 = c_1 < pc.cols;
                }
                else
                {
                    _459 = _452;
                }
                if (_459)
                {
                    _460 = _466.x[(t * pc.cols) + c_1];
                }
                else
                {
                    _460 = 0.0;
                }
                xt[kk_1][tt] = _460;
            }
            threadgroup_barrier(mem_flags::mem_threadgroup);
            for (uint kk_2 = 0u; kk_2 < 32u; kk_2++)
            {
                for (uint a_1 = 0u; a_1 < 4u; a_1++)
                {
                    wv[a_1] = wt[kk_2][rg + a_1];
                }
                for (uint b_1 = 0u; b_1 < 4u; b_1++)
                {
                    xv[b_1] = xt[kk_2][tg + b_1];
                }
                for (uint a_2 = 0u; a_2 < 4u; a_2++)
                {
                    for (uint b_2 = 0u; b_2 < 4u; b_2++)
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
            for (uint b_3 = 0u; b_3 < 4u; b_3++)
            {
                uint t_1 = (t0 + tg) + b_3;
                bool _597 = r_1 < pc.rows;
                bool _604;
                if (_597)
                {
                    _604 = t_1 < pc.n;
                }
                else
                {
                    _604 = _597;
                }
                if (_604)
                {
                    _610.y[((t_1 * pc.yRows) + pc.yOffset) + r_1] = acc[a_3][b_3];
                }
            }
        }
    }
}

