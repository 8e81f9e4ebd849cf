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
    uint count;
    uint kind;
    float beta;
    float linearBeta;
};

struct G
{
    float g[1];
};

struct U
{
    float u[1];
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

static inline __attribute__((always_inline))
float dfSigmoid(thread const float& x)
{
    float param = -x;
    return 1.0 / (1.0 + dfExp(param));
}

static inline __attribute__((always_inline))
float dfTanh(thread const float& x)
{
    float a = abs(x);
    if (a < 0.625)
    {
        float z = x * x;
        float p = -0.005704988725483417510986328125;
        p = (p * z) + 0.0206390880048274993896484375;
        p = (p * z) - 0.0537397153675556182861328125;
        p = (p * z) + 0.13331441581249237060546875;
        p = (p * z) - 0.3333328068256378173828125;
        return ((p * z) * x) + x;
    }
    if (a > 44.0)
    {
        return sign(x);
    }
    float param = a + a;
    float y = 1.0 - (2.0 / (dfExp(param) + 1.0));
    float _179;
    if (x < 0.0)
    {
        _179 = -y;
    }
    else
    {
        _179 = y;
    }
    return _179;
}

kernel void main0(constant Params& pc [[buffer(0)]], device G& _232 [[buffer(1)]], const device U& _241 [[buffer(2)]], uint3 gl_GlobalInvocationID [[thread_position_in_grid]], uint3 gl_NumWorkGroups [[threadgroups_per_grid]])
{
    uint i = gl_GlobalInvocationID.x + ((gl_GlobalInvocationID.y * gl_NumWorkGroups.x) * 64u);
    if (i >= pc.count)
    {
        return;
    }
    float gv = _232.g[i];
    float uv = _241.u[i];
    float param = gv;
    float sig = dfSigmoid(param);
    if (pc.kind == 1u)
    {
        float param_1 = gv / pc.beta;
        float capG = dfTanh(param_1) * pc.beta;
        float param_2 = uv / pc.linearBeta;
        float capU = dfTanh(param_2) * pc.linearBeta;
        _232.g[i] = (capG * sig) * capU;
    }
    else
    {
        _232.g[i] = (gv * sig) * uv;
    }
}

