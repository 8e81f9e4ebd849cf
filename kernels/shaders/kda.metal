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
    uint d;
};

struct V
{
    float v[1];
};

struct S
{
    float st[1];
};

struct G
{
    float g[1];
};

struct K
{
    float k[1];
};

struct B
{
    float beta[1];
};

struct Q
{
    float q[1];
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

kernel void main0(constant Params& pc [[buffer(0)]], const device Q& _291 [[buffer(1)]], const device K& _225 [[buffer(2)]], const device V& _170 [[buffer(3)]], const device G& _203 [[buffer(4)]], const device B& _240 [[buffer(5)]], device S& _190 [[buffer(6)]], device O& _305 [[buffer(7)]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]])
{
    uint h = gl_WorkGroupID.x;
    uint d = pc.d;
    uint sb = (h * d) * d;
    for (uint j = gl_LocalInvocationID.x; j < d; j += 64u)
    {
        for (uint t = 0u; t < pc.T; t++)
        {
            uint base = ((t * pc.nh) + h) * d;
            float delta = _170.v[base + j];
            for (uint i = 0u; i < d; i++)
            {
                float param = _203.g[base + i];
                float row = spvFMul(_190.st[(sb + (i * d)) + j], dfExp(param));
                _190.st[(sb + (i * d)) + j] = row;
                delta = spvFSub(delta, spvFMul(_225.k[base + i], row));
            }
            delta = spvFMul(delta, _240.beta[(t * pc.nh) + h]);
            float acc = 0.0;
            for (uint i_1 = 0u; i_1 < d; i_1++)
            {
                float row_1 = spvFAdd(_190.st[(sb + (i_1 * d)) + j], spvFMul(_225.k[base + i_1], delta));
                _190.st[(sb + (i_1 * d)) + j] = row_1;
                acc = spvFAdd(acc, spvFMul(_291.q[base + i_1], row_1));
            }
            _305.o[base + j] = acc;
        }
    }
}

