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
    uint past;
    uint nh;
    uint qk;
    uint dv;
    float scale;
    uint row0;
};

struct Q
{
    float q[1];
};

struct K
{
    float k[1];
};

struct V
{
    float v[1];
};

struct D
{
    float dst[1];
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

kernel void main0(constant Params& pc [[buffer(0)]], const device Q& _172 [[buffer(1)]], const device K& _282 [[buffer(2)]], const device V& _340 [[buffer(3)]], device D& _516 [[buffer(4)]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]])
{
    threadgroup float ks[8][256];
    threadgroup float vs[8][256];
    uint lid = gl_LocalInvocationID.x;
    uint h = gl_WorkGroupID.y;
    uint b0 = pc.row0 + (gl_WorkGroupID.x * 64u);
    uint t = b0 + lid;
    bool live = t < pc.T;
    spvUnsafeArray<float, 256> qr;
    float _166;
    for (uint c = 0u; c < pc.qk; c++)
    {
        if (live)
        {
            _166 = _172.q[(((t * pc.nh) + h) * pc.qk) + c] * pc.scale;
        }
        else
        {
            _166 = 0.0;
        }
        qr[c] = _166;
    }
    spvUnsafeArray<float, 256> o;
    for (uint d = 0u; d < pc.dv; d++)
    {
        o[d] = 0.0;
    }
    float m = -1000000015047466219876688855040.0;
    float l = 0.0;
    uint keys = pc.past + min(pc.T, (b0 + 64u));
    uint mine = (pc.past + t) + 1u;
    float _276;
    float _334;
    uint _367;
    spvUnsafeArray<float, 8> s;
    for (uint j0 = 0u; j0 < keys; j0 += 8u)
    {
        for (uint i = lid; i < (8u * pc.qk); i += 64u)
        {
            uint jj = i / pc.qk;
            uint c_1 = i % pc.qk;
            uint j = j0 + jj;
            if (j < keys)
            {
                _276 = _282.k[(((j * pc.nh) + h) * pc.qk) + c_1];
            }
            else
            {
                _276 = 0.0;
            }
            ks[jj][c_1] = _276;
        }
        for (uint i_1 = lid; i_1 < (8u * pc.dv); i_1 += 64u)
        {
            uint jj_1 = i_1 / pc.dv;
            uint d_1 = i_1 % pc.dv;
            uint j_1 = j0 + jj_1;
            if (j_1 < keys)
            {
                _334 = _340.v[(((j_1 * pc.nh) + h) * pc.dv) + d_1];
            }
            else
            {
                _334 = 0.0;
            }
            vs[jj_1][d_1] = _334;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (live && (mine > j0))
        {
            _367 = min(8u, (mine - j0));
        }
        else
        {
            _367 = 0u;
        }
        uint n = _367;
        if (n > 0u)
        {
            float mx = m;
            for (uint jj_2 = 0u; jj_2 < n; jj_2++)
            {
                float a = 0.0;
                for (uint c_2 = 0u; c_2 < pc.qk; c_2++)
                {
                    a += (qr[c_2] * ks[jj_2][c_2]);
                }
                s[jj_2] = a;
                mx = fast::max(mx, a);
            }
            float param = m - mx;
            float corr = dfExp(param);
            l *= corr;
            for (uint d_2 = 0u; d_2 < pc.dv; d_2++)
            {
                o[d_2] *= corr;
            }
            for (uint jj_3 = 0u; jj_3 < n; jj_3++)
            {
                float param_1 = s[jj_3] - mx;
                float p = dfExp(param_1);
                l += p;
                for (uint d_3 = 0u; d_3 < pc.dv; d_3++)
                {
                    o[d_3] += (p * vs[jj_3][d_3]);
                }
            }
            m = mx;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (live)
    {
        for (uint d_4 = 0u; d_4 < pc.dv; d_4++)
        {
            _516.dst[(((t * pc.nh) + h) * pc.dv) + d_4] = o[d_4] / l;
        }
    }
}

