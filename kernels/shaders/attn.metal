#pragma clang diagnostic ignored "-Wmissing-prototypes"

#include <metal_stdlib>
#include <simd/simd.h>

using namespace metal;

template<typename T>
[[clang::optnone]] T spvFMul(T l, T r)
{
    return fma(l, r, T(0));
}

template<typename T, int Cols, int Rows>
[[clang::optnone]] vec<T, Cols> spvFMulVectorMatrix(vec<T, Rows> v, matrix<T, Cols, Rows> m)
{
    vec<T, Cols> res = vec<T, Cols>(0);
    for (uint i = Rows; i > 0; --i)
    {
        vec<T, Cols> tmp(0);
        for (uint j = 0; j < Cols; ++j)
        {
            tmp[j] = m[j][i - 1];
        }
        res = fma(tmp, vec<T, Cols>(v[i - 1]), res);
    }
    return res;
}

template<typename T, int Cols, int Rows>
[[clang::optnone]] vec<T, Rows> spvFMulMatrixVector(matrix<T, Cols, Rows> m, vec<T, Cols> v)
{
    vec<T, Rows> res = vec<T, Rows>(0);
    for (uint i = Cols; i > 0; --i)
    {
        res = fma(m[i - 1], vec<T, Rows>(v[i - 1]), res);
    }
    return res;
}

template<typename T, int LCols, int LRows, int RCols, int RRows>
[[clang::optnone]] matrix<T, RCols, LRows> spvFMulMatrixMatrix(matrix<T, LCols, LRows> l, matrix<T, RCols, RRows> r)
{
    matrix<T, RCols, LRows> res;
    for (uint i = 0; i < RCols; i++)
    {
        vec<T, RCols> tmp(0);
        for (uint j = 0; j < LCols; j++)
        {
            tmp = fma(vec<T, RCols>(r[i][j]), l[j], tmp);
        }
        res[i] = tmp;
    }
    return res;
}

template<typename T>
[[clang::optnone]] T spvFAdd(T l, T r)
{
    return fma(T(1), l, r);
}

template<typename T>
[[clang::optnone]] T spvFSub(T l, T r)
{
    return fma(T(-1), r, l);
}

struct Params
{
    uint T;
    uint nh;
    uint qk;
    uint dv;
    uint past;
    float scale;
};

struct Q
{
    float q[1];
};

struct Kc
{
    float kc[1];
};

struct Sc
{
    float sc[1];
};

struct Vc
{
    float vc[1];
};

struct O
{
    float o[1];
};

constant uint3 gl_WorkGroupSize [[maybe_unused]] = uint3(64u, 1u, 1u);

static inline __attribute__((always_inline))
float dfExp(thread const float& x)
{
    if (x > 88.72283935546875)
    {
        return as_type<float>(2139095040u);
    }
    if (x < (-103.972076416015625))
    {
        return 0.0;
    }
    float n = floor(spvFAdd(spvFMul(x, 1.44269502162933349609375), 0.5));
    float r = spvFSub(x, spvFMul(n, 0.693359375));
    r = spvFSub(r, spvFMul(n, -0.00021219444170128554105758666992188));
    float p = 0.00019875691214110702276229858398438;
    p = (p * r) + 0.00139819993637502193450927734375;
    p = (p * r) + 0.008333452045917510986328125;
    p = (p * r) + 0.0416657961905002593994140625;
    p = (p * r) + 0.1666666567325592041015625;
    p = (p * r) + 0.5;
    float y = (((p * r) * r) + r) + 1.0;
    int e = int(n);
    int e1 = e / 2;
    return (y * as_type<float>(uint(e1 + 127) << uint(23))) * as_type<float>(uint((e - e1) + 127) << uint(23));
}

kernel void main0(constant Params& pc [[buffer(0)]], const device Q& _204 [[buffer(1)]], const device Kc& _214 [[buffer(2)]], const device Vc& _388 [[buffer(3)]], device Sc& _233 [[buffer(4)]], device O& _409 [[buffer(5)]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]])
{
    threadgroup float red[64];
    uint h = gl_WorkGroupID.x;
    uint t = gl_WorkGroupID.y;
    uint lid = gl_LocalInvocationID.x;
    uint L = pc.past + pc.T;
    uint n = (pc.past + t) + 1u;
    uint qo = ((t * pc.nh) + h) * pc.qk;
    uint so = ((t * pc.nh) + h) * L;
    float m = as_type<float>(4286578688u);
    for (uint p = lid; p < n; p += 64u)
    {
        uint ko = ((p * pc.nh) + h) * pc.qk;
        float s = 0.0;
        for (uint i = 0u; i < pc.qk; i++)
        {
            s = spvFAdd(s, spvFMul(_204.q[qo + i], _214.kc[ko + i]));
        }
        s = spvFMul(s, pc.scale);
        _233.sc[so + p] = s;
        m = fast::max(m, s);
    }
    red[lid] = m;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint w = 32u; w > 0u; w = w >> uint(1))
    {
        if (lid < w)
        {
            red[lid] = fast::max(red[lid], red[lid + w]);
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    m = red[0];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float sum = 0.0;
    for (uint p_1 = lid; p_1 < n; p_1 += 64u)
    {
        float param = spvFSub(_233.sc[so + p_1], m);
        float e = dfExp(param);
        _233.sc[so + p_1] = e;
        sum = spvFAdd(sum, e);
    }
    red[lid] = sum;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint w_1 = 32u; w_1 > 0u; w_1 = w_1 >> uint(1))
    {
        if (lid < w_1)
        {
            red[lid] = spvFAdd(red[lid], red[lid + w_1]);
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    sum = red[0];
    threadgroup_barrier(mem_flags::mem_device);
    uint oo = ((t * pc.nh) + h) * pc.dv;
    for (uint i_1 = lid; i_1 < pc.dv; i_1 += 64u)
    {
        float acc = 0.0;
        for (uint p_2 = 0u; p_2 < n; p_2++)
        {
            acc = spvFAdd(acc, spvFMul(_233.sc[so + p_2] / sum, _388.vc[(((p_2 * pc.nh) + h) * pc.dv) + i_1]));
        }
        _409.o[oo + i_1] = acc;
    }
}

