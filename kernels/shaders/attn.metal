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
void fetchQK(thread const uint& j0, thread const uint& c0, thread uint& lid, thread uint& b0, thread spvUnsafeArray<float, 16>& pre, constant Params& pc, const device Q& v_190, thread uint& h, thread uint& keys, const device K& v_229)
{
    float _184;
    float _223;
    for (uint n = 0u; n < 8u; n++)
    {
        uint e = lid + (256u * n);
        uint r = e >> uint(5);
        uint c = c0 + (e & 31u);
        uint t = b0 + r;
        uint j = j0 + r;
        bool _175 = t < pc.T;
        bool _183;
        if (_175)
        {
            _183 = c < pc.qk;
        }
        else
        {
            _183 = _175;
        }
        if (_183)
        {
            _184 = v_190.q[(((t * pc.nh) + h) * pc.qk) + c];
        }
        else
        {
            _184 = 0.0;
        }
        pre[n] = _184;
        bool _215 = j < keys;
        bool _222;
        if (_215)
        {
            _222 = c < pc.qk;
        }
        else
        {
            _222 = _215;
        }
        if (_222)
        {
            _223 = v_229.k[(((j * pc.nh) + h) * pc.qk) + c];
        }
        else
        {
            _223 = 0.0;
        }
        pre[8u + n] = _223;
    }
}

static inline __attribute__((always_inline))
void storeQK(thread uint& lid, thread spvUnsafeArray<float, 16>& pre, threadgroup float4 (&A)[1024])
{
    for (uint n = 0u; n < 8u; n++)
    {
        uint e = lid + (256u * n);
        uint r = e >> uint(5);
        uint g = (e & 31u) >> uint(2);
        uint i = (g * 64u) + (r ^ g);
        ((threadgroup float*)&A[i])[e & 3u] = pre[n];
        ((threadgroup float*)&A[512u + i])[e & 3u] = pre[8u + n];
    }
}

static inline __attribute__((always_inline))
void fetchV(thread const uint& j, thread uint& lid, thread spvUnsafeArray<float, 16>& pre, constant Params& pc, thread uint& h, thread uint& keys, thread uint& d0, const device V& v_347)
{
    float _341;
    for (uint n = 0u; n < 16u; n++)
    {
        uint e = lid + (256u * n);
        uint jj = j + (e >> uint(7));
        uint d = d0 + (e & 127u);
        bool _332 = jj < keys;
        bool _340;
        if (_332)
        {
            _340 = d < pc.dv;
        }
        else
        {
            _340 = _332;
        }
        if (_340)
        {
            _341 = v_347.v[(((jj * pc.nh) + h) * pc.dv) + d];
        }
        else
        {
            _341 = 0.0;
        }
        pre[n] = _341;
    }
}

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
void storeV(thread uint& lid, thread spvUnsafeArray<float, 16>& pre, threadgroup float4 (&A)[1024])
{
    for (uint n = 0u; n < 16u; n++)
    {
        uint e = lid + (256u * n);
        ((threadgroup float*)&A[e >> uint(2)])[e & 3u] = pre[n];
    }
}

kernel void main0(constant Params& pc [[buffer(0)]], const device Q& v_190 [[buffer(1)]], const device K& v_229 [[buffer(2)]], const device V& v_347 [[buffer(3)]], device D& _1111 [[buffer(4)]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]], uint3 gl_NumWorkGroups [[threadgroups_per_grid]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]])
{
    threadgroup float4 A[1024];
    threadgroup float4 P[1024];
    uint lid = gl_LocalInvocationID.x;
    uint tr = lid >> uint(4);
    uint tc = lid & 15u;
    uint slices = ((pc.dv + 128u) - 1u) / 128u;
    uint blk = ((gl_NumWorkGroups.x / slices) - 1u) - (gl_WorkGroupID.x / slices);
    uint d0 = (gl_WorkGroupID.x % slices) * 128u;
    uint h = gl_WorkGroupID.y;
    uint b0 = pc.row0 + (blk * 64u);
    uint keys = pc.past + min(pc.T, (b0 + 64u));
    spvUnsafeArray<float, 16> pre;
    uint _450;
    if ((b0 + 64u) <= pc.T)
    {
        _450 = (pc.past + b0) + 1u;
    }
    else
    {
        _450 = 0u;
    }
    uint edge = _450;
    float4 m = float4(-1000000015047466219876688855040.0);
    float4 l = float4(0.0);
    spvUnsafeArray<spvUnsafeArray<float4, 2>, 4> o;
    for (uint r = 0u; r < 4u; r++)
    {
        o[r][1] = float4(0.0);
        o[r][0] = float4(0.0);
    }
    uint nc = ((pc.qk + 32u) - 1u) / 32u;
    float NEG = as_type<float>(4286578688u);
    uint param = 0u;
    uint param_1 = 0u;
    fetchQK(param, param_1, lid, b0, pre, pc, v_190, h, keys, v_229);
    spvUnsafeArray<float4, 4> s;
    spvUnsafeArray<float4, 4> qv;
    spvUnsafeArray<float4, 4> kv;
    uint _711;
    float4 pm;
    for (uint j0 = 0u; j0 < keys; j0 += 64u)
    {
        for (uint r_1 = 0u; r_1 < 4u; r_1++)
        {
            s[r_1] = float4(0.0);
        }
        for (uint ci = 0u; ci < nc; ci++)
        {
            threadgroup_barrier(mem_flags::mem_threadgroup);
            storeQK(lid, pre, A);
            threadgroup_barrier(mem_flags::mem_threadgroup);
            if ((ci + 1u) < nc)
            {
                uint param_2 = j0;
                uint param_3 = (ci + 1u) * 32u;
                fetchQK(param_2, param_3, lid, b0, pre, pc, v_190, h, keys, v_229);
            }
            else
            {
                uint param_4 = j0;
                fetchV(param_4, lid, pre, pc, h, keys, d0, v_347);
            }
            for (uint g = 0u; g < 8u; g++)
            {
                for (uint r_2 = 0u; r_2 < 4u; r_2++)
                {
                    qv[r_2] = A[((g * 64u) + ((4u * tr) ^ (g & 4u))) + (r_2 ^ (g & 3u))];
                }
                for (uint kk = 0u; kk < 4u; kk++)
                {
                    kv[kk] = A[((512u + (g * 64u)) + (tc ^ g)) + (16u * kk)];
                }
                for (uint r_3 = 0u; r_3 < 4u; r_3++)
                {
                    for (uint kk_1 = 0u; kk_1 < 4u; kk_1++)
                    {
                        float a = s[r_3][kk_1];
                        a = fma(qv[r_3].x, kv[kk_1].x, a);
                        a = fma(qv[r_3].y, kv[kk_1].y, a);
                        a = fma(qv[r_3].z, kv[kk_1].z, a);
                        s[r_3][kk_1] = fma(qv[r_3].w, kv[kk_1].w, a);
                    }
                }
            }
        }
        bool mask = (j0 + 64u) > edge;
        for (uint r_4 = 0u; r_4 < 4u; r_4++)
        {
            s[r_4] *= pc.scale;
            uint t = (b0 + (4u * tr)) + r_4;
            if (t < pc.T)
            {
                _711 = (pc.past + t) + 1u;
            }
            else
            {
                _711 = 0u;
            }
            uint sees = _711;
            for (uint kk_2 = 0u; kk_2 < 4u; kk_2++)
            {
                bool _740;
                if (mask)
                {
                    _740 = ((j0 + tc) + (16u * kk_2)) >= sees;
                }
                else
                {
                    _740 = mask;
                }
                if (_740)
                {
                    s[r_4][kk_2] = NEG;
                }
            }
            pm[r_4] = fast::max(fast::max(s[r_4].x, s[r_4].y), fast::max(s[r_4].z, s[r_4].w));
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        A[(tc * 16u) + tr] = pm;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        float4 mx = m;
        for (uint u = 0u; u < 16u; u++)
        {
            mx = fast::max(mx, A[(u * 16u) + tr]);
        }
        for (uint r_5 = 0u; r_5 < 4u; r_5++)
        {
            float param_5 = m[r_5] - mx[r_5];
            float corr = dfExp(param_5);
            float param_6 = s[r_5].x - mx[r_5];
            float param_7 = s[r_5].y - mx[r_5];
            float param_8 = s[r_5].z - mx[r_5];
            float param_9 = s[r_5].w - mx[r_5];
            float4 p = float4(dfExp(param_6), dfExp(param_7), dfExp(param_8), dfExp(param_9));
            s[r_5] = p;
            l[r_5] = (l[r_5] * corr) + ((p.x + p.y) + (p.z + p.w));
            o[r_5][0] *= corr;
            o[r_5][1] *= corr;
        }
        m = mx;
        for (uint kk_3 = 0u; kk_3 < 4u; kk_3++)
        {
            P[((tc + (16u * kk_3)) * 16u) + tr] = float4(s[0][kk_3], s[1][kk_3], s[2][kk_3], s[3][kk_3]);
        }
        uint nv = ((j0 + 32u) < keys) ? 2u : 1u;
        for (uint vc = 0u; vc < nv; vc++)
        {
            threadgroup_barrier(mem_flags::mem_threadgroup);
            storeV(lid, pre, A);
            threadgroup_barrier(mem_flags::mem_threadgroup);
            if ((vc + 1u) < nv)
            {
                uint param_10 = j0 + 32u;
                fetchV(param_10, lid, pre, pc, h, keys, d0, v_347);
            }
            else
            {
                if ((j0 + 64u) < keys)
                {
                    uint param_11 = j0 + 64u;
                    uint param_12 = 0u;
                    fetchQK(param_11, param_12, lid, b0, pre, pc, v_190, h, keys, v_229);
                }
            }
            for (uint kj = 0u; kj < 32u; kj++)
            {
                float4 pv = P[(((vc * 32u) + kj) * 16u) + tr];
                float4 v0 = A[(kj * 32u) + tc];
                float4 v1 = A[((kj * 32u) + 16u) + tc];
                for (uint r_6 = 0u; r_6 < 4u; r_6++)
                {
                    o[r_6][0] = fma(float4(pv[r_6]), v0, o[r_6][0]);
                    o[r_6][1] = fma(float4(pv[r_6]), v1, o[r_6][1]);
                }
            }
        }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    A[(tc * 16u) + tr] = l;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float4 sum = float4(0.0);
    for (uint u_1 = 0u; u_1 < 16u; u_1++)
    {
        sum += A[(u_1 * 16u) + tr];
    }
    for (uint r_7 = 0u; r_7 < 4u; r_7++)
    {
        uint t_1 = (b0 + (4u * tr)) + r_7;
        if (t_1 >= pc.T)
        {
            continue;
        }
        for (uint i = 0u; i < 2u; i++)
        {
            for (uint c = 0u; c < 4u; c++)
            {
                uint d = (d0 + (4u * (tc + (16u * i)))) + c;
                if (d < pc.dv)
                {
                    _1111.dst[(((t_1 * pc.nh) + h) * pc.dv) + d] = o[r_7][i][c] / sum[r_7];
                }
            }
        }
    }
}

