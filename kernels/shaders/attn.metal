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

constant uint3 gl_WorkGroupSize [[maybe_unused]] = uint3(256u, 1u, 1u);

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

kernel void main0(constant Params& pc [[buffer(0)]], const device Q& _188 [[buffer(1)]], const device K& _295 [[buffer(2)]], const device V& _354 [[buffer(3)]], device D& _598 [[buffer(4)]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]])
{
    threadgroup float ks[8][256];
    threadgroup float vs[8][256];
    threadgroup float part[32][8][9];
    threadgroup float sc[32][8];
    threadgroup float pw[32][8];
    uint lid = gl_LocalInvocationID.x;
    uint row = lid / 8u;
    uint l = lid % 8u;
    uint h = gl_WorkGroupID.y;
    uint b0 = pc.row0 + (gl_WorkGroupID.x * 32u);
    uint t = b0 + row;
    bool live = t < pc.T;
    spvUnsafeArray<float, 32> qr;
    float _182;
    spvUnsafeArray<float, 32> o;
    for (uint i = 0u; i < 32u; i++)
    {
        uint c = l + (8u * i);
        bool _181;
        if (live)
        {
            _181 = c < pc.qk;
        }
        else
        {
            _181 = live;
        }
        if (_181)
        {
            _182 = _188.q[(((t * pc.nh) + h) * pc.qk) + c] * pc.scale;
        }
        else
        {
            _182 = 0.0;
        }
        qr[i] = _182;
        o[i] = 0.0;
    }
    float m = -1000000015047466219876688855040.0;
    float sum = 0.0;
    uint keys = pc.past + min(pc.T, (b0 + 32u));
    uint _231;
    if (live)
    {
        _231 = (pc.past + t) + 1u;
    }
    else
    {
        _231 = 0u;
    }
    uint mine = _231;
    float NEG = as_type<float>(4286578688u);
    float _289;
    float _348;
    for (uint j0 = 0u; j0 < keys; j0 += 8u)
    {
        for (uint i_1 = lid; i_1 < (8u * pc.qk); i_1 += 256u)
        {
            uint jj = i_1 / pc.qk;
            uint c_1 = i_1 % pc.qk;
            uint j = j0 + jj;
            if (j < keys)
            {
                _289 = _295.k[(((j * pc.nh) + h) * pc.qk) + c_1];
            }
            else
            {
                _289 = 0.0;
            }
            ks[jj][c_1] = _289;
        }
        for (uint i_2 = lid; i_2 < (8u * pc.dv); i_2 += 256u)
        {
            uint jj_1 = i_2 / pc.dv;
            uint d = i_2 % pc.dv;
            uint j_1 = j0 + jj_1;
            if (j_1 < keys)
            {
                _348 = _354.v[(((j_1 * pc.nh) + h) * pc.dv) + d];
            }
            else
            {
                _348 = 0.0;
            }
            vs[jj_1][d] = _348;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint jj_2 = 0u; jj_2 < 8u; jj_2++)
        {
            float a = 0.0;
            for (uint i_3 = 0u; i_3 < 32u; i_3++)
            {
                uint c_2 = l + (8u * i_3);
                if (c_2 < pc.qk)
                {
                    a = fma(qr[i_3], ks[jj_2][c_2], a);
                }
            }
            part[row][jj_2][l] = a;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        float s = 0.0;
        for (uint g = 0u; g < 8u; g++)
        {
            s += part[row][l][g];
        }
        sc[row][l] = ((j0 + l) < mine) ? s : NEG;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        float mx = m;
        for (uint jj_3 = 0u; jj_3 < 8u; jj_3++)
        {
            mx = fast::max(mx, sc[row][jj_3]);
        }
        float param = sc[row][l] - mx;
        pw[row][l] = dfExp(param);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (mine > j0)
        {
            float param_1 = m - mx;
            float corr = dfExp(param_1);
            sum *= corr;
            for (uint i_4 = 0u; i_4 < 32u; i_4++)
            {
                o[i_4] *= corr;
            }
            for (uint jj_4 = 0u; jj_4 < 8u; jj_4++)
            {
                float p = pw[row][jj_4];
                sum += p;
                for (uint i_5 = 0u; i_5 < 32u; i_5++)
                {
                    uint d_1 = l + (8u * i_5);
                    if (d_1 < pc.dv)
                    {
                        o[i_5] = fma(p, vs[jj_4][d_1], o[i_5]);
                    }
                }
            }
            m = mx;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (live)
    {
        for (uint i_6 = 0u; i_6 < 32u; i_6++)
        {
            uint d_2 = l + (8u * i_6);
            if (d_2 < pc.dv)
            {
                _598.dst[(((t * pc.nh) + h) * pc.dv) + d_2] = o[i_6] / sum;
            }
        }
    }
}

