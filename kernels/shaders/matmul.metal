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

kernel void main0(constant Params& pc [[buffer(0)]], const device Wd& v_77 [[buffer(1)]], const device Ws& v_240 [[buffer(2)]], const device X& _365 [[buffer(3)]], device Y& _456 [[buffer(4)]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]], uint3 gl_NumWorkGroups [[threadgroups_per_grid]])
{
    threadgroup float part[8][64];
    uint lid = gl_LocalInvocationID.x;
    spvUnsafeArray<float, 8> acc;
    for (uint r = gl_WorkGroupID.x; r < pc.rows; r += gl_NumWorkGroups.x)
    {
        for (uint t0 = 0u; t0 < pc.n; t0 += 8u)
        {
            uint nb = min(8u, (pc.n - t0));
            for (uint j = 0u; j < 8u; j++)
            {
                acc[j] = 0.0;
            }
            for (uint c = lid; c < pc.cols; c += 64u)
            {
                uint param = r;
                uint param_1 = c;
                float wv = weight(param, param_1, v_77, pc, v_240);
                for (uint j_1 = 0u; j_1 < nb; j_1++)
                {
                    acc[j_1] += (wv * _365.x[((t0 + j_1) * pc.cols) + c]);
                }
            }
            for (uint j_2 = 0u; j_2 < 8u; j_2++)
            {
                part[j_2][lid] = acc[j_2];
            }
            threadgroup_barrier(mem_flags::mem_threadgroup);
            for (uint h = 32u; h > 0u; h = h >> uint(1))
            {
                if (lid < h)
                {
                    for (uint j_3 = 0u; j_3 < nb; j_3++)
                    {
                        part[j_3][lid] += part[j_3][lid + h];
                    }
                }
                threadgroup_barrier(mem_flags::mem_threadgroup);
            }
            if (lid < nb)
            {
                _456.y[(((t0 + lid) * pc.yRows) + pc.yOffset) + r] = part[lid][0];
            }
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
    }
}

